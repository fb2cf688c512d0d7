/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Measured energy split between the managed groups, per package and meter interval (as Kepler
 * does, finer where the caller knows per-CPU usage). Pure: the caller gives the deltas of one
 * interval.
 *
 *   busy(pkg)   = Σ over its CPUs of (total − idle − iowait − steal)      (/proc/stat)
 *   active(pkg) = Δenergy(pkg) × busy(pkg) / total(pkg);  idle(pkg) = Δenergy(pkg) − active(pkg)
 *   share(g)    = active(pkg) × time(g, pkg) / max(busy(pkg), Σ_g time(g, pkg))
 *   other(pkg)  = active(pkg) − Σ_g share(g)
 *
 * time(g, pkg) is the group's CPU time on the package's CPUs where per-CPU usage is known
 * (cpuacct.usage_percpu); where only its total is (cgroup v2), the total is spread over the packages
 * in proportion to their busy time (on one package: the total). Dividing by the larger of busy and
 * the groups' summed time keeps the shares at or below the active energy when the counters of two
 * sources disagree; every division rounds down, so the shares never add up to more than active and
 * "other" is never below 0. Idle energy is not attributed. All times in ns, energy in µJ.
 */

typedef struct EnergyCpuTimes {
        unsigned package;            /* index into the packages */
        uint64_t total_ns;           /* Δ of every /proc/stat field of the CPU */
        uint64_t idle_ns;
        uint64_t iowait_ns;
        uint64_t steal_ns;
} EnergyCpuTimes;

typedef struct EnergyGroupUsage {
        const uint64_t *percpu_ns;   /* Δ usage per CPU (n_cpus entries), or NULL: only the total is known */
        uint64_t total_ns;           /* Δ usage; used where percpu_ns is NULL */
} EnergyGroupUsage;

typedef struct EnergyPackageSplit {
        uint64_t energy_uj;          /* Δenergy of the package, as given */
        uint64_t busy_ns;
        uint64_t total_ns;
        uint64_t active_uj;
        uint64_t idle_uj;
        uint64_t groups_uj;          /* Σ of the groups' shares */
        uint64_t other_uj;           /* active energy no managed group used */
} EnergyPackageSplit;

/*
 * Splits package_uj[p] (p < n_packages) over the groups. ret_packages has n_packages entries;
 * ret_group_uj has n_groups × n_packages entries, group g's share of package p at
 * [g * n_packages + p]. Returns 0, or -EINVAL when a CPU names a package ≥ n_packages or a CPU's
 * idle, iowait and steal add up to more than its total.
 */
int energy_attribute(const EnergyCpuTimes *cpus, size_t n_cpus, const uint64_t *package_uj, size_t n_packages,
                     const EnergyGroupUsage *groups, size_t n_groups, EnergyPackageSplit *ret_packages,
                     uint64_t *ret_group_uj);
