/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/apply-backend.h"
#include "peltd/apply-order.h"
#include "peltd/apply-restore.h"
#include "peltd/apply-retry.h"
#include "peltd/apply-values.h"
#include "peltd/cgroup-io.h"
#include "peltd/cpumask.h"
#include "peltd/originals.h"

/*
 * Applying placements to cgroup files, safely: the entry points the daemon places a group through
 * (this header brings the rest of apply with it: the writes and their order, the retry state, the
 * restore).
 *
 * Every value (a row of apply-values.h) is read and written through the backend of its target
 * (apply-backend.h), over a CgroupIO (cgroup-io.h). A batch of writes for one group (its cpuset,
 * its descendants' cpusets, its shares) is applied so that:
 *
 *   - only values that differ are written, each read back first;
 *   - the original of every file is recorded in the state file before its first write, and the
 *     write does not happen when that record cannot be made;
 *   - cpusets widen top-down and narrow bottom-up (a v1 child must stay inside its parent); what
 *     the kernel still refuses with EBUSY / EACCES is retried after the rest of the batch;
 *   - no cpuset is ever written empty;
 *   - if any write of the batch fails for good, the ones already made are put back, so a group's
 *     cpuset and shares change together or not at all.
 */

/*
 * A round places its groups in three steps, so that the records of all its batches are saved with
 * one write of the state file before any of them is written (manager-apply.c): cg_batch_read()
 * for each batch, then cg_batch_record() for each and one originals_commit() (on failure
 * originals_rollback_to() the mark taken before the first cg_batch_record(), and
 * cg_batch_unrecorded() for every batch: nothing of the round is written), then cg_batch_write() for
 * each, and one more commit for what a rollback changed. A dry run stops after the reads: `changed`
 * says what would be written. Nothing is logged above debug: the write that failed is the first
 * with `error` set (cg_batch_failure()), `unrecorded` when the state file could not take its
 * original.
 */

/*
 * Reads every file of the batch (into `old`) and marks the writes that differ (`changed`); writes
 * and records nothing. Returns 0, -EINVAL for an empty cpuset, -ENOENT when the group vanished,
 * -EOPNOTSUPP when the group is there but a file to write is not, or a read error, with `error`
 * set on the write it stopped at.
 */
int cg_batch_read(const CgroupIO *io, CgWrite *w, size_t n);

/*
 * Stages in memory the record of every changed write (the value the file held, the value about to
 * be written; none for a write back to the recorded original), for the next originals_commit().
 * On failure every changed write is marked `unrecorded` and the error returned: the batch must not
 * be written (the caller takes the staged records back with originals_rollback_to()).
 */
int cg_batch_record(Originals *o, CgWrite *w, size_t n);

/* Marks every changed write of the batch `unrecorded`, with err: its records could not be saved. */
void cg_batch_unrecorded(CgWrite *w, size_t n, int err);

/*
 * Writes what cg_batch_read() found different, whose records are saved already, in an order the
 * kernel accepts; all or nothing (a failure is rolled back, its records brought in line with what
 * the files hold, in memory: commit them). A file put back to its recorded original has its record
 * dropped, in memory. Returns 0 when every write took, else the first hard error (after the
 * rollback, which leaves nothing half-changed where the kernel allows it; -ENOENT when the group
 * vanished).
 */
int cg_batch_write(const CgroupIO *io, Originals *originals, CgWrite *w, size_t n);

/* The write of a failed batch that decided its result (the first with an error), or NULL. */
const CgWrite *cg_batch_failure(const CgWrite *w, size_t n);

/*
 * The writes that place a group (Placement, apply-values.h): each value of the table the placement
 * sets, in table order, on the group (its cpuset, its shares or weight); after a value whose
 * place narrows descendants, those of them that have their own (each keeps the part of its
 * original set inside the group's new one); and first, on v2, the "+cpuset"/"+cpu" the parents'
 * subtree_control needs for those values. Free with cg_writes_free(). A v1 descendant none of
 * whose own CPUs the new set keeps makes it -EBUSY with *ret_child set to the descendant's path
 * (free it); on v2 such a descendant takes the group's set.
 */
int placement_writes(const CgroupIO *io, const Originals *originals, const Placement *p, CgWrite **ret, size_t *ret_n,
                     char **ret_child);

/* Whether any write of the batch was made (or, dry run, would be). */
bool cg_batch_changed(const CgWrite *w, size_t n);
