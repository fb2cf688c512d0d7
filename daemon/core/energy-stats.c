/* SPDX-License-Identifier: GPL-2.0-only */
/* The paired Student-t interval and the settling rule of an energy experiment (energy-stats.h). */
#include <errno.h>
#include <math.h>

#include "peltd/energy-stats.h"

/*
 * t(0.975, df): the two-sided 95% quantiles of Student's t, as printed in any statistics table (to
 * four places). Degrees of freedom between two rows take the smaller row's value: a slightly wider
 * interval, never a narrower one. An experiment has at most 1,000 pairs (999 degrees of freedom).
 */
static const struct {
        unsigned df;
        double t;
} t_table[] = {
        { 1, 12.7062 }, { 2, 4.3027 },  { 3, 3.1824 },  { 4, 2.7764 },   { 5, 2.5706 },   { 6, 2.4469 },
        { 7, 2.3646 },  { 8, 2.3060 },  { 9, 2.2622 },  { 10, 2.2281 },  { 11, 2.2010 },  { 12, 2.1788 },
        { 13, 2.1604 }, { 14, 2.1448 }, { 15, 2.1314 }, { 16, 2.1199 },  { 17, 2.1098 },  { 18, 2.1009 },
        { 19, 2.0930 }, { 20, 2.0860 }, { 21, 2.0796 }, { 22, 2.0739 },  { 23, 2.0687 },  { 24, 2.0639 },
        { 25, 2.0595 }, { 26, 2.0555 }, { 27, 2.0518 }, { 28, 2.0484 },  { 29, 2.0452 },  { 30, 2.0423 },
        { 40, 2.0211 }, { 50, 2.0086 }, { 60, 2.0003 }, { 80, 1.9901 },  { 100, 1.9840 }, { 120, 1.9799 },
        { 200, 1.9719 }, { 500, 1.9647 }, { 1000, 1.9623 },
};

double energy_t_quantile_95(unsigned df) {
        double t = 0;

        for (size_t i = 0; i < sizeof(t_table) / sizeof(t_table[0]) && t_table[i].df <= df; i++)
                t = t_table[i].t;
        return t;
}

int energy_paired_interval(const double *baseline, const double *policy, size_t n, EnergyInterval *ret) {
        double sum = 0, squares = 0, mean, sd;

        if (n < 2)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!isfinite(baseline[i]) || !isfinite(policy[i]))
                        return -EINVAL;
                sum += baseline[i] - policy[i];
        }
        mean = sum / (double) n;
        /* Two passes: the squares of deviations, not Σx² − n·mean², which cancels badly near 0. */
        for (size_t i = 0; i < n; i++) {
                double d = baseline[i] - policy[i] - mean;

                squares += d * d;
        }
        sd = sqrt(squares / (double) (n - 1));
        *ret = (EnergyInterval){ .n = n, .mean = mean, .sd = sd, .t = energy_t_quantile_95((unsigned) (n - 1)) };
        ret->half_width = ret->t * sd / sqrt((double) n);
        ret->low = mean - ret->half_width;
        ret->high = mean + ret->half_width;
        ret->significant = ret->low > 0 || ret->high < 0;
        return 0;
}

usec_t energy_settle_usec(usec_t block_usec) {
        usec_t fifth = block_usec / 5;

        return fifth > ENERGY_SETTLE_MIN_USEC ? fifth : ENERGY_SETTLE_MIN_USEC;
}

bool energy_block_settled(usec_t block_usec, usec_t since_start_usec, unsigned rounds_held) {
        return since_start_usec >= energy_settle_usec(block_usec) && rounds_held >= ENERGY_SETTLE_ROUNDS;
}
