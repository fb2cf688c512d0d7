/* SPDX-License-Identifier: GPL-2.0-only */
/* What a failed placement means for the next rounds (apply-retry.h). */
#include <errno.h>
#include <stdlib.h>

#include "peltd/apply-retry.h"
#include "peltd/macro.h"

/*
 * What a refused write means, as the kernel's cgroup code (and systemd's, for units) returns it.
 * Within a batch, EBUSY and EACCES are retried after the other writes (one of them may lift it);
 * this says what happens to the group after the batch failed.
 */
CgErrorClass cg_error_class(int err) {
        switch (-abs(err)) {
        case -EBUSY:
                /* v1: a child cpuset not inside the new set. The child may change, or be removed. */
        case -EACCES:
                /* v1: outside the parent's cpuset. peltd reads the parent again each task round and
                 * plans inside it; the parent may be widened meanwhile. (A permission refusal would
                 * say EPERM for root.) */
        case -EAGAIN:
        case -EINTR:
                /* Try again: nothing is wrong with the value. */
        case -ENOMEM:
                /* The kernel (or peltd) was short of memory: it may not be next time. */
        case -EIO:
                /* An I/O error of a file that is there: retried, slower and slower. */
                return CG_ERROR_TRANSIENT;

        case -ENOENT:
        case -ENODEV:
                /* The group went away between the read and the write (ENODEV: a kept-open file of a
                 * removed group). The group walk drops it; said at debug level only. */
                return CG_ERROR_GONE;

        case -EINVAL:
                /* The value is refused as such: a CPU that is not there, an exclusive cpuset that would
                 * overlap a sibling's, shares out of range. Only a new value or topology lifts it. */
        case -ERANGE:
                /* A CPU number beyond the machine's possible CPUs. */
        case -EPERM:
                /* Not allowed at all: the root group, a v2 threaded subtree, a security module. */
        case -ENOSPC:
                /* v1: the new cpuset leaves attached tasks no CPU or memory node (cpuset.mems empty,
                 * or every CPU offline); v2: the subtree has no room for the controller. peltd never
                 * writes an empty set, so only a change of topology or plan lifts it. */
        case -EOPNOTSUPP:
                /* The group is there but the file is not (cg_batch_read()): its controller is not
                 * available in that hierarchy. Nothing comes of asking again. */
        case -EROFS:
                /* A read-only cgroupfs. */
        default:
                /* Anything else is not known to pass: stop until something changes, say it once. */
                return CG_ERROR_PERMANENT;
        }
}

void cg_retry_done(CgRetry *s) {
        free(s->key);
        *s = (CgRetry){ 0 };
}

bool cg_retry_due(CgRetry *s, const char *key) {
        if (s->error == 0)
                return true;
        if (!s->key || !streq(s->key, key)) {
                /* Something changed (the plan, what it depends on): a new try, a new episode. */
                cg_retry_done(s);
                return true;
        }
        if (s->class == CG_ERROR_PERMANENT)
                return false;
        if (s->skip > 0) {
                s->skip--;
                return false;
        }
        return true;
}

bool cg_retry_failed(CgRetry *s, const char *key, int err, CgErrorClass c) {
        bool same = s->error == err && s->key && streq(s->key, key);

        if (!same) {
                char *k = strdup(key);

                /* Without the key the next round simply tries again. */
                free(s->key);
                *s = (CgRetry){ .key = k };
        }
        s->error = err;
        s->class = c;
        s->failures++;
        s->wait = s->wait == 0 ? 1 : MIN(s->wait * 2, CG_RETRY_MAX_ROUNDS);
        s->skip = s->wait;
        return !same;
}

unsigned cg_retry_succeeded(CgRetry *s) {
        unsigned n = s->error < 0 ? s->failures : 0;

        cg_retry_done(s);
        return n;
}
