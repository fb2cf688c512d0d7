/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "policy-internal.h"

/*
 * Packs demand on the candidates, on top of the load p->cpu_util holds: the fewest packages,
 * clusters and cores (or the lowest classes) that fit. Returns false when not even all of them
 * fit (ret is then all of them).
 */
bool policy_pack(const Planner *p, const CpuMask *candidates, double demand, CpuMask *ret);

/* Adds whole cores (their candidate CPUs) in packing order until set holds min_cpus CPUs. */
void policy_extend_to_min(const Planner *p, const CpuMask *candidates, unsigned min_cpus, CpuMask *set);

/* Where the candidates were cut by the fit rule, says so at the end of reason. */
void policy_describe_fit(const GroupPlan *gp, char *reason);

/* A group on all its candidates, or packed (with its reason): its load is laid down on p. */
void policy_place_spread(Planner *p, GroupPlan *gp);
void policy_place_pack(Planner *p, GroupPlan *gp);

/* Step 2: groups left alone and spread groups laid down on p, before any is packed. */
void policy_lay_down_base(Planner *p, const PolicyGroup *groups, GroupPlan *gps, const PolicyResult *results, size_t n);
