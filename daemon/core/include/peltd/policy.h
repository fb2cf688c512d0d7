/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/energy.h"
#include "peltd/policy-types.h"
#include "peltd/time-util.h"
#include "peltd/topology.h"

/*
 * Placement (peltd(8), "PLACEMENT POLICIES"). Pure: policy_plan() takes the topology, the tracked groups,
 * the operator's overrides, the policy, the history kept between rounds and the time, and returns
 * for every group a CPU set, shares and a one-line reason. It does no I/O, reads no clock and never
 * logs; the history is the caller's and is updated in place.
 *
 * Util is in 1/1024 of a CPU of capacity 1024 (a group's may exceed 1024). A demand fits a CPU set
 * when util * 1280 < capacity * 1024 (energy.h: util_fits_capacity(), energy_set_capacity()).
 */

/*
 * Plans every group. history is NULL (no history: --plan places at once with demand = util) or
 * an array of n entries, history[i] belonging to groups[i], kept by the caller between rounds.
 * ret has n entries. Returns 0 or -ENOMEM.
 */
int policy_plan(
                const Topology *t,
                const PolicyGroup *groups,
                size_t n,
                const PolicyParams *params,
                PolicyHistory *history,
                usec_t now,
                PolicyResult *ret);

/*
 * Whether a group's history is at rest after a round of policy_plan(): nothing held for a
 * narrowing, nothing bounced, no energy choice (balanced on asymmetric machines), and its util
 * samples all g's util. The time enters a plan only through the learning period (its reason
 * names it), a narrowing's hold and interval, and a bounce: once every group's history is at
 * rest, and a round planned what the round before it planned from the same inputs, a round with
 * those inputs again plans the same and leaves the histories as they are (but for n_util). The
 * daemon then leaves the planner out until an input changes.
 */
bool policy_history_at_rest(const PolicyHistory *h, const PolicyGroup *g);

/*
 * The energy of a plan: each group's util spread over its set (energy_spread()), then
 * energy_estimate() with m (NULL: built-in). Returns a negative errno (-ENOMEM) or 0 and ret.
 */
int policy_plan_energy(
                const Topology *t,
                const EnergyModel *m,
                const PolicyGroup *groups,
                const PolicyResult *results,
                size_t n,
                double *ret);
