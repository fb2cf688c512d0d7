/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPUs that groups peltd does not manage hold exclusively: on cgroup v1 a cpuset with
 * cpuset.cpu_exclusive 1 holds its cpuset.cpus; on v2 a partition (cpuset.cpus.partition "root" or
 * "isolated") holds its cpuset.cpus.effective. Such a group holds its CPUs only against groups
 * outside its own subtree: the hierarchy root, CgroupRoot and their ancestors, and the ancestors of
 * managed groups never count (the v1 root cpuset is always exclusive), nor do managed groups and
 * what lies below them. What they hold is m->held_by[OWNER_PARTITION]; m->held, the union of every
 * owner's, is in no set planned.
 *
 * The cost: one small file read per group looked at, a second one only for a group that holds
 * CPUs, and the directory listed only of a group whose children are looked at. On v1 that is
 * little: a cpuset is exclusive only inside an exclusive parent (the kernel refuses anything else),
 * so the children of a cpuset that is not exclusive are never looked at. On v2 it is every group
 * with the cpuset controller: since Linux 6.7 a partition may lie below groups that are not
 * partitions.
 */
#include <dirent.h>
#include <inttypes.h>

#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/rootdir.h"

#include "manager-internal.h"

/* At task rounds the walk runs at most this often: partitions are set up rarely, by hand or at boot. */
#define HELD_WALK_INTERVAL_USEC (10 * USEC_PER_SEC)

typedef struct HeldWalk {
        Manager *m;
        const RootDir *root;
        bool v2;
        CpuMask held;
        unsigned n_visited;          /* groups looked at */
        char holders[256];           /* the groups that hold CPUs, for the log line; cut with "..." */
} HeldWalk;

/*
 * Whether a group's CPUs are those of a subtree peltd places in: it is the hierarchy root,
 * CgroupRoot or an ancestor of it, or an ancestor of a managed group.
 */
static bool encloses_managed(const Manager *m, const char *path) {
        if (cgroup_path_under(m->config->cgroup_root, path))
                return true;
        for (size_t i = 0; i < m->n_groups; i++)
                if (cgroup_path_under(m->groups[i].path, path))
                        return true;
        return false;
}

static void note_holder(HeldWalk *w, const char *path) {
        size_t l = strlen(w->holders);

        if (l + strlen(path) + 6 >= sizeof w->holders) {
                if (l > 0 && !strstr(w->holders, "..."))
                        snprintf(w->holders + l, sizeof w->holders - l, ", ...");
                return;
        }
        snprintf(w->holders + l, sizeof w->holders - l, "%s%s", l > 0 ? ", " : "", path);
}

/* Whether the group holds CPUs (v1: cpu_exclusive; v2: a valid partition). 0 or a negative errno. */
static int holds_cpus(const HeldWalk *w, const char *path, bool *ret) {
        _cleanup_free_ char *file = cgroup_file_path(path, w->v2 ? "cpuset.cpus.partition" : "cpuset.cpu_exclusive");
        _cleanup_free_ char *s = NULL;
        int r, v;

        if (!file)
                return -ENOMEM;
        if (!w->v2) {
                r = rootdir_read_int(w->root, file, &v);
                if (r >= 0)
                        *ret = v != 0;
                return r;
        }
        r = rootdir_read_string(w->root, file, &s);
        if (r >= 0)
                /* "root invalid (...)" and "isolated invalid (...)" hold nothing. */
                *ret = streq(s, "root") || streq(s, "isolated");
        return r;
}

/*
 * One group of the walk: 0 to look at its children, 1 not to, or -ENOMEM. A group that cannot be
 * read is gone (removed during the walk) or, on v2, has no cpuset controller: neither have its
 * children.
 */
static int held_visit(HeldWalk *w, const char *path) {
        _cleanup_free_ char *file = NULL;
        bool holds = false;
        CpuMask cpus;
        int r;

        w->n_visited++;
        if (manager_find_group(w->m, path))
                return 1; /* peltd's, with everything below it */
        r = holds_cpus(w, path, &holds);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (r != -ENOENT)
                        log_debug_errno(r, "Failed to read whether %s holds CPUs (%m), ignoring it and its children.", path);
                return 1;
        }
        if (!holds)
                /* v1: a cpuset not exclusive has no exclusive child. v2: one may lie below (6.7's remote partitions). */
                return w->v2 ? 0 : 1;
        if (encloses_managed(w->m, path))
                return 0;

        file = cgroup_file_path(path, w->v2 ? "cpuset.cpus.effective" : "cpuset.cpus");
        if (!file)
                return -ENOMEM;
        r = rootdir_read_cpulist(w->root, file, &cpus);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_debug_errno(r, "Failed to read the CPUs %s holds (%m), ignoring it.", path);
                return 1;
        }
        if (!cpumask_empty(&cpus)) {
                cpumask_or(&w->held, &w->held, &cpus);
                note_holder(w, path);
        }
        return 1; /* its children hold CPUs inside its own */
}

/*
 * The children of path, each looked at (held_visit()) and walked into where it says so. Only the
 * directories walked into are listed: on v1 a look at a group that holds nothing is one read.
 */
static int held_walk(HeldWalk *w, const char *path) {
        _cleanup_free_ char *rel = cgroup_file_path(path, "");
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        if (!rel)
                return -ENOMEM;
        r = rootdir_opendir(w->root, *rel ? rel : ".", &d);
        if (r < 0)
                /* Removed since its parent was listed: nothing below it; the top itself must be there. */
                return streq(path, "/") ? r : 0;
        while ((de = readdir(d))) {
                _cleanup_free_ char *child = NULL;

                if (de->d_type != DT_DIR || dot_or_dot_dot(de->d_name))
                        continue;
                child = cgroup_child_path(path, de->d_name);
                if (!child)
                        return -ENOMEM;
                r = held_visit(w, child);
                if (r == 0)
                        r = held_walk(w, child);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool manager_held_union(Manager *m) {
        CpuMask all;

        cpumask_zero(&all);
        for (int o = 0; o < _OWNER_MAX; o++)
                cpumask_or(&all, &all, &m->held_by[o]);
        if (cpumask_equal(&all, &m->held))
                return false;
        m->held = all;
        return true;
}

/* The walk's result made the partitions' held CPUs: said when they change. Returns whether m->held changed. */
static bool held_set(Manager *m, const HeldWalk *w) {
        CpuMask *mine = &m->held_by[OWNER_PARTITION];
        char now[128], before[128];

        if (cpumask_equal(mine, &w->held))
                return false;
        if (cpumask_empty(&w->held))
                log_info("No partition or exclusive cpuset holds CPUs any more (they held %s).", fmt_cpus(mine, before, sizeof before));
        else
                log_info("CPUs held by partitions or exclusive cpusets: %s (%s; before: %s): placing nothing there.",
                         fmt_cpus(&w->held, now, sizeof now), w->holders, fmt_cpus(mine, before, sizeof before));
        *mine = w->held;
        return manager_held_union(m);
}

bool manager_refresh_held(Manager *m, bool force) {
        RootDir *root = m->fs ? cgroup_fs_cpuset_root(m->fs) : NULL;
        usec_t start = now_usec(CLOCK_MONOTONIC), cpu0 = now_usec(CLOCK_THREAD_CPUTIME_ID);
        HeldWalk w = { .m = m, .root = root, .v2 = m->fs && m->fs->mode == CGROUP_MODE_V2 };
        int r;

        if (!force && m->held_walk_usec > 0 && start - m->held_walk_usec < HELD_WALK_INTERVAL_USEC)
                return false;
        m->held_walk_usec = start;
        cpumask_zero(&w.held);
        if (!root)
                return held_set(m, &w); /* no cpuset hierarchy: nothing is held */
        r = held_walk(&w, "/"); /* the hierarchy root is always exclusive (v1), a partition (v2): never counted */
        if (r < 0) {
                if (r != m->held_error)
                        log_warning_errno(r, "Failed to look for CPUs held by partitions or exclusive cpusets (%m); "
                                          "keeping the CPUs held before.");
                m->held_error = r;
                return false;
        }
        m->held_error = 0;
        log_debug("Looked for held CPUs in %u groups in %" PRIu64 " µs (%" PRIu64 " µs of CPU).", w.n_visited,
                  now_usec(CLOCK_MONOTONIC) - start, now_usec(CLOCK_THREAD_CPUTIME_ID) - cpu0);
        return held_set(m, &w);
}
