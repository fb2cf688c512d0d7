/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "peltd/cpumask.h"

/*
 * What peltd writes, one row per placed value (apply-values.c): where each target keeps it (its
 * cgroup v1 file, its v2 file, its systemd unit property), how its text is made from a placement,
 * checked and compared, where its writes go in the order the kernel accepts, and how its original
 * is recorded and put back. Writing, recording, restoring and the state file's confinement all
 * ask the row.
 *
 * The state file names a value by the "hierarchy" and "file" of its place (PlacedPlace): those
 * names are a contract read back after a crash, and map to their row through placed_value_at().
 *
 * A new knob is a row of the table and a field of Placement, which the daemon fills from the
 * planner's result (manager-apply.c); test_table (tests/unit/test-apply-cgroup.c) tests each row.
 */

/* Where, and so through which backend (apply-backend.h), a group's placement is written. */
typedef enum ApplyTarget {
        APPLY_V1,                    /* cgroupfs v1: each controller's own hierarchy */
        APPLY_V2,                    /* cgroupfs v2: the unified hierarchy, controllers enabled in the parents */
        APPLY_SYSTEMD,               /* the properties of the systemd unit owning the group */
        _APPLY_TARGET_MAX,
} ApplyTarget;

/* What a group is to be given: the planner's result, for one target. */
typedef struct Placement {
        const char *group;
        CpuMask cpus;
        uint64_t shares;             /* cpu.shares to set (v2/systemd: converted to a weight); 0: leave alone */
        ApplyTarget target;
        const char *unit;            /* APPLY_SYSTEMD: the unit */
} Placement;

/* How a recorded value is put back (apply-restore.c does each). */
typedef enum PlacedRestore {
        PLACED_RESTORE_ORIGINAL,     /* the original, as recorded */
        PLACED_RESTORE_CPUS,         /* its CPUs that are online (and its parent holds, where it nests); empty as it was */
        PLACED_RESTORE_CONTROLLERS,  /* the controllers peltd enabled that were off before, disabled */
} PlacedRestore;

/* One target's place of a value, and what that target does with it. */
typedef struct PlacedPlace {
        const char *hierarchy;       /* the state file's "hierarchy": "cpuset", "cpu", "unified"; "systemd" for units */
        const char *file;            /* its "file": a file of the group, or a property of the unit; NULL: not there */
        PlacedRestore restore;
        bool descendants;            /* the group's descendants with a value of their own are narrowed with it */
        bool inside_parent;          /* a child's value lies inside its parent's (v1 cpusets): both ways */
        const char *parent_effective; /* a group with tasks refuses "" (the parent's) with ENOSPC: write this file of the parent's */
        bool reset_leaves_file;      /* a reset property leaves the unit's v2 file as it was: put back what v2 made it with */
} PlacedPlace;

/*
 * How a value's text is checked, compared, recorded and undone: a CPU list, plain text, or
 * controller words ("+cpuset -cpu", a change rather than a value).
 */
typedef struct PlacedKind {
        const char *name;
        /* Whether a planned value may be written at all (NULL: any). */
        bool (*valid)(const char *value);
        /* Whether a file holding current already says value. */
        bool (*holds)(const char *current, const char *value);
        /*
         * Whether a file holding current still holds peltd's last value written: the same, or (CPU
         * lists) that value less the CPUs not in online, an empty set only where empty_ok.
         */
        bool (*still_written)(const char *current, const char *written, const CpuMask *online, bool empty_ok);
        /* What the state file keeps as written after value is written over a record of recorded (NULL: none). */
        char *(*record)(const char *recorded, const char *value);
        /* The write that takes value back, where the file held old. */
        char *(*undo)(const char *old, const char *value);
        /*
         * A write names a change, not what the file will hold: it is never "back to the original",
         * and several groups' batches of a round may make the same one, so it is read again just
         * before it is written.
         */
        bool change;
} PlacedKind;

/* Where a value's writes go in a batch: controllers on first, then cpusets widening, the rest, narrowing, controllers off. */
typedef enum PlacedOrder {
        PLACED_ORDER_FREE,           /* between the cpusets' widening and narrowing, in batch order */
        PLACED_ORDER_NESTED,         /* CPU sets: widened parents first, narrowed children first, a move through the union */
        PLACED_ORDER_CONTROLLERS,    /* "+": before everything, parents first; "-": after everything, children first */
} PlacedOrder;

typedef struct PlacedValue {
        const char *name;            /* "cpus", "shares", "controllers" */
        PlacedPlace place[_APPLY_TARGET_MAX];
        /* v2: the controller whose "+name" in the parent's subtree_control makes its file, and what it holds then. */
        const char *controller;
        const char *v2_created;
        const PlacedKind *kind;
        /* The value a placement writes on target t, in *ret (NULL: the placement leaves it alone). */
        int (*format)(const Placement *p, ApplyTarget t, char **ret);
        PlacedOrder order;
} PlacedValue;

typedef enum PlacedValueId {
        PLACED_CPUS,
        PLACED_SHARES,
        PLACED_CONTROLLERS,
        _PLACED_VALUE_MAX,
} PlacedValueId;

extern const PlacedValue placed_values[_PLACED_VALUE_MAX];

static inline const PlacedPlace *placed_place(const PlacedValue *v, ApplyTarget t) {
        return v->place[t].file ? &v->place[t] : NULL;
}

/* The row and target whose place the state file names (hierarchy, file); NULL when peltd places no such file. */
const PlacedValue *placed_value_at(const char *hierarchy, const char *file, ApplyTarget *ret_target);

/* The row one of whose places is the file of that name ("cpuset.cpus", "AllowedCPUs"); NULL: none. */
const PlacedValue *placed_value_of_file(const char *file);

/* The target a state file's "hierarchy" belongs to; -ENOENT for one peltd never writes. */
int placed_target_of(const char *hierarchy, ApplyTarget *ret);

/* "-cpuset -cpu" for each "+X" of written that original does not list, in *ret; NULL when there is none. */
int placed_controllers_off(const char *original, const char *written, char **ret);
