/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>

#include "peltd/cgroup-io.h"
#include "peltd/cpumask.h"
#include "peltd/originals.h"

/*
 * Putting back what the state file recorded (apply-restore.c): at stop, at --restore, and at start
 * after a crash. Each entry maps to its value's row and target through its names (apply-values.h),
 * and goes back as its place restores it.
 */

/*
 * Whether a file holding `cur` still holds peltd's last value `written`: the same value (CPU
 * lists as sets, controllers as listed), or for a cpuset that value less the CPUs not in `online`
 * (v1 drops offline CPUs from every cpuset) — an empty set only where empty_ok.
 */
bool cg_holds_written(const char *file, const char *cur, const char *written, const CpuMask *online, bool empty_ok);

/*
 * Puts back what the state file recorded, in an order the kernel accepts. A file is restored only
 * when it still holds peltd's last value, or that value less CPUs that are now offline (v1 drops
 * offline CPUs from every cpuset); anything else was changed by someone else and is left alone
 * (logged), and one back at its original already (a restore cut short) is done. Entries
 * restored, or no longer restorable (the group is gone), are forgotten, and the state file is
 * saved once, after the writes (removed when none is left). Only cgroup files of groups at or
 * under cgroup_root (normalised) are written: an entry for any other group is refused on its own,
 * logged, and stays recorded (counted as left). `online` is the set of online CPUs.
 * Returns 0 when everything that could be restored was, else the number of entries left (> 0),
 * or -errno when the state file could not be updated.
 */
int cg_restore_beneath(const CgroupIO *io, Originals *originals, const char *cgroup_root, const CpuMask *online,
                       bool dry_run);
/*
 * cg_restore_beneath() with every group allowed (cgroup_root "/"): for tests and callers that
 * have no configuration. Whoever knows CgroupRoot= passes it to cg_restore_beneath().
 */
int cg_restore(const CgroupIO *io, Originals *originals, const CpuMask *online, bool dry_run);
