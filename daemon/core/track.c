/* SPDX-License-Identifier: GPL-2.0-only */
#include "peltd/macro.h"
#include "peltd/track.h"

/* kernel/sched/core.c: sched_prio_to_weight[], each nice level ~10% of CPU time from its neighbour. */
static const unsigned long prio_to_weight[40] = {
        /* -20 */ 88761, 71755, 56483, 46273, 36291,
        /* -15 */ 29154, 23254, 18705, 14949, 11916,
        /* -10 */ 9548,  7620,  6100,  4904,  3906,
        /*  -5 */ 3121,  2501,  1991,  1586,  1277,
        /*   0 */ 1024,  820,   655,   526,   423,
        /*   5 */ 335,   272,   215,   172,   137,
        /*  10 */ 110,   87,    70,    56,    45,
        /*  15 */ 36,    29,    23,    18,    15,
};

unsigned long track_nice_to_weight(int nice) {
        return prio_to_weight[CLAMP(nice, -20, 19) + 20];
}

uint64_t track_steal_frac(uint64_t d_steal, uint64_t d_total) {
        return pelt_frac(d_steal, d_total, PELT_FRAC_ONE);
}

/* v * frac (32.32 fixed point), truncated. */
static uint64_t frac_of(uint64_t v, uint64_t frac) {
        return (uint64_t) (((unsigned __int128) v * frac) >> PELT_FRAC_SHIFT);
}

static unsigned capacity_or_default(unsigned c) {
        return c ? c : TRACK_CAPACITY_SCALE;
}

void track_group_init(TrackGroup *g, uint64_t clock_ns) {
        *g = (TrackGroup){ .clock_ns = clock_ns, .wall_ns = clock_ns, .shares = PELT_SCALE };
        pelt_init(&g->util, clock_ns);
        pelt_group_init(&g->sum, clock_ns);
}

/* The usage counter in capacity-invariant nanoseconds (running on a CPU of capacity c counts c/1024). */
static bool usage_of(const TrackGroupSample *s, uint64_t *ret) {
        if (s->have_usage_scaled) {
                *ret = s->usage_scaled_ns;
                return true;
        }
        if (s->have_usage) {
                *ret = (uint64_t) ((unsigned __int128) s->usage_ns * capacity_or_default(s->capacity) /
                                   TRACK_CAPACITY_SCALE);
                return true;
        }
        return false;
}

int track_group_advance(TrackGroup *g, uint64_t interval_ns, uint64_t steal_frac, const TrackGroupSample *s) {
        uint64_t visible, advance, throttled = 0, usage, span;
        int rebased = 0;

        /* The kernel's clock_task (and so its PELT clock) does not run while the vCPU is stolen. */
        visible = interval_ns - frac_of(interval_ns, MIN(steal_frac, PELT_FRAC_ONE));

        if (s->have_throttled) {
                if (g->throttled_primed && s->throttled_ns >= g->last_throttled_ns)
                        throttled = s->throttled_ns - g->last_throttled_ns;
                else if (g->throttled_primed)
                        rebased = 1;
                g->last_throttled_ns = s->throttled_ns;
                g->throttled_primed = true;
        } else
                g->throttled_primed = false;

        /* 008: throttled time is invisible to the group and to its threads. */
        advance = pelt_visible_ns(visible, throttled, MAX(s->nr_cpus, 1u));
        g->throttled_vis_ns += visible - advance;
        g->clock_ns += advance;
        g->wall_ns += interval_ns - (visible - advance);

        if (s->have_shares && s->shares > 0)
                g->shares = s->shares;

        if (!usage_of(s, &usage)) {
                /* Nothing to go by this round: the next reading is a new baseline. */
                g->primed = false;
                return rebased;
        }
        if (!g->primed || usage < g->last_usage_ns || (s->time_ns && s->time_ns < g->last_time_ns)) {
                rebased |= g->primed;
                g->last_usage_ns = usage;
                g->last_clock_ns = g->clock_ns;
                g->last_wall_ns = g->wall_ns;
                g->last_time_ns = s->time_ns;
                g->last_throttled_at_ns = g->throttled_vis_ns;
                g->primed = true;
                return rebased;
        }

        /*
         * The group may run on several CPUs at once: its running share may exceed 1.0. Steal-free
         * usage is a share of wall time; plain usage, of the clock that has the machine's steal
         * taken off. Both less throttled time. The span is between the two reads when their times
         * are known.
         */
        if (s->time_ns && g->last_time_ns) {
                span = s->time_ns - g->last_time_ns;
                span -= MIN(span, g->throttled_vis_ns - g->last_throttled_at_ns);
                if (!s->have_usage_scaled)
                        span -= frac_of(span, MIN(steal_frac, PELT_FRAC_ONE));
        } else
                span = s->have_usage_scaled ? g->wall_ns - g->last_wall_ns : g->clock_ns - g->last_clock_ns;
        if (span > 0) {
                uint64_t running = pelt_frac(usage - g->last_usage_ns, span, UINT64_MAX);

                (void) pelt_update_sampled(&g->util, g->clock_ns, PELT_SCALE, running, running);
        }
        g->last_usage_ns = usage;
        g->last_clock_ns = g->clock_ns;
        g->last_wall_ns = g->wall_ns;
        g->last_time_ns = s->time_ns;
        g->last_throttled_at_ns = g->throttled_vis_ns;
        return rebased;
}

static void thread_baseline(TrackThread *t, const TrackThreadSample *s) {
        t->last_run_ns = s->run_ns;
        t->last_wait_ns = s->wait_ns;
        t->last_slices = s->slices;
        t->last_clock_ns = t->group ? t->group->clock_ns : 0;
        t->last_wall_ns = t->group ? t->group->wall_ns : 0;
        t->last_time_ns = s->time_ns;
        t->last_throttled_vis_ns = t->group ? t->group->throttled_vis_ns : 0;
        t->weight = track_nice_to_weight(s->nice);
        t->primed = true;
}

void track_thread_init(TrackThread *t, TrackGroup *g, const TrackThreadSample *s) {
        *t = (TrackThread){ .group = g };
        pelt_init(&t->avg, g ? g->clock_ns : 0);
        thread_baseline(t, s);
}

/* Brings a thread that did not run up to now: a decay-only update (no contribution). */
static void decay_to(TrackThread *t, uint64_t now_ns) {
        (void) pelt_update_sampled(&t->avg, now_ns, t->weight, 0, 0);
}

int track_thread_update(TrackThread *t, const TrackThreadSample *s) {
        TrackGroup *g = t->group;
        uint64_t now, drun, dwait, dslices, dt, dthrottled, running, runnable;

        if (!g)
                return 0;
        now = g->clock_ns;

        if (!t->primed || s->run_ns < t->last_run_ns || s->wait_ns < t->last_wait_ns || s->slices < t->last_slices ||
            (s->time_ns && s->time_ns < t->last_time_ns)) {
                int r = t->primed;

                thread_baseline(t, s);
                return r;
        }

        drun = s->run_ns - t->last_run_ns;
        dwait = s->wait_ns - t->last_wait_ns;
        dslices = s->slices - t->last_slices;
        /* A slice still running at the end of the round counts as one (it is at least this long). */
        t->avg_slice_ns = drun ? drun / MAX(dslices, (uint64_t) 1) : 0;

        if (drun == 0 && dwait == 0 && dslices == 0) {
                /*
                 * Blocked the whole round (003): one decay to now, then it lives in the group's
                 * blocked sum, which decays for all its blocked threads at once.
                 */
                if (!t->blocked) {
                        decay_to(t, now);
                        pelt_group_block(&g->sum, &t->child, &t->avg, now);
                        t->blocked = true;
                }
        } else {
                if (t->blocked) {
                        /* 005: take back exactly its decayed share, then account the idle time up to this round. */
                        (void) pelt_group_wake(&g->sum, &t->child, now);
                        t->blocked = false;
                        decay_to(t, t->last_clock_ns);
                }

                /*
                 * The time between its two reads (when known), less throttled time; its CPU's
                 * stolen time is no time to the kernel's PELT clock either.
                 */
                dthrottled = g->throttled_vis_ns - t->last_throttled_vis_ns;
                if (s->time_ns && t->last_time_ns) {
                        dt = s->time_ns - t->last_time_ns;
                        dt -= MIN(dt, dthrottled);
                } else
                        dt = g->wall_ns - t->last_wall_ns;
                dt -= frac_of(dt, MIN(s->steal_frac, PELT_FRAC_ONE));
                /* Throttled time counts as waiting in schedstat; it is invisible to PELT (008). */
                dwait -= MIN(dwait, dthrottled);

                /* A thread runs on one CPU at a time: its shares are at most 1.0. */
                running = pelt_frac((uint64_t) ((unsigned __int128) drun * capacity_or_default(s->capacity) /
                                                TRACK_CAPACITY_SCALE),
                                    dt, PELT_FRAC_ONE);
                runnable = MAX(pelt_frac(drun + dwait, dt, PELT_FRAC_ONE), running);
                t->weight = track_nice_to_weight(s->nice);
                (void) pelt_update_sampled(&t->avg, now, t->weight, runnable, running);
                pelt_group_update(&g->sum, &t->child, &t->avg);
        }

        t->last_run_ns = s->run_ns;
        t->last_wait_ns = s->wait_ns;
        t->last_slices = s->slices;
        t->last_clock_ns = now;
        t->last_wall_ns = g->wall_ns;
        t->last_time_ns = s->time_ns;
        t->last_throttled_vis_ns = g->throttled_vis_ns;
        if (t->weight != track_nice_to_weight(s->nice)) {
                /* Reniced while blocked: the load average follows at once, as reweight_entity() does. */
                t->weight = track_nice_to_weight(s->nice);
                pelt_update_load_avg(&t->avg, t->weight);
        }
        return 0;
}

/* a + (to - from), saturating at 0: rebases a time of one group clock onto another. */
static uint64_t rebase(uint64_t a, uint64_t from, uint64_t to) {
        uint64_t back = from > a ? from - a : 0;

        return to > back ? to - back : 0;
}

void track_thread_move(TrackThread *t, TrackGroup *to) {
        TrackGroup *from = t->group;
        bool attached = t->child.attached;
        PeltAvg now_avg;

        if (from == to)
                return;

        if (from) {
                /* 004: the contribution leaves with the thread (decayed, when it was blocked). */
                (void) pelt_group_detach(&from->sum, &t->child, from->clock_ns);
                /*
                 * A blocked thread's own average stays as of its last sample (the next update
                 * accounts the time since); what it brings to the new group is its value now.
                 */
                if (t->blocked)
                        decay_to(t, t->last_clock_ns);
                now_avg = t->avg;
                if (t->blocked)
                        (void) pelt_update_sampled(&now_avg, from->clock_ns, t->weight, 0, 0);
                if (to) {
                        t->avg.last_update_time = rebase(t->avg.last_update_time, from->clock_ns, to->clock_ns);
                        t->last_clock_ns = rebase(t->last_clock_ns, from->clock_ns, to->clock_ns);
                        t->last_wall_ns = rebase(t->last_wall_ns, from->wall_ns, to->wall_ns);
                        t->last_throttled_vis_ns = to->throttled_vis_ns;
                }
        } else
                now_avg = t->avg;

        t->group = to;
        if (!to || !attached)
                return;
        /* ... and arrives whole in the new group. */
        if (t->blocked)
                pelt_group_block(&to->sum, &t->child, &now_avg, to->clock_ns);
        else
                pelt_group_attach(&to->sum, &t->child, &t->avg);
}

void track_thread_exit(TrackThread *t) {
        if (t->group)
                (void) pelt_group_detach(&t->group->sum, &t->child, t->group->clock_ns);
        *t = (TrackThread){};
}

TrackValues track_thread_values(const TrackThread *t) {
        PeltAvg a = t->avg;

        if (t->blocked && t->group)
                (void) pelt_update_sampled(&a, t->group->clock_ns, t->weight, 0, 0);
        return (TrackValues){ .util_avg = a.util_avg, .runnable_avg = a.runnable_avg, .load_avg = a.load_avg };
}

TrackValues track_group_values(const TrackGroup *g, bool task_tracking) {
        PeltGroupSum s = g->sum;
        TrackValues v = { .util_avg = g->util.util_avg };

        if (task_tracking) {
                (void) pelt_group_decay_blocked(&s, g->clock_ns);
                v.runnable_avg = pelt_group_total(&s).runnable;
        } else
                v.runnable_avg = g->util.util_avg;
        v.load_avg = pelt_group_load(g->shares, v.runnable_avg);
        return v;
}
