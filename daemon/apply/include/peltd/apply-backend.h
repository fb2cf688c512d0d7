/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "peltd/apply-values.h"
#include "peltd/cgroup-io.h"

/*
 * Where placed values are written, as a small table of backends (apply-backend.c), one a target:
 * cgroupfs for v1 and v2 (a group's files, over a CgroupIO) and systemd (the properties of the unit
 * owning the group, over the bus). Each reads, writes and restores a value of the table
 * (apply-values.h) at its place for the backend's target; the group is a cgroup path, or for
 * systemd the unit. Every function returns 0 or a negative errno, and logs at debug at most.
 */
typedef struct ApplyBackend {
        const char *name;            /* "cgroupfs", "systemd" */
        /*
         * Whether the group a value of it was missing from is there: 0 (the value's file is what is
         * missing), -ENOENT (the group is gone), else why it cannot tell (the bus is not connected).
         */
        int (*probe)(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group);
        /* The value as the state file keeps it ("" for a unit property that is not set). */
        int (*read)(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group, char **ret);
        /* Writes a planned value. */
        int (*write)(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group, const char *value);
        /*
         * Puts back a value the file held (a rollback, a restore): as write, and "" — not set, the
         * parent's — as the backend means it (PlacedPlace's parent_effective, reset_leaves_file).
         */
        int (*restore)(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group, const char *value);
} ApplyBackend;

const ApplyBackend *apply_backend(ApplyTarget t);

/* What a recorded place (a state file entry's hierarchy, group and file) holds now, through its backend. */
int apply_backend_read_at(const CgroupIO *io, const char *hierarchy, const char *group, const char *file, char **ret);
