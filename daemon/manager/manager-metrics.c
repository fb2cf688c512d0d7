/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's metrics file (MetricsFile=, DESIGN.md "Metrics"): what it counts between rounds,
 * the snapshot it takes of the Manager, and the timer that writes the file at most once a second.
 *
 * A round marks the file out of date and arms the timer for a second after the last write (at
 * once when that is past); the timer writes what the rounds left. So the file follows the rounds
 * within a second and is never written more often, whatever SampleIntervalMSec= is. A write
 * that fails is said once, and the next round tries again; it never stops a round. On a clean
 * stop the file is removed: figures of a daemon that is gone would be taken for current.
 */
#include <systemd/sd-event.h>

#include "build-config.h"
#include "peltd/energy.h"
#include "peltd/log.h"
#include "peltd/manager-metrics.h"
#include "peltd/metrics.h"

#include "manager-internal.h"

/* At most one write a second: scrapes come every 15 s or more, rounds every 100 ms. */
#define METRICS_INTERVAL_USEC USEC_PER_SEC
/* The timer may run this late, so sd-event can wake once for it and a round. */
#define METRICS_ACCURACY_USEC (10 * USEC_PER_MSEC)

struct ManagerMetrics {
        Manager *manager;
        sd_event_source *timer;
        uint64_t group_rounds, task_rounds;
        nsec_t metrics_cpu_ns;       /* this thread's CPU time in write_metrics() */
        usec_t last_write_usec;      /* when the timer last ran; 0: never */
        char *written;               /* the file as last written, removed when MetricsFile= moves and at stop */
        int write_error;             /* the failure said, until a write works again */
        const char *write_reason;    /* why the directory was refused (a static phrase), or NULL */
};

/* ---- The snapshot ----------------------------------------------------------------------------- */

/* The managed group of a sampled one: both lists are sorted by path; *pos walks m->groups. */
static const ManagedGroup *managed_of(const Manager *m, const SampledGroup *sg, size_t *pos) {
        while (*pos < m->n_groups) {
                const ManagedGroup *g = &m->groups[*pos];
                int c = strcmp(g->path, sg->path);

                if (c > 0)
                        break;
                (*pos)++;
                if (c == 0)
                        return g->id == sg->id ? g : NULL; /* the same directory, not one made again */
        }
        return NULL;
}

/*
 * The Manager's figures as plain values. The energy estimates spread each group's util as the
 * planner's policy_plan_energy() does: over the CPUs it may use now, and over every online CPU.
 * Groups and their paths belong to the sampler until its next call: render before that.
 */
/*
 * The CPUs each owner holds, every owner but peltd (0 included): a dashboard's series are there
 * from the start, and a sum over owners is all that is held.
 */
static void take_held(const Manager *m, MetricsHeld held[static _OWNER_MAX - 1]) {
        for (GroupOwner o = OWNER_NONE + 1; o < _OWNER_MAX; o++)
                held[o - 1] = (MetricsHeld){ .owner = group_owner_to_string(o), .cpus = cpumask_count(&m->held_by[o]) };
}

static int take_snapshot(const ManagerMetrics *mm, MetricsSnapshot *ret, MetricsGroup **ret_groups,
                         MetricsHeld held[static _OWNER_MAX - 1]) {
        const Manager *m = mm->manager;
        const Topology *t = m->topology;
        _cleanup_free_ MetricsGroup *groups = NULL;
        _cleanup_free_ double *placed = NULL, *spread = NULL;
        SampledGroup *sg = NULL;
        size_t n = sampling_groups(m->sampling, &sg), pos = 0;

        groups = new0(MetricsGroup, MAX(n, 1u));
        placed = new0(double, MAX(t->n_cpus, 1u));
        spread = new0(double, MAX(t->n_cpus, 1u));
        if (!sg || !groups || !placed || !spread)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                const ManagedGroup *g = managed_of(m, &sg[i], &pos);
                bool known = g && g->info_valid;

                groups[i] = (MetricsGroup){
                        .path = sg[i].path,
                        .util = sg[i].v.util_avg,
                        .runnable = sg[i].v.runnable_avg,
                        .load = sg[i].v.load_avg,
                        .cpus = known ? cpumask_count(&g->cpus) : -1,
                        .shares = sg[i].shares,
                        .placement_changes = g ? g->n_placements : 0,
                        .throttled_ns = sg[i].throttled_ns,
                        .managed = g,
                        .owner = g ? group_owner_to_string(g->owner) : NULL,
                        .foreign_writes = g ? g->foreign_writes : 0,
                        .pressure_usec = g ? g->pressure_usec : 0,
                };
                energy_spread(t, known ? &g->cpus : &t->online, (double) sg[i].v.util_avg, placed);
                energy_spread(t, &t->online, (double) sg[i].v.util_avg, spread);
        }
        take_held(m, held);

        *ret = (MetricsSnapshot){
                .version = PELTD_VERSION,
                .policy = policy_to_string(m->policy),
                .group_rounds = mm->group_rounds,
                .task_rounds = mm->task_rounds,
                /* Counted, not listed: sampling_threads() would decay every blocked thread's averages. */
                .threads_tracked = m->task_tracking ? proc_sampler_n_threads(sampling_proc_sampler(m->sampling)) : 0,
                .groups_managed = m->n_groups,
                .sampling_cpu_ns = m->sampling_cpu_ns,
                .metrics_cpu_ns = mm->metrics_cpu_ns,
                .energy_estimate = energy_estimate(t, m->energy_model, placed),
                .energy_estimate_spread = energy_estimate(t, m->energy_model, spread),
                .placement_errors = m->placement_errors,
                .held = held,
                .n_held = _OWNER_MAX - 1,
                .groups = groups,
                .n_groups = n,
        };
        *ret_groups = TAKE_PTR(groups);
        return 0;
}

/* ---- Writing ---------------------------------------------------------------------------------- */

static void remove_written(ManagerMetrics *mm) {
        if (!mm->written)
                return;
        if (unlink(mm->written) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove the metrics file %s, ignoring: %m", mm->written);
        else
                log_debug("Removed the metrics file %s.", mm->written);
        free(mm->written);
        mm->written = NULL;
}

static int render_and_write(ManagerMetrics *mm, const char *path) {
        _cleanup_free_ MetricsGroup *groups = NULL;
        _cleanup_free_ char *text = NULL;
        MetricsHeld held[_OWNER_MAX - 1];
        MetricsSnapshot s;
        size_t size;
        int r;

        r = take_snapshot(mm, &s, &groups, held);
        if (r >= 0)
                r = metrics_render(&s, &text, &size);
        if (r >= 0)
                r = metrics_write_file(path, text, size, &mm->write_reason);
        return r;
}

static void write_metrics(ManagerMetrics *mm) {
        const char *path = mm->manager->config->metrics_file;
        nsec_t cpu0 = now_nsec(CLOCK_THREAD_CPUTIME_ID);
        int r;

        mm->last_write_usec = now_usec(CLOCK_MONOTONIC);
        /* MetricsFile= moved or was emptied by a reload: the old file would stay stale. */
        if (mm->written && (!path || !streq(path, mm->written)))
                remove_written(mm);
        if (!path)
                return;

        r = render_and_write(mm, path);
        mm->metrics_cpu_ns += now_nsec(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        if (r < 0) {
                if (mm->write_error == 0 && r == -EPERM && mm->write_reason)
                        log_warning("Refusing to write the metrics file %s: its directory %s; trying again every second.", path,
                                    mm->write_reason);
                else if (mm->write_error == 0)
                        log_warning_errno(r, "Failed to write the metrics file %s: %m; trying again every second.", path);
                mm->write_error = r;
                return;
        }
        if (mm->write_error < 0) {
                log_info("The metrics file %s is written again.", path);
                mm->write_error = 0;
        }
        if (!mm->written) {
                mm->written = strdup(path);
                if (!mm->written)
                        log_oom(); /* only its removal at stop is lost */
        }
}

/* Never returns an error: that would turn the timer off for good. */
static int on_metrics_timer(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        write_metrics(userdata);
        return 0;
}

/* ---- The Manager's hooks ---------------------------------------------------------------------- */

/* A round ran: counted, and the file written after it, at most once a second. */
static void on_round_done(bool task_round, void *userdata) {
        ManagerMetrics *mm = userdata;
        int enabled = SD_EVENT_OFF, r;
        usec_t next;

        if (task_round)
                mm->task_rounds++;
        else
                mm->group_rounds++;
        if (!mm->manager->config->metrics_file && !mm->written)
                return;

        /* Armed already: that write comes after this round and shows it. */
        if (sd_event_source_get_enabled(mm->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        next = mm->last_write_usec > 0 ? mm->last_write_usec + METRICS_INTERVAL_USEC : 0;
        next = MAX(next, now_usec(CLOCK_MONOTONIC));
        r = sd_event_source_set_time(mm->timer, next);
        if (r >= 0)
                r = sd_event_source_set_enabled(mm->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                /* The next round tries again; the file is a second older meanwhile. */
                log_debug_errno(r, "Failed to arm the metrics timer: %m");
}

/* The daemon stops: the file is removed. */
static void on_stopping(void *userdata) {
        ManagerMetrics *mm = userdata;

        (void) sd_event_source_set_enabled(mm->timer, SD_EVENT_OFF);
        remove_written(mm);
}

static const ManagerHooks metrics_hooks = {
        .round_done = on_round_done,
        .stopping = on_stopping,
};

int manager_metrics_start(Manager *m, ManagerMetrics **ret) {
        _cleanup_manager_metrics_ ManagerMetrics *mm = NULL;
        int r;

        mm = new0(ManagerMetrics, 1);
        if (!mm)
                return log_oom();
        mm->manager = m;
        r = sd_event_add_time(m->event, &mm->timer, CLOCK_MONOTONIC, 0, METRICS_ACCURACY_USEC, on_metrics_timer, mm);
        if (r < 0)
                return log_error_errno(r, "Failed to add the metrics timer: %m");
        (void) sd_event_source_set_enabled(mm->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(mm->timer, "metrics");
        r = manager_add_hooks(m, &metrics_hooks, mm);
        if (r < 0)
                return log_error_errno(r, "Failed to register the metrics file's hooks: %m");
        *ret = TAKE_PTR(mm);
        return 0;
}

ManagerMetrics *manager_metrics_free(ManagerMetrics *mm) {
        if (!mm)
                return NULL;
        manager_remove_hooks(mm->manager, &metrics_hooks, mm);
        sd_event_source_disable_unref(mm->timer);
        free(mm->written);
        free(mm);
        return NULL;
}
