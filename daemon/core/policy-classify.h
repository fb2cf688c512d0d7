/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "policy-internal.h"

/*
 * Step 1 for one group: its demand, its candidate CPUs and how it is placed (gp), its shares and
 * policy, or why it is left alone (r). h (NULL: no history) takes this round's sample.
 */
void policy_classify(Planner *p, const PolicyGroup *g, PolicyHistory *h, usec_t now, GroupPlan *gp, PolicyResult *r);
