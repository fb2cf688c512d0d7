/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pure arithmetic of measured energy: a counter's wrap and dropped readings, a counter that
 * never moves, the split of a package's energy between groups, and the experiment's statistics
 * (the paired t interval, the settling rule) on fixed vectors.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "peltd/energy-attr.h"
#include "peltd/energy-counter.h"
#include "peltd/energy-stats.h"
#include "peltd/macro.h"

#define NS 1000000000ULL     /* one second of CPU time */
#define RANGE 262143328850ULL /* max_energy_range_uj of a common Intel package */

/* ---- one counter ------------------------------------------------------------------------------- */

static void test_delta(_unused_ void **state) {
        uint64_t d = 0;

        assert_int_equal(energy_counter_delta(100, 1100, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_OK);
        assert_int_equal(d, 1000);
        assert_int_equal(energy_counter_delta(5, 5, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_OK);
        assert_int_equal(d, 0);
        /* Went down: wrapped once, through max_range and 0. */
        assert_int_equal(energy_counter_delta(RANGE - 1000, 500, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_OK);
        assert_int_equal(d, 1000 + 500 + 1);
        assert_int_equal(energy_counter_delta(RANGE, 0, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_OK);
        assert_int_equal(d, 1);
}

static void test_delta_dropped(_unused_ void **state) {
        uint64_t d = 42;

        /* A range of 10^9 µJ wraps in 1 s at 1,000 W: a longer interval may hide a second wrap. */
        assert_int_equal(energy_counter_delta(0, 10, 1000000000ULL, USEC_PER_SEC, &d), ENERGY_DELTA_OK);
        assert_int_equal(energy_counter_delta(0, 10, 1000000000ULL, USEC_PER_SEC + 1, &d), ENERGY_DELTA_LONG_INTERVAL);
        /* 5 kW over a second; exactly 1,000 W passes, a µJ more does not. */
        assert_int_equal(energy_counter_delta(0, 5000000000ULL, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_TOO_HIGH);
        assert_int_equal(energy_counter_delta(0, 1000000000ULL, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_OK);
        assert_int_equal(d, 1000000000ULL);
        assert_int_equal(energy_counter_delta(0, 1000000001ULL, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_TOO_HIGH);
        /* A wrap that implies 5 kW: prev just above cur. */
        assert_int_equal(energy_counter_delta(1000, 999, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_TOO_HIGH);
        /* No time passed and energy came: infinite power. */
        assert_int_equal(energy_counter_delta(0, 1, RANGE, 0, &d), ENERGY_DELTA_TOO_HIGH);
        /* A value above the range, or a wrap without one. */
        assert_int_equal(energy_counter_delta(0, RANGE + 1, RANGE, USEC_PER_SEC, &d), ENERGY_DELTA_BAD_RANGE);
        assert_int_equal(energy_counter_delta(10, 5, 0, USEC_PER_SEC, &d), ENERGY_DELTA_BAD_RANGE);
        assert_int_equal(d, 1000000000ULL);     /* untouched by the drops */
}

static void test_still(_unused_ void **state) {
        EnergyStill s = {};
        usec_t t;

        /* Busy, never moving: no meter after 10 s, not before. */
        for (t = 1; t <= 10; t++)
                assert_false(energy_still_update(&s, 7, true, t * USEC_PER_SEC));
        assert_true(energy_still_update(&s, 7, true, 11 * USEC_PER_SEC));
        /* Idle CPUs may leave a counter still for ever. */
        s = (EnergyStill){};
        for (t = 1; t <= 60; t++)
                assert_false(energy_still_update(&s, 7, false, t * USEC_PER_SEC));
        /* A move starts the count again. */
        s = (EnergyStill){};
        for (t = 1; t <= 9; t++)
                assert_false(energy_still_update(&s, 7, true, t * USEC_PER_SEC));
        assert_false(energy_still_update(&s, 8, true, 10 * USEC_PER_SEC));
        for (t = 11; t <= 19; t++)
                assert_false(energy_still_update(&s, 8, true, t * USEC_PER_SEC));
        assert_true(energy_still_update(&s, 8, true, 20 * USEC_PER_SEC));
}

/* ---- attribution ------------------------------------------------------------------------------- */

/* Two packages of two CPUs: package 0 busy 0.5 s of 2 s, package 1 busy 1.1 s of 2 s. */
static const EnergyCpuTimes two_packages[] = {
        { .package = 0, .total_ns = NS, .idle_ns = NS / 2, .iowait_ns = NS / 10 },  /* busy 0.4 s */
        { .package = 0, .total_ns = NS, .idle_ns = NS * 8 / 10, .steal_ns = NS / 10 }, /* busy 0.1 s */
        { .package = 1, .total_ns = NS, .idle_ns = NS * 7 / 10 },                    /* busy 0.3 s */
        { .package = 1, .total_ns = NS, .idle_ns = NS * 2 / 10 },                    /* busy 0.8 s */
};
static const uint64_t two_packages_uj[] = { 20000000, 30000000 };

static void test_attribute_percpu(_unused_ void **state) {
        static const uint64_t a[] = { NS * 30 / 100, NS * 5 / 100, NS * 20 / 100, 0 };
        static const uint64_t b[] = { NS * 5 / 100, NS * 5 / 100, 0, NS * 60 / 100 };
        const EnergyGroupUsage groups[] = { { .percpu_ns = a }, { .percpu_ns = b } };
        EnergyPackageSplit p[2];
        uint64_t g[4];

        assert_int_equal(energy_attribute(two_packages, 4, two_packages_uj, 2, groups, 2, p, g), 0);
        /* Package 0: active = 20 J × 0.5 / 2 = 5 J; A used 0.35 s, B 0.1 s of its 0.5 busy seconds. */
        assert_int_equal(p[0].busy_ns, NS / 2);
        assert_int_equal(p[0].total_ns, 2 * NS);
        assert_int_equal(p[0].active_uj, 5000000);
        assert_int_equal(p[0].idle_uj, 15000000);
        assert_int_equal(g[0 * 2 + 0], 3500000);
        assert_int_equal(g[1 * 2 + 0], 1000000);
        assert_int_equal(p[0].other_uj, 500000);
        /* Package 1: active = 30 J × 1.1 / 2 = 16.5 J; A used 0.2 s, B 0.6 s of 1.1 s. */
        assert_int_equal(p[1].active_uj, 16500000);
        assert_int_equal(p[1].idle_uj, 13500000);
        assert_int_equal(g[0 * 2 + 1], 3000000);
        assert_int_equal(g[1 * 2 + 1], 9000000);
        assert_int_equal(p[1].groups_uj, 12000000);
        assert_int_equal(p[1].other_uj, 4500000);
}

static void test_attribute_totals(_unused_ void **state) {
        /* Only the total known: 0.55 s spread as the packages' busy time, 0.5 : 1.1. */
        const EnergyGroupUsage groups[] = { { .total_ns = NS * 55 / 100 } };
        EnergyPackageSplit p[2];
        uint64_t g[2];

        assert_int_equal(energy_attribute(two_packages, 4, two_packages_uj, 2, groups, 1, p, g), 0);
        assert_int_equal(g[0], 1718750);      /* 5 J × 0.171875 / 0.5 */
        assert_int_equal(g[1], 5671875);      /* 16.5 J × 0.378125 / 1.1 */
        assert_int_equal(p[0].other_uj, 5000000 - 1718750);
}

static void test_attribute_overcommitted(_unused_ void **state) {
        /* The groups' counters say more than /proc/stat's busy time: shares scaled to the active energy. */
        static const EnergyCpuTimes one[] = { { .package = 0, .total_ns = NS, .idle_ns = NS / 2 } };
        static const uint64_t uj[] = { 7000001 };
        static const uint64_t a[] = { NS * 6 / 10 }, b[] = { NS * 4 / 10 };
        const EnergyGroupUsage groups[] = { { .percpu_ns = a }, { .percpu_ns = b } };
        EnergyPackageSplit p[1];
        uint64_t g[2];

        assert_int_equal(energy_attribute(one, 1, uj, 1, groups, 2, p, g), 0);
        assert_int_equal(p[0].active_uj, 3500000);    /* 7000001 / 2, rounded down */
        assert_int_equal(g[0], 2100000);
        assert_int_equal(g[1], 1400000);
        assert_int_equal(p[0].other_uj, 0);
}

static void test_attribute_bad(_unused_ void **state) {
        static const EnergyCpuTimes bad_package[] = { { .package = 2, .total_ns = NS } };
        static const EnergyCpuTimes bad_times[] = { { .package = 0, .total_ns = NS, .idle_ns = NS, .steal_ns = 1 } };
        static const uint64_t uj[] = { 1, 1 };
        EnergyPackageSplit p[2];
        uint64_t g[1];

        assert_int_equal(energy_attribute(bad_package, 1, uj, 2, NULL, 0, p, g), -EINVAL);
        assert_int_equal(energy_attribute(bad_times, 1, uj, 1, NULL, 0, p, g), -EINVAL);
}

/* Random machines and groups: shares never above active, other never below 0, nothing lost. */
static void test_attribute_random(_unused_ void **state) {
        srand(26);
        for (int round = 0; round < 2000; round++) {
                EnergyCpuTimes cpus[8];
                uint64_t uj[3], percpu[4][8], g[4 * 3];
                EnergyGroupUsage groups[4];
                EnergyPackageSplit p[3];
                size_t n_cpus = 1 + (size_t) rand() % 8, n_packages = 1 + (size_t) rand() % 3, n_groups = (size_t) rand() % 5;

                for (size_t i = 0; i < n_cpus; i++) {
                        uint64_t total = (uint64_t) rand() % NS + 1;

                        cpus[i] = (EnergyCpuTimes){ .package = (unsigned) (i % n_packages), .total_ns = total,
                                                    .idle_ns = (uint64_t) rand() % (total + 1) };
                        for (size_t k = 0; k < n_groups; k++)
                                percpu[k][i] = (uint64_t) rand() % NS;
                }
                for (size_t k = 0; k < n_groups; k++)
                        groups[k] = (EnergyGroupUsage){ .percpu_ns = k % 2 ? percpu[k] : NULL,
                                                        .total_ns = (uint64_t) rand() % (4 * NS) };
                for (size_t q = 0; q < n_packages; q++)
                        uj[q] = (uint64_t) rand() * 1000;
                assert_int_equal(energy_attribute(cpus, n_cpus, uj, n_packages, groups, n_groups, p, g), 0);
                for (size_t q = 0; q < n_packages; q++) {
                        uint64_t sum = 0;

                        for (size_t k = 0; k < n_groups; k++)
                                sum += g[k * n_packages + q];
                        assert_true(sum <= p[q].active_uj);
                        assert_int_equal(sum, p[q].groups_uj);
                        assert_int_equal(p[q].groups_uj + p[q].other_uj, p[q].active_uj);
                        assert_int_equal(p[q].active_uj + p[q].idle_uj, uj[q]);
                        assert_true(p[q].active_uj <= uj[q]);
                }
        }
}

/* ---- statistics -------------------------------------------------------------------------------- */

static void test_t_quantiles(_unused_ void **state) {
        assert_true(energy_t_quantile_95(0) == 0);
        assert_true(fabs(energy_t_quantile_95(1) - 12.7062) < 1e-9);
        assert_true(fabs(energy_t_quantile_95(4) - 2.7764) < 1e-9);
        assert_true(fabs(energy_t_quantile_95(11) - 2.2010) < 1e-9);
        assert_true(fabs(energy_t_quantile_95(30) - 2.0423) < 1e-9);
        /* Between rows: the smaller df's, wider value. */
        assert_true(fabs(energy_t_quantile_95(35) - 2.0423) < 1e-9);
        assert_true(fabs(energy_t_quantile_95(999) - 1.9647) < 1e-9);
        assert_true(fabs(energy_t_quantile_95(1000) - 1.9623) < 1e-9);
        /* Falls towards the normal's 1.96 as df grows. */
        for (unsigned df = 1; df < 2000; df++)
                assert_true(energy_t_quantile_95(df + 1) <= energy_t_quantile_95(df) &&
                            energy_t_quantile_95(df) > 1.96);
}

static void test_paired_interval(_unused_ void **state) {
        static const double baseline[] = { 10, 12, 11, 13, 12 }, policy[] = { 8, 9, 9, 10, 9 };
        static const double flat_b[] = { 5, 5, 5, 5 }, flat_p[] = { 4, 6, 3, 7 };
        EnergyInterval iv;

        /* Differences 2, 3, 2, 3, 3: mean 2.6, sd √0.3, t(4) 2.7764. */
        assert_int_equal(energy_paired_interval(baseline, policy, 5, &iv), 0);
        assert_int_equal(iv.n, 5);
        assert_true(fabs(iv.mean - 2.6) < 1e-12);
        assert_true(fabs(iv.sd - sqrt(0.3)) < 1e-12);
        assert_true(fabs(iv.half_width - 2.7764 * sqrt(0.3) / sqrt(5)) < 1e-12);
        assert_true(fabs(iv.low - 1.9199238) < 1e-6);
        assert_true(fabs(iv.high - 3.2800762) < 1e-6);
        assert_true(iv.significant);
        /* Differences 1, -1, 2, -2: mean 0, the interval holds 0. */
        assert_int_equal(energy_paired_interval(flat_b, flat_p, 4, &iv), 0);
        assert_true(fabs(iv.mean) < 1e-12);
        assert_false(iv.significant);
        /* The policy uses more: a negative saving, significant. */
        assert_int_equal(energy_paired_interval(policy, baseline, 5, &iv), 0);
        assert_true(iv.high < 0 && iv.significant);
        assert_int_equal(energy_paired_interval(baseline, policy, 1, &iv), -EINVAL);
        assert_int_equal(energy_paired_interval((const double[]){ 1, NAN }, (const double[]){ 1, 1 }, 2, &iv), -EINVAL);
}

static void test_settle(_unused_ void **state) {
        assert_int_equal(energy_settle_usec(5 * USEC_PER_SEC), 2 * USEC_PER_SEC);
        assert_int_equal(energy_settle_usec(10 * USEC_PER_SEC), 2 * USEC_PER_SEC);
        assert_int_equal(energy_settle_usec(60 * USEC_PER_SEC), 12 * USEC_PER_SEC);
        assert_int_equal(energy_settle_usec(600 * USEC_PER_SEC), 120 * USEC_PER_SEC);
        assert_true(energy_block_settled(60 * USEC_PER_SEC, 12 * USEC_PER_SEC, 3));
        assert_false(energy_block_settled(60 * USEC_PER_SEC, 12 * USEC_PER_SEC, 2));
        assert_false(energy_block_settled(60 * USEC_PER_SEC, 12 * USEC_PER_SEC - 1, 50));
        assert_false(energy_block_settled(5 * USEC_PER_SEC, USEC_PER_SEC, 10));
        assert_true(energy_block_settled(5 * USEC_PER_SEC, 2 * USEC_PER_SEC, 3));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_delta),
                cmocka_unit_test(test_delta_dropped),
                cmocka_unit_test(test_still),
                cmocka_unit_test(test_attribute_percpu),
                cmocka_unit_test(test_attribute_totals),
                cmocka_unit_test(test_attribute_overcommitted),
                cmocka_unit_test(test_attribute_bad),
                cmocka_unit_test(test_attribute_random),
                cmocka_unit_test(test_t_quantiles),
                cmocka_unit_test(test_paired_interval),
                cmocka_unit_test(test_settle),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
