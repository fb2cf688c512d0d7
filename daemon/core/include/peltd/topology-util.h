/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/cpumask.h"

/*
 * The pure parts of topology detection: parsing what sysfs and /proc/cpuinfo say, and the
 * capacity rules the README states. No I/O, no logging; the tests call them on strings and arrays.
 * They know nothing of the Topology: topology.h includes this for the capacity types below.
 */

/* The kernel's SCHED_CAPACITY_SCALE: the biggest CPU. */
#define CAPACITY_SCALE 1024

typedef struct CapacityClass {
        unsigned capacity;           /* the smallest capacity in the class */
        CpuMask cpus;
} CapacityClass;

/*
 * A CPU list as sysfs writes it ("0-3,8"), or as old kernels wrote cpufreq's related_cpus and
 * affected_cpus: numbers separated by spaces ("0 1 2 3"). -EINVAL for anything else.
 */
int parse_cpu_list_relaxed(const char *s, CpuMask *ret);

/* A topology id file (physical_package_id, die_id, cluster_id, core_id): a decimal int, -1 allowed. */
int parse_topology_id(const char *s, int *ret);

/* -1 means "not known" for every topology id; for cluster_id the kernel also writes 65535 (a
 * truncated BAD_APICID on x86) when there is no cluster. */
static inline bool topology_id_valid(int id) {
        return id >= 0;
}

static inline bool cluster_id_valid(int id) {
        return id >= 0 && id != 65535;
}

/*
 * The CPUs /proc/cpuinfo names with "processor : N" lines. Returns how many it found (0 when there
 * are none, as on alpha or sparc), or -ERANGE for a CPU number that does not fit.
 */
int parse_cpuinfo_processors(const char *text, CpuMask *ret);

/* floor(freq_khz * 1024 / max_khz), at least 1; 0 when either is 0 or freq exceeds max. */
unsigned capacity_from_freq(uint64_t freq_khz, uint64_t max_khz);

/* The kernel's capacity_greater(): a exceeds b by more than about 5% (a * 1024 > b * 1078). */
static inline bool capacity_greater(unsigned a, unsigned b) {
        return (uint64_t) a * 1024 > (uint64_t) b * 1078;
}

/*
 * Splits CPUs into capacity classes: sorted ascending, a new class starts where a
 * capacity is capacity_greater() than the smallest of the current class; a class's capacity is its
 * smallest. cpus[i] has capacity[i]. ret_class_of[i] (optional) receives the class index of cpus[i].
 */
int capacity_classes_build(const int *cpus, const unsigned *capacity, size_t n, CapacityClass **ret,
                           size_t *ret_n, int *ret_class_of);
