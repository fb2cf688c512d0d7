/* SPDX-License-Identifier: GPL-2.0-only */
/* track.c on struct literals: counters in, PELT out; blocked decay, moves, throttling, capacity, steal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/track.h"

#define MS 1000000ULL
#define ROUND (100 * MS)

/* A group round with nothing but time passing (and the group's usage, when given). */
static void advance(TrackGroup *g, uint64_t interval, uint64_t usage_ns) {
        TrackGroupSample s = { .have_usage = true, .usage_ns = usage_ns, .nr_cpus = 2 };

        assert_int_equal(track_group_advance(g, interval, 0, &s), 0);
}

/* One thread round: the thread ran `run` ns (and waited `wait`) of the last round. */
static void thread_round(TrackThread *t, TrackThreadSample *s, uint64_t run, uint64_t wait) {
        s->run_ns += run;
        s->wait_ns += wait;
        s->slices += run ? 10 : 0;
        assert_int_equal(track_thread_update(t, s), 0);
}

static uint64_t absdiff(uint64_t a, uint64_t b) {
        return a > b ? a - b : b - a;
}

static void test_nice_weight(_unused_ void **state) {
        assert_int_equal(track_nice_to_weight(0), 1024);
        assert_int_equal(track_nice_to_weight(-20), 88761);
        assert_int_equal(track_nice_to_weight(19), 15);
        assert_int_equal(track_nice_to_weight(5), 335);
        assert_int_equal(track_nice_to_weight(99), 15);
        assert_int_equal(track_steal_frac(1, 4), PELT_FRAC_ONE / 4);
        assert_int_equal(track_steal_frac(1, 0), 0);
}

/* A thread running half of every round converges to util = runnable = 512, load = weight / 2. */
static void test_steady_half(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = { .nice = -5 };
        uint64_t usage = 0;
        TrackValues v;

        track_group_init(&g, 0);
        advance(&g, 0, 0);
        track_thread_init(&t, &g, &s);
        for (int i = 0; i < 40; i++) {
                usage += ROUND / 2;
                advance(&g, ROUND, usage);
                thread_round(&t, &s, ROUND / 2, 0);
        }
        v = track_thread_values(&t);
        assert_true(absdiff(v.util_avg, 512) <= 1);
        assert_true(absdiff(v.runnable_avg, 512) <= 1);
        assert_true(absdiff(v.load_avg, 3121 / 2) <= 3);
        assert_int_equal(t.avg_slice_ns, ROUND / 2 / 10);

        /* The group: util from its own usage, runnable from its thread, load = shares * runnable / 1024. */
        v = track_group_values(&g, true);
        assert_true(absdiff(v.util_avg, 512) <= 1);
        assert_true(absdiff(v.runnable_avg, 512) <= 1);
        assert_true(absdiff(v.load_avg, 512) <= 1);
        /* Without task tracking (011), the group's util stands in for runnable. */
        v = track_group_values(&g, false);
        assert_int_equal(v.runnable_avg, v.util_avg);
}

/* Waiting counts towards runnable (and load), not util. */
static void test_wait_is_runnable(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = {};
        TrackValues v;

        track_group_init(&g, 0);
        track_thread_init(&t, &g, &s);
        for (int i = 0; i < 40; i++) {
                advance(&g, ROUND, 0);
                thread_round(&t, &s, ROUND / 4, ROUND / 2);
        }
        v = track_thread_values(&t);
        assert_true(absdiff(v.util_avg, 256) <= 1);
        assert_true(absdiff(v.runnable_avg, 768) <= 1);
        assert_true(absdiff(v.load_avg, 768) <= 1);
}

/*
 * 003/005: a blocked thread costs no update of its own; its contribution decays inside the group's
 * blocked sum, and when it wakes it takes back what is left, no more.
 */
static void test_blocked_decay(_unused_ void **state) {
        TrackGroup g;
        TrackThread a, b;
        TrackThreadSample sa = {}, sb = {};
        PeltContrib before;
        uint64_t last_update, expect;
        TrackValues v;

        track_group_init(&g, 0);
        track_thread_init(&a, &g, &sa);
        track_thread_init(&b, &g, &sb);
        for (int i = 0; i < 20; i++) {
                advance(&g, ROUND, 0);
                thread_round(&a, &sa, ROUND, 0);
                thread_round(&b, &sb, ROUND / 2, 0);
        }
        before = pelt_group_total(&g.sum);
        assert_true(absdiff(before.runnable, 1024 + 512) <= 2);

        /* a blocks: one decay to now, then no more updates of its own. */
        advance(&g, ROUND, 0);
        thread_round(&a, &sa, 0, 0);
        thread_round(&b, &sb, ROUND / 2, 0);
        assert_true(a.blocked);
        last_update = a.avg.last_update_time;
        for (int i = 0; i < 3; i++) {
                advance(&g, 10 * MS, 0);
                thread_round(&a, &sa, 0, 0);
                thread_round(&b, &sb, 5 * MS, 0);
        }
        assert_int_equal(a.avg.last_update_time, last_update);

        /* 130 ms idle: 1024 * y^(130e6 / 2^20) = 1024 * 2^(-124 / 32) ~ 70. */
        v = track_group_values(&g, true);
        expect = track_thread_values(&a).runnable_avg;
        assert_true(expect >= 62 && expect <= 78);
        assert_true(absdiff(v.runnable_avg, expect + track_thread_values(&b).runnable_avg) <= 3);
        {
                TrackValues av = track_thread_values(&a);
                PeltGroupSum sum = g.sum;

                (void) pelt_group_decay_blocked(&sum, g.clock_ns);
                /* The blocked sum holds a's decayed contribution (rounding of sum and part may differ by a little). */
                assert_true(absdiff(sum.blocked.runnable, av.runnable_avg) <= 2);
        }

        /* a wakes: its share leaves the blocked sum, its own average accounts the idle time, then the run. */
        advance(&g, ROUND, 0);
        thread_round(&a, &sa, ROUND, 0);
        thread_round(&b, &sb, ROUND / 2, 0);
        assert_false(a.blocked);
        assert_int_equal(g.sum.blocked.runnable, 0);
        v = track_group_values(&g, true);
        assert_true(absdiff(v.runnable_avg, track_thread_values(&a).runnable_avg + track_thread_values(&b).runnable_avg) <= 2);
}

/* 004: exits and moves carry the thread's contribution: no load lost, none counted twice. */
static void test_moves_conserve_load(_unused_ void **state) {
        TrackGroup g1, g2;
        TrackThread t[4];
        TrackThreadSample s[4] = {};
        PeltContrib c1, c2, total_before;

        track_group_init(&g1, 0);
        track_group_init(&g2, 0);
        for (int i = 0; i < 4; i++)
                track_thread_init(&t[i], i < 2 ? &g1 : &g2, &s[i]);
        for (int r = 0; r < 20; r++) {
                advance(&g1, ROUND, 0);
                advance(&g2, ROUND, 0);
                for (int i = 0; i < 4; i++)
                        thread_round(&t[i], &s[i], (uint64_t) (i + 1) * ROUND / 5, 0);
        }
        /* t[1] blocks (its share goes to g1's blocked sum), t[3] keeps running. */
        advance(&g1, ROUND, 0);
        advance(&g2, ROUND, 0);
        thread_round(&t[1], &s[1], 0, 0);
        thread_round(&t[3], &s[3], ROUND, 0);
        c1 = pelt_group_total(&g1.sum);
        c2 = pelt_group_total(&g2.sum);
        total_before = c1;
        pelt_contrib_add(&total_before, &c2);

        /* Both move to the other group. */
        track_thread_move(&t[1], &g2);
        track_thread_move(&t[3], &g1);
        c1 = pelt_group_total(&g1.sum);
        c2 = pelt_group_total(&g2.sum);
        pelt_contrib_add(&c1, &c2);
        assert_true(absdiff(c1.runnable, total_before.runnable) <= 2);
        assert_true(absdiff(c1.load, total_before.load) <= 2);
        assert_true(absdiff(c1.util, total_before.util) <= 2);
        assert_true(t[1].blocked);
        assert_ptr_equal(t[1].group, &g2);

        /* An exit takes exactly the thread's share. */
        {
                TrackValues v3 = track_thread_values(&t[3]);
                PeltContrib g1_before = pelt_group_total(&g1.sum);

                track_thread_exit(&t[3]);
                assert_true(absdiff(pelt_group_total(&g1.sum).runnable, g1_before.runnable - v3.runnable_avg) <= 1);
        }
        /* Moving a never-updated thread is only a change of group. */
        {
                TrackThread n;
                TrackThreadSample ns = {};

                track_thread_init(&n, &g1, &ns);
                track_thread_move(&n, &g2);
                assert_ptr_equal(n.group, &g2);
                assert_false(n.child.attached);
        }
}

/* 008: throttled time is invisible: a group throttled half of every round, running the other half, is at 1024. */
static void test_throttled_invisible(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = {};
        uint64_t usage = 0, throttled = 0;
        TrackValues v;

        track_group_init(&g, 0);
        {
                TrackGroupSample base = { .have_usage = true, .have_throttled = true, .nr_cpus = 2 };

                assert_int_equal(track_group_advance(&g, 0, 0, &base), 0);
        }
        track_thread_init(&t, &g, &s);
        for (int i = 0; i < 40; i++) {
                TrackGroupSample gs = { .have_usage = true, .have_throttled = true, .nr_cpus = 2 };

                usage += ROUND / 2;
                throttled += ROUND; /* summed over its 2 CPUs: half the round each */
                gs.usage_ns = usage;
                gs.throttled_ns = throttled;
                assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 0);
                /* The thread ran half the round and "waited" the throttled half: that wait is not runnable time. */
                thread_round(&t, &s, ROUND / 2, ROUND / 2);
        }
        assert_int_equal(g.clock_ns, 40 * ROUND / 2);
        v = track_group_values(&g, true);
        assert_true(v.util_avg >= 1022);
        v = track_thread_values(&t);
        assert_true(v.util_avg >= 1022);
        assert_true(v.runnable_avg >= 1022 && v.runnable_avg <= 1024);
}

/* Capacity invariance: running on a CPU of capacity 512 counts half; runnable does not scale. */
static void test_capacity_invariance(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = { .capacity = 512 };
        uint64_t usage = 0;
        TrackValues v;

        track_group_init(&g, 0);
        track_thread_init(&t, &g, &s);
        for (int i = 0; i < 40; i++) {
                TrackGroupSample gs = { .have_usage = true, .capacity = 512, .nr_cpus = 1 };

                usage += ROUND;
                gs.usage_ns = usage;
                assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 0);
                thread_round(&t, &s, ROUND, 0);
        }
        v = track_thread_values(&t);
        assert_true(absdiff(v.util_avg, 512) <= 1);
        assert_true(v.runnable_avg >= 1022);
        v = track_group_values(&g, true);
        assert_true(absdiff(v.util_avg, 512) <= 1);

        /* Per-CPU usage already scaled by the caller: a group on two CPUs of 1024 and 512, both busy. */
        track_group_init(&g, 0);
        usage = 0;
        for (int i = 0; i < 40; i++) {
                TrackGroupSample gs = { .have_usage = true, .have_usage_scaled = true, .nr_cpus = 2 };

                usage += ROUND + ROUND / 2;
                gs.usage_scaled_ns = usage;
                gs.usage_ns = usage; /* not used when scaled */
                assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 0);
        }
        v = track_group_values(&g, true);
        assert_true(absdiff(v.util_avg, 1536) <= 2);
}

/* Steal: the kernel's clock does not run while the vCPU is stolen; a thread running all the rest is at 1024. */
static void test_steal_excluded(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = { .steal_frac = PELT_FRAC_ONE / 4 };
        TrackGroupSample none = {};
        TrackValues v;

        track_group_init(&g, 0);
        track_thread_init(&t, &g, &s);
        for (int i = 0; i < 40; i++) {
                assert_int_equal(track_group_advance(&g, ROUND, PELT_FRAC_ONE / 4, &none), 0);
                thread_round(&t, &s, ROUND * 3 / 4, 0);
        }
        assert_int_equal(g.clock_ns, 40 * ROUND * 3 / 4);
        v = track_thread_values(&t);
        assert_true(v.util_avg >= 1022);
}

/* Counters going backwards (a recreated group, a reused TID read by path): a new baseline, never negative. */
static void test_counters_backwards(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = {};
        TrackGroupSample gs = { .have_usage = true, .usage_ns = 10 * ROUND, .nr_cpus = 1 };
        TrackValues v;

        track_group_init(&g, 0);
        assert_int_equal(track_group_advance(&g, 0, 0, &gs), 0);
        gs.usage_ns += ROUND / 2;
        assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 0);
        gs.usage_ns = 5; /* recreated */
        assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 1);
        gs.usage_ns += ROUND / 2;
        assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 0);
        v = track_group_values(&g, true);
        assert_true(v.util_avg < 1024);

        /* A missing counter skips the round and re-baselines. */
        gs.have_usage = false;
        assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 0);
        assert_false(g.primed);

        track_thread_init(&t, &g, &s);
        thread_round(&t, &s, ROUND, 0);
        s.run_ns = 1;
        assert_int_equal(track_thread_update(&t, &s), 1);
        v = track_thread_values(&t);
        assert_true(v.util_avg <= 1024 && v.runnable_avg <= 1024);
}

/* A thread renice'd while blocked: its load follows the new weight at once. */
static void test_renice(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = {};
        TrackValues v;

        track_group_init(&g, 0);
        track_thread_init(&t, &g, &s);
        for (int i = 0; i < 40; i++) {
                advance(&g, ROUND, 0);
                thread_round(&t, &s, ROUND, 0);
        }
        advance(&g, MS, 0);
        s.nice = 5;
        thread_round(&t, &s, 0, 0);
        v = track_thread_values(&t);
        assert_true(absdiff(v.load_avg * 1024, (uint64_t) 335 * v.runnable_avg) <= 335 * 2);
}

/* Shares are taken between the reads' own times: a read late in one round and early in the next is no burst. */
static void test_read_times(_unused_ void **state) {
        TrackGroup g;
        TrackThread t;
        TrackThreadSample s = { .time_ns = 1000 * MS };
        uint64_t usage = 0, when = 1000 * MS;
        TrackValues v;

        track_group_init(&g, 0);
        {
                TrackGroupSample gs = { .have_usage = true, .nr_cpus = 1, .time_ns = when };

                assert_int_equal(track_group_advance(&g, 0, 0, &gs), 0);
        }
        track_thread_init(&t, &g, &s);
        for (int i = 0; i < 40; i++) {
                /* Rounds every 100 ms, but the reads land alternately 20 ms late and on time. */
                uint64_t read_at = 1000 * MS + (uint64_t) (i + 1) * ROUND + (i % 2 ? 0 : 20 * MS);
                uint64_t ran = (read_at - when) / 2; /* half of the time between two reads */
                TrackGroupSample gs = { .have_usage = true, .nr_cpus = 1 };

                usage += ran;
                gs.usage_ns = usage;
                gs.time_ns = read_at;
                assert_int_equal(track_group_advance(&g, ROUND, 0, &gs), 0);
                s.time_ns = read_at;
                thread_round(&t, &s, ran, 0);
                when = read_at;
        }
        v = track_group_values(&g, true);
        assert_true(absdiff(v.util_avg, 512) <= 2);
        v = track_thread_values(&t);
        assert_true(absdiff(v.util_avg, 512) <= 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_nice_weight),
                cmocka_unit_test(test_steady_half),
                cmocka_unit_test(test_wait_is_runnable),
                cmocka_unit_test(test_blocked_decay),
                cmocka_unit_test(test_moves_conserve_load),
                cmocka_unit_test(test_throttled_invisible),
                cmocka_unit_test(test_capacity_invariance),
                cmocka_unit_test(test_steal_excluded),
                cmocka_unit_test(test_counters_backwards),
                cmocka_unit_test(test_renice),
                cmocka_unit_test(test_read_times),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
