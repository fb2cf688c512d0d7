/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sharing the node: which managed groups are owned elsewhere, and why. A group whose cpuset (or a
 * descendant's) someone set narrower than its parent's before peltd saw it; one with a file peltd
 * placed that someone else wrote while peltd ran (peltd yields it); one whose threads pin
 * themselves narrower than their cpuset. Such a group is never written. manager-groups.c and
 * manager.c call this file; it calls neither.
 */
#include <sched.h>
#include <stdarg.h>

#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/rootdir.h"

#include "manager-internal.h"

int cpuset_read(const RootDir *root, const char *group, const char *file, CpuMask *ret) {
        _cleanup_free_ char *path = cgroup_file_path(group, file);

        if (!path)
                return -ENOMEM;
        return rootdir_read_cpulist(root, path, ret);
}

int cpuset_read_effective(const RootDir *root, const char *group, const char *file, CpuMask *ret) {
        _cleanup_free_ char *g = strdup(group);
        int r;

        if (!g)
                return -ENOMEM;
        for (;;) {
                char *p;

                r = cpuset_read(root, g, file, ret);
                if (r != -ENOENT || streq(g, "/"))
                        return r;
                p = cgroup_parent_path(g);
                if (!p)
                        return -ENOMEM;
                free(g);
                g = p;
        }
}

bool manager_thread_pinned(Manager *m, const ManagedGroup *g, const char *cgroup, const CpuMask *affinity,
                           ThreadCpuset *cache) {
        CpuMask a, in = g->cpus;

        /*
         * A thread in a group below the managed one runs inside that group's cpuset: its affinity is
         * that set (or narrower, if it pinned itself). The last group read is kept: a group's
         * threads come one after another.
         */
        if (cgroup && !streq(cgroup, g->path)) {
                if (!cache->path || !streq(cache->path, cgroup)) {
                        RootDir *root = cgroup_fs_cpuset_root(m->fs);

                        free(cache->path);
                        cache->path = strdup(cgroup);
                        if (!cache->path)
                                return false;
                        cache->r = !root ? -ENOENT
                                : m->fs->mode == CGROUP_MODE_V2
                                ? cpuset_read_effective(root, cgroup, "cpuset.cpus.effective", &cache->cpus)
                                : cpuset_read(root, cgroup, "cpuset.cpus", &cache->cpus);
                }
                if (cache->r < 0)
                        return false; /* its cpuset unreadable (gone meanwhile): nothing to judge by */
                in = cache->cpus;
        }
        cpumask_and(&a, affinity, &m->topology->online);
        cpumask_and(&in, &in, &m->topology->online);
        return !cpumask_empty(&a) && cpumask_subset(&a, &in) && !cpumask_equal(&a, &in);
}

/* ---- Owned elsewhere -------------------------------------------------------------------------- */

/* g is owned elsewhere (why), by the owner its path names, else by "other" (or its threads). */
_printf_(3, 4) static void set_owned(ManagedGroup *g, OwnedWhy why, const char *format, ...) {
        GroupOwner o = group_owner_of_path(g->path);
        va_list ap;

        if (why == OWNED_AFFINITY)
                o = OWNER_AFFINITY;
        else if (o == OWNER_NONE)
                o = OWNER_OTHER;
        g->owner = o;
        g->owned_why = why;
        va_start(ap, format);
        vsnprintf(g->owner_reason, sizeof g->owner_reason, format, ap);
        va_end(ap);
}

static void clear_owned(ManagedGroup *g) {
        g->owner = OWNER_NONE;
        g->owned_why = OWNED_NOT;
        g->owner_reason[0] = '\0';
}

/* Whether peltd has a record of a group's cpuset: then the value it holds is peltd's. */
static bool cpus_recorded(const Manager *m, const char *path, const char *unit) {
        return originals_find(m->originals, "cpuset", path, "cpuset.cpus") ||
               originals_find(m->originals, "unified", path, "cpuset.cpus") ||
               (unit && originals_find(m->originals, "systemd", unit, "AllowedCPUs"));
}

/*
 * Whether a cpuset.cpus is a setting narrower than its parent's CPUs (online ones compared). An
 * empty one, what a new v1 group starts with (v2: "" is its parent's), is no setting yet.
 */
static bool set_narrower(const CpuMask *cpus, const CpuMask *parent, const CpuMask *online) {
        CpuMask c, p;

        if (cpumask_empty(cpus) || cpumask_empty(parent))
                return false;
        cpumask_and(&c, cpus, online);
        cpumask_and(&p, parent, online);
        return cpumask_subset(&c, &p) && !cpumask_equal(&c, &p);
}

/* The walk of a group's descendants for one whose cpuset was set narrower than its parent's. */
typedef struct NarrowWalk {
        const Manager *m;
        const char *top;
        char *found;                 /* the descendant */
        CpuMask cpus, parent;        /* its cpuset and its parent's */
} NarrowWalk;

static int narrow_cb(const char *path, void *userdata) {
        NarrowWalk *w = userdata;
        RootDir *root = cgroup_fs_cpuset_root(w->m->fs);
        bool v2 = w->m->fs->mode == CGROUP_MODE_V2;
        _cleanup_free_ char *parent = NULL;

        if (streq(path, w->top))
                return 0;
        parent = cgroup_parent_path(path);
        if (!parent)
                return -ENOMEM;
        if (cpuset_read(root, path, "cpuset.cpus", &w->cpus) < 0 ||
            (v2 ? cpuset_read_effective(root, parent, "cpuset.cpus.effective", &w->parent)
                : cpuset_read(root, parent, "cpuset.cpus", &w->parent)) < 0)
                return 0; /* gone meanwhile, or no cpuset of its own (v2): nothing set */
        if (!set_narrower(&w->cpus, &w->parent, &w->m->topology->online) || cpus_recorded(w->m, path, NULL))
                return 0;
        w->found = strdup(path);
        return w->found ? -ECANCELED : -ENOMEM;
}

/* Whether g's cpuset, or a descendant's, was set narrower than its parent's before peltd. */
static bool judge_set_before(Manager *m, ManagedGroup *g) {
        RootDir *root = cgroup_fs_cpuset_root(m->fs);
        NarrowWalk w = { .m = m, .top = g->path };
        char a[128], b[128];
        CpuMask own;

        if (!root || cpus_recorded(m, g->path, g->unit))
                return false;
        /* Its own file as set (v2: read_cpus() gave the effective set for an empty one). */
        if (cpuset_read(root, g->path, "cpuset.cpus", &own) >= 0 && g->has_allowed &&
            set_narrower(&own, &g->allowed, &m->topology->online)) {
                set_owned(g, OWNED_BEFORE, "cpuset %s set by someone else before peltd (parent %s)",
                          fmt_cpus(&own, a, sizeof a), fmt_cpus(&g->allowed, b, sizeof b));
                return true;
        }
        if (cgroup_walk(root, g->path, narrow_cb, &w) == -ECANCELED && w.found) {
                set_owned(g, OWNED_BEFORE, "its descendant %s has cpuset %s set by someone else before peltd (parent %s)",
                          w.found, fmt_cpus(&w.cpus, a, sizeof a), fmt_cpus(&w.parent, b, sizeof b));
                free(w.found);
                return true;
        }
        free(w.found);
        return false;
}

/* The walk of a group's threads (its own and its descendants') for one pinned narrower than its cpuset. */
typedef struct PinWalk {
        Manager *m;
        const ManagedGroup *g;
        ThreadCpuset cache;
        pid_t tid;                   /* the thread found, 0: none */
        CpuMask affinity;
} PinWalk;

static int pin_cb(const char *path, void *userdata) {
        PinWalk *w = userdata;
        _cleanup_free_ char *file = cgroup_file_path(path, cgroup_fs_threads_file(w->m->fs)), *text = NULL;
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (!file)
                return -ENOMEM;
        /* Gone meanwhile, or garbled: no thread of it to judge by. */
        if (rootdir_read_string(cgroup_fs_cpuset_root(w->m->fs), file, &text) < 0 || cgroup_parse_tids(text, &tids, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                cpumask_zero(&w->affinity);
                /* The kernel's mask is an array of longs, bit n for CPU n: a CpuMask's layout. */
                if (sched_getaffinity(tids[i], sizeof w->affinity.bits, (cpu_set_t *) w->affinity.bits) < 0)
                        continue; /* gone meanwhile */
                if (manager_thread_pinned(w->m, w->g, path, &w->affinity, &w->cache)) {
                        w->tid = tids[i];
                        return -ECANCELED;
                }
        }
        return 0;
}

/* Whether a thread of g (or of a descendant) pins itself narrower than its cpuset: then owned elsewhere. */
static bool judge_affinity(Manager *m, ManagedGroup *g) {
        RootDir *root = cgroup_fs_cpuset_root(m->fs);
        PinWalk w = { .m = m, .g = g, .cache = { .r = -ENOENT } };

        if (!root)
                return false;
        (void) cgroup_walk(root, g->path, pin_cb, &w);
        free(w.cache.path);
        if (w.tid == 0)
                return false;
        manager_owned_by_affinity(g, w.tid, &w.affinity);
        return true;
}

void manager_owned_by_affinity(ManagedGroup *g, pid_t tid, const CpuMask *affinity) {
        char a[128], b[128];

        if (g->owner != OWNER_NONE)
                return;
        set_owned(g, OWNED_AFFINITY, "its threads pin themselves narrower than its cpuset (thread %d on CPUs %s of %s)",
                  (int) tid, fmt_cpus(affinity, a, sizeof a), fmt_cpus(&g->cpus, b, sizeof b));
}

void manager_judge_owner(Manager *m, ManagedGroup *g) {
        const GroupConfig *c = config_find_group(m->config, g->path);

        if (!g->judge_owner)
                return;
        g->judge_owner = false;
        if (judge_set_before(m, g) && c && c->take_over == 1) {
                log_info("%s: %s; TakeOver=yes: placing it.", g->path, g->owner_reason);
                clear_owned(g);
        }
        if (g->owner == OWNER_NONE)
                (void) judge_affinity(m, g);
}

bool manager_owner_before_narrowing(Manager *m, ManagedGroup *g, const CpuMask *cpus) {
        if (g->owner != OWNER_NONE)
                return true;
        if (cpumask_subset(&g->cpus, cpus))
                return false; /* nothing taken from it */
        return judge_affinity(m, g);
}

/* ---- Written while peltd runs ----------------------------------------------------------------- */

void manager_yield(Manager *m, ManagedGroup *g, const PlacedFile *f, const char *cur, const char *written) {
        int r;

        log_notice("%s of %s was written by someone else (\"%s\", peltd wrote \"%s\"): it is theirs; %s is left alone "
                   "until it is made again or peltd reloads.",
                   f->file, f->group, cur, written, g->path);
        g->foreign_writes++;
        if (g->owned_why != OWNED_WRITTEN)
                set_owned(g, OWNED_WRITTEN, "%s of %s written by someone else (\"%s\", peltd wrote \"%s\")", f->file,
                          f->group, cur, written);
        /* What stays at a stop and at --restore is the other writer's value: peltd's record goes. */
        r = originals_drop(m->originals, f->hierarchy, f->group, f->file);
        if (r < 0)
                log_warning_errno(r, "Failed to drop the record of %s of %s: %m", f->file, f->group);
}

void manager_owners_commit(Manager *m) {
        int r;

        if (!originals_dirty(m->originals))
                return;
        r = originals_commit(m->originals);
        if (r < 0)
                log_warning_errno(r, "Failed to save %s without the records of yielded files (%m); a stop leaves "
                                  "the other writers' values all the same.", m->config->state_file);
}

void manager_owners_reload(Manager *m) {
        for (size_t i = 0; i < m->n_groups; i++) {
                ManagedGroup *g = &m->groups[i];

                if (g->owned_why == OWNED_WRITTEN) {
                        /* Taken back: what it holds now is its original when it is placed, as a new group's. */
                        log_info("Taking %s back (%s).", g->path, g->owner_reason);
                        m->histories[i] = (PolicyHistory){};
                        g->applied = false;
                } else
                        g->judge_owner = true;
                clear_owned(g);
                g->info_valid = false;
                g->affinity_checked = false;
                g->pinned_narrower = false;
        }
}

/* ---- The counts, for the log ------------------------------------------------------------------ */

const char *manager_fmt_owned(const Manager *m, char *buf, size_t size) {
        size_t n[_OWNER_MAX] = {}, total = 0, len;

        for (size_t i = 0; i < m->n_groups; i++)
                if (m->groups[i].owner > OWNER_NONE && m->groups[i].owner < _OWNER_MAX) {
                        n[m->groups[i].owner]++;
                        total++;
                }
        buf[0] = '\0';
        if (total == 0)
                return buf;
        len = (size_t) snprintf(buf, size, ", %zu owned elsewhere:", total);
        for (int o = OWNER_NONE + 1; o < _OWNER_MAX && len < size; o++)
                if (n[o] > 0)
                        len += (size_t) snprintf(buf + len, size - len, "%s %s %zu", len > 0 && buf[len - 1] == ':' ? "" : ",",
                                                 group_owner_to_string(o), n[o]);
        return buf;
}

void manager_say_owners(Manager *m) {
        size_t n[_OWNER_MAX] = {};
        char b[256];

        for (size_t i = 0; i < m->n_groups; i++)
                if (m->groups[i].owner > OWNER_NONE && m->groups[i].owner < _OWNER_MAX)
                        n[m->groups[i].owner]++;
        if (memcmp(n, m->n_owned_said, sizeof n) == 0)
                return;
        memcpy(m->n_owned_said, n, sizeof n);
        if (!m->running)
                return; /* the start line says them */
        manager_fmt_owned(m, b, sizeof b);
        log_info("%zu group%s managed%s.", m->n_groups, m->n_groups == 1 ? "" : "s", b[0] ? b : ", none owned elsewhere");
}
