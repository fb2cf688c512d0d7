/* SPDX-License-Identifier: GPL-2.0-only */
#include "peltd/macro.h"
#include "peltd/pelt.h"
#include "pelt-table.h"

#define PELT_DIVIDER_MIN (PELT_LOAD_AVG_MAX - 1024)

/*
 * Approximate: val * y^n, where y^32 = 1/2.
 *
 * As y^PERIOD = 1/2, y^n = 1/2^(n/PERIOD) * y^(n%PERIOD), with a table for y^k (k < PERIOD): constant
 * time. After 63 half-lives every 64-bit value is 0.
 */
/* y^n, split once into halvings and a table entry, to apply to several values. */
typedef struct Decay {
        unsigned shift;              /* whole multiples of 32 periods: halvings */
        uint32_t inv;                /* y^(n % 32) as 32.32 fixed point */
        bool zero;                   /* after 63 half-lives every 64-bit value is 0 */
} Decay;

static inline Decay decay_of(uint64_t n) {
        if (n > PELT_LOAD_AVG_PERIOD * 63)
                return (Decay){ .zero = true };
        return (Decay){ .shift = (unsigned) (n / PELT_LOAD_AVG_PERIOD), .inv = pelt_yN_inv[n % PELT_LOAD_AVG_PERIOD] };
}

static inline uint64_t decay_apply(uint64_t val, Decay d) {
        if (d.zero)
                return 0;
        /* mul_u64_u32_shr(): the full 96-bit product, shifted; the kernel never rounds up here. */
        return (uint64_t) (((unsigned __int128) (val >> d.shift) * d.inv) >> 32);
}

/*
 * Approximate: val * y^n, where y^32 = 1/2.
 *
 * As y^PERIOD = 1/2, y^n = 1/2^(n/PERIOD) * y^(n%PERIOD), with a table for y^k (k < PERIOD): constant
 * time. After 63 half-lives every 64-bit value is 0.
 */
uint64_t pelt_decay_load(uint64_t val, uint64_t n) {
        return decay_apply(val, decay_of(n));
}

/*
 *            p-1
 * c2 = 1024 \Sum y^n
 *            n=1
 *
 *              inf        inf
 *    = 1024 ( \Sum y^n - \Sum y^n - y^0 )
 *              n=0        n=p
 */
static inline uint32_t accumulate_segments(Decay d, uint32_t d1, uint32_t d3) {
        uint32_t c1 = (uint32_t) decay_apply(d1, d);                                     /* c1 = d1 y^p */
        uint32_t c2 = PELT_LOAD_AVG_MAX - (uint32_t) decay_apply(PELT_LOAD_AVG_MAX, d) - 1024;

        return c1 + c2 + d3;                                                             /* c3 = d3 y^0 */
}

uint32_t pelt_accumulate_segments(uint64_t periods, uint32_t d1, uint32_t d3) {
        return accumulate_segments(decay_of(periods), d1, d3);
}

uint32_t pelt_divider(const PeltAvg *sa) {
        return PELT_DIVIDER_MIN + sa->period_contrib;
}

/*
 * v * frac, frac in 32.32 fixed point, truncated like every other step of the kernel's math: exact
 * for whole multipliers; otherwise low by less than one unit of a sum (a sum of an always-running
 * entity is about 47742 << 10 units).
 */
static inline uint64_t scale(uint64_t v, uint64_t frac) {
        return (uint64_t) (((unsigned __int128) v * frac) >> PELT_FRAC_SHIFT);
}

/*
 * Steps 1 and 2 of the update: decay the sums if period boundaries were crossed, then add the new
 * contribution. `contrib` is what a fully-running entity earns over the interval; the scale
 * factors say how much of it each sum gets, as 32.32 fixed point. Returns the periods crossed.
 */
static uint64_t accumulate_sum(uint64_t delta, PeltAvg *sa, uint64_t load_frac, uint64_t runnable_frac,
                               uint64_t running_frac) {
        uint32_t contrib = (uint32_t) delta; /* p == 0 -> delta < 1024 */
        uint64_t periods;

        delta += sa->period_contrib;
        periods = delta / 1024; /* A period is 1024 units (~1 ms) */

        if (periods) {
                /* One y^p for all of it: the three sums and the segments decay alike. */
                Decay d = decay_of(periods);

                sa->load_sum = decay_apply(sa->load_sum, d);
                sa->runnable_sum = decay_apply(sa->runnable_sum, d);
                sa->util_sum = decay_apply(sa->util_sum, d);

                delta %= 1024;
                /*
                 * The kernel computes the contribution only when load is set: with load clear it
                 * clears runnable and running too (see pelt_update_load_sum()). Sampled groups may
                 * run with no tracked load, so compute it whenever anything will use it.
                 */
                if (load_frac || runnable_frac || running_frac)
                        contrib = accumulate_segments(d, 1024 - sa->period_contrib, (uint32_t) delta);
        }
        sa->period_contrib = (uint32_t) delta;

        if (load_frac)
                sa->load_sum += scale(contrib, load_frac);
        if (runnable_frac)
                sa->runnable_sum += scale((uint64_t) contrib << PELT_SCALE_SHIFT, runnable_frac);
        if (running_frac)
                sa->util_sum += scale((uint64_t) contrib << PELT_SCALE_SHIFT, running_frac);

        return periods;
}

/*
 * Time is accrued in units of 1024 ns (ns >> 10): a good approximation of a µs and cheap. Whatever
 * is left below one unit stays in last_update_time for the next update.
 */
static int update_sum(uint64_t now_ns, PeltAvg *sa, uint64_t load_frac, uint64_t runnable_frac,
                      uint64_t running_frac) {
        uint64_t delta = now_ns - sa->last_update_time;

        /* Time going backwards (a clock reset, a caller's mistake): restart from now, accrue nothing. */
        if ((int64_t) delta < 0) {
                sa->last_update_time = now_ns;
                return 0;
        }

        delta >>= 10;
        if (!delta)
                return 0;

        sa->last_update_time += delta << 10;

        return accumulate_sum(delta, sa, load_frac, runnable_frac, running_frac) ? 1 : 0;
}

int pelt_update_load_sum(PeltAvg *sa, uint64_t now_ns, unsigned long load, unsigned long runnable, int running) {
        /*
         * running is a subset of runnable (weight): with load clear, the kernel clears both (a
         * dequeued entity still pointed to by cfs_rq->curr).
         */
        if (!load)
                runnable = running = 0;

        /* The kernel's sums take load and runnable as integer multipliers of the contribution. */
        return update_sum(now_ns, sa, (uint64_t) load << PELT_FRAC_SHIFT, (uint64_t) runnable << PELT_FRAC_SHIFT,
                          running ? PELT_FRAC_ONE : 0);
}

static inline void update_avg(PeltAvg *sa, unsigned long load) {
        uint32_t divider = PELT_DIVIDER_MIN + sa->period_contrib;

        sa->load_avg = (uint64_t) load * sa->load_sum / divider;
        sa->runnable_avg = sa->runnable_sum / divider;
        sa->util_avg = sa->util_sum / divider;
}

void pelt_update_load_avg(PeltAvg *sa, unsigned long load) {
        update_avg(sa, load);
}

int pelt_update_entity(PeltAvg *sa, uint64_t now_ns, unsigned long weight, bool runnable, bool running) {
        if (pelt_update_load_sum(sa, now_ns, runnable, runnable, running)) {
                update_avg(sa, weight);
                return 1;
        }
        return 0;
}

int pelt_update_sampled(PeltAvg *sa, uint64_t now_ns, unsigned long weight, uint64_t runnable_frac,
                        uint64_t running_frac) {
        /* A task's load is its runnable share (on the runqueue), its weight applied in the average. */
        if (update_sum(now_ns, sa, MIN(runnable_frac, PELT_FRAC_ONE), runnable_frac, running_frac)) {
                update_avg(sa, weight);
                return 1;
        }
        return 0;
}

uint64_t pelt_frac(uint64_t num, uint64_t den, uint64_t max_frac) {
        unsigned __int128 f;

        if (den == 0)
                return 0;
        f = ((unsigned __int128) num << PELT_FRAC_SHIFT) / den;
        return f > max_frac ? max_frac : (uint64_t) f;
}

void pelt_init(PeltAvg *sa, uint64_t now_ns) {
        *sa = (PeltAvg){ .last_update_time = now_ns };
}

PeltContrib pelt_contrib_of(const PeltAvg *sa) {
        return (PeltContrib){ .load = sa->load_avg, .runnable = sa->runnable_avg, .util = sa->util_avg };
}

void pelt_contrib_add(PeltContrib *sum, const PeltContrib *c) {
        sum->load += c->load;
        sum->runnable += c->runnable;
        sum->util += c->util;
}

static uint64_t sub_clamped(uint64_t a, uint64_t b) {
        return a > b ? a - b : 0;
}

void pelt_contrib_sub(PeltContrib *sum, const PeltContrib *c) {
        sum->load = sub_clamped(sum->load, c->load);
        sum->runnable = sub_clamped(sum->runnable, c->runnable);
        sum->util = sub_clamped(sum->util, c->util);
}

PeltContrib pelt_contrib_decay(const PeltContrib *c, uint64_t periods) {
        return (PeltContrib){
                .load = pelt_decay_load(c->load, periods),
                .runnable = pelt_decay_load(c->runnable, periods),
                .util = pelt_decay_load(c->util, periods),
        };
}

/* The blocked sum decays at 2^20 ns boundaries: periods of 1024 units of 1024 ns. */
#define DECAY_PERIOD_SHIFT 20

void pelt_group_init(PeltGroupSum *g, uint64_t now_ns) {
        *g = (PeltGroupSum){ .last_decay_period = now_ns >> DECAY_PERIOD_SHIFT };
}

uint64_t pelt_group_decay_blocked(PeltGroupSum *g, uint64_t now_ns) {
        uint64_t period = now_ns >> DECAY_PERIOD_SHIFT, decays;

        if (period <= g->last_decay_period)
                return 0;
        decays = period - g->last_decay_period;
        g->blocked = pelt_contrib_decay(&g->blocked, decays);
        g->decay_counter += decays;
        g->last_decay_period = period;
        return decays;
}

void pelt_group_attach(PeltGroupSum *g, PeltChild *c, const PeltAvg *sa) {
        c->contrib = pelt_contrib_of(sa);
        c->blocked = false;
        c->attached = true;
        pelt_contrib_add(&g->runnable, &c->contrib);
}

void pelt_group_update(PeltGroupSum *g, PeltChild *c, const PeltAvg *sa) {
        PeltContrib n = pelt_contrib_of(sa);

        if (!c->attached || c->blocked) {
                pelt_group_attach(g, c, sa);
                return;
        }
        pelt_contrib_sub(&g->runnable, &c->contrib);
        pelt_contrib_add(&g->runnable, &n);
        c->contrib = n;
}

void pelt_group_block(PeltGroupSum *g, PeltChild *c, const PeltAvg *sa, uint64_t now_ns) {
        pelt_group_decay_blocked(g, now_ns);
        if (c->attached && !c->blocked)
                pelt_contrib_sub(&g->runnable, &c->contrib);
        c->contrib = pelt_contrib_of(sa);
        pelt_contrib_add(&g->blocked, &c->contrib);
        c->decay_count = g->decay_counter;
        c->blocked = true;
        c->attached = true;
}

/* Synchronize a blocked child's contribution with the decays its group applied since it blocked. */
static PeltContrib take_blocked(PeltGroupSum *g, PeltChild *c) {
        PeltContrib share = pelt_contrib_decay(&c->contrib, g->decay_counter - c->decay_count);

        /* Rounding of the sum and of the parts differ by a little: never take more than is left. */
        share.load = MIN(share.load, g->blocked.load);
        share.runnable = MIN(share.runnable, g->blocked.runnable);
        share.util = MIN(share.util, g->blocked.util);
        pelt_contrib_sub(&g->blocked, &share);
        return share;
}

PeltContrib pelt_group_wake(PeltGroupSum *g, PeltChild *c, uint64_t now_ns) {
        PeltContrib share = { 0 };

        pelt_group_decay_blocked(g, now_ns);
        if (c->attached && c->blocked)
                share = take_blocked(g, c);
        c->contrib = share;
        c->blocked = false;
        c->attached = false;
        return share;
}

PeltContrib pelt_group_detach(PeltGroupSum *g, PeltChild *c, uint64_t now_ns) {
        PeltContrib share = { 0 };

        pelt_group_decay_blocked(g, now_ns);
        if (!c->attached)
                return share;
        if (c->blocked)
                share = take_blocked(g, c);
        else {
                share = c->contrib;
                pelt_contrib_sub(&g->runnable, &share);
        }
        *c = (PeltChild){ 0 };
        return share;
}

PeltContrib pelt_group_total(const PeltGroupSum *g) {
        PeltContrib t = g->runnable;

        pelt_contrib_add(&t, &g->blocked);
        return t;
}

uint64_t pelt_group_load(uint64_t shares, uint64_t runnable_avg) {
        return shares * MIN(runnable_avg, (uint64_t) PELT_SCALE) / PELT_SCALE;
}

void pelt_shares_split(uint64_t shares, const uint64_t *cpu_load, size_t n, uint64_t *ret) {
        unsigned __int128 total = 0;

        for (size_t i = 0; i < n; i++)
                total += cpu_load[i];

        for (size_t i = 0; i < n; i++) {
                uint64_t s;

                if (total == 0)
                        /* No load anywhere: a task waking on any CPU gets the group's full weight. */
                        s = shares;
                else
                        s = (uint64_t) ((unsigned __int128) shares * cpu_load[i] / total);
                ret[i] = CLAMP(s, (uint64_t) PELT_MIN_SHARES, MAX(shares, (uint64_t) PELT_MIN_SHARES));
        }
}

uint64_t pelt_visible_ns(uint64_t interval_ns, uint64_t throttled_ns, unsigned nr_cpus) {
        uint64_t t = throttled_ns / MAX(nr_cpus, 1u);

        return interval_ns - MIN(t, interval_ns);
}
