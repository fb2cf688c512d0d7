/* SPDX-License-Identifier: GPL-2.0-only */
/* The PELT core against the kernel: constants, bit-exact updates, the sampled form, aggregation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/pelt.h"
#include "../../daemon/core/pelt-table.h"

#define NS_PER_UNIT 1024ULL
#define NS_PER_PERIOD (1024ULL * 1024ULL)

/* ---- Seed 010's literal constants ------------------------------------------------------------ */

static const uint32_t seed_yN_inv[] = {
        0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6,
        0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85,
        0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
        0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
        0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80,
        0x85aac367, 0x82cd8698,
};

static void test_table_matches_seed(_unused_ void **state) {
        assert_int_equal(ELEMENTSOF(pelt_yN_inv), 32);
        assert_memory_equal(pelt_yN_inv, seed_yN_inv, sizeof seed_yN_inv);
        assert_int_equal(PELT_LOAD_AVG_MAX, 47742);
        assert_int_equal(PELT_LOAD_AVG_MAX_N, 345);
        assert_int_equal(PELT_LOAD_AVG_PERIOD, 32);
}

static void test_table_matches_pow(_unused_ void **state) {
        double y = pow(0.5, 1.0 / 32);

        for (int i = 0; i < 32; i++) {
                double exact = 4294967295.0 * pow(y, i);

                /* The generator truncates; the table entry is the floor of the exact value. */
                assert_true((double) pelt_yN_inv[i] <= exact);
                assert_true(exact - (double) pelt_yN_inv[i] < 1.0);
        }
        /* y^32 = 1/2: a halving, then y^0 = (2^32 - 1) / 2^32, which truncates by one. */
        assert_int_equal(pelt_decay_load(1 << 20, 32), (1 << 19) - 1);
        assert_int_equal(pelt_decay_load(1 << 20, 64), (1 << 18) - 1);
}

/* ---- A plain transcription of kernel/sched/pelt.c (v6.x) ------------------------------------- */

struct k_sched_avg {
        uint64_t last_update_time, load_sum, runnable_sum;
        uint32_t util_sum, period_contrib;
        unsigned long load_avg, runnable_avg, util_avg;
};

static uint64_t k_decay_load(uint64_t val, uint64_t n) {
        unsigned int local_n;

        if (n > 32 * 63)
                return 0;
        local_n = n;
        if (local_n >= 32) {
                val >>= local_n / 32;
                local_n %= 32;
        }
        /* mul_u64_u32_shr(val, runnable_avg_yN_inv[local_n], 32) */
        return (uint64_t) (((unsigned __int128) val * seed_yN_inv[local_n]) >> 32);
}

static uint32_t k___accumulate_pelt_segments(uint64_t periods, uint32_t d1, uint32_t d3) {
        uint32_t c1, c2, c3 = d3;

        c1 = k_decay_load((uint64_t) d1, periods);
        c2 = 47742 - k_decay_load(47742, periods) - 1024;
        return c1 + c2 + c3;
}

static uint32_t k_accumulate_sum(uint64_t delta, struct k_sched_avg *sa, unsigned long load,
                                 unsigned long runnable, int running) {
        uint32_t contrib = (uint32_t) delta;
        uint64_t periods;

        delta += sa->period_contrib;
        periods = delta / 1024;
        if (periods) {
                sa->load_sum = k_decay_load(sa->load_sum, periods);
                sa->runnable_sum = k_decay_load(sa->runnable_sum, periods);
                sa->util_sum = k_decay_load((uint64_t) (sa->util_sum), periods);
                delta %= 1024;
                if (load)
                        contrib = k___accumulate_pelt_segments(periods, 1024 - sa->period_contrib, delta);
        }
        sa->period_contrib = delta;

        if (load)
                sa->load_sum += load * contrib;
        if (runnable)
                sa->runnable_sum += runnable * contrib << 10;
        if (running)
                sa->util_sum += contrib << 10;
        return periods;
}

static int k___update_load_sum(uint64_t now, struct k_sched_avg *sa, unsigned long load,
                               unsigned long runnable, int running) {
        uint64_t delta = now - sa->last_update_time;

        if ((int64_t) delta < 0) {
                sa->last_update_time = now;
                return 0;
        }
        delta >>= 10;
        if (!delta)
                return 0;
        sa->last_update_time += delta << 10;
        if (!load)
                runnable = running = 0;
        if (!k_accumulate_sum(delta, sa, load, runnable, running))
                return 0;
        return 1;
}

static void k___update_load_avg(struct k_sched_avg *sa, unsigned long load) {
        uint32_t divider = 47742 - 1024 + sa->period_contrib;

        sa->load_avg = load * sa->load_sum / divider;
        sa->runnable_avg = sa->runnable_sum / divider;
        sa->util_avg = sa->util_sum / divider;
}

/* __update_load_avg_se() */
static int k_update_se(uint64_t now, struct k_sched_avg *sa, unsigned long weight, int on_rq, int running) {
        if (k___update_load_sum(now, sa, !!on_rq, on_rq, running)) {
                k___update_load_avg(sa, weight);
                return 1;
        }
        return 0;
}

static void assert_same(const PeltAvg *a, const struct k_sched_avg *k) {
        assert_int_equal(a->last_update_time, k->last_update_time);
        assert_int_equal(a->load_sum, k->load_sum);
        assert_int_equal(a->runnable_sum, k->runnable_sum);
        assert_int_equal(a->util_sum, k->util_sum);
        assert_int_equal(a->period_contrib, k->period_contrib);
        assert_int_equal(a->load_avg, k->load_avg);
        assert_int_equal(a->runnable_avg, k->runnable_avg);
        assert_int_equal(a->util_avg, k->util_avg);
}

/* xorshift64*: deterministic, so a failure reproduces. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t random_delta(void) {
        switch (rnd() % 8) {
        case 0:
                return rnd() % 1024;                    /* below one unit */
        case 1:
                return rnd() % (1024 * 1024);           /* within a period */
        case 2:
        case 3:
                return rnd() % (4 * NS_PER_PERIOD);     /* a few periods */
        case 4:
                return rnd() % (100 * NS_PER_PERIOD);
        case 5:
                return rnd() % (3000 * NS_PER_PERIOD);  /* beyond 63 half-lives */
        default:
                return NS_PER_PERIOD * (rnd() % 40);    /* exact period multiples */
        }
}

static void test_bit_exact_random(_unused_ void **state) {
        static const unsigned long weights[] = { 1024, 3121, 335, 88761, 15 };

        for (int run = 0; run < 20; run++) {
                struct k_sched_avg k = { .last_update_time = rnd() % NS_PER_PERIOD };
                PeltAvg a, s;
                unsigned long w = weights[run % ELEMENTSOF(weights)];
                uint64_t now = k.last_update_time;

                pelt_init(&a, now);
                pelt_init(&s, now);
                for (int i = 0; i < 5000; i++) {
                        int on_rq = (int) (rnd() % 4 != 0), running = on_rq && (rnd() % 3 != 0);
                        int rk, ra, rs;

                        now += random_delta();
                        rk = k_update_se(now, &k, w, on_rq, running);
                        ra = pelt_update_entity(&a, now, w, on_rq, running);
                        /* The sampled form with whole shares is the same update. */
                        rs = pelt_update_sampled(&s, now, w, on_rq ? PELT_FRAC_ONE : 0,
                                                 running ? PELT_FRAC_ONE : 0);
                        assert_int_equal(ra, rk);
                        assert_int_equal(rs, rk);
                        assert_same(&a, &k);
                        assert_same(&s, &k);
                }
        }
}

static void test_bit_exact_cfs_rq_weights(_unused_ void **state) {
        /* A cfs_rq accrues its load weight and nr_running as multipliers: same math, larger factors. */
        struct k_sched_avg k = { 0 };
        PeltAvg a;
        uint64_t now = 0;

        pelt_init(&a, 0);
        for (int i = 0; i < 3000; i++) {
                unsigned long load = rnd() % 200000, runnable = load ? rnd() % 64 : 0;
                int running = load && (rnd() % 2);

                now += random_delta();
                assert_int_equal(pelt_update_load_sum(&a, now, load, runnable, running),
                                 k___update_load_sum(now, &k, load, runnable, running));
                pelt_update_load_avg(&a, 1);
                k___update_load_avg(&k, 1);
                assert_int_equal(a.load_sum, k.load_sum);
                assert_int_equal(a.runnable_sum, k.runnable_sum);
                assert_int_equal(a.util_sum, k.util_sum);
                assert_int_equal(a.period_contrib, k.period_contrib);
        }
}

/*
 * Golden vectors, by hand from the kernel's formulas:
 *
 * 1. From t = 0, running for exactly one period (1024 units): delta + period_contrib = 1024, so
 *    p = 1 and d3 = 0; c1 = decay_load(1024, 1) = 1024 * 0xfa83b2da >> 32 = 1002,
 *    c2 = 47742 - decay_load(47742, 1) - 1024 = 47742 - 46718 - 1024 = 0, c3 = 0: contrib = 1002.
 *    load_sum = 1002, util_sum = runnable_sum = 1002 << 10 = 1026048, divider = 46718 + 0,
 *    util_avg = 1026048 / 46718 = 21 (21.96, truncated), load_avg = 1024 * 1002 / 46718 = 21.
 * 2. 500 more units running: no boundary, contrib = 500: load_sum = 1502, util_sum = 1538048,
 *    period_contrib = 500; averages unchanged (no period crossed), the update returns 0.
 * 3. To 3 periods + 700 units + 300 ns, runnable but not running: delta = 2248 units (the 300 ns
 *    stay behind), 2248 + 500 = 2748: p = 2, d1 = 524, d3 = 700;
 *    c1 = decay_load(524, 2) = 501, c2 = 47742 - decay_load(47742, 2) - 1024 = 47742 - 45717 -
 *    1024 = 1001, contrib = 501 + 1001 + 700 = 2202. load_sum = decay_load(1502, 2) + 2202 =
 *    1438 + 2202 = 3640; util_sum = decay_load(1538048, 2) = 1472839 (not running);
 *    runnable_sum = 1472839 + 2202 * 1024 = 3727687; divider 46718 + 700 = 47418:
 *    load_avg = 1024 * 3640 / 47418 = 78, runnable_avg = 78, util_avg = 31.
 * 4. Asleep for 32 periods: everything halves (to within the table's truncation):
 *    load_sum 1819, runnable_sum 1863842, util_sum 736418; load_avg 39, util_avg 15.
 */
static void test_golden_vectors(_unused_ void **state) {
        PeltAvg a;
        uint64_t now;

        pelt_init(&a, 0);
        assert_int_equal(pelt_update_entity(&a, NS_PER_PERIOD, 1024, true, true), 1);
        assert_int_equal(a.load_sum, 1002);
        assert_int_equal(a.util_sum, 1026048);
        assert_int_equal(a.runnable_sum, 1026048);
        assert_int_equal(a.period_contrib, 0);
        assert_int_equal(a.util_avg, 21);
        assert_int_equal(a.load_avg, 21);

        now = NS_PER_PERIOD + 500 * NS_PER_UNIT;
        assert_int_equal(pelt_update_entity(&a, now, 1024, true, true), 0);
        assert_int_equal(a.load_sum, 1502);
        assert_int_equal(a.util_sum, 1538048);
        assert_int_equal(a.period_contrib, 500);
        assert_int_equal(a.util_avg, 21);

        now = 3 * NS_PER_PERIOD + 700 * NS_PER_UNIT + 300;
        assert_int_equal(pelt_decay_load(524, 2), 501);
        assert_int_equal(pelt_decay_load(47742, 2), 45717);
        assert_int_equal(pelt_accumulate_segments(2, 524, 700), 2202);
        assert_int_equal(pelt_update_entity(&a, now, 1024, true, false), 1);
        assert_int_equal(a.last_update_time, now - 300);
        assert_int_equal(a.load_sum, 3640);
        assert_int_equal(a.util_sum, 1472839);
        assert_int_equal(a.runnable_sum, 3727687);
        assert_int_equal(a.period_contrib, 700);
        assert_int_equal(pelt_divider(&a), 47418);
        assert_int_equal(a.load_avg, 78);
        assert_int_equal(a.runnable_avg, 78);
        assert_int_equal(a.util_avg, 31);

        now += 32 * NS_PER_PERIOD;
        assert_int_equal(pelt_update_entity(&a, now, 1024, false, false), 1);
        assert_int_equal(a.load_sum, 1819);
        assert_int_equal(a.runnable_sum, 1863842);
        assert_int_equal(a.util_sum, 736418);
        assert_int_equal(a.load_avg, 39);
        assert_int_equal(a.util_avg, 15);
}

static void test_always_running_converges(_unused_ void **state) {
        PeltAvg a;

        pelt_init(&a, 0);
        for (uint64_t i = 1; i <= 2000; i++)
                pelt_update_entity(&a, i * NS_PER_PERIOD, 1024, true, true);
        assert_in_range(a.util_avg, 1023, 1024);
        assert_in_range(a.runnable_avg, 1023, 1024);
        assert_in_range(a.load_avg, 1023, 1024);

        /* Also when updated once after a long gap: the same limit, in one O(1) step. */
        pelt_init(&a, 0);
        pelt_update_entity(&a, 100000 * NS_PER_PERIOD, 1024, true, true);
        assert_in_range(a.util_avg, 1023, 1024);
}

static void test_blocked_halves(_unused_ void **state) {
        PeltAvg a;
        uint64_t now = 0, before;

        pelt_init(&a, 0);
        for (int i = 0; i < 1000; i++) {
                now += NS_PER_PERIOD;
                pelt_update_entity(&a, now, 1024, true, true);
        }
        before = a.util_avg;
        now += 32 * NS_PER_PERIOD;
        pelt_update_entity(&a, now, 1024, false, false);
        assert_in_range(a.util_avg, before / 2 - 1, before / 2 + 1);
        assert_in_range(a.load_avg, before / 2 - 1, before / 2 + 1);

        /* 63 half-lives and beyond: nothing left. */
        now += 3000 * NS_PER_PERIOD;
        pelt_update_entity(&a, now, 1024, false, false);
        assert_int_equal(a.util_sum, 0);
        assert_int_equal(a.util_avg, 0);
}

static void test_time_backwards(_unused_ void **state) {
        PeltAvg a, saved;

        pelt_init(&a, 10 * NS_PER_PERIOD);
        pelt_update_entity(&a, 20 * NS_PER_PERIOD, 1024, true, true);
        saved = a;
        assert_int_equal(pelt_update_entity(&a, 5 * NS_PER_PERIOD, 1024, true, true), 0);
        assert_int_equal(a.last_update_time, 5 * NS_PER_PERIOD);
        assert_int_equal(a.util_sum, saved.util_sum);
        assert_int_equal(a.util_avg, saved.util_avg);
}

/*
 * The continuous reference: an exponential average with the same half-life (32 periods of 1024
 * units of 1024 ns), normalised like the kernel's (a fully running entity tends to 1024):
 *   A(t + d) = A(t) e^(-kd) + 1024 f (1 - e^(-kd)).
 */
static void test_fraction_vs_continuous(_unused_ void **state) {
        const double k = log(2.0) / (32.0 * NS_PER_PERIOD);

        for (int run = 0; run < 50; run++) {
                PeltAvg a;
                double ref_u = 0, ref_r = 0;
                uint64_t now = rnd() % NS_PER_PERIOD;

                pelt_init(&a, now);
                for (int i = 0; i < 400; i++) {
                        /* Sampling intervals of 10 ms to 1 s; shares anywhere in [0, 1]. */
                        uint64_t d = 10 * 1000000ULL + rnd() % (990 * 1000000ULL);
                        double fr = (double) (rnd() % 10001) / 10000.0;
                        double fu = fr * (double) (rnd() % 10001) / 10000.0;
                        double e;
                        uint64_t start = a.last_update_time;

                        now += d;
                        pelt_update_sampled(&a, now, 1024, (uint64_t) (fr * PELT_FRAC_ONE),
                                            (uint64_t) (fu * PELT_FRAC_ONE));
                        /* The core accrues whole units only: compare over the time it accrued. */
                        e = exp(-k * (double) (a.last_update_time - start));
                        ref_u = ref_u * e + 1024.0 * fu * (1 - e);
                        ref_r = ref_r * e + 1024.0 * fr * (1 - e);

                        /* After the first half-lives, the tracked value follows the reference. */
                        if (i > 20) {
                                double tol_u = MAX(0.005 * ref_u, 2.0), tol_r = MAX(0.005 * ref_r, 2.0);

                                if (fabs((double) a.util_avg - ref_u) > tol_u ||
                                    fabs((double) a.runnable_avg - ref_r) > tol_r)
                                        fail_msg("run %d step %d: util %llu vs %.2f, runnable %llu vs %.2f", run, i,
                                                 (unsigned long long) a.util_avg, ref_u,
                                                 (unsigned long long) a.runnable_avg, ref_r);
                        }
                }
        }
}

static void test_fraction_cost_independent_of_gap(_unused_ void **state) {
        /* A day's gap is one update: same result as the kernel's single update over it. */
        PeltAvg a;

        pelt_init(&a, 0);
        pelt_update_sampled(&a, 3 * NS_PER_PERIOD, 1024, PELT_FRAC_ONE, PELT_FRAC_ONE / 2);
        pelt_update_sampled(&a, 86400ULL * 1000000000ULL, 1024, PELT_FRAC_ONE / 4, PELT_FRAC_ONE / 4);
        assert_in_range(a.util_avg, 254, 256);
        assert_in_range(a.runnable_avg, 254, 256);
}

static void test_group_util_above_one_cpu(_unused_ void **state) {
        /* A group using 2.5 CPUs: util 2.5 * 1024. */
        PeltAvg a;
        uint64_t now = 0;

        pelt_init(&a, 0);
        for (int i = 0; i < 100; i++) {
                now += 100 * 1000000ULL;
                pelt_update_sampled(&a, now, 1024, 3 * PELT_FRAC_ONE, 5 * PELT_FRAC_ONE / 2);
        }
        assert_in_range(a.util_avg, 2555, 2560);
        assert_in_range(a.runnable_avg, 3067, 3072);
        /* load follows the on-runqueue share, which is at most 1 for one entity */
        assert_in_range(a.load_avg, 1022, 1024);
}

/* ---- Aggregation ------------------------------------------------------------------------------ */

static void run_for(PeltAvg *a, uint64_t *now, uint64_t ns, double share) {
        *now += ns;
        pelt_update_sampled(a, *now, 1024, (uint64_t) (share * PELT_FRAC_ONE), (uint64_t) (share * PELT_FRAC_ONE));
}

static void test_blocked_sum_matches_individual_decay(_unused_ void **state) {
        enum { N = 64 };
        PeltGroupSum g;
        PeltAvg child[N];
        PeltChild link[N];
        uint64_t now = 12345;

        pelt_group_init(&g, now);
        for (int i = 0; i < N; i++) {
                pelt_init(&child[i], now);
                link[i] = (PeltChild){ 0 };
        }
        /* Everyone runs a while, with its own share. */
        for (int r = 0; r < 30; r++)
                for (int i = 0; i < N; i++) {
                        uint64_t t = now + (uint64_t) (r + 1) * 100000000ULL;

                        pelt_update_sampled(&child[i], t, 1024, (uint64_t) (i + 1) * PELT_FRAC_ONE / N,
                                            (uint64_t) (i + 1) * PELT_FRAC_ONE / (2 * N));
                }
        now += 30 * 100000000ULL;
        for (int i = 0; i < N; i++)
                pelt_group_attach(&g, &link[i], &child[i]);

        /* They block one after another, a few ms apart, and the group decays between. */
        for (int i = 0; i < N; i++) {
                now += (rnd() % 5000000ULL);
                pelt_group_decay_blocked(&g, now);
                pelt_update_sampled(&child[i], now, 1024, 0, 0);
                pelt_group_block(&g, &link[i], &child[i], now);
        }
        assert_int_equal(g.runnable.util, 0);

        for (int step = 0; step < 20; step++) {
                double sum_u = 0, sum_l = 0;

                now += 7 * NS_PER_PERIOD + rnd() % NS_PER_PERIOD;
                pelt_group_decay_blocked(&g, now);
                for (int i = 0; i < N; i++) {
                        PeltAvg c = child[i];

                        /* Each child decayed on its own to now, as if updated while asleep. */
                        pelt_update_sampled(&c, now, 1024, 0, 0);
                        sum_u += (double) c.util_avg;
                        sum_l += (double) c.load_avg;
                }
                /*
                 * Within rounding: every child's own average truncates once a period, the group's
                 * decay is aligned to absolute periods (up to one period of phase, 2.1%).
                 */
                assert_true(fabs((double) g.blocked.util - sum_u) <= 0.022 * sum_u + N);
                assert_true(fabs((double) g.blocked.load - sum_l) <= 0.022 * sum_l + N);
        }

        /* Waking children take back their decayed share; the last leaves (almost) nothing behind. */
        for (int i = 0; i < N; i++) {
                PeltContrib c = pelt_group_wake(&g, &link[i], now);
                (void) c;
        }
        assert_true(g.blocked.util <= N);
        assert_true(g.blocked.load <= N);
}

static void test_decay_counter_exact_share(_unused_ void **state) {
        /* One child alone: the share it takes back is exactly what the sum decayed to. */
        PeltGroupSum g;
        PeltAvg a;
        PeltChild link = { 0 };
        PeltContrib back;
        uint64_t now = 0;

        pelt_group_init(&g, 0);
        pelt_init(&a, 0);
        run_for(&a, &now, 500 * 1000000ULL, 0.6);
        pelt_group_attach(&g, &link, &a);
        pelt_group_block(&g, &link, &a, now);
        now += 45 * NS_PER_PERIOD;
        pelt_group_decay_blocked(&g, now);
        assert_int_equal(g.decay_counter - link.decay_count, 45);
        back = pelt_group_wake(&g, &link, now);
        assert_int_equal(back.util, pelt_decay_load(a.util_avg, 45));
        assert_int_equal(g.blocked.util, 0);
        assert_int_equal(g.blocked.load, 0);
}

static void test_move_conserves_total(_unused_ void **state) {
        PeltGroupSum ga, gb;
        PeltAvg t[3];
        PeltChild la[3] = { 0 };
        uint64_t now = 0;
        PeltContrib before, after, ta, tb, moved;

        pelt_group_init(&ga, 0);
        pelt_group_init(&gb, 0);
        for (int i = 0; i < 3; i++) {
                pelt_init(&t[i], 0);
                uint64_t n = 0;
                run_for(&t[i], &n, 300 * 1000000ULL, 0.2 + 0.3 * i);
                pelt_group_attach(&ga, &la[i], &t[i]);
        }
        now = 300 * 1000000ULL;
        pelt_group_block(&ga, &la[1], &t[1], now);
        now += 10 * NS_PER_PERIOD;
        pelt_group_decay_blocked(&ga, now);
        pelt_group_decay_blocked(&gb, now);

        ta = pelt_group_total(&ga);
        tb = pelt_group_total(&gb);
        before = ta;
        pelt_contrib_add(&before, &tb);

        /* A running child moves: it takes its contribution along (004). */
        moved = pelt_group_detach(&ga, &la[0], now);
        assert_int_equal(moved.util, t[0].util_avg);
        pelt_group_attach(&gb, &la[0], &t[0]);

        /* A blocked child moves: it takes its decayed share (005). */
        moved = pelt_group_detach(&ga, &la[1], now);
        assert_int_equal(moved.util, pelt_decay_load(t[1].util_avg, 10));
        t[1].util_avg = moved.util;
        t[1].load_avg = moved.load;
        t[1].runnable_avg = moved.runnable;
        pelt_group_block(&gb, &la[1], &t[1], now);

        ta = pelt_group_total(&ga);
        tb = pelt_group_total(&gb);
        after = ta;
        pelt_contrib_add(&after, &tb);
        assert_int_equal(after.util, before.util);
        assert_int_equal(after.load, before.load);
        assert_int_equal(after.runnable, before.runnable);

        /* An exiting child's load leaves for good. */
        moved = pelt_group_detach(&gb, &la[0], now);
        tb = pelt_group_total(&gb);
        assert_int_equal(tb.util + moved.util, after.util - ta.util);
        /* Detaching twice removes nothing more. */
        moved = pelt_group_detach(&gb, &la[0], now);
        assert_int_equal(moved.util, 0);
}

/*
 * The cover letter: one 80% task and two 40% tasks on a 2-CPU machine. With per-entity tracking the
 * split is a stable ~{800, {400, 400}}: 819 / 410 / 410 in 1/1024.
 */
static void test_cover_letter_example(_unused_ void **state) {
        PeltAvg a, b, c;
        PeltGroupSum cpu0, cpu1;
        PeltChild la = { 0 }, lb = { 0 }, lc = { 0 };
        uint64_t now = 0;

        pelt_init(&a, 0);
        pelt_init(&b, 0);
        pelt_init(&c, 0);
        for (int i = 0; i < 100; i++) {
                /* Sampled every 100 ms: a runs 80%, b and c 40%, on different CPUs from a. */
                now += 100 * 1000000ULL;
                pelt_update_sampled(&a, now, 1024, PELT_FRAC_ONE * 8 / 10, PELT_FRAC_ONE * 8 / 10);
                pelt_update_sampled(&b, now, 1024, PELT_FRAC_ONE * 4 / 10, PELT_FRAC_ONE * 4 / 10);
                pelt_update_sampled(&c, now, 1024, PELT_FRAC_ONE * 4 / 10, PELT_FRAC_ONE * 4 / 10);
        }
        assert_in_range(a.load_avg, 819 * 98 / 100, 819 * 102 / 100);
        assert_in_range(b.load_avg, 410 * 98 / 100, 410 * 102 / 100);
        assert_in_range(c.load_avg, 410 * 98 / 100, 410 * 102 / 100);
        assert_in_range(a.util_avg, 819 * 98 / 100, 819 * 102 / 100);

        pelt_group_init(&cpu0, now);
        pelt_group_init(&cpu1, now);
        pelt_group_attach(&cpu0, &la, &a);
        pelt_group_attach(&cpu1, &lb, &b);
        pelt_group_attach(&cpu1, &lc, &c);
        /* Balanced by contributed load: {A} vs {B, C}, ~819 each side. */
        assert_in_range(pelt_group_total(&cpu0).load, 800, 840);
        assert_in_range(pelt_group_total(&cpu1).load, 800, 840);
}

static void test_group_load_normalised(_unused_ void **state) {
        /* 006/007: Shares x min(runnable / 1024, 1). */
        assert_int_equal(pelt_group_load(1024, 512), 512);
        assert_int_equal(pelt_group_load(2048, 512), 1024);
        assert_int_equal(pelt_group_load(2048, 1024), 2048);
        assert_int_equal(pelt_group_load(2048, 4000), 2048);
        assert_int_equal(pelt_group_load(100, 0), 0);
}

static void test_shares_split(_unused_ void **state) {
        uint64_t load[4] = { 300, 100, 0, 600 }, out[4];

        pelt_shares_split(1024, load, 4, out);
        assert_int_equal(out[0], 307);
        assert_int_equal(out[1], 102);
        assert_int_equal(out[2], PELT_MIN_SHARES);
        assert_int_equal(out[3], 614);

        uint64_t none[2] = { 0, 0 };
        pelt_shares_split(512, none, 2, out);
        assert_int_equal(out[0], 512);
        assert_int_equal(out[1], 512);
}

static void test_throttled_invisible(_unused_ void **state) {
        PeltAvg a, b, saved;
        uint64_t now = 0, clock_b = 0;

        /* 008: time spent throttled does not advance the entity's clock. */
        assert_int_equal(pelt_visible_ns(100, 0, 4), 100);
        assert_int_equal(pelt_visible_ns(100, 120, 4), 70);
        assert_int_equal(pelt_visible_ns(100, 1000, 2), 0);
        assert_int_equal(pelt_visible_ns(100, 50, 0), 50);

        pelt_init(&a, 0);
        pelt_init(&b, 0);
        for (int i = 0; i < 50; i++) {
                now += 100 * 1000000ULL;
                pelt_update_sampled(&a, now, 1024, PELT_FRAC_ONE / 2, PELT_FRAC_ONE / 2);
                pelt_update_sampled(&b, now, 1024, PELT_FRAC_ONE / 2, PELT_FRAC_ONE / 2);
        }
        clock_b = now;

        /* A fully throttled interval: the clock stands still, nothing changes. */
        saved = b;
        clock_b += pelt_visible_ns(100 * 1000000ULL, 400 * 1000000ULL, 2);
        pelt_update_sampled(&b, clock_b, 1024, PELT_FRAC_ONE / 2, PELT_FRAC_ONE / 2);
        assert_memory_equal(&b, &saved, sizeof b);

        /* Half throttled, running half of the rest: the same as running half, unthrottled. */
        for (int i = 0; i < 50; i++) {
                uint64_t vis = pelt_visible_ns(100 * 1000000ULL, 100 * 1000000ULL, 2);

                now += vis;
                pelt_update_sampled(&a, now, 1024, PELT_FRAC_ONE / 2, PELT_FRAC_ONE / 2);
                clock_b += vis;
                pelt_update_sampled(&b, clock_b, 1024, PELT_FRAC_ONE / 2, PELT_FRAC_ONE / 2);
        }
        assert_int_equal(b.util_avg, a.util_avg);
        assert_in_range(b.util_avg, 510, 513);
}

static void test_frac(_unused_ void **state) {
        assert_int_equal(pelt_frac(1, 2, PELT_FRAC_ONE), PELT_FRAC_ONE / 2);
        assert_int_equal(pelt_frac(3, 2, PELT_FRAC_ONE), PELT_FRAC_ONE);
        assert_int_equal(pelt_frac(3, 2, 4 * PELT_FRAC_ONE), 3 * PELT_FRAC_ONE / 2);
        assert_int_equal(pelt_frac(5, 0, PELT_FRAC_ONE), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table_matches_seed),
                cmocka_unit_test(test_table_matches_pow),
                cmocka_unit_test(test_bit_exact_random),
                cmocka_unit_test(test_bit_exact_cfs_rq_weights),
                cmocka_unit_test(test_golden_vectors),
                cmocka_unit_test(test_always_running_converges),
                cmocka_unit_test(test_blocked_halves),
                cmocka_unit_test(test_time_backwards),
                cmocka_unit_test(test_fraction_vs_continuous),
                cmocka_unit_test(test_fraction_cost_independent_of_gap),
                cmocka_unit_test(test_group_util_above_one_cpu),
                cmocka_unit_test(test_blocked_sum_matches_individual_decay),
                cmocka_unit_test(test_decay_counter_exact_share),
                cmocka_unit_test(test_move_conserves_total),
                cmocka_unit_test(test_cover_letter_example),
                cmocka_unit_test(test_group_load_normalised),
                cmocka_unit_test(test_shares_split),
                cmocka_unit_test(test_throttled_invisible),
                cmocka_unit_test(test_frac),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
