/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "policy-internal.h"

/*
 * Where a managed group's CPUs hold more demand than they fit (p->cpu_util, the plan's load), its
 * reason says about how much of the CPUs its shares win it. Returns 0 or -ENOMEM.
 */
int policy_explain_contention(const Planner *p, const GroupPlan *gps, PolicyResult *ret, size_t n);
