/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The metrics file (DESIGN.md, "Metrics"): what the daemon knows, in the Prometheus text
 * exposition format (version 0.0.4), for node_exporter's textfile collector.
 *
 * metrics_render() is pure: plain values in, text out. Every family has "# HELP" and "# TYPE";
 * values are in base units (a CPU demand in CPUs, times in seconds). A family with no sample is
 * left out, so a group that went away leaves the file with all its samples. Group paths are bytes:
 * a byte that is not part of valid UTF-8 is written as "\xNN" (utf8.h), then the label value is
 * escaped as the format requires (backslash, double quote and newline as \\, \" and \n).
 *
 * metrics_write_file() replaces a file atomically, readable by everyone whatever the umask.
 */

/* One managed group. */
typedef struct MetricsGroup {
        const char *path;            /* full path in the hierarchy (bytes, not necessarily UTF-8) */
        uint64_t util;               /* util_avg, in 1/1024 of a CPU */
        uint64_t runnable;           /* runnable_avg, in 1/1024 of a CPU */
        uint64_t load;               /* load_avg, in weight units */
        int cpus;                    /* CPUs it may use now; < 0: unknown (no sample) */
        uint64_t shares;             /* cpu.shares (v2: cpu.weight converted) */
        uint64_t placement_changes;  /* changes applied since peltd found it */
        uint64_t throttled_ns;       /* growth of its throttled counter since peltd found it */
        bool managed;                /* the Manager knows it: the figures below are its */
        const char *owner;           /* who places it when peltd does not ("kubelet", ...); NULL or "": peltd */
        uint64_t foreign_writes;     /* writes by others to files peltd placed, each one yielded */
        uint64_t pressure_usec;      /* v2: cpu.pressure's some total; v1: its threads' run_delay */
} MetricsGroup;

/* CPUs held exclusively by one owner. */
typedef struct MetricsHeld {
        const char *owner;
        uint64_t cpus;
} MetricsHeld;

typedef struct MetricsSnapshot {
        const char *version;
        const char *policy;
        uint64_t group_rounds;       /* rounds that sampled the groups only */
        uint64_t task_rounds;        /* rounds that sampled every thread and group */
        uint64_t threads_tracked;
        uint64_t groups_managed;
        uint64_t sampling_cpu_ns;    /* peltd's own CPU time spent sampling */
        uint64_t metrics_cpu_ns;     /* and on the metrics file, up to its last write */
        double energy_estimate;      /* the model's units, every group on the CPUs it may use now */
        double energy_estimate_spread; /* the same load, every group on every online CPU */
        uint64_t placement_errors;   /* placement writes that failed, or were not made for want of a record */
        const MetricsHeld *held;     /* every owner that may hold CPUs, 0 included */
        size_t n_held;
        const MetricsGroup *groups;  /* in the order they are written (the daemon's: by path) */
        size_t n_groups;
} MetricsSnapshot;

/* The text of s, NUL-terminated, in *ret (free it); its length in *ret_size. 0 or -ENOMEM. */
int metrics_render(const MetricsSnapshot *s, char **ret, size_t *ret_size);

/*
 * Replaces path with size bytes of text: written to "path.tmp" (created O_EXCL|O_NOFOLLOW, a stale
 * one removed first; its name does not end in ".prom", so the textfile collector never reads it
 * half-written), mode 0644 whatever the umask, then renamed over path; the directory is reached
 * without following a symlink another user could have planted (open_dir_safely(): -EPERM, with
 * *ret_reason). Returns 0 or a negative errno; the temporary file does not outlive a failure.
 */
int metrics_write_file(const char *path, const char *text, size_t size, const char **ret_reason);
