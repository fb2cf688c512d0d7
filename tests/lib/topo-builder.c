/* SPDX-License-Identifier: GPL-2.0-only */
#include <assert.h>

#include "peltd/topology-util.h"
#include "topo-builder.h"

typedef struct Slot {
        int cpu;
        size_t cluster;
        unsigned core;               /* within the cluster */
        unsigned thread;
} Slot;

static int compare_groups(const void *a, const void *b) {
        return cpumask_first(&((const TopoGroup *) a)->cpus) - cpumask_first(&((const TopoGroup *) b)->cpus);
}

static int compare_masks(const void *a, const void *b) {
        return cpumask_first(a) - cpumask_first(b);
}

static int compare_ids(const void *a, const void *b) {
        return ((const TopoGroup *) a)->id - ((const TopoGroup *) b)->id;
}

static size_t index_of(const TopoGroup *g, size_t n, int cpu) {
        for (size_t i = 0; i < n; i++)
                if (cpumask_test(&g[i].cpus, cpu))
                        return i;
        assert(!"cpu in no group");
        return 0;
}

static size_t mask_index_of(const CpuMask *m, size_t n, int cpu) {
        for (size_t i = 0; i < n; i++)
                if (cpumask_test(&m[i], cpu))
                        return i;
        assert(!"cpu in no mask");
        return 0;
}

Topology *topo_build(const TopoSpec *spec) {
        Topology *t = new0(Topology, 1);
        CpuMask offline, isolated;
        unsigned max_cores = 0, max_threads = 0, n_slots = 0;
        Slot *slots;
        int next = 0, n_pkg_ids = 0, r;
        int pkg_ids[64];

        assert(t);
        cpumask_zero(&offline);
        cpumask_zero(&isolated);
        if (spec->offline) {
                r = cpumask_parse_list(spec->offline, &offline);
                assert(r == 0);
        }
        if (spec->isolated) {
                r = cpumask_parse_list(spec->isolated, &isolated);
                assert(r == 0);
        }

        for (size_t k = 0; k < spec->n_clusters; k++) {
                max_cores = MAX(max_cores, spec->clusters[k].cores);
                max_threads = MAX(max_threads, spec->clusters[k].threads);
                n_slots += spec->clusters[k].cores * spec->clusters[k].threads;
        }
        slots = new0(Slot, n_slots);
        assert(slots);

        /* Number the CPUs. */
        size_t s = 0;
        if (spec->numbering == TOPO_NUMBER_LINEAR) {
                for (size_t k = 0; k < spec->n_clusters; k++)
                        for (unsigned c = 0; c < spec->clusters[k].cores; c++)
                                for (unsigned th = 0; th < spec->clusters[k].threads; th++)
                                        slots[s++] = (Slot){ next++, k, c, th };
        } else if (spec->numbering == TOPO_NUMBER_X86) {
                for (unsigned th = 0; th < max_threads; th++)
                        for (size_t k = 0; k < spec->n_clusters; k++)
                                for (unsigned c = 0; c < spec->clusters[k].cores; c++)
                                        if (th < spec->clusters[k].threads)
                                                slots[s++] = (Slot){ next++, k, c, th };
        } else {
                for (unsigned th = 0; th < max_threads; th++)
                        for (unsigned c = 0; c < max_cores; c++)
                                for (size_t k = 0; k < spec->n_clusters; k++)
                                        if (c < spec->clusters[k].cores && th < spec->clusters[k].threads)
                                                slots[s++] = (Slot){ next++, k, c, th };
        }
        assert(s == n_slots);

        /* Packages, clusters, cores, NUMA nodes (one per package), frequency domains (per cluster). */
        for (size_t k = 0; k < spec->n_clusters; k++) {
                bool seen = false;

                for (int i = 0; i < n_pkg_ids; i++)
                        seen = seen || pkg_ids[i] == spec->clusters[k].package;
                if (!seen)
                        pkg_ids[n_pkg_ids++] = spec->clusters[k].package;
        }

        t->cpus = new0(TopoCpu, n_slots);
        t->packages = new0(TopoGroup, n_pkg_ids);
        t->dies = new0(TopoGroup, n_pkg_ids);
        t->numa_nodes = new0(TopoGroup, n_pkg_ids);
        t->clusters = new0(TopoGroup, spec->n_clusters);
        t->freq_domains = new0(CpuMask, spec->n_clusters);
        t->llc_groups = new0(CpuMask, MAX(spec->n_clusters, (size_t) n_pkg_ids));
        t->smt_groups = new0(CpuMask, n_slots);
        assert(t->cpus && t->packages && t->dies && t->numa_nodes && t->clusters && t->freq_domains &&
               t->llc_groups && t->smt_groups);

        for (int i = 0; i < n_pkg_ids; i++) {
                t->packages[i].id = pkg_ids[i];
                t->dies[i].id = pkg_ids[i];
                t->numa_nodes[i].id = pkg_ids[i];
        }
        t->n_packages = t->n_dies = t->n_numa_nodes = (size_t) n_pkg_ids;
        t->has_clusters = spec->has_clusters;
        t->n_clusters = spec->has_clusters ? spec->n_clusters : 0;
        t->n_freq_domains = spec->n_clusters;
        t->n_llc_groups = spec->has_clusters ? spec->n_clusters : (size_t) n_pkg_ids;

        /* Cores: slots sharing (cluster, core). */
        size_t *core_base = new0(size_t, spec->n_clusters + 1);
        assert(core_base);
        for (size_t k = 0; k < spec->n_clusters; k++)
                core_base[k + 1] = core_base[k] + spec->clusters[k].cores;
        t->n_smt_groups = core_base[spec->n_clusters];

        cpumask_zero(&t->online);
        for (size_t i = 0; i < n_slots; i++) {
                const Slot *sl = &slots[i];
                const TopoClusterSpec *cs = &spec->clusters[sl->cluster];
                int p = 0;

                if (cpumask_test(&offline, sl->cpu))
                        continue;
                for (int j = 0; j < n_pkg_ids; j++)
                        if (pkg_ids[j] == cs->package)
                                p = j;
                r = cpumask_set(&t->online, sl->cpu);
                assert(r == 0);
                (void) cpumask_set(&t->packages[p].cpus, sl->cpu);
                (void) cpumask_set(&t->dies[p].cpus, sl->cpu);
                (void) cpumask_set(&t->numa_nodes[p].cpus, sl->cpu);
                (void) cpumask_set(&t->clusters[sl->cluster].cpus, sl->cpu);
                (void) cpumask_set(&t->freq_domains[sl->cluster], sl->cpu);
                (void) cpumask_set(&t->llc_groups[spec->has_clusters ? sl->cluster : (size_t) p], sl->cpu);
                (void) cpumask_set(&t->smt_groups[core_base[sl->cluster] + sl->core], sl->cpu);
        }
        cpumask_and(&t->isolated, &isolated, &t->online);

        /* Drop groups left empty by offline CPUs; order groups by their lowest CPU. */
#define COMPACT_GROUPS(arr, n)                                                          \
        do {                                                                            \
                size_t _w = 0;                                                          \
                for (size_t _r = 0; _r < (n); _r++)                                     \
                        if (!cpumask_empty(&(arr)[_r].cpus))                            \
                                (arr)[_w++] = (arr)[_r];                                \
                (n) = _w;                                                               \
        } while (0)
#define COMPACT_MASKS(arr, n)                                                           \
        do {                                                                            \
                size_t _w = 0;                                                          \
                for (size_t _r = 0; _r < (n); _r++)                                     \
                        if (!cpumask_empty(&(arr)[_r]))                                 \
                                (arr)[_w++] = (arr)[_r];                                \
                (n) = _w;                                                               \
        } while (0)

        /* Cluster ids are their lowest CPU, as for sysfs' -1 ids. */
        for (size_t k = 0; k < spec->n_clusters; k++)
                t->clusters[k].id = cpumask_first(&t->clusters[k].cpus);

        COMPACT_GROUPS(t->packages, t->n_packages);
        COMPACT_GROUPS(t->dies, t->n_dies);
        COMPACT_GROUPS(t->numa_nodes, t->n_numa_nodes);
        COMPACT_GROUPS(t->clusters, t->n_clusters);
        COMPACT_MASKS(t->freq_domains, t->n_freq_domains);
        COMPACT_MASKS(t->llc_groups, t->n_llc_groups);
        COMPACT_MASKS(t->smt_groups, t->n_smt_groups);
        qsort(t->packages, t->n_packages, sizeof(TopoGroup), compare_groups);
        qsort(t->dies, t->n_dies, sizeof(TopoGroup), compare_groups);
        qsort(t->numa_nodes, t->n_numa_nodes, sizeof(TopoGroup), compare_ids);
        qsort(t->clusters, t->n_clusters, sizeof(TopoGroup), compare_groups);
        qsort(t->freq_domains, t->n_freq_domains, sizeof(CpuMask), compare_masks);
        qsort(t->llc_groups, t->n_llc_groups, sizeof(CpuMask), compare_masks);
        qsort(t->smt_groups, t->n_smt_groups, sizeof(CpuMask), compare_masks);
        if (!t->has_clusters) {
                free(t->clusters);
                t->clusters = NULL;
                t->n_clusters = 0;
        }

        /* Per CPU, in CPU order. */
        CPUMASK_FOREACH(cpu, &t->online) {
                const Slot *sl = NULL;

                for (size_t i = 0; i < n_slots; i++)
                        if (slots[i].cpu == cpu)
                                sl = &slots[i];
                assert(sl);
                const TopoClusterSpec *cs = &spec->clusters[sl->cluster];
                TopoCpu *c = &t->cpus[t->n_cpus++];

                *c = (TopoCpu){
                        .cpu = cpu,
                        .package = cs->package,
                        .die = cs->package,
                        .cluster = spec->has_clusters ? cpumask_first(&t->clusters[index_of(t->clusters, t->n_clusters, cpu)].cpus) : -1,
                        .core = (int) (core_base[sl->cluster] + sl->core),
                        .capacity = cs->capacity,
                        .max_freq_khz = cs->capacity * 2000,
                        .idle_residency_usec = cs->idle_residency_usec,
                        .smt_index = (int) mask_index_of(t->smt_groups, t->n_smt_groups, cpu),
                        .llc_index = (int) mask_index_of(t->llc_groups, t->n_llc_groups, cpu),
                        .numa_index = (int) index_of(t->numa_nodes, t->n_numa_nodes, cpu),
                        .freq_domain_index = (int) mask_index_of(t->freq_domains, t->n_freq_domains, cpu),
                };
        }

        /* Capacity classes, by the kernel's 5% margin, as topology_load() makes them. */
        int cpus[CPUMASK_MAX], class_of[CPUMASK_MAX];
        unsigned caps[CPUMASK_MAX];
        for (size_t i = 0; i < t->n_cpus; i++) {
                cpus[i] = t->cpus[i].cpu;
                caps[i] = t->cpus[i].capacity;
        }
        r = capacity_classes_build(cpus, caps, t->n_cpus, &t->classes, &t->n_classes, class_of);
        assert(r == 0);
        t->asymmetric = t->n_classes > 1;
        t->capacity_source = t->asymmetric ? CAPACITY_FROM_CPU_CAPACITY : CAPACITY_UNIFORM;
        for (size_t i = 0; i < t->n_cpus; i++) {
                int cpu = t->cpus[i].cpu;

                t->cpus[i].package_index = (int) index_of(t->packages, t->n_packages, cpu);
                t->cpus[i].die_index = (int) index_of(t->dies, t->n_dies, cpu);
                t->cpus[i].cluster_index = t->has_clusters ? (int) index_of(t->clusters, t->n_clusters, cpu) : -1;
                t->cpus[i].class_index = class_of[i];
        }

        free(core_base);
        free(slots);
        return t;
}

Topology *topo_build_smp(unsigned packages, unsigned cores, unsigned threads, TopoNumbering numbering) {
        TopoClusterSpec cs[64];
        TopoSpec spec = { .clusters = cs, .n_clusters = packages, .numbering = numbering };

        assert(packages <= 64);
        for (unsigned p = 0; p < packages; p++)
                cs[p] = (TopoClusterSpec){ .package = (int) p, .cores = cores, .threads = threads, .capacity = 1024 };
        return topo_build(&spec);
}

void topo_build_free(Topology *t) {
        /* Built with the same allocations topology_load() makes. */
        topology_free(t);
}
