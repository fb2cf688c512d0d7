/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "policy-internal.h"

/*
 * Step 4, with history: each packed group judged again against the round's whole plan, then the
 * stability rules turn every managed group's proposal into the set planned (ret[i].cpus), and
 * history[i] records it. p->cpu_util holds the plan's load after. Returns 0 or -ENOMEM.
 */
int policy_place_with_history(Planner *p, const PolicyGroup *groups, GroupPlan *gps, PolicyHistory *history, size_t n,
                              usec_t now, PolicyResult *ret);
