/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * One group's batch through the daemon's own apply steps, in the order manager_apply_groups() takes
 * them for a round that places one group: read (a dry run stops there), every record staged and
 * saved with one commit before any write (no write without its record), written in an order the
 * kernel accepts (all or nothing), and what a rollback left saved.
 */
#include "peltd/apply-cgroup.h"

static inline int apply_steps(const CgroupIO *io, Originals *o, CgWrite *w, size_t n, bool dry_run) {
        size_t mark;
        int r;

        r = cg_batch_read(io, w, n);
        if (r < 0 || dry_run || !cg_batch_changed(w, n))
                return r;
        mark = originals_mark(o);
        r = cg_batch_record(o, w, n);
        if (r >= 0)
                r = originals_commit(o);
        if (r < 0) {
                originals_rollback_to(o, mark);
                cg_batch_unrecorded(w, n, r);
                return r;
        }
        r = cg_batch_write(io, o, w, n);
        if (r < 0 && originals_dirty(o))
                (void) originals_commit(o);
        return r;
}

/* A placement's batch, made as the daemon makes it (placement_writes()), through the steps above. */
static inline int place_steps(const CgroupIO *io, Originals *o, const Placement *p, CgWrite **ret, size_t *ret_n) {
        int r;

        *ret = NULL;
        *ret_n = 0;
        r = placement_writes(io, o, p, ret, ret_n, NULL);
        if (r < 0)
                return r;
        return apply_steps(io, o, *ret, *ret_n, false);
}
