/* SPDX-License-Identifier: GPL-2.0-only */
/* Measured energy split between groups, per package (energy-attr.h). */
#include <errno.h>
#include <string.h>

#include "peltd/energy-attr.h"

/* a × b / c, rounded down, without overflow (a µJ count times a ns count passes 2^64 in hours). */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c) {
        return c == 0 ? 0 : (uint64_t) ((unsigned __int128) a * b / c);
}

static int sum_cpus(const EnergyCpuTimes *cpus, size_t n_cpus, EnergyPackageSplit *packages, size_t n_packages) {
        for (size_t i = 0; i < n_cpus; i++) {
                const EnergyCpuTimes *c = &cpus[i];
                uint64_t not_busy = c->idle_ns + c->iowait_ns + c->steal_ns;

                if (c->package >= n_packages || not_busy > c->total_ns)
                        return -EINVAL;
                packages[c->package].total_ns += c->total_ns;
                packages[c->package].busy_ns += c->total_ns - not_busy;
        }
        return 0;
}

/* time(g, p) for every group and package, into times[g * n_packages + p]. */
static void group_times(const EnergyCpuTimes *cpus, size_t n_cpus, const EnergyPackageSplit *packages,
                        size_t n_packages, const EnergyGroupUsage *g, uint64_t *times) {
        uint64_t busy_all = 0;

        if (g->percpu_ns) {
                for (size_t i = 0; i < n_cpus; i++)
                        times[cpus[i].package] += g->percpu_ns[i];
                return;
        }
        for (size_t p = 0; p < n_packages; p++)
                busy_all += packages[p].busy_ns;
        for (size_t p = 0; p < n_packages; p++)
                times[p] = n_packages == 1 ? g->total_ns : mul_div(g->total_ns, packages[p].busy_ns, busy_all);
}

int energy_attribute(const EnergyCpuTimes *cpus, size_t n_cpus, const uint64_t *package_uj, size_t n_packages,
                     const EnergyGroupUsage *groups, size_t n_groups, EnergyPackageSplit *ret_packages,
                     uint64_t *ret_group_uj) {
        int r;

        memset(ret_packages, 0, sizeof(EnergyPackageSplit) * n_packages);
        memset(ret_group_uj, 0, sizeof(uint64_t) * n_groups * n_packages);
        r = sum_cpus(cpus, n_cpus, ret_packages, n_packages);
        if (r < 0)
                return r;

        for (size_t g = 0; g < n_groups; g++)
                group_times(cpus, n_cpus, ret_packages, n_packages, &groups[g], &ret_group_uj[g * n_packages]);

        for (size_t p = 0; p < n_packages; p++) {
                EnergyPackageSplit *s = &ret_packages[p];
                uint64_t used = 0, denominator;

                s->energy_uj = package_uj[p];
                s->active_uj = mul_div(s->energy_uj, s->busy_ns, s->total_ns);
                s->idle_uj = s->energy_uj - s->active_uj;
                for (size_t g = 0; g < n_groups; g++)
                        used += ret_group_uj[g * n_packages + p];
                denominator = used > s->busy_ns ? used : s->busy_ns;
                for (size_t g = 0; g < n_groups; g++) {
                        uint64_t *v = &ret_group_uj[g * n_packages + p];

                        *v = mul_div(s->active_uj, *v, denominator);
                        s->groups_uj += *v;
                }
                s->other_uj = s->active_uj - s->groups_uj;
        }
        return 0;
}
