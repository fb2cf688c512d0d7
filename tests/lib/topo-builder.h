/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/topology.h"

/*
 * Builds Topology structs in memory, the way topology_load() reports a machine: online CPUs only,
 * groups ordered by their lowest CPU, capacity classes by the kernel's 5% margin. For tests and
 * bench/policy-sim, where a shape ("2 packages × 10 cores × 2 threads", "4 LITTLE + 4 big") is
 * easier to state than a sysfs tree.
 */

typedef enum TopoNumbering {
        TOPO_NUMBER_LINEAR,          /* cluster by cluster, a core's threads adjacent (0,1 = core 0) */
        TOPO_NUMBER_X86,             /* every core's first thread, cluster by cluster, then second threads */
        TOPO_NUMBER_INTERLEAVED,     /* core c of every package in turn (cpu = c × packages + p), then second threads */
} TopoNumbering;

typedef struct TopoClusterSpec {
        int package;
        unsigned cores;
        unsigned threads;            /* per core */
        unsigned capacity;           /* 1..1024 */
        usec_t idle_residency_usec;
} TopoClusterSpec;

typedef struct TopoSpec {
        const TopoClusterSpec *clusters;
        size_t n_clusters;
        TopoNumbering numbering;
        bool has_clusters;           /* sysfs reports clusters (ARM); else the LLC is per package */
        const char *offline;         /* CPU list left out of the machine, or NULL */
        const char *isolated;        /* CPU list, or NULL */
} TopoSpec;

Topology *topo_build(const TopoSpec *spec);
/* packages × cores × threads of capacity 1024, one NUMA node per package. */
Topology *topo_build_smp(unsigned packages, unsigned cores, unsigned threads, TopoNumbering numbering);
void topo_build_free(Topology *t);
