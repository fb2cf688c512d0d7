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
 *   manager-owners.c  sharing the node: which groups are owned elsewhere, and why (manager-groups.c
 *                     and manager.c call it; it calls neither)
 *   manager-apply.c   applying a group's plan and the change log with its journal fields; restoring
 *   manager-held.c    CPUs held by partitions and exclusive cpusets, and the union of every owner's
 *                     held CPUs
 *   manager-rename.c  renamed groups: their directories followed, their records moved with them
 *   manager-bus.c     the D-Bus API (org.peltd1): properties, methods, signals, authorization, the connection
 *   manager-metrics.c the metrics file (MetricsFile=): round counters, a snapshot, its timer
 *   manager-kubelet.c kubelet's CPU manager checkpoint: the CPUs it holds, the groups it places
 *   manager-pressure.c the pressure guard on packing: whether packed groups stall for CPU
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* Why peltd judged a group owned elsewhere (manager-owners.c). */
typedef enum OwnedWhy {
        OWNED_NOT,                   /* it did not: peltd places it */
        OWNED_BEFORE,                /* its cpuset (or a descendant's) was set narrower before peltd saw it */
        OWNED_WRITTEN,               /* someone else wrote a file peltd placed: yielded until made again or a reload */
        OWNED_AFFINITY,              /* its threads pin themselves narrower than their cpuset */
        OWNED_KUBELET,               /* under kubepods while kubelet's CPU manager places it (manager-kubelet.c) */
} OwnedWhy;

/* A file peltd wrote for a group (its own, a descendant's), that it has a record of. */
typedef struct PlacedFile {
        const char *hierarchy;       /* static strings, as in CgWrite */
        const char *file;
        char *group;                 /* the group, a descendant, or a systemd unit */
} PlacedFile;

/* The hierarchies a group's directory is noted in, to follow it through a rename (manager-rename.c). */
typedef enum GroupHierarchy {
        GROUP_HIER_CPUSET,           /* v1 */
        GROUP_HIER_CPU,              /* v1 */
        GROUP_HIER_CPUACCT,          /* v1: where the groups are found */
        GROUP_HIER_UNIFIED,          /* v2 */
        _GROUP_HIER_MAX,
} GroupHierarchy;

/* A group's directory in one hierarchy: its inode, and the path its records of that hierarchy are at. */
typedef struct GroupDir {
        uint64_t ino;                /* 0: not known (not there when looked for, or gone) */
        char *path;                  /* the group's path, or where a rename took that directory */
        GroupHierarchy hierarchy;    /* for a descendant's (ManagedGroup.below) */
} GroupDir;

/* What the daemon keeps about one managed group between rounds. */
typedef struct ManagedGroup {
        char *path;
        uint64_t id;                 /* the sampler's: another id at the same path is a new directory */
        GroupDir dirs[_GROUP_HIER_MAX]; /* its directory in each hierarchy (manager-rename.c) */
        GroupDir *below;             /* the directories of descendants it placed files of */
        size_t n_below;

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
        bool drift;                  /* place the plan again this round, though it holds (no longer set: peltd yields) */

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
        OwnedWhy owned_why;          /* why owner is not OWNER_NONE, as judged here */
        bool judge_owner;            /* new, or after a reload: whether its cpuset was set before peltd is judged at its next read */
        uint64_t pressure_usec;      /* v2: cpu.pressure's some total; v1: its threads' run_delay sum */
} ManagedGroup;

/* SetGroupShares: a group path's runtime shares, kept until the daemon stops. */
typedef struct RuntimeShares {
        char *path;
        uint64_t shares;
} RuntimeShares;

typedef struct Manager Manager;    /* as in peltd/manager.h, which this does not include */
typedef struct Planning Planning;
typedef struct ManagerKubelet ManagerKubelet;
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
        usec_t held_walk_usec;       /* the last look for partitions and exclusive cpusets (manager-held.c) */
        int held_error;              /* its error, said once until it changes */
        ManagerKubelet *kubelet;     /* KubeletCpuManagerState=: what its checkpoint says (manager-kubelet.c) */
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
 * placed are checked for drift: a value someone else wrote is theirs, and peltd yields the group
 * (manager_yield(); the state file saved without that file's record before this returns). A group
 * seen for the first time, or after a reload, has its owner judged (manager_judge_owner()). A
 * group whose cpuset is unreadable is left with info_valid false.
 */
void manager_read_groups(Manager *m, bool task_round);

/* What a group's threads say: how many, the biggest, how long they run per timeslice, pinning. */
void manager_collect_threads(Manager *m);

/* Whether the group's cpuset is written through systemd (Backend=, DESIGN.md "cgroups"). */
void manager_resolve_target(Manager *m, ManagedGroup *g);

/* manager-owners.c */

/* A cpuset file of a group (cpuset.cpus, cpuset.mems, ...) in hierarchy root. */
int cpuset_read(const RootDir *root, const char *group, const char *file, CpuMask *ret);
/*
 * v2: a group whose parent does not pass the cpuset controller on has no cpuset files; it runs on
 * the effective set of its nearest ancestor that has one: that one's file.
 */
int cpuset_read_effective(const RootDir *root, const char *group, const char *file, CpuMask *ret);

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

/*
 * A group seen for the first time (or again after a reload), its cpusets just read: whether its
 * cpuset, or a descendant's, was set narrower than its parent's by someone else before peltd (no
 * record of peltd's for it; TakeOver=yes places it anyway), and whether its threads pin themselves
 * narrower than their cpuset. Sets g->owner, owned_why and owner_reason.
 */
void manager_judge_owner(Manager *m, ManagedGroup *g);

/*
 * Before a plan narrows g (takes CPUs from it): whether its threads pin themselves narrower than
 * their cpuset, which makes it owned elsewhere (OWNER_AFFINITY). Returns whether g is owned elsewhere.
 */
bool manager_owner_before_narrowing(Manager *m, ManagedGroup *g, const CpuMask *cpus);

/* The threads of g pin themselves (found by the thread rounds): owned elsewhere, by them. */
void manager_owned_by_affinity(ManagedGroup *g, pid_t tid, const CpuMask *affinity);

/*
 * Someone else wrote f, a file peltd placed for g (cur; peltd wrote written): it is theirs. The
 * file's record is dropped (saved by manager_owners_commit()), the write counted and logged, and
 * peltd writes g's files no more until the group is made again or peltd reloads.
 */
void manager_yield(Manager *m, ManagedGroup *g, const PlacedFile *f, const char *cur, const char *written);

/* Saves the state file without the records of files just yielded (and whatever else changed in memory). */
void manager_owners_commit(Manager *m);

/*
 * A reload: groups yielded after a foreign write are taken back (placed again like new ones, their
 * files' values now their originals), and every other group's ownership is judged again at its next read.
 */
void manager_owners_reload(Manager *m);

/*
 * The counts of groups owned elsewhere, by owner, for the log: ", M owned elsewhere: kubelet K,
 * other O" (owners with a count only), or "" when none is. Returns buf.
 */
const char *manager_fmt_owned(const Manager *m, char *buf, size_t size);
/* Says how many groups are managed and owned elsewhere, when the counts changed since the log last said them. */
void manager_say_owners(Manager *m);

/* manager-held.c */

/*
 * m->held made the union of every owner's held_by[] again. Returns whether it changed: then the
 * caller plans again (planning_invalidate()).
 */
bool manager_held_union(Manager *m);

/*
 * Looks for groups peltd does not manage that hold CPUs (v1 exclusive cpusets, v2 partitions) and
 * makes what they hold m->held_by[OWNER_PARTITION]: at once when force (start, Reload, hotplug),
 * else (task rounds) only when the last look is 10 s old. A change is logged once. Returns whether
 * m->held changed (manager_held_union()).
 */
bool manager_refresh_held(Manager *m, bool force);

/* manager-rename.c */

void group_dirs_done(ManagedGroup *g);

/* Notes the group's directory (its inode) in each hierarchy where it is not known yet. */
void manager_note_dirs(Manager *m, ManagedGroup *g);

/*
 * Every managed group's directory looked for where its records are, in each hierarchy, and those of
 * the descendants it placed files of: one that a rename took elsewhere in its parent takes its
 * records along (originals_rename(), in memory: saved with the round's commit) and the files the
 * drift checks read. A stat() a directory.
 */
void manager_follow_renames(Manager *m);

/*
 * Whether fresh (a group just found at a new path) is gone (a managed group no longer at its path)
 * renamed: the same directory in the hierarchy groups are found in. Then fresh takes over gone's
 * state (placement, records, retry state) and history, keeping its own path and the sampler's id,
 * and gone is left empty. Logged.
 */
bool manager_take_renamed(Manager *m, ManagedGroup *gone, PolicyHistory *gone_history, ManagedGroup *fresh,
                          PolicyHistory *fresh_history);

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

/* manager-kubelet.c */

/*
 * Reads kubelet's CPU manager checkpoint (KubeletCpuManagerState=), at start and at Reload: its
 * exclusive CPUs in held_by[OWNER_KUBELET] and held. A missing file is no kubelet; one that does
 * not parse is said once. Returns 1 when what the planner sees changed (plan again), 0, or -ENOMEM.
 */
int manager_kubelet_load(Manager *m);
/* At task rounds: the checkpoint read again when its file changed. Returns as manager_kubelet_load(). */
int manager_kubelet_check(Manager *m);
void manager_kubelet_free(Manager *m);

/*
 * OWNER_KUBELET for a group under the kubepods hierarchy while kubelet's checkpoint says policy
 * static, or does not parse (reason, size bytes: why; may be NULL); else OWNER_NONE.
 */
GroupOwner manager_kubelet_owner(const Manager *m, const char *path, char *reason, size_t size);

/*
 * Before a group is planned: owner OWNER_KUBELET (owned_why OWNED_KUBELET) for a group kubelet's
 * CPU manager places (never applied; the change said once), given back when it no longer does. A
 * group owned elsewhere for another reason keeps that judgement.
 */
void manager_kubelet_judge(Manager *m, ManagedGroup *g);

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
