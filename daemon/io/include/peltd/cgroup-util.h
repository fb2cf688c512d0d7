/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "peltd/cgroup-path.h"
#include "peltd/macro.h"
#include "peltd/rootdir.h"

/*
 * The cgroup hierarchies peltd reads (and, later, writes): which mode the machine runs, where the
 * controllers are, and one RootDir per hierarchy, so that tests point each at a fixture tree or a
 * private subtree. libcgroup is used only here, to find the mounts.
 *
 *   v1: cpu (cpu.shares, cpu.stat), cpuacct (usage, membership), cpuset, each its own hierarchy
 *       (or co-mounted: then two RootDirs name the same directory);
 *   v2: one unified hierarchy for all of them.
 *
 * Group paths are as /proc/PID/cgroup shows them: "/", "/a/b".
 */

typedef enum CgroupMode {
        CGROUP_MODE_V1,
        CGROUP_MODE_V2,
} CgroupMode;

typedef struct CgroupFs {
        CgroupMode mode;
        RootDir *cpu;                /* v1; NULL when not mounted */
        RootDir *cpuacct;            /* v1 */
        RootDir *cpuset;             /* v1 */
        RootDir *unified;            /* v2 */
} CgroupFs;

/* The machine's hierarchies, found by libcgroup (its logger set first, so it never writes to stdout). */
int cgroup_fs_open_system(CgroupFs **ret);
/* v1 hierarchies at these directories (any may be NULL: not mounted); tests use fixture trees. */
int cgroup_fs_open_v1(const char *cpu, const char *cpuacct, const char *cpuset, CgroupFs **ret);
/* A v2 hierarchy at this directory. */
int cgroup_fs_open_v2(const char *unified, CgroupFs **ret);
CgroupFs *cgroup_fs_free(CgroupFs *fs);
DEFINE_TRIVIAL_CLEANUP_FUNC(CgroupFs *, cgroup_fs_free);
#define _cleanup_cgroup_fs_ _cleanup_(cgroup_fs_freep)

const char *cgroup_mode_to_string(CgroupMode m);

/* The hierarchy usage and membership are read from (v1: cpuacct; v2: unified); NULL when absent. */
RootDir *cgroup_fs_usage_root(const CgroupFs *fs);
/* The one holding cpu.shares / cpu.weight and cpu.stat's throttling. */
RootDir *cgroup_fs_cpu_root(const CgroupFs *fs);
/* The one holding cpuset.cpus (v2: cpuset.cpus.effective). */
RootDir *cgroup_fs_cpuset_root(const CgroupFs *fs);
/* The membership file: "tasks" (v1) or "cgroup.threads" (v2): thread ids, one a line. */
const char *cgroup_fs_threads_file(const CgroupFs *fs);

/*
 * Thread ids, one a line (tasks, cgroup.threads, cgroup.procs). Returns -EINVAL on a line that is
 * not a positive number (a truncated last line without newline is taken as it stands).
 */
int cgroup_parse_tids(const char *s, pid_t **ret, size_t *ret_n);

/* "key value" lines; returns 0 and *ret when key is present, -ENOENT when it is not, -EINVAL when garbled. */
int cgroup_parse_keyed_u64(const char *s, const char *key, uint64_t *ret);

/*
 * Space-separated counters (cpuacct.usage_percpu), at most max of them. The kernel ends the list
 * with a newline: one without it was cut short. Returns the count, or -EINVAL (garbled, cut, more
 * than max, a value over 2^64 - 1).
 */
int cgroup_parse_u64_list(const char *s, uint64_t *ret, size_t max);

/* systemd's conversions: shares 2..262144, weight 1..10000. */
uint64_t cgroup_weight_to_shares(uint64_t weight);
uint64_t cgroup_shares_to_weight(uint64_t shares);
/*
 * The shares a read gives back after shares were written: themselves on v1; on v2 (cpu.weight,
 * CPUWeight=) the weight they convert to, as shares again (500 -> weight 48 -> 491). Compare a
 * planned value with a read one through this, or a value v2 cannot hold is written every round.
 */
uint64_t cgroup_shares_read_back(bool v2, uint64_t shares);

/*
 * Walks the groups at and below `top` in hierarchy r, parents first, calling cb(path, userdata) for
 * each. cb returns 0 to descend, 1 to skip the group's children, < 0 to stop (returned). A group
 * removed during the walk is skipped. Returns 0 or a negative errno (top unreadable).
 */
typedef int (*cgroup_walk_cb)(const char *path, void *userdata);
int cgroup_walk(const RootDir *r, const char *top, cgroup_walk_cb cb, void *userdata);

/*
 * The managed groups of hierarchy r: those under f->root that f selects (config_group_filter():
 * CgroupRoot's direct children by default; Groups= globs), of nested matches only the topmost,
 * sorted by path. *ret is a NULL-terminated vector.
 */
int cgroup_list_managed(const RootDir *r, const GroupFilter *f, char ***ret);
