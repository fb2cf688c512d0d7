/* SPDX-License-Identifier: GPL-2.0-only */
#include <sched.h>
#include <signal.h>
#include <time.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "peltd/apply-cgroup.h"
#include "peltd/apply-systemd.h"
#include "peltd/cgroup-util.h"
#include "peltd/config.h"
#include "peltd/energy.h"
#include "peltd/hotplug.h"
#include "peltd/log.h"
#include "peltd/manager.h"
#include "peltd/originals.h"
#include "peltd/policy.h"
#include "peltd/sampling.h"
#include "peltd/topology.h"

/* What the daemon keeps about one managed group between rounds. */
typedef struct ManagedGroup {
        char *path;
        PolicyHistory history;

        /* Read at task rounds and after each change. */
        bool info_valid;
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

        char *last_intent;           /* the change last logged as intended (dry run, failures) */
} ManagedGroup;

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

        Sampling *sampling;
        bool task_tracking;

        ManagedGroup *groups;        /* sorted by path */
        size_t n_groups;
        unsigned task_rounds;
        int sample_error;            /* the last round's sampling error, said once until it changes */

        unsigned n_changes;
        char last_change[512];
};

static void managed_group_done(ManagedGroup *g) {
        free(g->path);
        free(g->unit);
        free(g->last_intent);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->group_timer);
        sd_event_source_disable_unref(m->task_timer);
        sd_event_source_disable_unref(m->hotplug_source);
        sd_event_unref(m->event);
        sampling_free(m->sampling);
        for (size_t i = 0; i < m->n_groups; i++)
                managed_group_done(&m->groups[i]);
        free(m->groups);
        originals_free(m->originals);
        if (m->lock_fd >= 0)
                close(m->lock_fd);
        sd_bus_flush_close_unref(m->access.bus);
        cgroup_fs_free(m->fs);
        energy_model_free(m->energy_model);
        topology_free(m->topology);
        free(m->capacity);
        rootdir_free(m->proc);
        rootdir_free(m->sysfs);
        config_free(m->config);
        free(m);
        return NULL;
}

/* ---- Helpers ---------------------------------------------------------------------------------- */

static const char *fmt_cpus(const CpuMask *m, char *buf, size_t size) {
        cpumask_format(m, buf, size);
        return buf[0] ? buf : "(none)";
}

static void notify_status(Manager *m) {
        (void) sd_notifyf(false, "STATUS=Policy %s%s; %zu groups managed; %u changes%s%s", policy_to_string(m->policy),
                          m->dry_run ? " (dry run)" : "", m->n_groups, m->n_changes,
                          m->last_change[0] ? "; last: " : "", m->last_change);
}

/* TaskTracking=auto: per-thread figures where a policy uses them (burst length, biggest task). */
static bool want_task_tracking(const Manager *m) {
        switch (m->config->task_tracking) {
        case TASK_TRACKING_YES:
                return true;
        case TASK_TRACKING_NO:
                return false;
        case TASK_TRACKING_AUTO:
                break;
        }
        if (m->policy == POLICY_BALANCED || (m->topology && m->topology->asymmetric))
                return true;
        for (size_t i = 0; i < m->config->n_group_configs; i++)
                if (m->config->group_configs[i].policy == POLICY_BALANCED)
                        return true;
        return false;
}

/* What the command line and the configuration decide: the policy, dry run, thread tracking. */
static void apply_settings(Manager *m) {
        m->policy = m->args.policy ? policy_from_string(m->args.policy) : m->config->policy;
        m->dry_run = m->args.dry_run || m->config->dry_run;
        m->task_tracking = want_task_tracking(m);
}

static void update_capacities(Manager *m) {
        for (int cpu = 0; cpu < CPUMASK_MAX; cpu++) {
                const TopoCpu *c = topology_cpu(m->topology, cpu);

                m->capacity[cpu] = c ? c->capacity : CAPACITY_SCALE;
        }
}

static size_t capacity_entries(const Manager *m) {
        return (size_t) MAX(cpumask_last(&m->topology->online) + 1, 1);
}

/* ---- Restoring -------------------------------------------------------------------------------- */

static int restore_all(Manager *m, const char *why) {
        int r;

        if (m->originals->n_entries == 0)
                return 0;
        log_info("Restoring %zu recorded original values (%s)%s.", m->originals->n_entries, why,
                 m->dry_run ? "; dry run: only saying what would be restored" : "");
        r = cg_restore(&m->io, m->originals, &m->topology->online, m->dry_run);
        if (r < 0)
                return log_error_errno(r, "Failed to restore the original values: %m");
        if (r > 0)
                log_error("%d original values could not be restored; they stay recorded in %s.", r, m->config->state_file);
        return r;
}

/* ---- Per-group information -------------------------------------------------------------------- */

static ManagedGroup *find_group(Manager *m, const char *path) {
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

                g = find_group(m, buf);
                if (g)
                        return g;
                slash = strrchr(buf, '/');
                if (!slash || slash == buf)
                        return NULL;
                *slash = 0;
        }
}

static int read_mask(const RootDir *root, const char *group, const char *file, CpuMask *ret) {
        _cleanup_free_ char *path = cgroup_file_path(group, file);

        if (!path)
                return -ENOMEM;
        return rootdir_read_cpulist(root, path, ret);
}

/*
 * v2: a group whose parent does not pass the cpuset controller on has no cpuset files (peltd enables
 * it when it places the group); it runs on the effective set of its nearest ancestor that has one.
 */
static int read_effective(const RootDir *root, const char *group, const char *file, CpuMask *ret) {
        _cleanup_free_ char *g = strdup(group);
        int r;

        if (!g)
                return -ENOMEM;
        for (;;) {
                char *p;

                r = read_mask(root, g, file, ret);
                if (r != -ENOENT || streq(g, "/"))
                        return r;
                p = cgroup_parent_path(g);
                if (!p)
                        return -ENOMEM;
                free(g);
                g = p;
        }
}

/* The last parent cpuset read: siblings, next to each other in path order, share it. */
typedef struct ParentCpus {
        char *path;
        int r;
        CpuMask cpus;
} ParentCpus;

/* cpuset.cpus, the parent's (what the group may hold) and cpuset.mems. */
static void read_group_info(Manager *m, ManagedGroup *g, ParentCpus *pc) {
        RootDir *root = cgroup_fs_cpuset_root(m->fs);
        _cleanup_free_ char *parent = cgroup_parent_path(g->path);
        bool v2 = m->fs->mode == CGROUP_MODE_V2;
        CpuMask mems;
        int r;

        g->info_valid = false;
        if (!root || !parent)
                return;

        r = read_mask(root, g->path, "cpuset.cpus", &g->cpus);
        if (v2 && (r == -ENOENT || (r >= 0 && cpumask_empty(&g->cpus))))
                r = read_effective(root, g->path, "cpuset.cpus.effective", &g->cpus);
        if (r < 0) {
                log_debug_errno(r, "Failed to read the cpuset of %s: %m", g->path);
                return;
        }
        /* v1 keeps a child inside its parent's cpuset.cpus; v2 inside the parent's effective set. */
        if (!pc->path || !streq(pc->path, parent)) {
                if (v2)
                        pc->r = read_effective(root, parent, "cpuset.cpus.effective", &pc->cpus);
                else
                        pc->r = read_mask(root, parent, "cpuset.cpus", &pc->cpus);
                free(pc->path);
                pc->path = TAKE_PTR(parent);
        }
        if (pc->r >= 0)
                g->allowed = pc->cpus;
        g->has_allowed = pc->r >= 0 && !cpumask_empty(&pc->cpus);
        if (v2)
                r = read_effective(root, g->path, "cpuset.mems.effective", &mems);
        else
                r = read_mask(root, g->path, "cpuset.mems", &mems);
        g->has_mems = r >= 0 && !cpumask_empty(&mems);
        if (g->has_mems)
                g->mems = mems;
        g->info_valid = true;
}

/* Whether the group's cpuset is written through systemd (Backend=, DESIGN.md "cgroups"). */
static void resolve_target(Manager *m, ManagedGroup *g) {
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

/* Brings the managed list in line with the sampler's groups (both sorted by path). */
static int sync_groups(Manager *m, const SampledGroup *sg, size_t n) {
        ManagedGroup *ng;
        size_t i = 0, j = 0, k = 0;

        ng = new0(ManagedGroup, MAX(n, 1u));
        if (!ng)
                return -ENOMEM;
        while (j < n) {
                int c = i < m->n_groups ? strcmp(m->groups[i].path, sg[j].path) : 1;

                if (c < 0) {
                        log_info("%s is gone or no longer managed.", m->groups[i].path);
                        managed_group_done(&m->groups[i++]);
                        continue;
                }
                if (c == 0) {
                        ng[k] = m->groups[i++];
                } else {
                        ng[k] = (ManagedGroup){ .path = strdup(sg[j].path) };
                        if (!ng[k].path) {
                                for (size_t x = 0; x < k; x++)
                                        managed_group_done(&ng[x]);
                                free(ng);
                                return -ENOMEM;
                        }
                        log_info("Managing %s.", sg[j].path);
                }
                k++;
                j++;
        }
        for (; i < m->n_groups; i++) {
                log_info("%s is gone or no longer managed.", m->groups[i].path);
                managed_group_done(&m->groups[i]);
        }
        free(m->groups);
        m->groups = ng;
        m->n_groups = k;
        return 0;
}

/* What a group's threads say: how many, the biggest, how long they run per timeslice, pinning. */
static void collect_threads(Manager *m) {
        SampledThread *t = NULL;
        size_t n = sampling_threads(m->sampling, &t);
        _cleanup_free_ double *num = new0(double, MAX(m->n_groups, 1u)), *den = new0(double, MAX(m->n_groups, 1u));
        /* Threads pin themselves rarely: affinity is read for new groups and every tenth task round. */
        bool all_affinities = m->task_rounds++ % 10 == 0;

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
                        CpuMask a, in;

                        cpumask_zero(&a);
                        if (sched_getaffinity(t[i].tid, sizeof a.bits, (cpu_set_t *) a.bits) < 0)
                                continue;
                        cpumask_and(&a, &a, &m->topology->online);
                        cpumask_and(&in, &g->cpus, &m->topology->online);
                        if (!cpumask_empty(&a) && cpumask_subset(&a, &in) && !cpumask_equal(&a, &in))
                                g->pinned_narrower = true;
                }
        }
        for (size_t i = 0; num && den && i < m->n_groups; i++) {
                m->groups[i].avg_slice_usec = den[i] > 0 ? (usec_t) (num[i] / den[i]) : 0;
                if (m->groups[i].info_valid)
                        m->groups[i].affinity_checked = true;
        }
}

/* ---- Applying --------------------------------------------------------------------------------- */

static void log_change(Manager *m, ManagedGroup *g, const PolicyResult *res, const CpuMask *old_cpus,
                       uint64_t old_shares, bool shares_changed) {
        char oldb[128], newb[128], demand[32], shares[64], f_group[4200], f_cpus[160], f_old[160], f_policy[64],
                f_demand[64], f_shares[64], f_reason[POLICY_REASON_MAX + 32];
        const char *fields[] = { f_group, f_cpus, f_old, f_policy, f_demand, f_shares, f_reason, NULL };
        char tbuf[32];
        time_t now = time(NULL);
        struct tm tm;

        fmt_cpus(old_cpus, oldb, sizeof oldb);
        if (cpumask_empty(old_cpus))
                strcpy(oldb, "(none)");
        fmt_cpus(&res->cpus, newb, sizeof newb);
        snprintf(demand, sizeof demand, "%.2f", res->demand / 1024.0);
        if (shares_changed)
                snprintf(shares, sizeof shares, ", shares %" PRIu64 " -> %" PRIu64, old_shares, res->shares);
        else
                shares[0] = 0;

        snprintf(f_group, sizeof f_group, "PELTD_GROUP=%s", g->path);
        snprintf(f_cpus, sizeof f_cpus, "PELTD_CPUS=%s", newb);
        snprintf(f_old, sizeof f_old, "PELTD_OLD_CPUS=%s", oldb);
        snprintf(f_policy, sizeof f_policy, "PELTD_POLICY=%s", strna(policy_to_string(res->policy)));
        snprintf(f_demand, sizeof f_demand, "PELTD_DEMAND=%s", demand);
        snprintf(f_shares, sizeof f_shares, "PELTD_SHARES=%" PRIu64, res->shares);
        snprintf(f_reason, sizeof f_reason, "PELTD_REASON=%s", res->reason);

        log_struct(LOG_INFO, fields, "%s: CPUs %s -> %s%s (%s, demand %s CPUs): %s", g->path, oldb, newb, shares,
                   strna(policy_to_string(res->policy)), demand, res->reason);

        m->n_changes++;
        localtime_r(&now, &tm);
        strftime(tbuf, sizeof tbuf, "%H:%M:%S", &tm);
        snprintf(m->last_change, sizeof m->last_change, "%s %.200s %s -> %s", tbuf, g->path, oldb, newb);
}

static int apply_group(Manager *m, ManagedGroup *g, const PolicyResult *res, uint64_t cur_shares) {
        Placement p = { .group = g->path, .cpus = res->cpus, .shares = res->shares_set ? res->shares : 0 };
        bool cpus_differ, shares_differ;
        CgWrite *w = NULL;
        size_t n = 0;
        CpuMask old = g->cpus;
        int r;

        cpus_differ = !cpumask_equal(&res->cpus, &g->cpus);
        shares_differ = res->shares_set && res->shares != cur_shares;
        if (!cpus_differ && !shares_differ) {
                free(g->last_intent);
                g->last_intent = NULL;
                return 0;
        }

        resolve_target(m, g);
        p.target = g->target;
        p.unit = g->unit;
        r = placement_writes(&m->io, m->originals, &p, &w, &n);
        if (r < 0)
                return log_warning_errno(r, "Failed to prepare the placement of %s: %m", g->path);

        r = cg_write_batch(&m->io, m->originals, w, n, m->dry_run);
        if (r == -ENOENT || r == -ENODEV) {
                log_debug("%s vanished while being placed.", g->path);
                cg_writes_free(w, n);
                return 0;
        }

        /* Say an intended change (or a refusal) once, not every round. */
        {
                char cpus[128], intent[192];

                snprintf(intent, sizeof intent, "%s/%" PRIu64 "/%d", fmt_cpus(&res->cpus, cpus, sizeof cpus), p.shares, r);
                if (m->dry_run || r < 0) {
                        if (g->last_intent && streq(g->last_intent, intent)) {
                                cg_writes_free(w, n);
                                return 0;
                        }
                        free(g->last_intent);
                        g->last_intent = strdup(intent);
                }
        }

        if (r < 0) {
                log_warning_errno(r, "Failed to place %s on CPUs %s: %m; left as it was.", g->path,
                                  fmt_cpus(&res->cpus, (char[128]){}, 128));
                cg_writes_free(w, n);
                return 0;
        }

        if (m->dry_run) {
                char demand[32];

                snprintf(demand, sizeof demand, "%.2f", res->demand / 1024.0);
                for (size_t i = 0; i < n; i++)
                        if (w[i].changed)
                                log_info("Would set %s of %s to %s: %s, demand %s CPUs: %s", w[i].file, w[i].group,
                                         w[i].value, strna(policy_to_string(res->policy)), demand, res->reason);
        } else {
                g->cpus = res->cpus;
                log_change(m, g, res, &old, cur_shares, shares_differ);
                notify_status(m);
        }
        cg_writes_free(w, n);
        return 0;
}

/* ---- Rounds ----------------------------------------------------------------------------------- */

static int refresh_topology(Manager *m) {
        int r = topology_refresh(&m->topology, m->sysfs);

        if (r <= 0) {
                if (r < 0)
                        log_warning_errno(r, "Failed to re-read the CPU topology: %m");
                return r;
        }
        update_capacities(m);
        {
                char b[128];

                log_info("CPU topology changed: online CPUs now %s.", fmt_cpus(&m->topology->online, b, sizeof b));
        }
        /* Cpusets changed under us (v1 drops offline CPUs): read every group's again. */
        for (size_t i = 0; i < m->n_groups; i++)
                m->groups[i].info_valid = false;
        return 1;
}

static int plan_and_apply(Manager *m, bool task_round) {
        _cleanup_free_ PolicyGroup *pg = NULL;
        _cleanup_free_ PolicyResult *res = NULL;
        _cleanup_free_ PolicyHistory *hist = NULL;
        _cleanup_free_ ManagedGroup **owner = NULL;
        SampledGroup *sg = NULL;
        size_t n = sampling_groups(m->sampling, &sg), k = 0;
        int r;

        r = sync_groups(m, sg, n);
        if (r < 0)
                return log_oom();
        {
                ParentCpus pc = {};

                for (size_t i = 0; i < m->n_groups; i++)
                        if (task_round || !m->groups[i].info_valid)
                                read_group_info(m, &m->groups[i], &pc);
                free(pc.path);
        }
        if (task_round && m->task_tracking)
                collect_threads(m);

        pg = new0(PolicyGroup, MAX(n, 1u));
        res = new0(PolicyResult, MAX(n, 1u));
        hist = new0(PolicyHistory, MAX(n, 1u));
        owner = new0(ManagedGroup *, MAX(n, 1u));
        if (!pg || !res || !hist || !owner)
                return log_oom();

        /* sg and m->groups are both sorted by path and hold the same groups. */
        for (size_t i = 0; i < n; i++) {
                ManagedGroup *g = &m->groups[i];

                if (!g->info_valid)
                        continue; /* its cpuset is unreadable: nothing sensible to do this round */
                pg[k] = (PolicyGroup){
                        .path = g->path,
                        .util = (double) sg[i].v.util_avg,
                        .runnable = (double) sg[i].v.runnable_avg,
                        .load = (double) sg[i].v.load_avg,
                        .nr_threads = g->nr_threads,
                        .max_task_util = m->task_tracking ? g->max_task_util : -1,
                        .avg_slice_usec = g->avg_slice_usec,
                        .shares = sg[i].shares,
                        .cpus = g->cpus,
                        .allowed = g->allowed,
                        .has_allowed = g->has_allowed,
                        .mems = g->mems,
                        .has_mems = g->has_mems,
                        .pinned_narrower = g->pinned_narrower,
                        .config = config_find_group(m->config, g->path),
                };
                hist[k] = g->history;
                owner[k] = g;
                k++;
        }
        if (k == 0)
                return 0;

        r = policy_plan(m->topology, pg, k,
                        &(PolicyParams){ .policy = m->policy, .energy_model = m->energy_model }, hist,
                        now_usec(CLOCK_MONOTONIC), res);
        if (r < 0)
                return log_oom();

        for (size_t i = 0; i < k; i++) {
                ManagedGroup *g = owner[i];

                g->history = hist[i];
                if (!res[i].managed) {
                        /* Its first second ("learning its load") changes every round and says nothing new. */
                        if (startswith(res[i].reason, "learning"))
                                log_debug("%s: %s", g->path, res[i].reason);
                        else if (!g->last_intent || !streq(g->last_intent, res[i].reason)) {
                                log_info("Leaving %s alone: %s", g->path, res[i].reason);
                                free(g->last_intent);
                                g->last_intent = strdup(res[i].reason);
                        }
                        continue;
                }
                (void) apply_group(m, g, &res[i], pg[i].shares);
        }
        return 0;
}

/*
 * A round that cannot sample (CgroupRoot= not there yet, or removed) is skipped, said once, and
 * said again when sampling works again; the daemon keeps running and keeps what it recorded.
 */
static int note_sample_error(Manager *m, int r) {
        if (r >= 0) {
                if (m->sample_error < 0)
                        log_info("Sampling works again.");
                m->sample_error = 0;
                return 0;
        }
        if (r != m->sample_error) {
                if (r == -ENOENT)
                        log_warning("CgroupRoot=%s is not there; managing nothing until it is.", m->config->cgroup_root);
                else
                        log_warning_errno(r, "Failed to sample, skipping rounds until it works: %m");
        }
        m->sample_error = r;
        return r;
}

static int manager_round(Manager *m, bool task_round) {
        int r;

        /* The cheap fallback for lost hotplug events. */
        if (topology_online_changed(m->topology, m->sysfs) > 0)
                (void) refresh_topology(m);

        r = sampling_round(m->sampling, now_nsec(CLOCK_MONOTONIC), task_round);
        if (note_sample_error(m, r) < 0)
                return 0;
        return plan_and_apply(m, task_round);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        bool task_round = s == m->task_timer;
        usec_t interval = task_round ? m->config->task_sample_interval_usec : m->config->sample_interval_usec;
        int r;

        /* The next one a whole interval after this one was due: no drift, no burst of catch-up rounds. */
        r = sd_event_source_set_time(s, usec + interval);
        if (r < 0)
                return log_error_errno(r, "Failed to re-arm a timer: %m");
        r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Failed to re-arm a timer: %m");

        /* Task rounds include a group round: skip the group round that falls in the same interval. */
        if (!task_round && m->task_tracking) {
                uint64_t next_task;

                if (sd_event_source_get_time(m->task_timer, &next_task) >= 0 && next_task <= usec + interval / 2)
                        return 0;
        }
        return manager_round(m, task_round && m->task_tracking);
}

static int on_hotplug(_unused_ sd_event_source *s, int fd, _unused_ uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r = hotplug_drain(fd);

        if (r < 0) {
                log_warning_errno(r, "Failed to read CPU hotplug events: %m");
                return 0;
        }
        if (r > 0 && refresh_topology(m) > 0)
                /* Leave offline CPUs (and take back online ones) now, not at the next round. */
                (void) manager_round(m, false);
        return 0;
}

static int arm_timers(Manager *m) {
        usec_t now;
        int r;

        r = sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        r = sd_event_source_set_time(m->group_timer, now + m->config->sample_interval_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->group_timer, SD_EVENT_ONESHOT);
        if (r >= 0)
                r = sd_event_source_set_time(m->task_timer, now + m->config->task_sample_interval_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->task_timer, m->task_tracking ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
        return r;
}

/* ---- Signals ---------------------------------------------------------------------------------- */

static int on_sigterm(sd_event_source *s, _unused_ const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring original values.");
        log_info("Received %s, restoring and exiting.", sd_event_source_get_signal(s) == SIGINT ? "SIGINT" : "SIGTERM");
        return sd_event_exit(m->event, 0);
}

static int on_sighup(_unused_ sd_event_source *s, _unused_ const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        _cleanup_config_ Config *c = NULL;
        Config *old;
        int r;

        (void) sd_notify(false, "RELOADING=1");
        r = config_load(m->args.config_file, &c);
        if (r < 0) {
                log_error("Reloading the configuration failed; keeping the old settings.");
                (void) sd_notify(false, "READY=1");
                notify_status(m);
                return 0;
        }
        if (!streq(c->state_file, m->config->state_file)) {
                log_warning("StateFile= cannot change while running; keeping %s.", m->config->state_file);
                free(c->state_file);
                c->state_file = strdup(m->config->state_file);
                if (!c->state_file)
                        return log_oom();
        }

        old = m->config;
        m->config = TAKE_PTR(c);
        sampling_set_config(m->sampling, m->config);
        config_free(old);

        apply_settings(m);
        sampling_set_task_tracking(m->sampling, m->task_tracking);
        for (size_t i = 0; i < m->n_groups; i++)
                m->groups[i].target_known = false; /* Backend= may have changed */
        r = arm_timers(m);
        if (r < 0)
                return log_error_errno(r, "Failed to re-arm the timers: %m");
        log_info("Configuration reloaded: policy %s, groups every %" PRIu64 " ms, threads %s.",
                 policy_to_string(m->policy), m->config->sample_interval_usec / USEC_PER_MSEC,
                 m->task_tracking ? "tracked" : "not tracked");
        (void) sd_notify(false, "READY=1");
        notify_status(m);
        return 0;
}

/* ---- Setup ------------------------------------------------------------------------------------ */

int manager_new(const Args *args, Manager **ret) {
        _cleanup_manager_ Manager *m = NULL;
        int r, fd;

        /*
         * Signals wait until the loop is up: a SIGTERM while a crash restore or the first sample
         * runs is handled by the loop (restore, exit 0), not by the default action.
         */
        {
                sigset_t ss;

                sigemptyset(&ss);
                sigaddset(&ss, SIGTERM);
                sigaddset(&ss, SIGINT);
                sigaddset(&ss, SIGHUP);
                if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
                        return log_error_errno(errno, "Failed to block signals: %m");
        }

        m = new0(Manager, 1);
        if (!m)
                return log_oom();
        m->args = *args;
        m->lock_fd = -1;

        r = config_load(args->config_file, &m->config);
        if (r < 0)
                return r; /* logged, with FILE:LINE */

        r = rootdir_open("/", &m->sysfs);
        if (r < 0)
                return log_error_errno(r, "Failed to open /: %m");
        r = rootdir_open("/proc", &m->proc);
        if (r < 0)
                return log_error_errno(r, "Failed to open /proc: %m");
        r = topology_load(m->sysfs, &m->topology);
        if (r < 0)
                return log_error_errno(r, "Failed to read the CPU topology: %m");
        apply_settings(m); /* thread tracking asks the topology */
        m->capacity = new0(unsigned, CPUMASK_MAX);
        if (!m->capacity)
                return log_oom();
        update_capacities(m);
        r = energy_model_load(m->sysfs, &m->energy_model);
        if (r < 0)
                log_debug_errno(r, "No kernel Energy Model (%m); using the built-in model.");

        r = cgroup_fs_open_system(&m->fs);
        if (r < 0)
                return log_error_errno(r, "Failed to find the cgroup hierarchies: %m");
        m->access = (CgroupAccess){ .fs = m->fs };
        m->io = cgroup_io_real(&m->access);

        /* One daemon (or --restore) at a time. */
        fd = originals_lock(m->config->state_file);
        if (fd == -EBUSY)
                return log_error_errno(fd, "Another peltd (or peltd --restore) holds %s.lock; exiting.",
                                       m->config->state_file);
        if (fd < 0)
                return log_error_errno(fd, "Failed to lock %s.lock: %m", m->config->state_file);
        m->lock_fd = fd;
        r = originals_load(m->config->state_file, &m->originals);
        if (r == -EBADMSG)
                return log_error_errno(r, "%s is not a peltd state file; move it away to start.", m->config->state_file);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", m->config->state_file);

        /* A state file at start: the last run did not finish. Put everything back, then start afresh. */
        if (m->originals->n_entries > 0) {
                log_notice("%s exists: the last run did not stop cleanly.", m->config->state_file);
                r = restore_all(m, "after an unclean stop");
                if (r < 0)
                        return r;
        }

        r = sampling_new(m->proc, m->fs, m->config,
                         &(SamplingOptions){ .task_tracking = true, .netlink = true, .process_clocks = true, .capacity = m->capacity,
                                             .n_capacity = capacity_entries(m) },
                         &m->sampling);
        if (r < 0)
                return log_error_errno(r, "Failed to set up sampling: %m");
        sampling_set_task_tracking(m->sampling, m->task_tracking);

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to create the event loop: %m");
        r = sd_event_add_signal(m->event, NULL, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, on_sigterm, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT | SD_EVENT_SIGNAL_PROCMASK, on_sigterm, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch signals: %m");

        /* Accuracy 1 µs: the default 250 ms would smear a 100 ms period. */
        r = sd_event_add_time(m->event, &m->group_timer, CLOCK_MONOTONIC, 0, 1, on_timer, m);
        if (r >= 0)
                r = sd_event_add_time(m->event, &m->task_timer, CLOCK_MONOTONIC, 0, 1, on_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the timers: %m");
        (void) sd_event_source_set_description(m->group_timer, "group-round");
        (void) sd_event_source_set_description(m->task_timer, "task-round");
        r = arm_timers(m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the timers: %m");

        fd = hotplug_open();
        if (fd < 0)
                log_warning_errno(fd, "Failed to watch CPU hotplug events (%m); checking cpu/online every round instead.");
        else {
                r = sd_event_add_io(m->event, &m->hotplug_source, fd, EPOLLIN, on_hotplug, m);
                if (r < 0) {
                        close(fd);
                        return log_error_errno(r, "Failed to watch CPU hotplug events: %m");
                }
                (void) sd_event_source_set_io_fd_own(m->hotplug_source, true);
                (void) sd_event_source_set_description(m->hotplug_source, "hotplug");
        }

        /* WATCHDOG=1 by itself when WATCHDOG_USEC is set. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog: %m");

        /* The baseline sample: the first rounds need something to take differences from. */
        (void) note_sample_error(m, sampling_round(m->sampling, now_nsec(CLOCK_MONOTONIC), true));

        *ret = TAKE_PTR(m);
        return 0;
}

int manager_run(Manager *m) {
        char b[128];
        int r, exit_code = 0;

        log_info("peltd running: policy %s%s, %s, cgroup %s, online CPUs %s, groups every %" PRIu64 " ms, threads %s.",
                 policy_to_string(m->policy), m->dry_run ? " (dry run)" : "", m->config->cgroup_root,
                 cgroup_mode_to_string(m->fs->mode), fmt_cpus(&m->topology->online, b, sizeof b),
                 m->config->sample_interval_usec / USEC_PER_MSEC, m->task_tracking ? "tracked" : "not tracked");
        (void) sd_notify(false, "READY=1");
        notify_status(m);

        r = sd_event_loop(m->event);
        if (r < 0) {
                log_error_errno(r, "Event loop failed: %m");
                exit_code = 1;
        }

        /* Put everything back, whatever stopped us. */
        r = restore_all(m, "stopping");
        if (r != 0)
                exit_code = 1;
        return exit_code;
}

int cmd_daemon(const Args *args) {
        _cleanup_manager_ Manager *m = NULL;

        if (manager_new(args, &m) < 0)
                return 1;
        return manager_run(m);
}

int cmd_restore(const Args *args) {
        _cleanup_config_ Config *c = NULL;
        _cleanup_originals_ Originals *o = NULL;
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_close_ int lock = -1;
        CgroupAccess access;
        CgroupIO io;
        int r;

        r = config_load(args->config_file, &c);
        if (r < 0)
                return 1;
        lock = originals_lock(c->state_file);
        if (lock == -EBUSY) {
                log_error("peltd is running (it holds %s.lock): stop it, and it restores everything itself.", c->state_file);
                return 1;
        }
        if (lock < 0) {
                log_error_errno(lock, "Failed to lock %s.lock: %m", c->state_file);
                return 1;
        }
        r = originals_load(c->state_file, &o);
        if (r < 0) {
                log_error_errno(r, "Failed to read %s: %m", c->state_file);
                return 1;
        }
        if (o->n_entries == 0) {
                log_info("Nothing to restore: %s holds no original values.", c->state_file);
                return 0;
        }
        r = rootdir_open("/", &root);
        if (r >= 0)
                r = topology_load(root, &t);
        if (r < 0) {
                log_error_errno(r, "Failed to read the CPU topology: %m");
                return 1;
        }
        r = cgroup_fs_open_system(&fs);
        if (r < 0) {
                log_error_errno(r, "Failed to find the cgroup hierarchies: %m");
                return 1;
        }
        access = (CgroupAccess){ .fs = fs };
        /* One try, for the first systemd entry: the others would only fail (and say so) again. */
        for (size_t i = 0; i < o->n_entries; i++)
                if (streq(o->entries[i].hierarchy, "systemd")) {
                        r = sd_bus_open_system(&access.bus);
                        if (r < 0)
                                log_warning_errno(r, "Failed to connect to the system bus for systemd units: %m");
                        break;
                }
        io = cgroup_io_real(&access);
        r = cg_restore(&io, o, &t->online, false);
        sd_bus_flush_close_unref(access.bus);
        if (r < 0) {
                log_error_errno(r, "Failed to restore: %m");
                return 1;
        }
        if (r > 0) {
                log_error("%d original values could not be restored; they stay recorded in %s.", r, c->state_file);
                return 1;
        }
        log_info("Every recorded original value is restored.");
        return 0;
}
