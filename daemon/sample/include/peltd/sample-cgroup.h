/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "peltd/cgroup-util.h"
#include "peltd/cgroup-path.h"

/*
 * Sampling the managed cgroups (DESIGN.md, "Data flow", item 1, and "cgroups").
 *
 *   - counters, kept open and read again with pread, each only when the round needs it: the usage
 *     (v1 cpuacct.usage ns, v2 cpu.stat usage_usec) every group round; v1 cpuacct.usage_percpu
 *     where per-CPU figures matter (CPU capacities that differ, steal: cgroup_sampler_set_percpu());
 *     v1 cpu.stat (nr_throttled, throttled_time ns) for groups with a quota (v1 cpu.cfs_quota_us,
 *     v2 cpu.max, read again at each refresh); cpu.shares (v2 cpu.weight, converted) and the
 *     group's CPUs (cpuset.effective_cpus / cpuset.cpus.effective, for throttling and capacity) at
 *     a refresh (cgroup_sampler_refresh(): each task round, and after peltd wrote them);
 *   - groups that provably did not run are not read at all: every group's ancestors up to the
 *     root of the walk have their usage counters read first (parents first), and below one whose
 *     counter did not move since the last round nothing ran, so its groups' counters are as they
 *     were (a group with a quota is read anyway: it may be throttled without running). A group's
 *     values stay as last read until read again;
 *   - membership, once a task round: the walk of the usage hierarchy (v1 cpuacct, v2 unified) reads
 *     every group's tasks / cgroup.threads, reopened each time (a kept v1 tasks fd serves the PID
 *     list it cached); so every thread's cgroup is known and moves are seen. The same walk finds
 *     the managed groups: those the caller's GroupFilter selects under its root (the configuration's
 *     CgroupRoot= and Groups=), of nested matches only the topmost;
 *   - groups come and go between rounds: a group found in a walk is NEW (its counters are a
 *     baseline), one no longer there, or whose files vanished, is GONE.
 *
 * Counters that do not parse are skipped for the round (logged at debug); the caller sees
 * have_* false.
 */

typedef enum CgroupGroupState {
        CGROUP_GROUP_NEW,
        CGROUP_GROUP_LIVE,
        CGROUP_GROUP_GONE,
} CgroupGroupState;

/* The counter files a group round read for a group (CgroupGroup.read_mask). */
enum {
        CGROUP_READ_USAGE = 1 << 0,  /* v1 cpuacct.usage, v2 cpu.stat */
        CGROUP_READ_PERCPU = 1 << 1, /* v1 cpuacct.usage_percpu */
        CGROUP_READ_STAT = 1 << 2,   /* v1 cpu.stat */
        CGROUP_READ_SHARES = 1 << 3, /* cpu.shares, cpu.weight */
        CGROUP_READ_CPUS = 1 << 4,   /* the effective cpuset */
        CGROUP_READ_QUOTA = 1 << 5,  /* v1 cpu.cfs_quota_us, v2 cpu.max */
};

typedef struct CgroupGroup {
        char *path;
        uint64_t ino;                /* its directory in the walked hierarchy: a new one is a new group */
        CgroupGroupState state;
        void *userdata;              /* the caller's */

        int usage_fd;                /* v1 cpuacct.usage */
        int percpu_fd;               /* v1 cpuacct.usage_percpu */
        int stat_fd;                 /* cpu.stat */
        int shares_fd;               /* v1 cpu.shares, v2 cpu.weight */
        int cpus_fd;                 /* the effective cpuset */
        int quota_fd;                /* v1 cpu.cfs_quota_us, v2 cpu.max */

        bool has_quota;              /* as of the last refresh: throttling counters can grow */
        bool refresh;                /* read shares, cpuset and quota at the next group round */
        ssize_t ancestor;            /* its parent in the sampler's list of ancestors, -1: none */
        unsigned read_mask;          /* CGROUP_READ_* the last group round read */

        /* As read in the last group round. */
        bool have_usage;
        uint64_t usage_ns;
        uint64_t sample_ns;          /* CLOCK_MONOTONIC when the usage counters were read */
        uint64_t *percpu_ns;         /* v1 cpuacct.usage_percpu, one per possible CPU */
        size_t n_percpu;             /* 0: never read, or not readable when last read */
        size_t allocated_percpu;     /* percpu_ns grows to the CPUs and stays */
        bool percpu_current;         /* percpu_ns is as of this round: read, or provably unchanged */
        bool have_throttled;
        uint64_t throttled_ns;
        uint64_t nr_throttled;
        bool have_shares;
        uint64_t shares;
        unsigned nr_cpus;            /* the group's CPUs (0: unknown) */
        unsigned capacity;           /* their mean capacity (0: unknown) */

        size_t nr_tasks;             /* threads in it and its descendants, last task round */
        bool seen;
} CgroupGroup;

typedef struct CgroupSampler CgroupSampler;

/* Does not take ownership of fs; the filter is copied (what it points to must outlive the sampler). */
int cgroup_sampler_new(const CgroupFs *fs, const GroupFilter *filter, CgroupSampler **ret);
/* A new filter for the next walk (a reloaded configuration). */
void cgroup_sampler_set_filter(CgroupSampler *s, const GroupFilter *filter);
CgroupSampler *cgroup_sampler_free(CgroupSampler *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(CgroupSampler *, cgroup_sampler_free);
#define _cleanup_cgroup_sampler_ _cleanup_(cgroup_sampler_freep)

/*
 * The capacity of each CPU (n entries; all 1024 on uniform machines), for capacity-invariant
 * usage. Without it every CPU counts 1024. The array must outlive the sampler.
 */
void cgroup_sampler_set_capacities(CgroupSampler *s, const unsigned *capacity, size_t n);

/* The time counter reads are stamped with; NULL: CLOCK_MONOTONIC. */
void cgroup_sampler_set_clock(CgroupSampler *s, uint64_t (*clock)(void *userdata), void *userdata);

/* Whether v1 per-CPU usage is wanted besides the capacities differing: where the machine shows steal. */
void cgroup_sampler_set_percpu(CgroupSampler *s, bool want);

/*
 * Every counter of every group every round, as a reference for tests (the values tracked must be
 * the same as with the reads left out).
 */
void cgroup_sampler_set_read_all(CgroupSampler *s, bool read_all);

/* The shares, cpuset and quota of a group (NULL: of every group) are read at the next group round. */
void cgroup_sampler_refresh(CgroupSampler *s, const char *path);

/* Frees last round's GONE groups and makes NEW ones LIVE; call once at the start of every round. */
void cgroup_sampler_settle(CgroupSampler *s);

/*
 * A group round: reads what the round needs of every LIVE group's counters (see above); a group
 * whose files vanished is GONE. Its time is stamped on every LIVE group, read or not.
 */
void cgroup_sampler_read_counters(CgroupSampler *s);

/*
 * A task round: walks the usage hierarchy, finds the managed groups (NEW ones get a baseline read)
 * and, when cb is given, reads every group's membership and calls cb for each thread with its
 * cgroup (an index for cgroup_sampler_path(), valid until the next walk) and its managed group
 * (NULL: in none). Groups no longer found are GONE. Returns 0 or a negative errno (the hierarchy
 * is unreadable).
 */
typedef void (*cgroup_member_cb)(pid_t tid, size_t path_index, CgroupGroup *group, void *userdata);
int cgroup_sampler_walk(CgroupSampler *s, cgroup_member_cb cb, void *userdata);

/*
 * A task round for a caller that knows each thread's cgroup by its id (the BPF sampler): the same
 * walk of the whole usage hierarchy, reading no membership file; cb is called for every group with
 * the inode of its directory (its cgroup id) instead. The caller counts the managed groups'
 * nr_tasks. Returns 0 or a negative errno (the hierarchy is unreadable).
 */
typedef void (*cgroup_id_cb)(uint64_t ino, size_t path_index, CgroupGroup *group, void *userdata);
int cgroup_sampler_walk_ids(CgroupSampler *s, cgroup_id_cb cb, void *userdata);

const char *cgroup_sampler_path(const CgroupSampler *s, size_t path_index);

size_t cgroup_sampler_n_groups(const CgroupSampler *s);
/* Descriptors it keeps open (counter files, its ancestors') and needs for a walk. */
size_t cgroup_sampler_fds_wanted(const CgroupSampler *s);
CgroupGroup *cgroup_sampler_group(CgroupSampler *s, size_t i);
