/* SPDX-License-Identifier: GPL-2.0-only */
/* The Topology as data: look-ups, comparison and freeing, with no I/O (reading it: topology-sysfs.c). */

#include <stdlib.h>

#include "peltd/macro.h"
#include "peltd/topology.h"

const TopoCpu *topology_cpu(const Topology *t, int cpu) {
        size_t lo = 0, hi;

        if (!t)
                return NULL;
        hi = t->n_cpus;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->cpus[mid].cpu == cpu)
                        return &t->cpus[mid];
                if (t->cpus[mid].cpu < cpu)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

Topology *topology_free(Topology *t) {
        if (!t)
                return NULL;
        free(t->cpus);
        free(t->packages);
        free(t->dies);
        free(t->clusters);
        free(t->smt_groups);
        free(t->llc_groups);
        free(t->numa_nodes);
        free(t->classes);
        free(t->freq_domains);
        free(t);
        return NULL;
}

const char *capacity_source_to_string(CapacitySource s) {
        switch (s) {
        case CAPACITY_FROM_CPU_CAPACITY:
                return "cpu_capacity";
        case CAPACITY_FROM_MAX_FREQ:
                return "cpuinfo_max_freq";
        case CAPACITY_FROM_INTEL_HYBRID:
                return "Intel hybrid core types";
        case CAPACITY_UNIFORM:
                return "no capacity information";
        }
        return "unknown";
}

static bool groups_equal(const TopoGroup *a, const TopoGroup *b, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (a[i].id != b[i].id || !cpumask_equal(&a[i].cpus, &b[i].cpus))
                        return false;
        return true;
}

static bool masks_equal(const CpuMask *a, const CpuMask *b, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!cpumask_equal(&a[i], &b[i]))
                        return false;
        return true;
}

static bool cpus_equal(const TopoCpu *a, const TopoCpu *b) {
        return a->cpu == b->cpu && a->package == b->package && a->die == b->die && a->cluster == b->cluster &&
               a->core == b->core && a->capacity == b->capacity && a->max_freq_khz == b->max_freq_khz &&
               a->idle_residency_usec == b->idle_residency_usec && a->package_index == b->package_index &&
               a->die_index == b->die_index && a->cluster_index == b->cluster_index &&
               a->smt_index == b->smt_index && a->llc_index == b->llc_index && a->numa_index == b->numa_index &&
               a->freq_domain_index == b->freq_domain_index && a->class_index == b->class_index;
}

bool topology_equal(const Topology *a, const Topology *b) {
        if (a == b)
                return true;
        if (!a || !b)
                return false;
        if (!cpumask_equal(&a->online, &b->online) || !cpumask_equal(&a->isolated, &b->isolated) ||
            a->n_cpus != b->n_cpus || a->n_packages != b->n_packages || a->n_dies != b->n_dies ||
            a->has_clusters != b->has_clusters || a->n_clusters != b->n_clusters ||
            a->n_smt_groups != b->n_smt_groups || a->n_llc_groups != b->n_llc_groups ||
            a->n_numa_nodes != b->n_numa_nodes || a->n_classes != b->n_classes ||
            a->n_freq_domains != b->n_freq_domains || a->asymmetric != b->asymmetric ||
            a->capacity_source != b->capacity_source)
                return false;
        for (size_t i = 0; i < a->n_cpus; i++)
                if (!cpus_equal(&a->cpus[i], &b->cpus[i]))
                        return false;
        for (size_t i = 0; i < a->n_classes; i++)
                if (a->classes[i].capacity != b->classes[i].capacity ||
                    !cpumask_equal(&a->classes[i].cpus, &b->classes[i].cpus))
                        return false;
        return groups_equal(a->packages, b->packages, a->n_packages) && groups_equal(a->dies, b->dies, a->n_dies) &&
               groups_equal(a->clusters, b->clusters, a->n_clusters) &&
               groups_equal(a->numa_nodes, b->numa_nodes, a->n_numa_nodes) &&
               masks_equal(a->smt_groups, b->smt_groups, a->n_smt_groups) &&
               masks_equal(a->llc_groups, b->llc_groups, a->n_llc_groups) &&
               masks_equal(a->freq_domains, b->freq_domains, a->n_freq_domains);
}
