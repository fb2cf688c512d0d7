/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-group acquisition: the managed list kept in line with the sampler's groups, each group's
 * cpusets (its own, its parent's, its memory nodes), what its threads say, and whether its
 * placement is written through systemd.
 */
#include <sched.h>

#include <systemd/sd-bus.h>

#include "peltd/apply-systemd.h"
#include "peltd/apply-values.h"
#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/rootdir.h"

#include "manager-internal.h"

void managed_group_done(ManagedGroup *g) {
        group_dirs_done(g);
        free(g->path);
        free(g->unit);
        free(g->last_intent);
        cg_retry_done(&g->retry);
        for (size_t i = 0; i < g->n_placed; i++)
                free(g->placed[i].group);
        free(g->placed);
}

ManagedGroup *manager_find_group(Manager *m, const char *path) {
        size_t lo = 0, hi = m->n_groups;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(m->groups[mid].path, path);

                if (c == 0)
                        return &m->groups[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The managed group a cgroup path belongs to: itself or its nearest managed ancestor. */
static ManagedGroup *group_of_path(Manager *m, const char *path) {
        char buf[4096];
        ManagedGroup *g;

        if (!path || !*path || strlen(path) >= sizeof buf)
                return NULL;
        strcpy(buf, path);
        for (;;) {
                char *slash;

                g = manager_find_group(m, buf);
                if (g)
                        return g;
                slash = strrchr(buf, '/');
                if (!slash || slash == buf)
                        return NULL;
                *slash = 0;
        }
}

/* The last parent cpuset read: siblings, next to each other in path order, share it. */
typedef struct ParentCpus {
        char *path;
        int r;
        CpuMask cpus;
} ParentCpus;

/* cpuset.cpus (v2: the effective set when empty or not there). */
static int read_cpus(Manager *m, ManagedGroup *g) {
        RootDir *root = cgroup_fs_cpuset_root(m->fs);
        bool v2 = m->fs->mode == CGROUP_MODE_V2;
        int r;

        if (!root)
                return -ENOENT;
        r = cpuset_read(root, g->path, "cpuset.cpus", &g->cpus);
        if (v2 && (r == -ENOENT || (r >= 0 && cpumask_empty(&g->cpus))))
                r = cpuset_read_effective(root, g->path, "cpuset.cpus.effective", &g->cpus);
        if (r < 0)
                log_debug_errno(r, "Failed to read the cpuset of %s: %m", g->path);
        return r;
}

/* What the group may hold: v1 keeps a child inside its parent's cpuset.cpus; v2 inside the parent's effective set. */
static int read_allowed(Manager *m, ManagedGroup *g, ParentCpus *pc) {
        RootDir *root = cgroup_fs_cpuset_root(m->fs);
        _cleanup_free_ char *parent = cgroup_parent_path(g->path);

        if (!parent)
                return -ENOMEM;
        if (!pc->path || !streq(pc->path, parent)) {
                if (m->fs->mode == CGROUP_MODE_V2)
                        pc->r = cpuset_read_effective(root, parent, "cpuset.cpus.effective", &pc->cpus);
                else
                        pc->r = cpuset_read(root, parent, "cpuset.cpus", &pc->cpus);
                free(pc->path);
                pc->path = TAKE_PTR(parent);
        }
        if (pc->r >= 0)
                g->allowed = pc->cpus;
        g->has_allowed = pc->r >= 0 && !cpumask_empty(&pc->cpus);
        return 0;
}

/* cpuset.cpus, the parent's (what the group may hold) and cpuset.mems. */
static void read_group_info(Manager *m, ManagedGroup *g, ParentCpus *pc) {
        RootDir *root = cgroup_fs_cpuset_root(m->fs);
        bool v2 = m->fs->mode == CGROUP_MODE_V2;
        CpuMask mems;
        int r;

        g->info_valid = false;
        if (read_cpus(m, g) < 0 || read_allowed(m, g, pc) < 0)
                return;
        if (v2)
                r = cpuset_read_effective(root, g->path, "cpuset.mems.effective", &mems);
        else
                r = cpuset_read(root, g->path, "cpuset.mems", &mems);
        g->has_mems = r >= 0 && !cpumask_empty(&mems);
        if (g->has_mems)
                g->mems = mems;
        g->info_valid = true;
        manager_judge_owner(m, g);
}

/* What a placed file holds now; a v1 group's own cpuset was read just before, into g->cpus. */
static int read_placed(Manager *m, const ManagedGroup *g, const PlacedFile *f, char **ret) {
        ApplyTarget t;

        if (placed_value_at(f->hierarchy, f->file, &t) == &placed_values[PLACED_CPUS] && t == APPLY_V1 &&
            streq(f->group, g->path)) {
                *ret = cpumask_to_list(&g->cpus);
                return *ret ? 0 : -ENOMEM;
        }
        return apply_backend_read_at(&m->io, f->hierarchy, f->group, f->file, ret);
}

/*
 * The drift check: the files peltd placed for g, read again. One that holds someone else's value
 * is theirs, and peltd yields the group (manager_yield()); what the kernel does is not someone
 * else's write (v1 drops a CPU going offline from every cpuset: peltd's value less offline CPUs).
 * Files no longer recorded are forgotten, those gone are dropped from the records too. Returns
 * whether peltd yielded a file.
 */
static bool check_drift(Manager *m, ManagedGroup *g) {
        size_t j = 0;
        bool yielded = false;

        for (size_t i = 0; i < g->n_placed; i++) {
                PlacedFile *f = &g->placed[i];
                const Original *e = originals_find(m->originals, f->hierarchy, f->group, f->file);
                _cleanup_free_ char *cur = NULL, *written = NULL;
                int r;

                if (!e) {
                        free(f->group);
                        continue;
                }
                r = read_placed(m, g, f, &cur);
                if (r == -ENOENT || r == -ENODEV) {
                        /* Gone (a descendant removed): nothing of it to restore. */
                        (void) originals_drop(m->originals, f->hierarchy, f->group, f->file);
                        free(f->group);
                        continue;
                }
                if (r < 0 || cg_holds_written(e->file, cur, e->written, &m->topology->online, true)) {
                        g->placed[j++] = *f;
                        continue;
                }
                written = strdup(e->written);
                if (!written) {
                        log_oom();
                        g->placed[j++] = *f;
                        continue;
                }
                manager_yield(m, g, f, cur, written);
                free(f->group);
                yielded = true;
        }
        g->n_placed = j;
        return yielded;
}

/* A task round: the group's cpuset and its parent's read again, and what peltd placed checked; whether it yielded. */
static bool refresh_group(Manager *m, ManagedGroup *g, ParentCpus *pc) {
        if (read_cpus(m, g) < 0 || read_allowed(m, g, pc) < 0) {
                g->info_valid = false;
                return false;
        }
        return check_drift(m, g);
}

/* Whether what a group's plan starts from differs from before: its sets and whether it has them. */
static bool info_differs(const ManagedGroup *a, const ManagedGroup *b) {
        return a->info_valid != b->info_valid || a->has_allowed != b->has_allowed || a->has_mems != b->has_mems ||
               !cpumask_equal(&a->cpus, &b->cpus) || !cpumask_equal(&a->allowed, &b->allowed) ||
               !cpumask_equal(&a->mems, &b->mems);
}

void manager_read_groups(Manager *m, bool task_round) {
        ParentCpus pc = {};
        bool yielded = false;

        for (size_t i = 0; i < m->n_groups; i++) {
                ManagedGroup *g = &m->groups[i];
                ManagedGroup before;

                if (g->info_valid && !task_round)
                        continue;
                before = *g;
                if (!g->info_valid)
                        read_group_info(m, g, &pc);
                else if (refresh_group(m, g, &pc))
                        yielded = true;
                /* The planner is left out while its inputs stay as they were: count a change. */
                if (info_differs(&before, g))
                        g->info_gen++;
        }
        free(pc.path);
        /* Yielded files' records are gone from the state file now, not at the next change. */
        if (yielded)
                manager_owners_commit(m);
}

/* Whether the group's cpuset is written through systemd (Backend=, DESIGN.md "cgroups"). */
void manager_resolve_target(Manager *m, ManagedGroup *g) {
        _cleanup_free_ char *unit = NULL, *cg = NULL;
        bool delegated = false;
        int r;

        if (g->target_known)
                return;
        g->target_known = true;
        g->target = m->fs->mode == CGROUP_MODE_V2 ? APPLY_V2 : APPLY_V1;
        /* Resolved again after a reload: the unit found before is not kept. */
        free(g->unit);
        g->unit = NULL;

        if (m->config->backend == BACKEND_CGROUPFS || m->fs->mode != CGROUP_MODE_V2)
                return;
        if (m->config->backend == BACKEND_AUTO && !systemd_is_init())
                return;
        if (!m->access.bus) {
                r = sd_bus_open_system(&m->access.bus);
                if (r < 0) {
                        log_warning_errno(r, "Failed to connect to the system bus, writing cgroup files directly: %m");
                        return;
                }
        }
        r = systemd_unit_for_cgroup(m->access.bus, g->path, &unit);
        if (r < 0) {
                log_info("%s belongs to no systemd unit; writing its cgroup files.", g->path);
                return;
        }
        r = systemd_unit_delegated(m->access.bus, unit, &delegated);
        if (r >= 0 && delegated) {
                log_info("%s (%s) is delegated; writing its cgroup files.", g->path, unit);
                return;
        }
        /*
         * systemd names the unit of the nearest ancestor for a cgroup below a unit's own: its
         * AllowedCPUs= would place the whole unit. systemd knows nothing of such a group.
         */
        r = systemd_unit_control_group(m->access.bus, unit, &cg);
        if (r >= 0 && !streq(cg, g->path)) {
                log_info("%s lies inside %s (%s), not a unit of its own; writing its cgroup files.", g->path, cg, unit);
                return;
        }
        g->target = APPLY_SYSTEMD;
        g->unit = TAKE_PTR(unit);
        log_info("%s is owned by %s: placing it through systemd.", g->path, g->unit);
}

/*
 * A group made again (a new directory at its path): the originals recorded for the old directory
 * belong to nothing now (saved with the round's records); the new one's are read afresh when it
 * is placed.
 */
static void forget_originals(Manager *m, const char *path) {
        for (size_t i = m->originals->n_entries; i > 0; i--) {
                const Original *o = &m->originals->entries[i - 1];
                int r;

                if (!streq(o->group, path))
                        continue;
                r = originals_drop(m->originals, o->hierarchy, o->group, o->file);
                if (r < 0)
                        log_warning_errno(r, "Failed to drop the recorded originals of %s: %m", path);
        }
}

/* Whether the sampler's groups are the managed ones, each the same directory (ids are never reused). */
static bool same_groups(const Manager *m, const SampledGroup *sg, size_t n) {
        if (n != m->n_groups)
                return false;
        for (size_t i = 0; i < n; i++)
                if (m->groups[i].id != sg[i].id)
                        return false;
        return true;
}

/* The Groups= patterns, space-separated ("" without any: then the children of CgroupRoot= are managed). */
static void fmt_globs(const Config *c, char *buf, size_t size) {
        size_t len = 0;

        buf[0] = '\0';
        for (char **g = c->groups; g && *g && len < size; g++)
                len += (size_t) snprintf(buf + len, size - len, "%s%s", g == c->groups ? "" : " ", *g);
}

/* Nothing under CgroupRoot= to manage (again: something is, after nothing was). */
static void say_unmatched(const Manager *m, bool again) {
        const RootDir *h = m->fs->mode == CGROUP_MODE_V2 ? m->fs->unified : m->fs->cpuset ? m->fs->cpuset : m->fs->cpu;
        const char *root = m->config->cgroup_root;
        char globs[512];

        fmt_globs(m->config, globs, sizeof globs);
        /* The sampler finds no group under a root that is not there (yet): that is the news then. */
        if (!again && h && !rootdir_is_dir(h, root))
                log_notice("CgroupRoot=%s is not there; managing nothing until it is.", root);
        else if (!again && globs[0])
                log_notice("Groups=%s matches nothing under CgroupRoot=%s; managing nothing until a group matches.", globs, root);
        else if (!again)
                log_notice("CgroupRoot=%s has no child groups; managing nothing until one is made.", root);
        else if (globs[0])
                log_info("Groups=%s matches again under CgroupRoot=%s: %zu group%s managed.", globs, root, m->n_groups,
                         m->n_groups == 1 ? "" : "s");
        else
                log_info("CgroupRoot=%s has child groups again: %zu group%s managed.", root, m->n_groups,
                         m->n_groups == 1 ? "" : "s");
}

/*
 * The count of managed groups, said when it changes once the daemon runs (the start line gives the
 * first); nothing matched under CgroupRoot= is said once, and its end with the new count.
 */
static void say_groups(Manager *m) {
        if (m->n_groups == 0 && !m->groups_unmatched) {
                say_unmatched(m, false);
                m->groups_unmatched = true;
        } else if (m->n_groups > 0 && m->groups_unmatched) {
                say_unmatched(m, true);
                m->groups_unmatched = false;
        } else if (m->running && m->n_groups > 0 && m->n_groups != m->n_groups_said)
                log_info("%zu group%s managed.", m->n_groups, m->n_groups == 1 ? "" : "s");
        if (m->running)
                m->n_groups_said = m->n_groups;
}

/* The managed list as a sync makes it: the groups kept or found, and those no longer found. */
typedef struct GroupSync {
        ManagedGroup *groups;
        PolicyHistory *histories;
        bool *fresh;                 /* found this sync (not an existing group) */
        size_t n;
        ManagedGroup *gone;
        PolicyHistory *gone_histories;
        size_t n_gone;
} GroupSync;

static void group_sync_free(GroupSync *s) {
        for (size_t x = 0; x < s->n; x++)
                managed_group_done(&s->groups[x]);
        for (size_t x = 0; x < s->n_gone; x++)
                managed_group_done(&s->gone[x]);
        free(s->groups);
        free(s->histories);
        free(s->fresh);
        free(s->gone);
        free(s->gone_histories);
}

/* Whether a new group was found at path: a new directory where a managed one was (said here, not as new). */
static bool made_again(GroupSync *s, const char *path) {
        for (size_t y = 0; y < s->n; y++)
                if (s->fresh[y] && streq(s->groups[y].path, path)) {
                        s->fresh[y] = false;
                        return true;
                }
        return false;
}

/*
 * A group no longer found at its path is gone, or renamed: a group found this sync at another path
 * with its directory takes it over (manager_take_renamed()). The rest are said and freed, and the
 * new ones said.
 */
static void settle_gone(Manager *m, GroupSync *s) {
        for (size_t x = 0; x < s->n_gone; x++) {
                for (size_t y = 0; y < s->n && s->gone[x].path; y++)
                        if (s->fresh[y] && manager_take_renamed(m, &s->gone[x], &s->gone_histories[x], &s->groups[y],
                                                                &s->histories[y]))
                                s->fresh[y] = false;
                if (s->gone[x].path && made_again(s, s->gone[x].path)) {
                        log_info("%s was made again; managing the new group afresh.", s->gone[x].path);
                        forget_originals(m, s->gone[x].path);
                } else if (s->gone[x].path)
                        log_info("%s is gone or no longer managed.", s->gone[x].path);
                managed_group_done(&s->gone[x]);
        }
        s->n_gone = 0;
        for (size_t y = 0; y < s->n; y++)
                if (s->fresh[y])
                        log_info("Managing %s.", s->groups[y].path);
}

static void keep_gone(Manager *m, GroupSync *s, size_t i) {
        s->gone_histories[s->n_gone] = m->histories[i];
        s->gone[s->n_gone++] = m->groups[i];
}

/* The new managed list: existing groups matched by path and directory, the others gone or new. */
static int group_sync_build(Manager *m, const SampledGroup *sg, size_t n, GroupSync *s) {
        size_t i = 0, j = 0;

        while (j < n) {
                int c = i < m->n_groups ? strcmp(m->groups[i].path, sg[j].path) : 1;

                if (c < 0) {
                        keep_gone(m, s, i++);
                        continue;
                }
                if (c == 0 && m->groups[i].id != sg[j].id) {
                        /* A new directory at its path: the old one is gone, or renamed (settle_gone()). */
                        keep_gone(m, s, i++);
                        c = 1;
                }
                if (c == 0) {
                        s->histories[s->n] = m->histories[i];
                        s->groups[s->n] = m->groups[i++];
                } else {
                        s->groups[s->n] = (ManagedGroup){ .path = strdup(sg[j].path), .id = sg[j].id, .judge_owner = true };
                        if (!s->groups[s->n].path)
                                return -ENOMEM;
                        s->fresh[s->n] = true;
                        manager_note_dirs(m, &s->groups[s->n]);
                }
                s->n++;
                j++;
        }
        while (i < m->n_groups)
                keep_gone(m, s, i++);
        return 0;
}

/* Brings the managed list in line with the sampler's groups (both sorted by path). */
int manager_sync_groups(Manager *m, const SampledGroup *sg, size_t n) {
        GroupSync s = {};
        int r;

        /* Most rounds: nothing came or went (a group is some kilobytes; a thousand are not copied each round). */
        if (same_groups(m, sg, n)) {
                if (n == 0)
                        say_groups(m); /* at start, with none */
                return 0;
        }
        s.groups = new0(ManagedGroup, MAX(n, 1u));
        s.histories = new0(PolicyHistory, MAX(n, 1u));
        s.fresh = new0(bool, MAX(n, 1u));
        s.gone = new0(ManagedGroup, MAX(m->n_groups, 1u));
        s.gone_histories = new0(PolicyHistory, MAX(m->n_groups, 1u));
        if (!s.groups || !s.histories || !s.fresh || !s.gone || !s.gone_histories) {
                group_sync_free(&s);
                return -ENOMEM;
        }
        r = group_sync_build(m, sg, n, &s);
        if (r < 0) {
                /* The groups taken from the managed list go back to it: only the new ones are freed. */
                for (size_t x = 0; x < s.n; x++)
                        if (!s.fresh[x])
                                s.groups[x] = (ManagedGroup){};
                s.n_gone = 0;
                group_sync_free(&s);
                return r;
        }
        settle_gone(m, &s);
        free(m->groups);
        free(m->histories);
        m->groups = TAKE_PTR(s.groups);
        m->histories = TAKE_PTR(s.histories);
        m->n_groups = s.n;
        s.n = 0;
        group_sync_free(&s);
        say_groups(m);
        return 0;
}

/* What a group's threads say: how many, the biggest, how long they run per timeslice, pinning. */
void manager_collect_threads(Manager *m) {
        SampledThread *t = NULL;
        size_t n = sampling_threads(m->sampling, &t);
        _cleanup_free_ double *num = new0(double, MAX(m->n_groups, 1u)), *den = new0(double, MAX(m->n_groups, 1u));
        /* Threads pin themselves rarely: affinity is read for new groups and every tenth task round. */
        bool all_affinities = m->task_rounds++ % 10 == 0;
        ThreadCpuset cache = { .r = -ENOENT };

        for (size_t i = 0; i < m->n_groups; i++) {
                ManagedGroup *g = &m->groups[i];

                g->nr_threads = 0;
                g->max_task_util = 0;
                if (all_affinities || !g->affinity_checked) {
                        g->pinned_narrower = false;
                        g->affinity_checked = false;
                }
        }
        for (size_t i = 0; t && num && den && i < n; i++) {
                ManagedGroup *g = group_of_path(m, t[i].cgroup);
                size_t gi;
                double u = (double) t[i].v.util_avg;

                if (!g)
                        continue;
                gi = (size_t) (g - m->groups);
                g->nr_threads++;
                g->max_task_util = MAX(g->max_task_util, u);
                if (t[i].avg_slice_ns > 0) {
                        /* Weighted by util: the threads that run decide what the group's bursts look like. */
                        num[gi] += (u + 1) * (double) t[i].avg_slice_ns / 1000.0;
                        den[gi] += u + 1;
                }
                /*
                 * A thread that pinned itself narrower than its cpuset (sched_setaffinity): leave the
                 * group alone. The kernel's mask is an array of longs, bit n for CPU n: the layout of
                 * a CpuMask, so it is read straight into one (one syscall a thread, no bit loop).
                 */
                if (g->info_valid && !g->affinity_checked && !g->pinned_narrower) {
                        CpuMask a;

                        cpumask_zero(&a);
                        if (sched_getaffinity(t[i].tid, sizeof a.bits, (cpu_set_t *) a.bits) < 0)
                                continue;
                        if (manager_thread_pinned(m, g, t[i].cgroup, &a, &cache)) {
                                g->pinned_narrower = true;
                                manager_owned_by_affinity(g, t[i].tid, &a);
                        }
                }
        }
        free(cache.path);
        for (size_t i = 0; num && den && i < m->n_groups; i++) {
                m->groups[i].avg_slice_usec = den[i] > 0 ? (usec_t) (num[i] / den[i]) : 0;
                if (m->groups[i].info_valid)
                        m->groups[i].affinity_checked = true;
        }
}
