/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/apply-values.h"
#include "peltd/cgroup-io.h"

/*
 * Writes of placed values, and the order the kernel accepts them in (apply-order.c): the one
 * engine under a placement's batch (apply-cgroup.h), its rollback, and a restore
 * (apply-restore.h). Each value is written through the backend of its target (apply-backend.h).
 */

typedef struct CgWrite {
        const PlacedValue *pv;       /* the value's row (apply-values.h) */
        ApplyTarget target;
        const char *hierarchy;       /* its place on target, as the state file names it: "cpuset", "cpu", "unified" */
        char *group;                 /* "/a/b" */
        const char *file;            /* "cpuset.cpus", "cpu.shares", "cpu.weight", "cgroup.subtree_control" */
        char *value;                 /* what to write */
        /* Filled in by cg_batch_read() and cg_batch_write(): */
        char *old;                   /* what the file held before */
        bool changed;                /* written (or, dry run, would be) */
        int error;                   /* the final error of this write, 0 */
        bool unrecorded;             /* error: its original could not be recorded, so it was not written */
} CgWrite;

/*
 * A write of value to pv's place on target t for group (both copied). Returns 0, -EINVAL when t
 * has no place for pv, or -ENOMEM (then *w is empty).
 */
int cg_write_init(CgWrite *w, const PlacedValue *pv, ApplyTarget t, const char *group, const char *value);
void cg_write_done(CgWrite *w);
void cg_writes_free(CgWrite *w, size_t n);

/* Whether a write's file holding current already says value (as its row's kind compares). */
bool cg_write_holds(const CgWrite *w, const char *current, const char *value);

/* What a write's place holds now, through its target's backend. */
int cg_write_read(const CgroupIO *io, const CgWrite *w, char **ret);

/*
 * Takes items[i]'s file from from[i] to to[i], in an order the kernel accepts (each row's
 * PlacedOrder), retrying refusals (EBUSY, EACCES) while any write makes progress. back: the values
 * go back to what the files held (a rollback, a restore), through the backends' restore; else they
 * are planned ones, through their write. errors[i] gets each item's result. Nothing is recorded
 * here. Returns the first error, or 0.
 */
int cg_writes_in_order(const CgroupIO *io, CgWrite *const *items, const char *const *from, const char *const *to,
                       int *errors, size_t n, bool back);
