/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/topology.h"

/*
 * The energy estimate of a placement (README, "Policies").
 *
 * A placement is turned into util per CPU (energy_spread(), once per group), and the per-CPU util
 * into an energy figure (energy_estimate()): by the kernel's Energy Model where one was read from
 * /sys/kernel/debug/energy_model/, else by the built-in model with its fixed constants.
 * Units are the model's own: arbitrary but fixed for the built-in one, cost × util / capacity for
 * the kernel's. Only ratios between placements on one machine mean anything.
 *
 * Util is in 1/1024 of a CPU of capacity 1024. Per-CPU arrays are indexed like Topology.cpus.
 * All of it is pure; the kernel's model is read by topology-energy.h.
 */

/* One performance state of a kernel Energy Model domain (debugfs ps:FREQ/). */
typedef struct EnergyPerfState {
        uint64_t frequency_khz;
        uint64_t power;              /* as the kernel gives it (µW, mW or abstract) */
        uint64_t cost;               /* the kernel's cost: power × max frequency / frequency */
} EnergyPerfState;

typedef struct EnergyPerfDomain {
        CpuMask cpus;
        EnergyPerfState *states;     /* ascending frequency */
        size_t n_states;
} EnergyPerfDomain;

/* The kernel's Energy Model, as EAS uses it. */
typedef struct EnergyModel {
        EnergyPerfDomain *domains;
        size_t n_domains;
} EnergyModel;

/*
 * A model from plain tables (topology-energy.c reads them from debugfs; tests build them): takes
 * the array and every domain's states, also on failure. States are sorted by frequency and domains
 * by first CPU; a domain whose states all have cost 0 gets the kernel's cost, power × max frequency
 * / frequency. -EINVAL for a domain without CPUs or states or with a state at frequency 0.
 */
int energy_model_new(EnergyPerfDomain *domains, size_t n_domains, EnergyModel **ret);
EnergyModel *energy_model_free(EnergyModel *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(EnergyModel *, energy_model_free);
#define _cleanup_energy_model_ _cleanup_(energy_model_freep)

/* True when every online CPU of t lies in one of m's domains (only then is m used). */
bool energy_model_covers(const EnergyModel *m, const Topology *t);

/*
 * Adds a group's util, spread over set, to cpu_util: evenly over the cores that have a CPU in set,
 * and inside a core one thread first: the core's first CPU in set takes its share up to the CPU's
 * capacity, the core's other CPUs in set share what is left ("one thread per core before second
 * threads"). CPUs of set that are not online in t are ignored.
 */
void energy_spread(const Topology *t, const CpuMask *set, double util, double *cpu_util);

/* The energy of per-CPU util: m when it covers t, else the built-in model. */
double energy_estimate(const Topology *t, const EnergyModel *m, const double *cpu_util);

/* The built-in model alone (tests, bench/policy-sim). */
double energy_estimate_builtin(const Topology *t, const double *cpu_util);

/*
 * True when a busy core (with a CPU in within; NULL: any) is over 80% busy: its util does not fit
 * its capacity (× 1.2 when two or more of its CPUs are busy) with the kernel's 20% margin. EAS
 * stops there.
 */
bool energy_overutilized(const Topology *t, const double *cpu_util, const CpuMask *within);

/*
 * Capacity of a CPU set (peltd(8), "PLACEMENT POLICIES"): the sum over its cores of the core's capacity,
 * × 1.2 where the set holds two or more SMT threads of that core.
 */
double energy_set_capacity(const Topology *t, const CpuMask *set);

/* A core's capacity × this where two or more of its SMT threads are used: the second adds 20%. */
#define ENERGY_SMT_FACTOR 1.2

/* The kernel's fit rule with its 20% margin: util * 1280 < capacity * 1024. */
static inline bool util_fits_capacity(double util, double capacity) {
        return util * 1280.0 < capacity * 1024.0;
}

/* The index of cpu in t->cpus, or -1 when it is not online. */
int energy_cpu_index(const Topology *t, int cpu);
