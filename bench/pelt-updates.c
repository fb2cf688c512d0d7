/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The workload bench/pelt measures under callgrind: COUNT sampled PELT updates, each GAP_NS after
 * the previous one, with the closed form (pelt_update_sampled) or with a per-period loop doing the
 * same work the way the code before seed 010 did (decay by y and accrue 1024 once per period).
 * Only the update functions are counted (--toggle-collect), so start-up and the loop around them cost nothing.
 *
 *   pelt-updates closed|loop GAP_NS COUNT
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peltd/parse.h"
#include "peltd/pelt.h"

/* y = 2^(-1/32) as 32.32 fixed point: one period's decay. */
#define Y_INV UINT64_C(0xfa83b2da)

/* The per-period reference: O(periods). Running share f applied to every period. */
static void __attribute__((noinline)) loop_update(PeltAvg *sa, uint64_t now, uint64_t frac) {
        uint64_t delta = (now - sa->last_update_time) >> 10;

        sa->last_update_time += delta << 10;
        delta += sa->period_contrib;
        while (delta >= 1024) {
                uint64_t part = 1024 - sa->period_contrib;

                sa->util_sum += (part << 10) * frac >> 32;
                sa->runnable_sum += (part << 10) * frac >> 32;
                sa->load_sum += part * frac >> 32;
                sa->util_sum = (sa->util_sum * Y_INV) >> 32;
                sa->runnable_sum = (sa->runnable_sum * Y_INV) >> 32;
                sa->load_sum = (sa->load_sum * Y_INV) >> 32;
                sa->period_contrib = 0;
                delta -= 1024;
        }
        sa->util_sum += ((delta - sa->period_contrib) << 10) * frac >> 32;
        sa->period_contrib = (uint32_t) delta;
        sa->util_avg = sa->util_sum / (47742 - 1024 + sa->period_contrib);
        sa->runnable_avg = sa->runnable_sum / (47742 - 1024 + sa->period_contrib);
        sa->load_avg = 1024 * sa->load_sum / (47742 - 1024 + sa->period_contrib);
}

static uint64_t __attribute__((noinline)) run_updates(PeltAvg *sa, int loop, uint64_t gap, uint64_t count) {
        uint64_t now = sa->last_update_time, acc = 0;

        for (uint64_t i = 0; i < count; i++) {
                /* Shares vary a little, as sampled ones do. */
                uint64_t frac = PELT_FRAC_ONE / 2 + (i & 7) * (PELT_FRAC_ONE / 64);

                now += gap;
                if (loop)
                        loop_update(sa, now, frac);
                else
                        pelt_update_sampled(sa, now, 1024, frac, frac);
                acc += sa->util_avg;
        }
        return acc;
}

int main(int argc, char *argv[]) {
        uint64_t gap, count;
        PeltAvg sa;
        int loop;

        if (argc != 4 || (!strcmp(argv[1], "closed") == !strcmp(argv[1], "loop")) || safe_atou64(argv[2], &gap) < 0 ||
            safe_atou64(argv[3], &count) < 0 || gap == 0) {
                fprintf(stderr, "usage: pelt-updates closed|loop GAP_NS COUNT\n");
                return 2;
        }
        loop = strcmp(argv[1], "loop") == 0;
        pelt_init(&sa, 1000000);
        /* The result is printed so the work cannot be optimised away. */
        printf("%" PRIu64 "\n", run_updates(&sa, loop, gap, count));
        return 0;
}
