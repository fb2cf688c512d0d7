/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Per-entity load tracking (PELT) in user space: the kernel's own math (kernel/sched/pelt.c), bit
 * for bit, plus the aggregation structures of the per-entity load-tracking series (seeds 002-011).
 *
 * Pure: every entry point takes the time in and a plain struct, owns nothing, allocates nothing,
 * reads no clock and never logs.
 *
 * Units, as the kernel's:
 *   - time comes in as nanoseconds ("now"); the math works in ns >> 10 (~1 µs, "units");
 *   - a period is 1024 units (~1 ms); a contribution p periods old weighs y^p, y^32 = 1/2;
 *   - util and runnable averages are in 1/1024 of a CPU of capacity 1024; load in weight units
 *     (nice 0 = 1024).
 *
 * The geometric series a fully-running entity accumulates converges to LOAD_AVG_MAX:
 *
 *   1024 * (1 + y + y^2 + ...) -> 47742      (with the kernel's integer rounding)
 *
 * and the average is the sum divided by the part of that maximum already elapsed, the divider
 * LOAD_AVG_MAX - 1024 + period_contrib.
 */

#define PELT_PERIOD_UNITS 1024       /* units per period */
#define PELT_SCALE_SHIFT 10          /* SCHED_CAPACITY_SHIFT */
#define PELT_SCALE 1024              /* one CPU of capacity 1024; nice-0 weight */

typedef struct PeltAvg {
        uint64_t last_update_time;   /* ns, advanced in steps of 1024 ns */
        uint64_t load_sum;
        uint64_t runnable_sum;
        uint64_t util_sum;           /* u32 in the kernel; 64 bits here so a group's util may exceed 1024 */
        uint32_t period_contrib;     /* units already accumulated into the current period */
        uint64_t load_avg;
        uint64_t runnable_avg;
        uint64_t util_avg;
} PeltAvg;

/* val * y^n, in O(1): halvings for whole multiples of 32 periods, then the y^n table. */
uint64_t pelt_decay_load(uint64_t val, uint64_t n);

/*
 * The contribution of an always-running interval that crosses `periods` boundaries:
 *
 *        d1          d2           d3
 *        ^           ^            ^
 *        |           |            |
 *      |<->|<----------------->|<--->|
 *  ... |---x---|------| ... |------|-----x (now)
 *
 *   c1 = d1 y^p,  c2 = 1024 (y + ... + y^(p-1)),  c3 = d3 y^0
 *
 * c2 in closed form: LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, p) - 1024.
 */
uint32_t pelt_accumulate_segments(uint64_t periods, uint32_t d1, uint32_t d3);

/* The divider of the averages: LOAD_AVG_MAX - 1024 + period_contrib. */
uint32_t pelt_divider(const PeltAvg *sa);

/*
 * The kernel's ___update_load_sum(): accrue [last_update_time, now) with the given load (0/1 for a
 * task: on the runqueue), runnable (0/1) and running (0/1). Returns 1 when a period boundary was
 * crossed (the averages are stale), else 0. Time going backwards resets last_update_time and
 * accrues nothing.
 */
int pelt_update_load_sum(PeltAvg *sa, uint64_t now_ns, unsigned long load, unsigned long runnable, int running);

/* The kernel's ___update_load_avg(): *_avg from *_sum; load is the entity's weight. */
void pelt_update_load_avg(PeltAvg *sa, unsigned long load);

/*
 * __update_load_avg_se(): a task entity of the given weight that was (or was not) on the runqueue
 * and running for the whole interval up to now. Returns 1 when the averages changed.
 */
int pelt_update_entity(PeltAvg *sa, uint64_t now_ns, unsigned long weight, bool runnable, bool running);

/*
 * A sampled interval. Only the totals of [last_update_time, now) are known: the share of it the
 * entity was runnable and the share it was running. PELT is linear in its input, so running for a
 * share f of the interval, spread evenly, contributes f times what a fully-running interval would:
 * the update computes the fully-running contribution once (O(1), whatever the interval) and scales
 * it. Shares are fixed point, PELT_FRAC_ONE = 1.0. A running share above 1.0 (a group using several
 * CPUs) is allowed and gives util above 1024; runnable is not capped either. Returns as
 * pelt_update_entity().
 *
 * With shares of exactly 0 or 1.0 this is bit for bit pelt_update_entity().
 */
#define PELT_FRAC_SHIFT 32
#define PELT_FRAC_ONE (UINT64_C(1) << PELT_FRAC_SHIFT)

int pelt_update_sampled(PeltAvg *sa, uint64_t now_ns, unsigned long weight, uint64_t runnable_frac,
                        uint64_t running_frac);

/* frac = num / den in PELT_FRAC_ONE units (0 when den is 0), saturating at max_frac. */
uint64_t pelt_frac(uint64_t num, uint64_t den, uint64_t max_frac);

/* Starts tracking at now with empty sums (a new entity). */
void pelt_init(PeltAvg *sa, uint64_t now_ns);

/* ---- Aggregation (seeds 002-009) ------------------------------------------------------------ */

/* What an entity contributes to its parent: its current averages. */
typedef struct PeltContrib {
        uint64_t load;
        uint64_t runnable;
        uint64_t util;
} PeltContrib;

PeltContrib pelt_contrib_of(const PeltAvg *sa);
void pelt_contrib_add(PeltContrib *sum, const PeltContrib *c);
/* Subtracts, clamping each field at 0 (rounding may leave a child's share a little larger). */
void pelt_contrib_sub(PeltContrib *sum, const PeltContrib *c);
PeltContrib pelt_contrib_decay(const PeltContrib *c, uint64_t periods);

/*
 * A group's load-tracking sums (002, 003, 005):
 *
 *   runnable: the contributions of its children that run, kept current by the children themselves
 *             (a child whose average changes adds the same delta here; 002);
 *   blocked:  the contributions of its blocked children, decayed as a whole: one multiplication by
 *             y^n accounts n idle periods of every blocked child at once (003);
 *   decay_counter: the periods the blocked sum has been decayed through. A child that blocks keeps
 *             the counter's value; when it wakes, exits or moves it takes back exactly its own
 *             contribution decayed by the periods since (005), never more than what is left.
 *
 * The blocked sum decays at boundaries of absolute time (now >> 20: periods of 1024 units), as the
 * kernel's update_cfs_rq_blocked_load() did.
 */
typedef struct PeltGroupSum {
        PeltContrib runnable;
        PeltContrib blocked;
        uint64_t decay_counter;
        uint64_t last_decay_period;  /* now_ns >> 20 at the last decay */
} PeltGroupSum;

/* What a child records about its place in its group's sums. */
typedef struct PeltChild {
        PeltContrib contrib;         /* as added to the group (decayed lazily while blocked) */
        uint64_t decay_count;        /* the group's decay_counter when it blocked */
        bool blocked;
        bool attached;
} PeltChild;

void pelt_group_init(PeltGroupSum *g, uint64_t now_ns);
/* Decays the blocked sum to now; returns the periods decayed. */
uint64_t pelt_group_decay_blocked(PeltGroupSum *g, uint64_t now_ns);
/* A child joins (new, or moved in) as running with its current averages. */
void pelt_group_attach(PeltGroupSum *g, PeltChild *c, const PeltAvg *sa);
/* A running child's averages changed: the group's runnable sum follows by the same delta (002). */
void pelt_group_update(PeltGroupSum *g, PeltChild *c, const PeltAvg *sa);
/*
 * A running child blocks: its contribution moves to the blocked sum (003). The sum is decayed to
 * now first, so the child's stamp counts only the decays that follow.
 */
void pelt_group_block(PeltGroupSum *g, PeltChild *c, const PeltAvg *sa, uint64_t now_ns);
/*
 * A blocked child wakes: its decayed share leaves the blocked sum (005). The caller then updates
 * the child's own averages over the idle time and calls pelt_group_attach().
 * Returns the share taken back.
 */
PeltContrib pelt_group_wake(PeltGroupSum *g, PeltChild *c, uint64_t now_ns);
/* A child exits or moves away: its contribution (decayed, if blocked) is removed (004, 005). */
PeltContrib pelt_group_detach(PeltGroupSum *g, PeltChild *c, uint64_t now_ns);
/* runnable + blocked: everything the group's children contribute now. */
PeltContrib pelt_group_total(const PeltGroupSum *g);

/*
 * A group's load as a task of equal weight would contribute it (006, 007):
 *
 *   load(group) = Shares * min(runnable_avg / 1024, 1)
 *
 * A group using less than one CPU contributes in proportion; one using more caps at its shares.
 */
uint64_t pelt_group_load(uint64_t shares, uint64_t runnable_avg);

/*
 * 009: the part of a group's shares each CPU's runqueue gets, in proportion to the load the group
 * has there:  shares_i = clamp(shares * load_i / Σ load, MIN_SHARES, shares), and all the shares on
 * one CPU when the group has no load at all. ret has n entries.
 */
#define PELT_MIN_SHARES 2
void pelt_shares_split(uint64_t shares, const uint64_t *cpu_load, size_t n, uint64_t *ret);

/*
 * 008: throttled time is invisible. The cgroup's throttled counter is summed over per-CPU
 * runqueues: divide by the number of CPUs the group may use and cap at the interval. Returns the
 * interval the group's clock advances by.
 */
uint64_t pelt_visible_ns(uint64_t interval_ns, uint64_t throttled_ns, unsigned nr_cpus);
