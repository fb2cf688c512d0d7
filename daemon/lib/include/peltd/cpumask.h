/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A fixed-size CPU set. 8192 CPUs is Debian's NR_CPUS; a mask is 1 KiB, cheap enough to pass by
 * value in the pure modules. Pure: no I/O, no allocation except cpumask_to_list().
 */
#define CPUMASK_MAX 8192
#define CPUMASK_WORDS (CPUMASK_MAX / 64)

typedef struct CpuMask {
        uint64_t bits[CPUMASK_WORDS];
} CpuMask;

void cpumask_zero(CpuMask *m);
/* Returns -ERANGE for a CPU number at or above CPUMASK_MAX. */
int cpumask_set(CpuMask *m, int cpu);
void cpumask_clear(CpuMask *m, int cpu);
bool cpumask_test(const CpuMask *m, int cpu);
int cpumask_count(const CpuMask *m);
bool cpumask_empty(const CpuMask *m);
bool cpumask_equal(const CpuMask *a, const CpuMask *b);
/* True when every CPU of a is in b. */
bool cpumask_subset(const CpuMask *a, const CpuMask *b);
bool cpumask_intersects(const CpuMask *a, const CpuMask *b);
void cpumask_and(CpuMask *ret, const CpuMask *a, const CpuMask *b);
void cpumask_or(CpuMask *ret, const CpuMask *a, const CpuMask *b);
/* ret = a without b */
void cpumask_andnot(CpuMask *ret, const CpuMask *a, const CpuMask *b);
/* -1 when empty / when there is no further CPU. */
int cpumask_first(const CpuMask *m);
int cpumask_next(const CpuMask *m, int after);
int cpumask_last(const CpuMask *m);

#define CPUMASK_FOREACH(cpu, m) \
        for (int cpu = cpumask_first(m); cpu >= 0; cpu = cpumask_next((m), cpu))

/*
 * Parses a sysfs CPU list ("0-3,8,10-11"). Surrounding whitespace and a trailing NUL/newline are
 * accepted, as sysfs and cgroupfs write them; an empty string is an empty set. Returns -EINVAL for
 * anything else (descending ranges, garbage, a missing number) and -ERANGE for CPUs that do not fit.
 */
int cpumask_parse_list(const char *s, CpuMask *ret);

/* Parses a sysfs hex map ("00000000,0000ff0f"), 32-bit words separated by commas, MSB first. */
int cpumask_parse_hex(const char *s, CpuMask *ret);

/* Formats as a CPU list ("0-3,8"); "" for an empty set. Returns NULL on OOM. */
char *cpumask_to_list(const CpuMask *m);

/* Formats into a caller buffer, truncating with "..." when it does not fit. Returns buf. */
const char *cpumask_format(const CpuMask *m, char *buf, size_t size);

/*
 * Writes the mask as systemd's AllowedCPUs= byte array (byte i bit j = CPU 8i+j) into ret, which
 * must hold CPUMASK_MAX/8 bytes; returns the number of bytes used (0 for an empty set).
 */
size_t cpumask_to_bytes(const CpuMask *m, uint8_t *ret);
