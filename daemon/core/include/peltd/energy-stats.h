/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/time-util.h"

/*
 * The statistics of an energy experiment: the paired Student-t interval on per-pair differences,
 * and when a block has settled. Pure.
 */

typedef struct EnergyInterval {
        size_t n;                    /* pairs */
        double mean;                 /* mean of the differences */
        double sd;                   /* their sample standard deviation (n − 1) */
        double t;                    /* the t quantile used (0.975, n − 1 degrees of freedom) */
        double half_width;           /* t × sd / √n */
        double low;
        double high;
        bool significant;            /* the interval does not hold 0 */
} EnergyInterval;

/*
 * The two-sided 95% quantile of Student's t with df degrees of freedom (df ≥ 1), from a table; between
 * entries the next smaller df's (wider) value. 0 for df 0.
 */
double energy_t_quantile_95(unsigned df);

/*
 * The 95% interval of the mean of baseline[i] − policy[i] (the saving: positive when the policy uses
 * less), over n ≥ 2 pairs. -EINVAL for fewer, or a value that is not finite.
 */
int energy_paired_interval(const double *baseline, const double *policy, size_t n, EnergyInterval *ret);

/* Of each block the first max(20% of the block, 2 s) is not counted... */
#define ENERGY_SETTLE_MIN_USEC (2 * USEC_PER_SEC)
/* ...nor anything before the plan has held for 3 group rounds. */
#define ENERGY_SETTLE_ROUNDS 3u

/* The part of a block of block_usec that is never counted: max(20% of it, 2 s). */
usec_t energy_settle_usec(usec_t block_usec);

/*
 * Whether a block has settled since_start_usec after it began, its plan unchanged for rounds_held
 * group rounds: past energy_settle_usec() and rounds_held ≥ ENERGY_SETTLE_ROUNDS.
 */
bool energy_block_settled(usec_t block_usec, usec_t since_start_usec, unsigned rounds_held);
