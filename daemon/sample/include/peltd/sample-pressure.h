/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "peltd/cgroup-util.h"
#include "peltd/rootdir.h"
#include "peltd/time-util.h"

/*
 * What the pressure guard on packing reads (DESIGN.md, "Policies" -> "Pressure"): how long a
 * group's threads waited for CPU.
 *
 *   v1 (no per-group pressure): the run_delay of the group's threads (the 2nd number of
 *       /proc/PID/task/TID/schedstat), membership from its tasks file read that round (reopened:
 *       a kept v1 tasks fd serves the list it cached). The growth is summed per thread over the
 *       threads seen in both reads, so a thread that comes or goes adds nothing by itself.
 *   v2: a PSI trigger, "some STALL_US WINDOW_US" written to the group's cpu.pressure, the fd
 *       polled for POLLPRI; the "some" line's total read back from it.
 */

typedef struct ThreadDelay {
        pid_t tid;
        uint64_t run_delay_ns;
} ThreadDelay;

/* A group's threads and their run_delay as last read, sorted by tid; zero-initialise it. */
typedef struct RunDelays {
        ThreadDelay *threads;
        size_t n;
} RunDelays;

void run_delays_done(RunDelays *d);

/*
 * Reads the run_delay of every thread in the group's membership file (threads_file under root,
 * the usage hierarchy) from proc. *ret_growth_ns: what the threads seen last time too waited
 * since (0 the first time); *ret_sum_ns: the sum over the threads now. d is replaced by this
 * read. A thread gone between the two reads is skipped. Returns 0, -ENOENT (the group is gone),
 * -ENOMEM, or another negative errno from reading the membership file.
 */
int run_delays_read(const RootDir *root, const char *threads_file, const char *group, const RootDir *proc,
                    RunDelays *d, uint64_t *ret_growth_ns, uint64_t *ret_sum_ns);

/* The second number of a schedstat line ("run_ns run_delay_ns slices"). 0 or -EINVAL. */
int schedstat_parse_run_delay(const char *s, uint64_t *ret_ns);

/*
 * The "total=" of the "some" line of a PSI file (cpu.pressure, /proc/pressure/cpu), in µs:
 * "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345". 0, or -EINVAL when there is no such line
 * or it does not parse.
 */
int psi_parse_some_total(const char *s, uint64_t *ret_usec);

/*
 * Opens the group's cpu.pressure (under root, the unified hierarchy) and writes the trigger
 * "some STALL_US WINDOW_US" to it; the fd then signals POLLPRI when the group stalled that long
 * in a window, and closing it removes the trigger. Returns the fd or a negative errno (-ENOENT:
 * no cpu.pressure, as on v1 or without PSI; -EINVAL: the kernel refused the values).
 */
int psi_trigger_open(const RootDir *root, const char *group, usec_t stall_usec, usec_t window_usec);

/* The "some" total (µs) read back from a trigger's (or any cpu.pressure) fd. 0 or a negative errno. */
int psi_read_some_total(int fd, uint64_t *ret_usec);
