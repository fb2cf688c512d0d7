/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/cpumask.h"

/*
 * The CPU topology as text: the one renderer behind "peltd --print-topology", "peltctl topology"
 * and the topology line of "peltctl status". It takes the facts as plain data, so the daemon (from
 * its Topology, topology-print.c) and peltctl (from the GetTopology document, peltctl-topology.c)
 * print the same line wherever they hold the same facts.
 *
 * Every CPU set holds online CPUs only; groups are in the order they are printed. Pure: no I/O,
 * no logging; the functions return 0 or -ENOMEM.
 */

/* A package, die, cluster or NUMA node with its id, or a capacity class with its capacity. */
typedef struct TopoTextGroup {
        int id;
        CpuMask cpus;
} TopoTextGroup;

typedef struct TopoTextCpu {
        int cpu;
        uint64_t max_freq_khz;           /* 0 when unknown */
        uint64_t idle_residency_usec;    /* the deepest enabled idle state's target residency; 0 when unknown */
} TopoTextCpu;

typedef struct TopoText {
        CpuMask online;
        const TopoTextCpu *cpus;         /* one per online CPU */
        size_t n_cpus;

        const TopoTextGroup *packages;
        size_t n_packages;
        const TopoTextGroup *dies;
        size_t n_dies;
        const TopoTextGroup *clusters;   /* without has_clusters: the machine has none */
        size_t n_clusters;
        bool has_clusters;
        const CpuMask *smt_groups;       /* every core's threads, singletons included */
        size_t n_smt_groups;
        const CpuMask *llc_groups;
        size_t n_llc_groups;
        const TopoTextGroup *numa_nodes;
        size_t n_numa_nodes;
        const TopoTextGroup *classes;    /* id: the capacity (1..1024) */
        size_t n_classes;
        bool asymmetric;

        /*
         * What the daemon reads from sysfs but the GetTopology document does not carry. Unknown,
         * the "isolated" and "deepest idle" lines are left out, the capacity line does not say
         * where the capacities came from, and "max freq" (the CPUs by highest frequency) takes the
         * place of "freq domains" (how many, then the same).
         */
        const CpuMask *isolated;         /* NULL: unknown */
        const char *capacity_source;     /* "from cpu_capacity", "no capacity information"; NULL: unknown */
        bool has_freq_domains;
        size_t n_freq_domains;
        bool has_idle;                   /* the CPUs' idle_residency_usec is known */
} TopoText;

/*
 * The summary a person reads at a glance: a headline ("2 packages × 20 cores × 2 threads, 2 NUMA
 * nodes, 1 capacity class"), then a line for each fact ("online CPUs   0-79 (80)"). Ends in a
 * newline.
 */
int topology_text_format(const TopoText *t, char **ret);

/* One line, no newline: "8 CPUs, 2 packages, 8 cores, 1 NUMA node, 2 capacity classes, asymmetric". */
int topology_text_summary(const TopoText *t, char **ret);
