/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "policy-internal.h"

/*
 * Step 3: packed groups and groups placed by energy (balanced on asymmetric machines), in order,
 * each on top of p's base and the groups before it; each chosen group packed or spread, whichever
 * makes the plan cheaper. previous[i] (NULL: none) is what group i had: 1 packed, 0 spread, -1
 * nothing yet. Sets each group's proposal, reason and packed. Returns 0 or -ENOMEM.
 */
int policy_choose(Planner *p, GroupPlan *gps, size_t n, const int *previous);
