/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/time-util.h"
#include "peltd/topology-util.h"

/*
 * The CPU topology as data (read from sysfs under a root by topology-sysfs.h; tests: a fixture tree).
 * Every CPU set holds online CPUs only; groups are ordered by their lowest CPU, NUMA nodes by id.
 */

typedef struct TopoCpu {
        int cpu;
        int package;                 /* physical_package_id, or the lowest CPU of the package group when -1 */
        int die;                     /* die_id (same rule), or the package id */
        int cluster;                 /* cluster_id (the lowest CPU of the cluster when -1/65535); -1 when
                                      * the machine has no clusters */
        int core;                    /* core_id as sysfs gives it; -1 when absent */
        unsigned capacity;           /* 1..1024 */
        unsigned max_freq_khz;       /* cpuinfo_max_freq of the CPU's cpufreq policy; 0 when unknown */
        usec_t idle_residency_usec;  /* deepest enabled idle state's target residency; 0 when unknown */
        int package_index;           /* index into Topology.packages */
        int die_index;               /* index into Topology.dies */
        int cluster_index;           /* index into Topology.clusters; -1 without clusters */
        int smt_index;               /* index into Topology.smt_groups */
        int llc_index;               /* index into Topology.llc_groups; -1 when unknown */
        int numa_index;              /* index into Topology.numa_nodes; -1 when no node lists the CPU */
        int freq_domain_index;       /* index into Topology.freq_domains; -1 without cpufreq */
        int class_index;             /* index into Topology.classes */
} TopoCpu;

typedef struct TopoGroup {
        int id;
        CpuMask cpus;
} TopoGroup;

/* Where a capacity came from (the first source that covers every online CPU). */
typedef enum CapacitySource {
        CAPACITY_FROM_CPU_CAPACITY,  /* cpuN/cpu_capacity */
        CAPACITY_FROM_MAX_FREQ,      /* cpuinfo_max_freq relative to the highest */
        CAPACITY_FROM_INTEL_HYBRID,  /* /sys/devices/cpu_core|cpu_atom/cpus: 1024 and 640 */
        CAPACITY_UNIFORM,            /* none of these: 1024 */
} CapacitySource;

typedef struct Topology {
        CpuMask online;
        CpuMask isolated;            /* /sys/devices/system/cpu/isolated, online ones only */

        TopoCpu *cpus;               /* one per online CPU, sorted by CPU number */
        size_t n_cpus;

        TopoGroup *packages;
        size_t n_packages;
        TopoGroup *dies;
        size_t n_dies;
        TopoGroup *clusters;         /* NULL (and has_clusters false) when sysfs gives none */
        size_t n_clusters;
        bool has_clusters;
        CpuMask *smt_groups;         /* every core's threads, singletons included */
        size_t n_smt_groups;
        CpuMask *llc_groups;         /* empty when there is no cache/ */
        size_t n_llc_groups;
        TopoGroup *numa_nodes;
        size_t n_numa_nodes;
        CapacityClass *classes;      /* ascending capacity */
        size_t n_classes;
        CpuMask *freq_domains;       /* cpufreq policies' related_cpus */
        size_t n_freq_domains;
        bool asymmetric;             /* more than one capacity class */
        CapacitySource capacity_source;
} Topology;

Topology *topology_free(Topology *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Topology *, topology_free);
#define _cleanup_topology_ _cleanup_(topology_freep)

/* The TopoCpu of an online CPU, or NULL. */
const TopoCpu *topology_cpu(const Topology *t, int cpu);

/* True when a and b describe the same topology (every field, per-CPU values included). */
bool topology_equal(const Topology *a, const Topology *b);


const char *capacity_source_to_string(CapacitySource s);

/*
 * The --print-topology JSON object peltd(8) describes ("online_cpus", "packages", ..., "cpus"), with
 * null where the contract says so.
 */
struct json_object;
int topology_to_json(const Topology *t, struct json_object **ret);

/* A short human summary: a headline ("2 packages × 20 cores × 2 threads, ...") and detail lines. */
int topology_format_text(const Topology *t, char **ret);
