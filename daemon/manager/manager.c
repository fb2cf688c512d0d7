/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Manager: its lifecycle, its event sources (the two round timers, signals, CPU hotplug), the
 * rounds they run, its runtime settings, and what it tells its hooks (the D-Bus API, the metrics
 * file) of what changed. Per-group reads live in manager-groups.c, applying and restoring in
 * manager-apply.c; this file calls those, and nothing it calls calls back.
 */
#include <signal.h>
#include <stdarg.h>
#include <time.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "peltd/apply-cgroup.h"
#include "peltd/cgroup-util.h"
#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/energy.h"
#include "peltd/topology-energy.h"
#include "peltd/hotplug.h"
#include "peltd/log.h"
#include "peltd/manager.h"
#include "peltd/originals.h"
#include "peltd/policy.h"
#include "peltd/subtree-lock.h"
#include "peltd/sampling.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"

#include "manager-internal.h"

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_runtime_shares; i++)
                free(m->runtime_shares[i].path);
        free(m->runtime_shares);
        sd_event_source_disable_unref(m->group_timer);
        sd_event_source_disable_unref(m->task_timer);
        sd_event_source_disable_unref(m->hotplug_source);
        sd_event_unref(m->event);
        sampling_free(m->sampling);
        for (size_t i = 0; i < m->n_groups; i++)
                managed_group_done(&m->groups[i]);
        free(m->groups);
        free(m->histories);
        planning_free(m->planning);
        manager_kubelet_free(m);
        pressure_free(m->pressure);
        originals_free(m->originals);
        subtree_lock_free(m->subtree_lock);
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

/* ---- Hooks ------------------------------------------------------------------------------------ */

int manager_add_hooks(Manager *m, const ManagerHooks *hooks, void *userdata) {
        if (m->n_hooks >= ELEMENTSOF(m->hooks))
                return -ENOSPC;
        m->hooks[m->n_hooks].hooks = hooks;
        m->hooks[m->n_hooks++].userdata = userdata;
        return 0;
}

void manager_remove_hooks(Manager *m, const ManagerHooks *hooks, void *userdata) {
        for (size_t i = 0; i < m->n_hooks; i++)
                if (m->hooks[i].hooks == hooks && m->hooks[i].userdata == userdata) {
                        memmove(&m->hooks[i], &m->hooks[i + 1], (m->n_hooks - i - 1) * sizeof m->hooks[0]);
                        m->n_hooks--;
                        return;
                }
}

static void tell_placement_changed(Manager *m, const PlacementChange *c) {
        for (size_t i = 0; i < m->n_hooks; i++)
                if (m->hooks[i].hooks->placement_changed)
                        m->hooks[i].hooks->placement_changed(c, m->hooks[i].userdata);
}

static void tell_policy_changed(Manager *m) {
        for (size_t i = 0; i < m->n_hooks; i++)
                if (m->hooks[i].hooks->policy_changed)
                        m->hooks[i].hooks->policy_changed(m->policy, m->hooks[i].userdata);
}

static void tell_round_done(Manager *m, bool task_round) {
        for (size_t i = 0; i < m->n_hooks; i++)
                if (m->hooks[i].hooks->round_done)
                        m->hooks[i].hooks->round_done(task_round, m->hooks[i].userdata);
}

static void tell_stopping(Manager *m) {
        for (size_t i = 0; i < m->n_hooks; i++)
                if (m->hooks[i].hooks->stopping)
                        m->hooks[i].hooks->stopping(m->hooks[i].userdata);
}

/* ---- Helpers ---------------------------------------------------------------------------------- */

/* STATUS= for systemd: the policy, how many groups, how many changes and the last one. */
static void manager_notify_status(Manager *m) {
        (void) sd_notifyf(false, "STATUS=Policy %s%s; %zu groups managed; %u changes%s%s%s%s", policy_to_string(m->policy),
                          m->dry_run ? " (dry run)" : "", m->n_groups, m->n_changes,
                          m->last_change[0] ? "; last: " : "", m->last_change,
                          m->n_failed_rounds > 0 ? "; rounds failing" : "",
                          m->n_late_rounds > 0 ? "; rounds late" : "");
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

/*
 * What the command line and the configuration decide: the policy, dry run, thread tracking. A
 * SetPolicy call wins over --policy, which wins over Policy=.
 */
static void apply_settings(Manager *m) {
        m->policy = m->runtime_policy != POLICY_INVALID ? m->runtime_policy
                    : m->args.policy                     ? policy_from_string(m->args.policy)
                                                         : m->config->policy;
        m->dry_run = m->args.dry_run || m->config->dry_run;
        m->task_tracking = want_task_tracking(m);
}

/* The settings changed (a reload, SetPolicy): the policy, dry run and thread tracking decided again. */
static void settings_changed(Manager *m) {
        Policy old = m->policy;

        apply_settings(m);
        sampling_set_task_tracking(m->sampling, m->task_tracking);
        if (m->policy != old)
                tell_policy_changed(m);
}

/* ---- Runtime settings ------------------------------------------------------------------------- */

/* The runtime shares of a group path (SetGroupShares), 0: none. */
static uint64_t runtime_shares(const Manager *m, const char *path) {
        for (size_t i = 0; i < m->n_runtime_shares; i++)
                if (streq(m->runtime_shares[i].path, path))
                        return m->runtime_shares[i].shares;
        return 0;
}

int manager_set_policy(Manager *m, Policy policy) {
        if (!policy_to_string(policy))
                return -EINVAL;
        m->runtime_policy = policy;
        settings_changed(m);
        manager_notify_status(m);
        return 0;
}

int manager_set_group_shares(Manager *m, const char *path, uint64_t shares) {
        ManagedGroup *g = manager_find_group(m, path);
        RuntimeShares *rs = NULL;

        if (!g)
                return -ENOENT;
        if (shares != 0 && (shares < MANAGER_SHARES_MIN || shares > MANAGER_SHARES_MAX))
                return -ERANGE;

        for (size_t i = 0; i < m->n_runtime_shares; i++)
                if (streq(m->runtime_shares[i].path, g->path))
                        rs = &m->runtime_shares[i];
        if (shares == 0) {
                const GroupConfig *c = config_find_group(m->config, g->path);

                if (rs) {
                        free(rs->path);
                        *rs = m->runtime_shares[--m->n_runtime_shares];
                }
                /* With no Shares= the group's own value goes back: the one recorded before peltd wrote it. */
                g->shares_put_back = !c || c->shares == 0 ? manager_original_shares(m, g) : 0;
        } else if (rs)
                rs->shares = shares;
        else {
                RuntimeShares *n = reallocarray(m->runtime_shares, m->n_runtime_shares + 1, sizeof *n);
                char *p = strdup(g->path);

                if (n)
                        m->runtime_shares = n;
                if (!n || !p) {
                        free(p);
                        return -ENOMEM;
                }
                m->runtime_shares[m->n_runtime_shares++] = (RuntimeShares){ .path = p, .shares = shares };
        }
        return 0;
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

/* ---- Rounds ----------------------------------------------------------------------------------- */

static int refresh_topology(Manager *m) {
        int r = topology_refresh(&m->topology, m->sysfs);

        if (r <= 0) {
                if (r < 0)
                        log_warning_errno(r, "Failed to re-read the CPU topology: %m");
                return r;
        }
        update_capacities(m);
        planning_invalidate(m);
        (void) manager_refresh_held(m, true); /* v1 drops offline CPUs from exclusive cpusets too */
        {
                char b[128];

                log_info("CPU topology changed: online CPUs now %s.", fmt_cpus(&m->topology->online, b, sizeof b));
        }
        /* Cpusets changed under us (v1 drops offline CPUs): read every group's again. */
        for (size_t i = 0; i < m->n_groups; i++)
                m->groups[i].info_valid = false;
        return 1;
}

#define SWAP(a, b)                              \
        do {                                    \
                __typeof__(a) swap_ = (a);      \
                (a) = (b);                      \
                (b) = swap_;                    \
        } while (0)

/* What a round gives the planner for a group, less its CPU masks (whose changes count in info_gen). */
typedef struct PlanKey {
        double util, runnable, load, max_task_util;
        usec_t avg_slice_usec;
        uint64_t shares, override_shares;
        const GroupConfig *config;
        unsigned nr_threads, info_gen;
        bool pinned_narrower;
        GroupOwner owner;
        usec_t stall_usec;
} PlanKey;

static bool plan_key_equal(const PlanKey *a, const PlanKey *b) {
        return a->util == b->util && a->runnable == b->runnable && a->load == b->load &&
               a->max_task_util == b->max_task_util && a->avg_slice_usec == b->avg_slice_usec && a->shares == b->shares &&
               a->override_shares == b->override_shares && a->config == b->config && a->nr_threads == b->nr_threads &&
               a->info_gen == b->info_gen && a->pinned_narrower == b->pinned_narrower && a->owner == b->owner &&
               a->stall_usec == b->stall_usec;
}

static bool plan_result_equal(const PolicyResult *a, const PolicyResult *b) {
        return a->managed == b->managed && a->learning == b->learning && a->policy == b->policy &&
               a->shares == b->shares && a->shares_set == b->shares_set && a->demand == b->demand &&
               cpumask_equal(&a->cpus, &b->cpus) && streq(a->reason, b->reason);
}

/*
 * The planner's arrays and what the last round planned, kept from round to round: a group's share
 * of the arrays is some kilobytes (CPU masks, its history), and a thousand groups' would be
 * allocated and cleared ten times a second. res, keys and the groups line up with m->groups when
 * every group is planned.
 */
struct Planning {
        PolicyGroup *pg;
        PolicyResult *res, *res_prev;
        PolicyHistory *hist;
        ManagedGroup **owner;
        GroupConfig *override;
        PlanKey *keys, *keys_prev;
        ManagedGroup **apply_groups;
        const PolicyResult **apply_res;
        uint64_t *apply_shares;
        size_t allocated;

        /*
         * at_rest: the last round planned what the round before planned, from the same inputs, and
         * left every history at rest (policy_history_at_rest()): the same inputs again plan the
         * same, and the planner is left out. Planned for these groups, policy, model, config.
         */
        bool at_rest;
        const ManagedGroup *groups;
        size_t n;                    /* every one of these groups planned; 0: not all of them were */
        Policy policy;
        const EnergyModel *energy_model;
        const Config *config;
};

void planning_free(Planning *p) {
        if (!p)
                return;
        free(p->pg);
        free(p->res);
        free(p->res_prev);
        free(p->hist);
        free(p->owner);
        free(p->override);
        free(p->keys);
        free(p->keys_prev);
        free(p->apply_groups);
        free(p->apply_res);
        free(p->apply_shares);
        free(p);
}

void planning_invalidate(Manager *m) {
        if (m->planning)
                m->planning->at_rest = false;
}

/* Room for n groups; every entry used is written before it is read. */
static int planning_reserve(Manager *m, size_t n) {
        Planning *a = m->planning;

        if (!a) {
                a = m->planning = new0(Planning, 1);
                if (!a)
                        return -ENOMEM;
        }
        if (n <= a->allocated)
                return 0;
        n = MAX(n, a->allocated * 2);
        a->at_rest = false;
#define GROW(field)                                                     \
        ({                                                              \
                __typeof__(a->field) p = realloc(a->field, n * sizeof *a->field); \
                if (p)                                                  \
                        a->field = p;                                   \
                p;                                                      \
        })
        if (!GROW(pg) || !GROW(res) || !GROW(res_prev) || !GROW(hist) || !GROW(owner) || !GROW(override) ||
            !GROW(keys) || !GROW(keys_prev) || !GROW(apply_groups) || !GROW(apply_res) || !GROW(apply_shares))
                return -ENOMEM;
#undef GROW
        a->allocated = n;
        return 0;
}

/* The planner's input for each group whose information is valid, in a->pg (and a->keys); returns how many. */
static size_t plan_inputs(Manager *m, const SampledGroup *sg, size_t n) {
        Planning *a = m->planning;
        size_t k = 0;

        /* sg and m->groups are both sorted by path and hold the same groups. */
        for (size_t i = 0; i < n; i++) {
                ManagedGroup *g = &m->groups[i];
                PolicyGroup *p = &a->pg[k];
                uint64_t rt;

                if (!g->info_valid)
                        continue; /* its cpuset is unreadable: nothing sensible to do this round */
                manager_kubelet_judge(m, g);
                *p = (PolicyGroup){
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
                        .owner = g->owner,
                        .config = config_find_group(m->config, g->path),
                };
                manager_pressure_input(m, i, p);
                a->keys[k] = (PlanKey){
                        .util = p->util, .runnable = p->runnable, .load = p->load, .max_task_util = p->max_task_util,
                        .avg_slice_usec = p->avg_slice_usec, .shares = p->shares, .config = p->config,
                        .nr_threads = p->nr_threads, .info_gen = g->info_gen, .pinned_narrower = p->pinned_narrower,
                        .owner = p->owner,
                        .stall_usec = p->stall_usec,
                };
                /* SetGroupShares wins over Shares=; taken back with no Shares=, the original goes back once. */
                rt = runtime_shares(m, g->path);
                if (rt == 0 && g->shares_put_back > 0 && p->config && p->config->shares > 0)
                        g->shares_put_back = 0;
                if (rt > 0 || g->shares_put_back > 0) {
                        a->override[k] = p->config ? *p->config : (GroupConfig) GROUP_CONFIG_UNSET;
                        a->override[k].shares = rt > 0 ? rt : g->shares_put_back;
                        a->keys[k].override_shares = a->override[k].shares;
                        p->config = &a->override[k];
                }
                a->owner[k] = g;
                k++;
        }
        return k;
}

/* Whether the planner's inputs are those of the last round: every group's, and the settings. */
static bool same_inputs(const Manager *m, size_t k, size_t n) {
        const Planning *a = m->planning;

        if (k != n || a->groups != m->groups || a->n != n || a->policy != m->policy ||
            a->energy_model != m->energy_model || a->config != m->config)
                return false;
        for (size_t i = 0; i < k; i++)
                if (!plan_key_equal(&a->keys[i], &a->keys_prev[i]))
                        return false;
        return true;
}

/*
 * Plans the k groups of a->pg into a->res, or (returns 0) finds that the last plan stands: its
 * inputs are the same and the plan was at rest. Returns 1 when the planner ran.
 */
static int plan(Manager *m, size_t k, size_t n) {
        Planning *a = m->planning;
        PolicyHistory *hist = a->hist;
        bool same = same_inputs(m, k, n);
        int r;

        if (same && a->at_rest)
                return 0;

        /* Every group planned (the usual round): their histories as they are, else those planned, copied. */
        if (k == n)
                hist = m->histories;
        else
                for (size_t i = 0; i < k; i++)
                        hist[i] = m->histories[a->owner[i] - m->groups];
        SWAP(a->res, a->res_prev);
        r = policy_plan(m->topology, a->pg, k,
                        &(PolicyParams){ .policy = m->policy, .energy_model = m->energy_model, .held = &m->held },
                        hist, now_usec(CLOCK_MONOTONIC), a->res);
        if (r < 0) {
                a->at_rest = false;
                return r;
        }
        if (k != n)
                for (size_t i = 0; i < k; i++)
                        m->histories[a->owner[i] - m->groups] = hist[i];

        /* At rest: the same inputs as the last round, the same plan, and every history at rest. */
        a->at_rest = same;
        for (size_t i = 0; i < k && a->at_rest; i++)
                a->at_rest = !a->res[i].learning && plan_result_equal(&a->res[i], &a->res_prev[i]) &&
                             policy_history_at_rest(&hist[i], &a->pg[i]);
        SWAP(a->keys, a->keys_prev);
        a->groups = m->groups;
        a->n = k == n ? n : 0; /* keys and res line up with the groups only when every group was planned */
        a->policy = m->policy;
        a->energy_model = m->energy_model;
        a->config = m->config;
        return 1;
}

/* A placement applied: counted, told (PlacementChanged), and the last change in STATUS. */
static void placement_changed(Manager *m, const AppliedChange *c) {
        char oldb[128], newb[128], tbuf[32];
        time_t now = time(NULL);
        struct tm tm;

        m->n_changes++;
        c->group->n_placements++;
        c->group->last_change_usec = now_usec(CLOCK_MONOTONIC);
        tell_placement_changed(m, &(PlacementChange){ .path = c->group->path, .old_cpus = &c->old_cpus,
                                                      .cpus = &c->res->cpus, .old_shares = c->old_shares,
                                                      .shares = c->res->shares, .policy = c->res->policy,
                                                      .reason = c->res->reason });
        localtime_r(&now, &tm);
        strftime(tbuf, sizeof tbuf, "%H:%M:%S", &tm);
        snprintf(m->last_change, sizeof m->last_change, "%s %.200s %s -> %s", tbuf, c->group->path,
                 fmt_cpus(&c->old_cpus, oldb, sizeof oldb), fmt_cpus(&c->res->cpus, newb, sizeof newb));
        manager_notify_status(m);
}

void manager_apply_groups(Manager *m, ManagedGroup *const *groups, const PolicyResult *const *res,
                          const uint64_t *cur_shares, size_t n) {
        _cleanup_free_ AppliedChange *changes = NULL;
        size_t n_changes = 0;

        if (manager_apply_plans(m, groups, res, cur_shares, n, &changes, &n_changes) < 0) {
                log_oom(); /* its only failure: nothing was written */
                return;
        }
        for (size_t i = 0; i < n_changes; i++)
                placement_changed(m, &changes[i]);
}

/*
 * Whether a planned group is left alone because it is owned elsewhere (the planner leaves such
 * groups alone too; this holds whatever it plans): as judged before, or found now, before a plan
 * that takes CPUs from it, by its threads' own affinity. Said once, with why.
 */
static bool owned_elsewhere(Manager *m, ManagedGroup *g, const PolicyResult *res) {
        if (res->managed ? !manager_owner_before_narrowing(m, g, &res->cpus) : g->owner == OWNER_NONE)
                return false;
        memcpy(g->reason, g->owner_reason, sizeof g->reason);
        if (!g->last_intent || !streq(g->last_intent, g->owner_reason)) {
                log_info("Leaving %s alone: owned elsewhere (%s): %s.", g->path, group_owner_to_string(g->owner),
                         g->owner_reason);
                free(g->last_intent);
                g->last_intent = strdup(g->owner_reason);
        }
        return true;
}

static int plan_and_apply(Manager *m, bool task_round) {
        Planning *a;
        SampledGroup *sg = NULL;
        size_t n = sampling_groups(m->sampling, &sg), k, n_apply = 0;
        int r;

        if (!sg)
                return -ENOMEM; /* not "no groups": the managed list stays as it is */
        r = manager_sync_groups(m, sg, n);
        if (r < 0)
                return r;
        /* Before the drift checks: a placed file a rename took elsewhere is not a file gone. */
        if (task_round)
                manager_follow_renames(m);
        manager_read_groups(m, task_round);
        r = manager_pressure_round(m, sg, n);
        if (r < 0)
                return r;
        if (task_round && m->task_tracking)
                manager_collect_threads(m);

        r = planning_reserve(m, MAX(n, 1u));
        if (r < 0)
                return r;
        a = m->planning;
        k = plan_inputs(m, sg, n);
        if (k == 0)
                return 0;
        r = plan(m, k, n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < k; i++) {
                ManagedGroup *g = a->owner[i];
                const PolicyResult *res = &a->res[i];

                /* A plan that stands changes nothing of what the groups say, and says nothing new. */
                if (r > 0) {
                        g->planned = true;
                        g->util = a->pg[i].util;
                        g->runnable = a->pg[i].runnable;
                        g->load = a->pg[i].load;
                        g->shares = res->shares;
                        g->placed_policy = res->policy;
                        memcpy(g->reason, res->reason, sizeof g->reason);
                        if (g->shares_put_back > 0 && res->shares == a->pg[i].shares)
                                g->shares_put_back = 0; /* back where it was */
                        if (!res->managed && g->owner == OWNER_NONE) {
                                /* Its first second ("learning its load") changes every round and says nothing new. */
                                if (res->learning)
                                        log_debug("%s: %s", g->path, res->reason);
                                else if (!g->last_intent || !streq(g->last_intent, res->reason)) {
                                        log_info("Leaving %s alone: %s", g->path, res->reason);
                                        free(g->last_intent);
                                        g->last_intent = strdup(res->reason);
                                }
                        }
                }
                if (owned_elsewhere(m, g, res) || !res->managed)
                        continue;
                /* The placed ones are applied together, with one save of the state file. */
                a->apply_groups[n_apply] = g;
                a->apply_res[n_apply] = res;
                a->apply_shares[n_apply++] = a->pg[i].shares;
        }
        manager_apply_groups(m, a->apply_groups, a->apply_res, a->apply_shares, n_apply);
        manager_say_owners(m);
        return 0;
}

/* sampling_round() now, its CPU time (this thread's) counted for peltd_sampling_cpu_seconds_total. */
static int sample(Manager *m, bool task_round) {
        nsec_t cpu0 = now_nsec(CLOCK_THREAD_CPUTIME_ID);
        int r = sampling_round(m->sampling, now_nsec(CLOCK_MONOTONIC), task_round);

        m->sampling_cpu_ns += now_nsec(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        return r;
}

/*
 * A round that cannot sample because CgroupRoot= is not there (yet, or any more) is complete: there
 * is nothing to manage. Said once, and again when it is back; the daemon keeps what it recorded.
 * Other sampling errors fail the round (note_round()). Returns 1 when the round has nothing to do.
 */
static int note_sample_error(Manager *m, int r) {
        if (r == -ENOENT) {
                if (m->sample_error != r)
                        log_warning("CgroupRoot=%s is not there; managing nothing until it is.", m->config->cgroup_root);
                m->sample_error = r;
                return 1;
        }
        if (r >= 0 && m->sample_error < 0)
                log_info("CgroupRoot=%s is there again.", m->config->cgroup_root);
        if (r >= 0)
                m->sample_error = 0;
        return r;
}

/*
 * Rounds never stop on an error: a failed round (out of memory, a hierarchy unreadable) is logged
 * once per episode, the next one runs, and when one completes again the episode ends with a
 * count. The watchdog is fed only by completed rounds, so systemd restarts a daemon whose rounds
 * keep failing or have stopped.
 */
static void note_round(Manager *m, int r) {
        if (r < 0) {
                if (m->n_failed_rounds++ == 0) {
                        log_warning_errno(r, "A round failed, retrying every round: %m");
                        manager_notify_status(m);
                }
                return;
        }
        if (m->n_failed_rounds > 0) {
                log_info("Rounds complete again, after %u failed.", m->n_failed_rounds);
                m->n_failed_rounds = 0;
                manager_notify_status(m);
        }
        if (m->watchdog_usec > 0) {
                usec_t now = now_usec(CLOCK_MONOTONIC);

                if (now - m->last_watchdog_usec >= m->watchdog_usec / 2) {
                        (void) sd_notify(false, "WATCHDOG=1");
                        m->last_watchdog_usec = now;
                }
        }
}

static int manager_round(Manager *m, bool task_round) {
        int r;

        m->n_rounds++;

        /* The cheap fallback for lost hotplug events. */
        if (topology_online_changed(m->topology, m->sysfs) > 0)
                (void) refresh_topology(m);

        /* CgroupRoot made (again) since the last task round: its new directory is locked before it is managed. */
        if (task_round && m->subtree_lock && subtree_lock_refresh(m->subtree_lock) == -EBUSY) {
                log_error("Stopping: another peltd took CgroupRoot=%s.", m->config->cgroup_root);
                (void) sd_event_exit(m->event, 1);
                return 0;
        }

        /* kubelet's checkpoint changed: followed within a task round. */
        if (task_round && (r = manager_kubelet_check(m)) != 0) {
                if (r < 0)
                        return r;
                planning_invalidate(m);
        }

        r = note_sample_error(m, sample(m, task_round));
        if (r != 0)
                return r < 0 ? r : 0;
        if (task_round && manager_refresh_held(m, false))
                planning_invalidate(m);
        return plan_and_apply(m, task_round);
}

/* A round run, its outcome noted, and told (the metrics file counts rounds). */
static void run_round(Manager *m, bool task_round) {
        note_round(m, manager_round(m, task_round));
        tell_round_done(m, task_round);
}

/*
 * Arms a round timer for `next`. A round that overran its interval (next is past) starts the next
 * one an interval from now: no burst of catch-up rounds; STATUS says rounds are late while they are.
 */
static int rearm(Manager *m, sd_event_source *s, usec_t next, usec_t interval) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        if (next <= now) {
                if (m->n_late_rounds++ == 0) {
                        log_notice("A round took longer than its interval (%" PRIu64 " ms); the next starts an interval later. "
                                   "If this recurs, raise %s= or the machine is overloaded.",
                                   interval / USEC_PER_MSEC, s == m->task_timer ? "TaskSampleIntervalMSec" : "SampleIntervalMSec");
                        m->late_timer = s;
                        manager_notify_status(m);
                }
                next = now + interval;
        } else if (s == m->late_timer && m->n_late_rounds > 0) {
                log_info("Rounds on time again, after %u late.", m->n_late_rounds);
                m->n_late_rounds = 0;
                manager_notify_status(m);
        }
        r = sd_event_source_set_time(s, next);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return r;
}

/* A timer that could not be re-armed is re-armed by the other one's next round (or never: then the watchdog). */
static void rearm_stopped(Manager *m, sd_event_source *s, usec_t interval) {
        int enabled = SD_EVENT_OFF;

        if (sd_event_source_get_enabled(s, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        if (rearm(m, s, now_usec(CLOCK_MONOTONIC) + interval, interval) >= 0) {
                log_info("A round timer is armed again.");
                m->rearm_failed = false;
        }
}

/* Never returns an error: that would turn the timer off for good. */
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        bool task_round = s == m->task_timer;
        usec_t interval = task_round ? m->config->task_sample_interval_usec : m->config->sample_interval_usec;
        sd_event_source *other = task_round ? m->group_timer : m->task_timer;
        usec_t other_interval = task_round ? m->config->sample_interval_usec : m->config->task_sample_interval_usec;
        bool skip = false;
        int r;

        if (m->rearm_failed)
                rearm_stopped(m, other, other_interval);

        /* Task rounds include a group round: skip the group round that falls in the same interval. */
        if (!task_round) {
                uint64_t next_task;
                int enabled = SD_EVENT_OFF;

                skip = sd_event_source_get_enabled(m->task_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF &&
                       sd_event_source_get_time(m->task_timer, &next_task) >= 0 && next_task <= usec + interval / 2;
        }
        if (!skip)
                run_round(m, task_round);

        /* The next one a whole interval after this one was due: no drift. */
        r = rearm(m, s, usec + interval, interval);
        if (r < 0 && !m->rearm_failed) {
                log_error_errno(r, "Failed to re-arm a round timer (%m); the other one retries.");
                m->rearm_failed = true;
        }
        return 0;
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
                run_round(m, false);
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
                /* Task rounds walk the groups (new ones, ones made again) whether threads are tracked or not. */
                r = sd_event_source_set_enabled(m->task_timer, SD_EVENT_ONESHOT);
        return r;
}

/* ---- Signals ---------------------------------------------------------------------------------- */

static int on_sigterm(sd_event_source *s, _unused_ const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        (void) sd_notify(false, m->dry_run ? "STOPPING=1\nSTATUS=Stopping (dry run)." : "STOPPING=1\nSTATUS=Restoring original values.");
        log_info("Received %s, %s.", sd_event_source_get_signal(s) == SIGINT ? "SIGINT" : "SIGTERM",
                 m->dry_run ? "exiting; a dry run wrote nothing, so it writes nothing back" : "restoring and exiting");
        return sd_event_exit(m->event, 0);
}

/* A reload that failed: said, and *ret_message (may be NULL) what was wrong. Returns r. */
_printf_(3, 4) static int reload_failed(int r, char **ret_message, const char *format, ...) {
        if (ret_message) {
                va_list ap;

                va_start(ap, format);
                if (vasprintf(ret_message, format, ap) < 0)
                        *ret_message = NULL;
                va_end(ap);
        }
        log_error("Reloading the configuration failed; keeping the old settings.");
        return r;
}

/* The configuration read again; what cannot change while running is kept as it was, and said. */
static int reload_read_config(Manager *m, Config **ret, char **ret_message) {
        _cleanup_config_ Config *c = NULL;
        int r;

        log_forget_last_error();
        r = config_load_from(m->args.config_file, m->args.config_dir, &c);
        if (r < 0)
                /* Logged with FILE:LINE: the reply says the same. */
                return reload_failed(r, ret_message, "%s", log_last_error() ?: "The configuration could not be read.");
        if (!streq(c->state_file, m->config->state_file)) {
                char *keep = strdup(m->config->state_file);

                if (!keep)
                        return reload_failed(log_oom(), ret_message, "Out of memory.");
                log_warning("StateFile= cannot change while running; keeping %s.", m->config->state_file);
                free(c->state_file);
                c->state_file = keep;
        }

        if (c->sampling_backend != m->config->sampling_backend)
                log_warning("SamplingBackend= is read at start; the change takes effect when peltd restarts.");
        *ret = TAKE_PTR(c);
        return 0;
}

/*
 * The subtree lock the new configuration needs: moved to a new CgroupRoot=, or taken (*ret_lock)
 * when a dry run ends. *ret_lock stays NULL when the lock held is the one needed, or none is.
 */
static int reload_lock(Manager *m, const Config *c, SubtreeLock **ret_lock, char **ret_message) {
        _cleanup_subtree_lock_ SubtreeLock *lock = NULL;
        int r;

        if (m->subtree_lock && !streq(c->cgroup_root, m->config->cgroup_root) &&
            (r = subtree_lock_set_root(m->subtree_lock, c->cgroup_root)) < 0)
                return reload_failed(r, ret_message, "CgroupRoot=%s cannot be locked (%s); keeping CgroupRoot=%s.",
                                     c->cgroup_root, log_last_error() ?: "see the log", m->config->cgroup_root);
        /* Leaving a dry run: the subtree is locked first, as at start (a dry run writes nothing: it locks nothing). */
        if (!(m->args.dry_run || c->dry_run) && !m->subtree_lock && (r = subtree_lock(m->fs, c->cgroup_root, &lock)) < 0)
                return reload_failed(r, ret_message, "CgroupRoot=%s cannot be locked (%s); keeping the dry run.",
                                     c->cgroup_root, log_last_error() ?: "see the log");
        *ret_lock = TAKE_PTR(lock);
        return 0;
}

/* Entering a dry run: what peltd wrote goes back now, as at stop, and the subtree is free. */
static void enter_dry_run(Manager *m) {
        (void) manager_restore_all(m, "a dry run from now on");
        m->subtree_lock = subtree_lock_free(m->subtree_lock);
        for (size_t i = 0; i < m->n_groups; i++)
                m->groups[i].info_valid = false; /* their cpusets are the originals again: read them */
}

/*
 * A group whose Shares= went away (old: the configuration before) gets its own value back, as
 * after SetGroupShares(path, 0): peltd writes shares only where they are set. Runtime shares
 * still win.
 */
static void put_back_dropped_shares(Manager *m, const Config *old) {
        for (size_t i = 0; i < m->n_groups; i++) {
                ManagedGroup *g = &m->groups[i];
                const GroupConfig *was = config_find_group(old, g->path), *now = config_find_group(m->config, g->path);

                if (was && was->shares > 0 && (!now || now->shares == 0) && runtime_shares(m, g->path) == 0)
                        g->shares_put_back = manager_original_shares(m, g);
        }
}

/* Reads the configuration again; the old settings stay when it is broken (said in *ret_message). */
static int reload(Manager *m, char **ret_message) {
        _cleanup_subtree_lock_ SubtreeLock *lock = NULL;
        _cleanup_config_ Config *c = NULL;
        bool dry_run, runtime_overrides;
        Config *old;
        int r;

        if (ret_message)
                *ret_message = NULL;
        r = reload_read_config(m, &c, ret_message);
        if (r < 0)
                return r;
        r = reload_lock(m, c, &lock, ret_message);
        if (r < 0)
                return r;

        dry_run = m->args.dry_run || c->dry_run;
        if (lock)
                m->subtree_lock = TAKE_PTR(lock);
        else if (dry_run && !m->dry_run)
                enter_dry_run(m);

        old = m->config;
        m->config = TAKE_PTR(c);
        sampling_set_config(m->sampling, m->config);
        put_back_dropped_shares(m, old);
        config_free(old);
        /* Ownership judged again: yielded groups taken back, the others' cpusets looked at afresh. */
        manager_owners_reload(m);
        planning_invalidate(m);

        settings_changed(m);
        r = manager_kubelet_load(m);
        if (r < 0)
                log_oom();
        if (r != 0)
                planning_invalidate(m);
        manager_pressure_reset(m);
        /* SetPolicy holds across reloads: where it differs from Policy=, the line says which wins. */
        runtime_overrides = m->runtime_policy != POLICY_INVALID && m->runtime_policy != m->config->policy;
        for (size_t i = 0; i < m->n_groups; i++)
                m->groups[i].target_known = false; /* Backend= may have changed */
        if (manager_refresh_held(m, true)) /* CgroupRoot= and Groups= may have changed */
                planning_invalidate(m);
        r = arm_timers(m);
        if (r < 0) {
                /* The timers keep their old times where they have one; one that stopped is retried. */
                log_error_errno(r, "Failed to re-arm the timers: %m");
                m->rearm_failed = true;
        }
        log_info("Configuration reloaded: policy %s%s%s%s, groups every %" PRIu64 " ms, threads %s.",
                 policy_to_string(m->policy), runtime_overrides ? " (set at run time by SetPolicy, over Policy=" : "",
                 runtime_overrides ? policy_to_string(m->config->policy) : "", runtime_overrides ? ")" : "",
                 m->config->sample_interval_usec / USEC_PER_MSEC, m->task_tracking ? "tracked" : "not tracked");
        return 0;
}

int manager_reload(Manager *m, char **ret_message) {
        int r;

        (void) sd_notify(false, "RELOADING=1");
        r = reload(m, ret_message);
        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);
        return r;
}

static int on_sighup(_unused_ sd_event_source *s, _unused_ const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload(userdata, NULL);
        return 0;
}

/* ---- Setup ------------------------------------------------------------------------------------ */

/*
 * Signals wait until the loop is up: a SIGTERM while a crash restore or the first sample runs is
 * handled by the loop (restore, exit 0), not by the default action. main() blocks them first of
 * all; this is for callers that come another way.
 */
static int block_signals(void) {
        sigset_t ss;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
                return log_error_errno(errno, "Failed to block signals: %m");
        return 0;
}

/* The machine: / and /proc, the CPU topology and its capacities, the energy model where there is one. */
static int open_machine(Manager *m) {
        int r;

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
        return 0;
}

int state_open(const char *path, bool running_daemon, int *ret_lock, Originals **ret) {
        _cleanup_close_ int fd = -1;
        const char *why = "is not trusted";
        int r;

        /* One daemon (or --restore) at a time. */
        fd = originals_lock_checked(path, &why);
        if (fd == -EBUSY) {
                if (running_daemon)
                        return log_error_errno(fd, "Another peltd (or peltd --restore) holds %s.lock; exiting.", path);
                return log_error_errno(fd, "peltd is running (it holds %s.lock): stop it, and it restores everything itself.",
                                       path);
        }
        if (fd == -EPERM || fd == -ELOOP)
                return log_error_errno(fd, "Refusing the state file %s: it or its directory or lock %s.", path, why);
        if (fd < 0)
                return log_error_errno(fd, "Failed to lock %s.lock: %m", path);

        r = originals_load_checked(path, ret, &why);
        if (r == -EBADMSG)
                return log_error_errno(r, "%s is not a peltd state file; move it away to start.", path);
        if (r == -EPERM || r == -ELOOP)
                return log_error_errno(r, "Refusing the state file %s: it %s.", path, why);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", path);
        for (size_t i = 0; i < (*ret)->n_refused; i++)
                log_error("%s: refusing an entry that peltd never writes (%s).", path, (*ret)->refused[i]);
        *ret_lock = TAKE_FD(fd);
        return 0;
}

/*
 * The cgroup hierarchies and the state file: locked, one daemon per subtree, and what a run that
 * did not finish left put back first.
 */
static int open_cgroups(Manager *m) {
        int r;

        r = cgroup_fs_open_system(&m->fs);
        if (r < 0)
                return log_error_errno(r, "Failed to find the cgroup hierarchies: %m");
        m->access = (CgroupAccess){ .fs = m->fs };
        m->io = cgroup_io_real(&m->access);

        r = state_open(m->config->state_file, true, &m->lock_fd, &m->originals);
        if (r < 0)
                return r;
        /* One daemon per subtree, whatever its StateFile= (a dry run writes nothing: it locks nothing). */
        if (!m->dry_run) {
                r = subtree_lock(m->fs, m->config->cgroup_root, &m->subtree_lock);
                if (r < 0)
                        return r; /* logged */
        }

        /* A state file at start: the last run did not finish. Put everything back, then start afresh. */
        if (m->originals->n_entries > 0) {
                log_notice("%s exists: the last run did not stop cleanly.", m->config->state_file);
                r = manager_restore_all(m, "after an unclean stop");
                if (r < 0)
                        return r;
        }
        return 0;
}

static int open_sampling(Manager *m) {
        BpfSampler *bpf = NULL;
        int r;

        r = sampling_open_backend(m->sysfs, m->fs->mode, m->config->sampling_backend, "SamplingBackend=", &bpf);
        if (r < 0)
                return r; /* logged */
        r = sampling_new(m->proc, m->fs, m->config,
                         &(SamplingOptions){ .task_tracking = true, .netlink = true, .process_clocks = true, .capacity = m->capacity,
                                             .n_capacity = capacity_entries(m), .bpf = bpf },
                         &m->sampling);
        if (r < 0)
                return log_error_errno(r, "Failed to set up sampling: %m");
        sampling_set_task_tracking(m->sampling, m->task_tracking);
        return 0;
}

static int add_signal_sources(Manager *m) {
        int r;

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
        return 0;
}

static int add_round_timers(Manager *m) {
        int r;

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
        return 0;
}

static int watch_hotplug(Manager *m) {
        int r, fd;

        fd = hotplug_open();
        if (fd < 0) {
                log_warning_errno(fd, "Failed to watch CPU hotplug events (%m); checking cpu/online every round instead.");
                return 0;
        }
        r = sd_event_add_io(m->event, &m->hotplug_source, fd, EPOLLIN, on_hotplug, m);
        if (r < 0) {
                close(fd);
                return log_error_errno(r, "Failed to watch CPU hotplug events: %m");
        }
        (void) sd_event_source_set_io_fd_own(m->hotplug_source, true);
        (void) sd_event_source_set_description(m->hotplug_source, "hotplug");
        return 0;
}

/* WATCHDOG_USEC (for this pid): WATCHDOG=1 from completed rounds (note_round()), not from the loop. */
static void read_watchdog(Manager *m) {
        int r;

        r = sd_watchdog_enabled(false, &m->watchdog_usec);
        if (r < 0)
                log_warning_errno(r, "Ignoring WATCHDOG_USEC: %m");
        if (r <= 0)
                m->watchdog_usec = 0;
}

static int sync_baseline_groups(Manager *m) {
        SampledGroup *sg = NULL;
        size_t n = sampling_groups(m->sampling, &sg);
        int r;

        if (!sg)
                return -ENOMEM;
        r = manager_sync_groups(m, sg, n);
        if (r < 0)
                return r;
        /* Their cpusets read, and who owns them judged: the start line says how many are owned elsewhere. */
        manager_read_groups(m, false);
        manager_say_owners(m);
        return 0;
}

int manager_new(const Args *args, Manager **ret) {
        _cleanup_manager_ Manager *m = NULL;
        int r;

        r = block_signals();
        if (r < 0)
                return r;

        m = new0(Manager, 1);
        if (!m)
                return log_oom();
        m->args = *args;
        m->lock_fd = -1;
        m->runtime_policy = POLICY_INVALID;

        r = config_load_from(args->config_file, args->config_dir, &m->config);
        if (r < 0)
                return r; /* logged, with FILE:LINE */
        r = open_machine(m);
        if (r >= 0 && manager_kubelet_load(m) < 0)
                r = log_oom();
        if (r >= 0)
                r = open_cgroups(m);
        if (r >= 0)
                r = open_sampling(m);
        if (r >= 0)
                r = add_signal_sources(m);
        if (r >= 0)
                r = add_round_timers(m);
        if (r >= 0)
                r = watch_hotplug(m);
        if (r < 0)
                return r; /* logged */
        read_watchdog(m);

        /* The baseline sample: the first rounds need something to take differences from. */
        r = note_sample_error(m, sample(m, true));
        if (r == 0)
                /* Its groups are managed from now: the start line counts them. */
                r = sync_baseline_groups(m);
        if (r == 0)
                (void) manager_refresh_held(m, true); /* nothing planned yet */
        if (r == -ENOMEM)
                return log_oom();

        *ret = TAKE_PTR(m);
        return 0;
}

int manager_run(Manager *m) {
        char b[128], owned[256];
        int r, exit_code = 0;

        manager_fmt_owned(m, owned, sizeof owned);
        log_info("peltd running: policy %s%s, %s, cgroup %s, online CPUs %s, %zu group%s managed%s%s groups every %" PRIu64
                 " ms, threads %s.",
                 policy_to_string(m->policy), m->dry_run ? " (dry run)" : "", m->config->cgroup_root,
                 cgroup_mode_to_string(m->fs->mode), fmt_cpus(&m->topology->online, b, sizeof b), m->n_groups,
                 m->n_groups == 1 ? "" : "s", owned, owned[0] ? ";" : ",",
                 m->config->sample_interval_usec / USEC_PER_MSEC,
                 m->task_tracking ? "tracked" : "not tracked");
        m->running = true;
        m->n_groups_said = m->n_groups;
        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);

        r = sd_event_loop(m->event);
        if (r < 0) {
                log_error_errno(r, "Event loop failed: %m");
                exit_code = 1;
        } else
                exit_code = r; /* sd_event_exit()'s code: 0, or 1 when another daemon took the subtree */
        tell_stopping(m);

        /* Put everything back, whatever stopped us. */
        r = manager_restore_all(m, "stopping");
        if (r != 0)
                exit_code = 1;
        return exit_code;
}
