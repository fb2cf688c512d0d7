/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/pelt.h"

/*
 * Tracking: cumulative counters in, PELT averages out (the second step of a sampling round).
 *
 * Pure: every entry point takes the time in and plain structs the caller owns; no I/O, no clock,
 * no allocation, no logging. The sampling layer reads the counters, this module turns their deltas
 * into the PELT core's sampled updates and keeps the seeds' aggregation structures:
 *
 *   - every thread belongs to one TrackGroup: a managed group, or the caller's catch-all group for
 *     threads outside every managed group;
 *   - each group has its own PELT clock (nanoseconds), which is what the group's and its threads'
 *     PELT sums are updated to. It advances by the wall interval less the machine's steal share
 *     (the kernel's clock_task excludes steal) less the group's throttled time (008: divided by the
 *     CPUs the group may use, capped at the interval);
 *   - running and runnable shares are taken against the time the CPU they ran on was not stolen:
 *     a thread's from the steal share of the CPU it last ran on, a group's from its per-CPU usage
 *     (the caller accumulates usage_scaled_ns) or else the machine's share;
 *   - a thread whose schedstat did not move in a task round is blocked (003): its contribution
 *     sits in its group's blocked sum, which decays as a whole, and the thread costs nothing more
 *     until it runs again (005), exits or moves (004): its contribution goes with it;
 *   - a group's util comes from its own usage counters (all CPUs: may exceed 1024), its runnable
 *     sum from its threads (002), its load is Shares * min(runnable / 1024, 1) (006/007).
 *
 * Time: nanoseconds of the group's clock; the PELT core works in ns >> 10 units.
 */

#define TRACK_CAPACITY_SCALE 1024    /* a CPU of capacity 1024 is the unit of util */

typedef struct TrackGroup {
        uint64_t clock_ns;           /* the group's PELT clock: visible time only */
        uint64_t wall_ns;            /* wall time less throttled time (steal left in) */
        uint64_t throttled_vis_ns;   /* cumulative throttled time taken off the clock (008) */
        PeltAvg util;                /* from the group's own usage counters */
        PeltGroupSum sum;            /* its threads' contributions (002/003/005) */
        uint64_t shares;             /* cpu.shares (v2: cpu.weight converted); 1024 until known */

        /* The counters as of the last group round (valid when primed). */
        uint64_t last_usage_ns;
        uint64_t last_throttled_ns;
        uint64_t last_clock_ns;      /* clock_ns when last_usage_ns was read */
        uint64_t last_wall_ns;
        uint64_t last_time_ns;       /* TrackGroupSample.time_ns of the baseline */
        uint64_t last_throttled_at_ns; /* throttled_vis_ns then */
        bool primed;
        bool throttled_primed;
} TrackGroup;

/* What the sampling layer read for a group in one group round. */
typedef struct TrackGroupSample {
        bool have_usage;
        uint64_t usage_ns;           /* cumulative, all CPUs */
        /*
         * Capacity-invariant, steal-free usage, cumulative, when the per-CPU split is known (v1
         * usage_percpu): the caller adds, each round, the sum over CPUs of
         * d_usage(cpu) * capacity(cpu) / 1024 / (1 - steal share of cpu). Else `capacity` and the
         * machine's steal share apply to usage_ns.
         */
        bool have_usage_scaled;
        uint64_t usage_scaled_ns;
        unsigned capacity;           /* mean capacity of the group's CPUs (0: 1024) */
        bool have_throttled;
        uint64_t throttled_ns;       /* cumulative, summed over per-CPU runqueues */
        unsigned nr_cpus;            /* CPUs the group may use (0: 1) */
        bool have_shares;
        uint64_t shares;
        /*
         * CLOCK_MONOTONIC ns when the usage counters were read (0: at the round's time). Shares
         * are taken over the time between two reads: a reader that was preempted between the
         * round's start and the read must not make a busy group look idle, or the next one busier.
         */
        uint64_t time_ns;
} TrackGroupSample;

typedef struct TrackThread {
        PeltAvg avg;
        PeltChild child;             /* its place in its group's sums */
        TrackGroup *group;
        unsigned long weight;        /* from nice, the kernel's table */
        uint64_t last_run_ns;
        uint64_t last_wait_ns;
        uint64_t last_slices;
        uint64_t last_clock_ns;      /* the group clock at the last sample */
        uint64_t last_wall_ns;       /* the group's wall time at the last sample */
        uint64_t last_time_ns;       /* TrackThreadSample.time_ns at the last sample */
        uint64_t last_throttled_vis_ns;
        uint64_t avg_slice_ns;       /* run time per timeslice over the last task round; 0: none */
        bool primed;
        bool blocked;
} TrackThread;

/* A thread's schedstat (and the figures from its stat file), as read in one task round. */
typedef struct TrackThreadSample {
        uint64_t run_ns;
        uint64_t wait_ns;
        uint64_t slices;
        int nice;
        unsigned capacity;           /* of the CPU it last ran on (0: 1024) */
        uint64_t steal_frac;         /* that CPU's steal share of the round (PELT_FRAC_ONE = all) */
        uint64_t time_ns;            /* CLOCK_MONOTONIC ns when schedstat was read (0: at the round's time) */
} TrackThreadSample;

/* The averages as of the group's clock (a blocked entity's decayed to it). */
typedef struct TrackValues {
        uint64_t util_avg;
        uint64_t runnable_avg;
        uint64_t load_avg;
} TrackValues;

/* The kernel's sched_prio_to_weight[]: nice -20..19 -> weight (nice 0 = 1024). */
unsigned long track_nice_to_weight(int nice);

/*
 * The steal share of an interval from /proc/stat's cumulative "cpu" line: steal jiffies over all
 * jiffies, as PELT_FRAC_ONE fixed point; 0 when nothing advanced.
 */
uint64_t track_steal_frac(uint64_t d_steal, uint64_t d_total);

/*
 * A new group whose clock starts at clock_ns: start it at the catch-all group's clock, so that a
 * thread moving between groups keeps its PELT history on a comparable time base.
 */
void track_group_init(TrackGroup *g, uint64_t clock_ns);

/*
 * A group round: the wall interval since the last one (interval_ns), the machine's steal share of
 * it, and the group's counters. Advances the group's clock and its util. Counters that are missing
 * or went backwards (a recreated group) are taken as a new baseline: the interval is skipped for
 * util. Returns 1 when a counter was re-baselined (the caller may log it at debug), else 0.
 */
int track_group_advance(TrackGroup *g, uint64_t interval_ns, uint64_t steal_frac, const TrackGroupSample *s);

/* Starts tracking a thread in group g with its baseline counters (no update: tracked from the next round). */
void track_thread_init(TrackThread *t, TrackGroup *g, const TrackThreadSample *s);

/*
 * A task round for a thread in its current group (call track_thread_move() first when it moved,
 * and track_group_advance() on the group first). Returns 1 when its counters went backwards and
 * were re-baselined, else 0.
 */
int track_thread_update(TrackThread *t, const TrackThreadSample *s);

/* The thread moves to group `to`, taking its contribution with it (004/005). */
void track_thread_move(TrackThread *t, TrackGroup *to);

/* The thread exits: its contribution leaves its group (004). */
void track_thread_exit(TrackThread *t);

TrackValues track_thread_values(const TrackThread *t);

/*
 * A group's values. With task tracking, runnable and load come from its threads; without (011,
 * TaskTracking=no) the group's own util stands in for runnable (running is part of runnable: a
 * lower bound).
 */
TrackValues track_group_values(const TrackGroup *g, bool task_tracking);
