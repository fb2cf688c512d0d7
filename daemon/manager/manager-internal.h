/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What the daemon's own files share: the Manager and its managed groups. The manager*.c files
 * include this (and the tests of applying); everything else sees the Manager through
 * peltd/manager.h. It includes none of them: manager.c calls manager-groups.c and
 * manager-apply.c, and nothing calls back; the bus and the metrics file call manager.c, which
 * tells them what changes through the hooks they register (ManagerHooks), never by name.
 *
 *   manager.c         the Manager's lifecycle, its event sources (timers, signals, hotplug), its
 *                     rounds, its runtime settings, and what it tells its hooks
 *   manager-groups.c  per-group acquisition: the managed list, cpusets, threads, how a group is written
 *   manager-apply.c   applying a group's plan and the change log with its journal fields; restoring
 *   manager-bus.c     the D-Bus API (org.peltd1): properties, methods, signals, authorization, the connection
 *   manager-metrics.c the metrics file (MetricsFile=): round counters, a snapshot, its timer
 *   manager-pressure.c the pressure guard on packing: whether packed groups stall for CPU
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "peltd/apply-cgroup.h"
#include "peltd/cgroup-util.h"
#include "peltd/args.h"
#include "peltd/config.h"
#include "peltd/cpumask.h"
#include "peltd/energy.h"
#include "peltd/originals.h"
#include "peltd/owner.h"
#include "peltd/policy.h"
#include "peltd/rootdir.h"
#include "peltd/sampling.h"
#include "peltd/subtree-lock.h"
#include "peltd/time-util.h"
#include "peltd/topology.h"

/* A file peltd wrote for a group (its own, a descendant's), that it has a record of. */
typedef struct PlacedFile {
        const char *hierarchy;       /* static strings, as in CgWrite */
        const char *file;
        char *group;                 /* the group, a descendant, or a systemd unit */
} PlacedFile;

/* What the daemon keeps about one managed group between rounds. */
typedef struct ManagedGroup {
        char *path;
        uint64_t id;                 /* the sampler's: another id at the same path is a new directory */

        /* Read at task rounds and after each change. */
        bool info_valid;
        unsigned info_gen;           /* counts the changes of cpus, allowed and mems */
        CpuMask cpus;                /* cpuset.cpus (v2: the effective set when empty) */
        CpuMask allowed;             /* the parent's cpuset */
        bool has_allowed;
        CpuMask mems;                /* cpuset.mems node ids */
        bool has_mems;
        bool pinned_narrower;
        bool affinity_checked;       /* its threads' affinity was read at least once */

        /* From its threads, at task rounds. */
        unsigned nr_threads;
        double max_task_util;
        usec_t avg_slice_usec;

        /* How its placement is written. */
        bool target_known;
        ApplyTarget target;
        char *unit;

        char *last_intent;           /* the change last logged as intended (dry run), or the reason left alone */
        CgRetry retry;               /* the last placement that failed, and when to try it again */

        /* What peltd placed: the plan last applied, and the files it wrote, read by the drift checks. */
        bool applied;
        CpuMask applied_cpus;
        uint64_t applied_shares;     /* 0: shares not set */
        PlacedFile *placed;
        size_t n_placed;
        bool drift;                  /* someone else wrote a placed file: place the plan again this round */
        bool drift_said;             /* this episode is logged */

        /* The last plan, for ListGroups and GetGroup. */
        bool planned;
        double util, runnable, load;
        uint64_t shares;             /* in effect: Shares= (or SetGroupShares) where set, else its current */
        Policy placed_policy;
        char reason[POLICY_REASON_MAX];
        uint64_t shares_put_back;    /* SetGroupShares taken back with no Shares= set: write this once; 0: none */

        uint64_t n_placements;       /* placement changes applied to it, for the metrics */
        usec_t last_change_usec;     /* CLOCK_MONOTONIC of the last placement change; 0: none */

        /* Sharing the node: who else owns it (OWNER_NONE: peltd places it), and why. */
        GroupOwner owner;
        char owner_reason[POLICY_REASON_MAX];
        uint64_t foreign_writes;     /* writes by others to files peltd placed, each one yielded */
        uint64_t pressure_usec;      /* v2: cpu.pressure's some total; v1: its threads' run_delay sum */
} ManagedGroup;

/* SetGroupShares: a group path's runtime shares, kept until the daemon stops. */
typedef struct RuntimeShares {
        char *path;
        uint64_t shares;
} RuntimeShares;

typedef struct Manager Manager;    /* as in peltd/manager.h, which this does not include */
typedef struct Planning Planning;
typedef struct Pressure Pressure;
struct ManagerHooks;

/* Who is told of changes (manager_add_hooks()): the bus and the metrics file, so far. */
#define MANAGER_HOOKS_MAX 4

struct Manager {
        Args args;
        Config *config;
        Policy policy;               /* the daemon's policy: --policy, else Policy= */
        bool dry_run;

        sd_event *event;
        sd_event_source *group_timer;
        sd_event_source *task_timer;
        sd_event_source *hotplug_source;

        RootDir *sysfs;
        RootDir *proc;
        Topology *topology;
        EnergyModel *energy_model;
        unsigned *capacity;          /* per CPU number, CPUMASK_MAX entries, updated in place */

        CgroupFs *fs;
        CgroupAccess access;         /* its bus: the system bus, for the systemd backend; NULL until needed */
        CgroupIO io;

        Originals *originals;
        int lock_fd;
        SubtreeLock *subtree_lock;   /* NULL in a dry run */
        int record_error;            /* the state file could not take an original: said once until it can */

        Sampling *sampling;
        bool task_tracking;

        ManagedGroup *groups;        /* sorted by path */
        PolicyHistory *histories;    /* the planner's, one a group, at its index in groups */
        size_t n_groups;
        size_t n_groups_said;        /* the count the log last gave (the start line, then each change) */
        bool running;                /* the start line is said: changes of the count are said from then */
        bool groups_unmatched;       /* nothing under CgroupRoot= matched: said once until something does */
        unsigned task_rounds;
        int sample_error;            /* the last round's sampling error, said once until it changes */
        unsigned n_failed_rounds;    /* in a row: the episode, logged once */
        unsigned n_late_rounds;      /* that overran their interval, since late_timer's last on time */
        sd_event_source *late_timer;
        bool rearm_failed;           /* a round timer could not be re-armed: the other retries */
        usec_t watchdog_usec;        /* WATCHDOG_USEC, 0: none */
        usec_t last_watchdog_usec;

        unsigned n_changes;
        char last_change[512];
        uint64_t placement_errors;   /* writes that failed, for the metrics */

        /* CPUs held exclusively by other owners (kubelet's checkpoint, partitions, exclusive cpusets). */
        CpuMask held;                /* all of them: in no set peltd writes */
        CpuMask held_by[_OWNER_MAX]; /* by owner, for the metrics */
        size_t n_owned_said[_OWNER_MAX]; /* the counts of groups owned elsewhere the log last gave */
        uint64_t n_rounds;
        Planning *planning;          /* the planner's input and output, kept between rounds (manager.c) */
        Pressure *pressure;          /* the pressure guard's state per group (manager-pressure.c) */

        /* The runtime settings (manager_set_policy(), manager_set_group_shares()), kept until the daemon stops. */
        Policy runtime_policy;       /* SetPolicy; POLICY_INVALID: none (then --policy, then Policy=) */
        RuntimeShares *runtime_shares;
        size_t n_runtime_shares;

        nsec_t sampling_cpu_ns;      /* this thread's CPU time in sampling_round(), for the metrics */

        struct {
                const struct ManagerHooks *hooks;
                void *userdata;
        } hooks[MANAGER_HOOKS_MAX];
        size_t n_hooks;
};

/* For log lines: a list longer than buf is cut and ends in "..." (never a key or a value written). */
static inline const char *fmt_cpus(const CpuMask *m, char *buf, size_t size) {
        cpumask_format(m, buf, size);
        return buf[0] ? buf : "(none)";
}

/* manager.c */

/*
 * Applies a round's plans (manager_apply_plans()) and tells what changed: each change counted,
 * told to the hooks (PlacementChanged) and shown in STATUS=. The daemon's rounds call it, and so
 * do the tests of applying.
 */
void manager_apply_groups(Manager *m, ManagedGroup *const *groups, const PolicyResult *const *res,
                          const uint64_t *cur_shares, size_t n);

void planning_free(Planning *p);
/* Something the plan depends on changed that the planner's inputs do not show (the topology): plan again. */
void planning_invalidate(Manager *m);

/* manager-groups.c */

void managed_group_done(ManagedGroup *g);

/* The managed group at path (as the sampler gives it), or NULL. */
ManagedGroup *manager_find_group(Manager *m, const char *path);

/* Brings the managed list in line with the sampler's groups (both sorted by path). 0 or -ENOMEM. */
int manager_sync_groups(Manager *m, const SampledGroup *sg, size_t n);

/*
 * Reads what a group's plan starts from. A group whose information is not valid (new, or after a
 * change of topology) gets its cpuset.cpus, its parent's and its cpuset.mems read; at task rounds
 * (task_round) every other group its cpuset.cpus and its parent's again, and the files peltd
 * placed are checked for drift: a value someone else wrote becomes the file's recorded original
 * (in memory: saved with the round's records), and the group is placed again (logged once an
 * episode). A group whose cpuset is unreadable is left with info_valid false.
 */
void manager_read_groups(Manager *m, bool task_round);

/* What a group's threads say: how many, the biggest, how long they run per timeslice, pinning. */
void manager_collect_threads(Manager *m);

/* The cpuset of the last group a thread was seen in (path NULL: none read yet). */
typedef struct ThreadCpuset {
        char *path;
        int r;
        CpuMask cpus;
} ThreadCpuset;

/*
 * Whether a thread of g with this affinity pinned itself narrower than the cpuset it runs in: that
 * of its own group, cgroup (a child cpuset below g is the thread's, not pinning), else g's.
 * cache keeps the last group's set between calls (free its path).
 */
bool manager_thread_pinned(Manager *m, const ManagedGroup *g, const char *cgroup, const CpuMask *affinity,
                           ThreadCpuset *cache);

/* Whether the group's cpuset is written through systemd (Backend=, DESIGN.md "cgroups"). */
void manager_resolve_target(Manager *m, ManagedGroup *g);

/* manager-apply.c */

/* A placement applied: its group, the plan it holds now, and what it held before. */
typedef struct AppliedChange {
        ManagedGroup *group;
        const PolicyResult *res;
        CpuMask old_cpus;
        uint64_t old_shares;         /* as read before the write (v2: the weight, as shares) */
} AppliedChange;

/*
 * Applies a round's plans: for each group whose plan differs from its current set and shares
 * (cur_shares[i], as read), or that drifted, the batch is read; then the records of all of them are
 * saved with one write of the state file, and only then are they written (in a dry run: said,
 * once a plan). Each change is logged; failures are logged once here. Returns 0 with the changes
 * of placement in *ret_changes (NULL when none; free it), or -ENOMEM with nothing written.
 */
int manager_apply_plans(Manager *m, ManagedGroup *const *groups, const PolicyResult *const *res,
                        const uint64_t *cur_shares, size_t n, AppliedChange **ret_changes, size_t *ret_n_changes);

/*
 * Puts back every recorded original (why: for the log line). Returns 0, the number of values that
 * could not be restored (logged), or a negative errno (logged).
 */
int manager_restore_all(Manager *m, const char *why);

/*
 * The group's own shares from before peltd first wrote them (cpu.shares; cpu.weight and systemd's
 * CPUWeight converted), as recorded in the state file; 0 when nothing is recorded.
 */
uint64_t manager_original_shares(const Manager *m, const ManagedGroup *g);

/* manager-pressure.c */

void pressure_free(Pressure *p);
/*
 * Each group round, after the groups are read: for every packed group, whether it stalled for CPU
 * (ManagedGroup.pressure_usec updated). sg: the sampler's groups, lined up with m->groups.
 * 0 or -ENOMEM.
 */
int manager_pressure_round(Manager *m, const SampledGroup *sg, size_t n);
/* The guard's word on m->groups[group_index] for the planner: PolicyGroup.stall_usec and its window. */
void manager_pressure_input(const Manager *m, size_t group_index, PolicyGroup *pg);
/* Reload: the holds the guard set are forgotten. */
void manager_pressure_reset(Manager *m);
