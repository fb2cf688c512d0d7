/* SPDX-License-Identifier: GPL-2.0-only */
#include "peltd/apply-backend.h"
#include "peltd/apply-cgroup.h"
#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/parse.h"

int cg_write_init(CgWrite *w, const PlacedValue *pv, ApplyTarget t, const char *group, const char *value) {
        const PlacedPlace *p = placed_place(pv, t);

        *w = (CgWrite){};
        if (!p)
                return -EINVAL; /* not a value target t places */
        *w = (CgWrite){ .pv = pv, .target = t, .hierarchy = p->hierarchy, .file = p->file, .group = strdup(group),
                        .value = strdup(value) };
        if (!w->group || !w->value) {
                cg_write_done(w);
                return -ENOMEM;
        }
        return 0;
}

void cg_write_done(CgWrite *w) {
        free(w->group);
        free(w->value);
        free(w->old);
        *w = (CgWrite){ 0 };
}

/* Whether a write's file holding current already says value (its row's kind compares). */
static bool value_holds(const CgWrite *w, const char *current, const char *value) {
        return w->pv->kind->holds(current, value);
}

/* What the state file keeps as peltd's last write of a file (its kind may merge it with the record's). */
static char *recorded_value(const Originals *o, const CgWrite *w, const char *value) {
        const Original *e = o ? originals_find(o, w->hierarchy, w->group, w->file) : NULL;

        return w->pv->kind->record(e ? e->written : NULL, value);
}

/* What a write's place holds now, through its target's backend. */
static int read_now(const CgroupIO *io, const CgWrite *w, char **ret) {
        return apply_backend(w->target)->read(io, w->pv, w->target, w->group, ret);
}

static int depth(const char *group) {
        int d = 0;

        for (const char *p = group; *p; p++)
                d += *p == '/';
        return streq(group, "/") ? 0 : d;
}

/*
 * One write of the engine below: an item's file to one value. A cpuset that moves to CPUs it did
 * not have while losing others takes two steps, because a v1 child must stay inside its parent at
 * every moment: first the union of the old and new sets (widening, parents first), then the new set
 * (narrowing, children first), so that a group and its descendants can move to disjoint CPUs.
 */
typedef struct Step {
        size_t item;
        char *value;
        long rank;
        int error;                   /* -EAGAIN: not done yet */
        int after;                   /* index of the step that must succeed first, or -1 */
} Step;

/*
 * The order the kernel accepts (each row's PlacedOrder): controllers enabled first, then widening
 * cpusets top-down, everything that is not a cpuset, narrowing cpusets bottom-up, and controllers
 * disabled last.
 */
static long step_rank(const CgWrite *w, const char *value, bool widening) {
        switch (w->pv->order) {
        case PLACED_ORDER_CONTROLLERS:
                return value[0] == '-' ? 3000000 - depth(w->group) : -3000000 + depth(w->group);
        case PLACED_ORDER_NESTED:
                return widening ? -1000000 + depth(w->group) : 1000000 - depth(w->group);
        case PLACED_ORDER_FREE:
        default:
                return 0;
        }
}

static int cmp_step(const void *a, const void *b) {
        const Step *x = a, *y = b;

        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        return x->item < y->item ? -1 : x->item > y->item;
}

/* A refusal that another write may lift: a v1 child outside its parent, or a parent without room for a child. */
static bool retryable(int r) {
        return r == -EBUSY || r == -EACCES;
}

static int add_step(Step *steps, size_t *n, size_t item, const CgWrite *w, const char *value, bool widening, int after) {
        char *v = strdup(value);

        if (!v)
                return -ENOMEM;
        steps[*n] = (Step){
                .item = item, .value = v, .rank = step_rank(w, value, widening), .error = -EAGAIN, .after = after,
        };
        (*n)++;
        return 0;
}

/* The steps that take an item's file from `from` to `to` (none when it already holds it). */
static int plan_item(Step *steps, size_t *n, size_t item, const CgWrite *w, const char *from, const char *to) {
        CpuMask f, t, u;

        if (value_holds(w, from, to))
                return 0;
        if (w->pv->order != PLACED_ORDER_NESTED || cpumask_parse_list(from, &f) < 0 || cpumask_parse_list(to, &t) < 0)
                return add_step(steps, n, item, w, to, false, -1);
        if (cpumask_subset(&f, &t))
                return add_step(steps, n, item, w, to, true, -1);
        cpumask_or(&u, &f, &t);
        if (!cpumask_equal(&u, &f) && !cpumask_empty(&f)) {
                _cleanup_free_ char *us = cpumask_to_list(&u);
                int r;

                if (!us)
                        return -ENOMEM;
                r = add_step(steps, n, item, w, us, true, -1);
                if (r < 0)
                        return r;
                /* The index after sorting is not known yet: remember the item, resolve below. */
                return add_step(steps, n, item, w, to, false, (int) item);
        }
        return add_step(steps, n, item, w, to, false, -1);
}

/*
 * Whether a write puts a file back to its recorded original (a rollback): the record it needs is
 * there already, and the state file forgets it afterwards (sync_record()), so nothing is written
 * to the state file first. A rollback then works with the state file's disk full.
 */
static bool back_to_original(const Originals *o, const CgWrite *w, const char *value) {
        const Original *e = originals_find(o, w->hierarchy, w->group, w->file);

        return e && !w->pv->kind->change && value_holds(w, value, e->original);
}

/*
 * Takes items[i]'s file from from[i] to to[i], in an order the kernel accepts, retrying refusals
 * while any write makes progress; back: the values go back to what the files held (a rollback, a
 * restore: the backends' restore). errors[i] gets each item's result. Nothing is recorded here:
 * the records of these values are saved before (cg_batch_record(), originals_commit()). Returns
 * the first error, or 0.
 */
static int write_items(const CgroupIO *io, CgWrite *const *items, const char *const *from, const char *const *to,
                       int *errors, size_t n, bool back) {
        _cleanup_free_ Step *steps = new0(Step, 2 * MAX(n, 1u));
        _cleanup_free_ size_t *first_step = new0(size_t, MAX(n, 1u));
        size_t m = 0;
        bool progress = true;
        int r, first = 0;

        if (!steps || !first_step)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                errors[i] = 0;
                first_step[i] = SIZE_MAX;
                r = plan_item(steps, &m, i, items[i], from[i], to[i]);
                if (r < 0)
                        goto finish;
        }
        qsort(steps, m, sizeof *steps, cmp_step);
        /* A second step waits for the first step of its item (its widening, which sorts before it). */
        for (size_t s = 0; s < m; s++) {
                size_t *f = &first_step[steps[s].item];

                if (*f == SIZE_MAX)
                        *f = s;
                if (steps[s].after >= 0)
                        steps[s].after = *f != s ? (int) *f : -1;
        }

        while (progress) {
                progress = false;
                for (size_t s = 0; s < m; s++) {
                        Step *st = &steps[s];
                        CgWrite *w = items[st->item];
                        const ApplyBackend *b = apply_backend(w->target);

                        if (st->error != -EAGAIN && !retryable(st->error))
                                continue;
                        if (st->after >= 0 && steps[st->after].error != 0)
                                continue;
                        r = (back ? b->restore : b->write)(io, w->pv, w->target, w->group, st->value);
                        st->error = r < 0 ? r : 0;
                        if (r >= 0)
                                progress = true;
                }
        }

        for (size_t s = 0; s < m; s++) {
                int e = steps[s].error;

                if (e == -EAGAIN) /* never tried: its first step failed */
                        e = steps[steps[s].after].error;
                if (e < 0 && errors[steps[s].item] == 0)
                        errors[steps[s].item] = e;
        }
        for (size_t i = 0; i < n; i++)
                if (errors[i] < 0 && first == 0)
                        first = errors[i];
        r = first;
finish:
        for (size_t s = 0; s < m; s++)
                free(steps[s].value);
        return r;
}

/*
 * Stages the record of each of items[i] going to values[i] (none for one back to its original).
 * Returns 0, or the first error with nothing more staged.
 */
static int stage_records(Originals *o, CgWrite *const *items, const char *const *values, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *v = NULL;
                int r;

                if (back_to_original(o, items[i], values[i]))
                        continue;
                v = recorded_value(o, items[i], values[i]);
                r = v ? originals_put(o, items[i]->hierarchy, items[i]->group, items[i]->file, items[i]->old, v) : -ENOMEM;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Brings the records in line with what a file holds now (after a failure or a rollback), in memory. */
static void sync_record(Originals *o, const CgWrite *w, const char *now) {
        const Original *e;

        if (!o || !now)
                return;
        e = originals_find(o, w->hierarchy, w->group, w->file);
        if (!e)
                return;
        if (value_holds(w, now, e->original))
                (void) originals_drop(o, w->hierarchy, w->group, w->file);
        else if (!value_holds(w, now, e->written))
                (void) originals_put(o, w->hierarchy, w->group, w->file, e->original, now);
}

/*
 * v2: a group's cpuset.* and cpu.* files exist only while its parent passes the controller on. When
 * this batch enables it there ("+cpuset" in the parent's cgroup.subtree_control, which is written
 * first), the missing file is read as what the kernel creates it with (its row's v2_created): an
 * empty cpuset (every CPU of the parent), the default weight. NULL: the file is missing for
 * another reason.
 */
static const char *initial_value(const CgWrite *w, size_t n, const CgWrite *item) {
        const char *slash = strrchr(item->group, '/'), *ctl = item->pv->controller;
        size_t plen;

        if (item->target != APPLY_V2 || !item->pv->v2_created || !ctl || !slash)
                return NULL;
        plen = slash == item->group ? 1 : (size_t) (slash - item->group); /* the parent: "/" or "/a" */
        for (size_t i = 0; i < n; i++) {
                if (w[i].pv != &placed_values[PLACED_CONTROLLERS] || w[i].value[0] != '+' ||
                    strlen(w[i].group) != plen || !strneq(w[i].group, item->group, plen))
                        continue;
                if (streq(w[i].value + 1, ctl))
                        return item->pv->v2_created;
        }
        return NULL;
}

/* Whether a write's group (unit) is still there, as its backend probes it. */
static bool group_exists(const CgroupIO *io, const CgWrite *w) {
        return apply_backend(w->target)->probe(io, w->pv, w->target, w->group) == 0;
}

bool cg_batch_changed(const CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (w[i].changed)
                        return true;
        return false;
}

const CgWrite *cg_batch_failure(const CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (w[i].error < 0)
                        return &w[i];
        return NULL;
}

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
                /* The group is there but the file is not (cg_write_batch()): its controller is not
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

int cg_batch_read(const CgroupIO *io, CgWrite *w, size_t n) {
        int r;

        /* Read everything first: a vanished group or a value that would empty a cpuset stops the batch untouched. */
        for (size_t i = 0; i < n; i++) {
                w[i].changed = false;
                w[i].error = 0;
                w[i].unrecorded = false;
                free(w[i].old);
                w[i].old = NULL;
                if (w[i].pv->kind->valid && !w[i].pv->kind->valid(w[i].value))
                        return w[i].error = -EINVAL; /* a cpuset: never written empty */
                r = read_now(io, &w[i], &w[i].old);
                if (r == -ENOENT) {
                        const char *initial = initial_value(w, n, &w[i]);

                        if (initial) {
                                w[i].old = strdup(initial);
                                r = w[i].old ? 0 : -ENOMEM;
                        } else if (group_exists(io, &w[i]))
                                r = -EOPNOTSUPP; /* the group is there, the file is not */
                }
                if (r < 0)
                        return w[i].error = r;
                w[i].changed = !value_holds(&w[i], w[i].old, w[i].value);
        }
        return 0;
}

int cg_batch_record(Originals *o, CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++) {
                CgWrite *item = &w[i];
                int r;

                if (!item->changed)
                        continue;
                r = stage_records(o, &item, (const char *const *) &item->value, 1);
                if (r < 0) {
                        /* No change without a record: nothing of the batch is written; the caller says why. */
                        cg_batch_unrecorded(w, n, r);
                        return r;
                }
        }
        return 0;
}

void cg_batch_unrecorded(CgWrite *w, size_t n, int err) {
        for (size_t i = 0; i < n; i++)
                if (w[i].changed) {
                        w[i].unrecorded = true;
                        w[i].error = err;
                }
}

/*
 * What takes each file of a failed batch back, in *ret (m strings): what it held before (the
 * row's kind says how: subtree_control, written as "+cpuset" and read as a list, by the opposite
 * word).
 */
static int undo_values(CgWrite *const *items, size_t m, char ***ret) {
        _cleanup_strv_free_ char **undo = new0(char *, m + 1);

        if (!undo)
                return -ENOMEM;
        for (size_t i = 0; i < m; i++) {
                undo[i] = items[i]->pv->kind->undo(items[i]->old, items[i]->value);
                if (!undo[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(undo);
        return 0;
}

/*
 * Writes back the files of a failed batch that do not hold their undo value (what each holds now
 * is read again: a move may have stopped half way). Values going back that are not originals are
 * recorded first, as any write; without that record only those going back to their originals go.
 */
static int write_back(const CgroupIO *io, Originals *o, CgWrite *const *items, char *const *undo, size_t m) {
        _cleanup_free_ CgWrite **back = new0(CgWrite *, MAX(m, 1u));
        _cleanup_free_ const char **bfrom = new0(const char *, MAX(m, 1u)), **bto = new0(const char *, MAX(m, 1u));
        _cleanup_free_ int *berrors = new0(int, MAX(m, 1u));
        _cleanup_strv_free_ char **now = new0(char *, m + 1);
        size_t k = 0;
        int rb = 0;

        if (!back || !bfrom || !bto || !berrors || !now)
                return -ENOMEM;
        for (size_t i = 0; i < m; i++) {
                if (read_now(io, items[i], &now[i]) < 0)
                        continue;
                if (value_holds(items[i], now[i], undo[i]))
                        continue;
                back[k] = items[i];
                bfrom[k] = now[i];
                bto[k] = undo[i];
                k++;
        }
        if (o && k > 0) {
                rb = stage_records(o, back, bto, k);
                if (rb >= 0)
                        rb = originals_commit(o);
                else
                        originals_rollback(o);
                if (rb < 0) {
                        /* Not recorded, not written: only what goes back to its original still goes. */
                        size_t j = 0;

                        for (size_t i = 0; i < k; i++)
                                if (back_to_original(o, back[i], bto[i])) {
                                        back[j] = back[i];
                                        bfrom[j] = bfrom[i];
                                        bto[j++] = bto[i];
                                }
                        k = j;
                }
        }
        if (k > 0) {
                int r = write_items(io, back, bfrom, bto, berrors, k, true);

                rb = rb < 0 ? rb : r;
        }
        return rb;
}

/* Whatever a rollback did, the records must describe what the files hold (in memory). */
static void records_follow_files(const CgroupIO *io, Originals *o, CgWrite *const *items, char *const *undo, size_t m) {
        for (size_t i = 0; i < m; i++) {
                _cleanup_free_ char *cur = NULL;
                int r;

                r = read_now(io, items[i], &cur);
                if (r == -ENOENT || r == -ENODEV) {
                        /* The group went away meanwhile: nothing of it to restore. */
                        items[i]->changed = false;
                        if (o)
                                (void) originals_drop(o, items[i]->hierarchy, items[i]->group, items[i]->file);
                        continue;
                }
                if (r < 0)
                        continue;
                items[i]->changed = !value_holds(items[i], cur, undo[i]);
                sync_record(o, items[i], cur);
        }
}

/*
 * What failed is taken back: every file this batch touched goes back to what it held before, and
 * the records then follow what the files hold, in memory. Returns the rollback's error, or 0.
 */
static int roll_back(const CgroupIO *io, Originals *o, CgWrite **items, const int *errors, size_t m) {
        _cleanup_strv_free_ char **undo = NULL;
        int rb;

        for (size_t i = 0; i < m; i++)
                items[i]->error = errors[i];
        rb = undo_values(items, m, &undo);
        if (rb < 0)
                return rb;
        rb = write_back(io, o, items, undo, m);
        records_follow_files(io, o, items, undo, m);
        return rb;
}

int cg_batch_write(const CgroupIO *io, Originals *originals, CgWrite *w, size_t n) {
        _cleanup_free_ CgWrite **items = new0(CgWrite *, MAX(n, 1u));
        _cleanup_free_ const char **from = new0(const char *, MAX(n, 1u)), **to = new0(const char *, MAX(n, 1u));
        _cleanup_free_ int *errors = new0(int, MAX(n, 1u));
        size_t m = 0;
        int r, rb;

        if (!items || !from || !to || !errors)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (!w[i].changed)
                        continue;
                /*
                 * A parent's subtree_control may be in the batches of several groups of a round, all
                 * read before any was written: read again, so that a controller another batch turned
                 * on is not this batch's to turn off should it fail.
                 */
                if (w[i].pv->kind->change) {
                        _cleanup_free_ char *cur = NULL;

                        if (read_now(io, &w[i], &cur) >= 0 &&
                            value_holds(&w[i], cur, w[i].value)) {
                                w[i].changed = false;
                                continue;
                        }
                }
                items[m] = &w[i];
                from[m] = w[i].old;
                to[m] = w[i].value;
                m++;
        }
        if (m == 0)
                return 0;

        r = write_items(io, items, from, to, errors, m, false);
        if (r == 0) {
                /* Back to their originals: nothing of these files is peltd's any more. */
                for (size_t i = 0; originals && i < m; i++)
                        if (back_to_original(originals, items[i], items[i]->value))
                                (void) originals_drop(originals, items[i]->hierarchy, items[i]->group, items[i]->file);
                return 0;
        }

        rb = roll_back(io, originals, items, errors, m);
        if (rb < 0)
                log_error_errno(rb, "Failed to roll back changes to %s: %m; the state file keeps the originals.", w[0].group);
        return r;
}

int cg_write_batch(const CgroupIO *io, Originals *originals, CgWrite *w, size_t n, bool dry_run) {
        int r;

        r = cg_batch_read(io, w, n);
        if (r < 0 || dry_run || !cg_batch_changed(w, n))
                return r;
        if (originals) {
                r = cg_batch_record(originals, w, n);
                if (r >= 0) {
                        r = originals_commit(originals);
                        if (r < 0)
                                cg_batch_unrecorded(w, n, r);
                } else
                        originals_rollback(originals);
                if (r < 0) {
                        log_debug_errno(r, "Failed to record the originals of %s in %s, not writing them: %m", w[0].group,
                                        originals->path);
                        return r;
                }
        }
        r = cg_batch_write(io, originals, w, n);
        /* What a rollback left, and records of files back at their originals, dropped. */
        if (originals)
                (void) originals_commit(originals);
        return r;
}

/*
 * A parent's cpuset.cpus as it is now, read once for all its children: restores go through the
 * entries in the order they were recorded, children of one parent one after another.
 */
typedef struct ParentCache {
        char *hierarchy, *group;
        int r;
        CpuMask cpus;
} ParentCache;

static void parent_cache_done(ParentCache *c) {
        free(c->hierarchy);
        free(c->group);
}

static int read_current_cpus(const CgroupIO *io, ParentCache *c, const PlacedValue *pv, ApplyTarget t, const char *group,
                             CpuMask *ret) {
        const PlacedPlace *p = placed_place(pv, t);
        _cleanup_free_ char *cur = NULL;

        if (!c->group || !streq(c->group, group) || !streq(c->hierarchy, p->hierarchy)) {
                parent_cache_done(c);
                c->hierarchy = strdup(p->hierarchy);
                c->group = strdup(group);
                if (!c->hierarchy || !c->group) {
                        parent_cache_done(c);
                        *c = (ParentCache){};
                        return -ENOMEM;
                }
                c->r = apply_backend(t)->read(io, pv, t, group, &cur);
                if (c->r >= 0 && cpumask_parse_list(cur, &c->cpus) < 0)
                        c->r = -EBADMSG;
        }
        if (c->r >= 0)
                *ret = c->cpus;
        return c->r;
}

/*
 * The CPUs a cpuset (pv's place on t) is restored to: its original, less offline CPUs (they cannot
 * be written; the daemon re-widens when they return) and, where it lies inside its parent's (v1),
 * less what its parent will not hold — the parent's own restore target where the parent is
 * restored too, else what it holds now (v1 never gives a cpuset back a CPU that went offline, so a
 * parent peltd never touched may have lost some).
 */
static int restore_cpus(const CgroupIO *io, const Originals *o, ParentCache *cache, const PlacedValue *pv,
                        ApplyTarget t, const char *group, const CpuMask *online, int level, CpuMask *ret) {
        const PlacedPlace *p = placed_place(pv, t);
        const Original *e = originals_find(o, p->hierarchy, group, p->file);
        _cleanup_free_ char *parent = NULL;
        CpuMask m, lim;
        int r;

        if (!e)
                return read_current_cpus(io, cache, pv, t, group, ret);
        if (cpumask_parse_list(e->original, &m) < 0)
                m = *online;
        cpumask_and(&m, &m, online);

        if (!p->inside_parent || !strchr(group, '/') || streq(group, "/") || level > 64) {
                *ret = m;
                return 0;
        }
        parent = cgroup_parent_path(group);
        if (!parent)
                return -ENOMEM;
        r = restore_cpus(io, o, cache, pv, t, parent, online, level + 1, &lim);
        if (r >= 0 && !cpumask_empty(&lim) && !cpumask_subset(&m, &lim)) {
                CpuMask cut;

                cpumask_and(&cut, &m, &lim);
                log_info("%s: restoring %s without the CPUs its parent %s no longer has.", group, p->file, parent);
                m = cut;
        }
        *ret = m;
        return 0;
}

bool cg_holds_written(const char *file, const char *cur, const char *written, const CpuMask *online, bool empty_ok) {
        const PlacedValue *pv = placed_value_of_file(file);

        if (!pv)
                return streq(cur, written);
        return pv->kind->still_written(cur, written, online, empty_ok);
}

/* What a recorded file goes back to, in *ret (NULL: nothing to write). */
typedef enum RestoreVerdict {
        RESTORE_WRITE,               /* *ret is the value to write */
        RESTORE_DONE,                /* back already, or not ours: forget it */
        RESTORE_KEEP,                /* cannot be restored now: keep it recorded */
} RestoreVerdict;

/* A recorded value of the state file, and the row and target its names map to. */
typedef struct Recorded {
        const Original *e;
        const PlacedValue *pv;
        ApplyTarget target;
} Recorded;

/* The value a recorded file goes back to, as its place restores it (PlacedRestore); a RestoreVerdict. */
static int restore_value(const CgroupIO *io, const Originals *o, ParentCache *cache, const Recorded *rec,
                         const char *cur, const CpuMask *online, char **ret) {
        const PlacedPlace *p = placed_place(rec->pv, rec->target);
        const Original *e = rec->e;
        CpuMask m;
        int r;

        switch (p->restore) {
        case PLACED_RESTORE_CONTROLLERS:
                /* peltd enabled controllers ("+cpuset +cpu"): disable those that were not on before. */
                r = placed_controllers_off(e->original, e->written, ret);
                if (r < 0)
                        return r;
                return *ret ? RESTORE_WRITE : RESTORE_DONE;
        case PLACED_RESTORE_CPUS:
                if (isempty(e->original)) {
                        /* v2: empty is "the parent's CPUs", and is written back as it was. */
                        *ret = strdup("");
                        break;
                }
                r = restore_cpus(io, o, cache, rec->pv, rec->target, e->group, online, 0, &m);
                if (r < 0)
                        return r;
                if (cpumask_empty(&m)) {
                        log_warning("The original %s of %s (%s) has no online CPU its parent allows; leaving %s for now.",
                                    e->file, e->group, e->original, cur);
                        return RESTORE_KEEP;
                }
                *ret = cpumask_to_list(&m);
                break;
        case PLACED_RESTORE_ORIGINAL:
        default:
                *ret = strdup(e->original);
                break;
        }
        return *ret ? RESTORE_WRITE : -ENOMEM;
}

static int restore_target(const CgroupIO *io, const Originals *o, ParentCache *cache, const Recorded *rec,
                          const char *cur, const CpuMask *online, char **ret) {
        const PlacedKind *k = rec->pv->kind;
        const Original *e = rec->e;
        int r;

        *ret = NULL;
        /* Already back (a restore that stopped half way, or a crash before the state file was written again): done. */
        if (k->holds(cur, e->original) && !k->holds(cur, e->written))
                return RESTORE_DONE;

        if (!k->still_written(cur, e->written, online, false)) {
                log_notice("%s of %s was changed by someone else (\"%s\", peltd wrote \"%s\"); leaving it.", e->file,
                           e->group, cur, e->written);
                return RESTORE_DONE;
        }

        r = restore_value(io, o, cache, rec, cur, online, ret);
        if (r != RESTORE_WRITE)
                return r;
        if (k->holds(cur, *ret)) {
                free(*ret);
                *ret = NULL;
                return RESTORE_DONE;
        }
        return RESTORE_WRITE;
}

/* The writes that put back every recorded value that is still peltd's; keep[i] for entries to keep recorded. */
static int restore_writes(const CgroupIO *io, const Originals *o, const CpuMask *online, CgWrite *w, size_t *ret_n,
                          bool *keep) {
        _cleanup_(parent_cache_done) ParentCache cache = {};
        size_t n = 0;
        int r;

        for (size_t i = 0; i < o->n_entries; i++) {
                Recorded rec = { .e = &o->entries[i] };
                const Original *e = rec.e;
                const PlacedPlace *p;
                _cleanup_free_ char *cur = NULL;
                char *target;

                rec.pv = placed_value_at(e->hierarchy, e->file, &rec.target);
                if (!rec.pv) {
                        /* Never so: the state file's entries are checked when it is loaded (original_check()). */
                        log_warning("%s of %s is not a file peltd places, leaving its original recorded.", e->file, e->group);
                        keep[i] = true;
                        continue;
                }
                p = placed_place(rec.pv, rec.target);
                r = apply_backend(rec.target)->read(io, rec.pv, rec.target, e->group, &cur);
                if (r == -ENOENT || r == -ENODEV) {
                        log_info("%s of %s is gone, nothing to restore.", e->file, e->group);
                        continue;
                }
                if (r < 0) {
                        log_warning_errno(r, "Failed to read %s of %s, leaving its original recorded: %m", e->file, e->group);
                        keep[i] = true;
                        continue;
                }
                r = restore_target(io, o, &cache, &rec, cur, online, &target);
                if (r < 0)
                        return r;
                if (r == RESTORE_KEEP)
                        keep[i] = true;
                if (r != RESTORE_WRITE)
                        continue;
                /* error carries the entry's index until the writes are done. */
                w[n] = (CgWrite){ .pv = rec.pv, .target = rec.target, .hierarchy = p->hierarchy, .file = p->file,
                                  .value = target, .error = (int) i, .group = strdup(e->group), .old = TAKE_PTR(cur) };
                if (!w[n].group) {
                        cg_write_done(&w[n]);
                        return -ENOMEM;
                }
                n++;
                *ret_n = n;
        }
        return 0;
}

/*
 * Puts back what restore_writes() found, in an order the kernel accepts, and says what each
 * write did; an entry whose write failed stays recorded (keep). Returns 0, or -ENOMEM with
 * nothing written.
 */
static int write_restores(const CgroupIO *io, CgWrite *w, size_t n, bool *keep) {
        _cleanup_free_ CgWrite **order = new0(CgWrite *, MAX(n, 1u));
        _cleanup_free_ const char **values = new0(const char *, MAX(n, 1u)), **from = new0(const char *, MAX(n, 1u));
        _cleanup_free_ int *errors = new0(int, MAX(n, 1u));

        if (!order || !values || !from || !errors)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                order[i] = &w[i];
                from[i] = w[i].old;
                values[i] = w[i].value;
        }
        (void) write_items(io, order, from, values, errors, n, true);
        for (size_t i = 0; i < n; i++) {
                if (errors[i] < 0)
                        keep[w[i].error] = true;
                w[i].error = errors[i];
        }
        for (size_t i = 0; i < n; i++)
                if (w[i].error == 0) {
                        /* What the file holds now: a v2 cpuset with tasks takes its parent's CPUs for "". */
                        _cleanup_free_ char *now = NULL;

                        if (isempty(w[i].value))
                                (void) read_now(io, &w[i], &now);
                        log_info("Restored %s of %s: %s -> %s.", w[i].file, w[i].group, isempty(w[i].old) ? "(empty)" : w[i].old,
                                 !isempty(now) ? now : isempty(w[i].value) ? "(empty)" : w[i].value);
                } else
                        log_error_errno(w[i].error, "Failed to restore %s of %s to %s: %m", w[i].file, w[i].group, w[i].value);
        return 0;
}

/* Forgets what was restored, or is not ours to restore, keeping what failed; then one save. Returns those kept. */
static int forget_restored(Originals *originals, const bool *keep) {
        size_t left = 0;
        int r = 0;

        for (size_t i = originals->n_entries; i-- > 0;) {
                Original *e = &originals->entries[i];

                if (keep[i]) {
                        left++;
                        continue;
                }
                r = originals_drop(originals, e->hierarchy, e->group, e->file);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                r = originals_commit(originals);
        if (r < 0) {
                originals_rollback(originals);
                return log_error_errno(r, "Failed to update %s: %m", originals->path);
        }
        return (int) left;
}

int cg_restore(const CgroupIO *io, Originals *originals, const CpuMask *online, bool dry_run) {
        _cleanup_free_ CgWrite *w = NULL;
        _cleanup_free_ bool *keep = NULL;
        size_t n = 0, total = originals->n_entries;
        int r;

        if (total == 0)
                return 0;
        w = new0(CgWrite, total);
        keep = new0(bool, total);
        if (!w || !keep)
                return -ENOMEM;

        r = restore_writes(io, originals, online, w, &n, keep);
        if (r >= 0 && dry_run)
                for (size_t i = 0; i < n; i++)
                        log_info("Would restore %s of %s to %s.", w[i].file, w[i].group, w[i].value);
        /*
         * The state file is written once, after the writes: after a crash half way, a file found
         * back at its original is simply done (restore_target()), and the rest is still peltd's.
         */
        if (r >= 0 && !dry_run)
                r = write_restores(io, w, n, keep);
        for (size_t i = 0; i < n; i++)
                cg_write_done(&w[i]);
        if (r < 0 || dry_run)
                return r < 0 ? r : 0;
        return forget_restored(originals, keep);
}

void cg_writes_free(CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                cg_write_done(&w[i]);
        free(w);
}

typedef struct Writes {
        CgWrite *w;
        size_t n;
} Writes;

static int add_write(Writes *ws, const PlacedValue *pv, ApplyTarget t, const char *group, const char *value) {
        CgWrite *n = realloc(ws->w, sizeof(CgWrite) * (ws->n + 1));
        int r;

        if (!n)
                return -ENOMEM;
        ws->w = n;
        r = cg_write_init(&n[ws->n], pv, t, group, value);
        if (r < 0)
                return r;
        ws->n++;
        return 0;
}

/*
 * Descendants with a set of their own (a row whose place narrows descendants: cpusets) keep what
 * of their original set lies in the new one. Where a child's set lies inside its parent's (v1) a
 * descendant none of whose CPUs the new set keeps stops the placement (-EBUSY, as the kernel would
 * say, and *ret_child names it): moving it outside its own CPUs is not peltd's to do. On v2 it
 * takes the group's set (the kernel would give it the parent's effective CPUs anyway).
 */
static int add_descendants(const CgroupIO *io, const Originals *o, const PlacedValue *pv, ApplyTarget t,
                           const char *group, const CpuMask *cpus, Writes *ws, char **ret_child) {
        const PlacedPlace *p = placed_place(pv, t);
        _cleanup_strv_free_ char **kids = NULL;
        int r;

        r = io->children(io->userdata, p->hierarchy, group, &kids);
        if (r < 0)
                return r;
        for (char **k = kids; k && *k; k++) {
                _cleanup_free_ char *cur = NULL, *value = NULL;
                const Original *e = originals_find(o, p->hierarchy, *k, p->file);
                CpuMask own, m;

                r = apply_backend(t)->read(io, pv, t, *k, &cur);
                if (r == -ENOENT)
                        continue; /* gone meanwhile */
                if (r < 0)
                        return r;
                /* v2: empty means "the parent's"; nothing of its own to narrow. */
                if (cpumask_parse_list(e ? e->original : cur, &own) < 0 || cpumask_empty(&own)) {
                        if (isempty(cur))
                                continue;
                        if (cpumask_parse_list(cur, &own) < 0)
                                return -EBADMSG;
                }
                cpumask_and(&m, &own, cpus);
                if (cpumask_empty(&m) && p->inside_parent) {
                        if (!ret_child)
                                return -EBUSY;
                        *ret_child = strdup(*k);
                        return *ret_child ? -EBUSY : -ENOMEM;
                }
                if (cpumask_empty(&m))
                        m = *cpus;
                value = cpumask_to_list(&m);
                if (!value)
                        return -ENOMEM;
                r = add_write(ws, pv, t, *k, value);
                if (r < 0)
                        return r;
                r = add_descendants(io, o, pv, t, *k, &m, ws, ret_child);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * v2: every ancestor from the root down to the group's parent must pass on the controllers of the
 * values the placement sets (values[i] for row i; each controller once, in table order).
 */
static int add_subtree_control(const char *group, Writes *ws, char *const *values) {
        const PlacedValue *ctl = &placed_values[PLACED_CONTROLLERS];
        _cleanup_free_ char *parent = NULL;
        int r;

        if (!strchr(group, '/'))
                return 0;
        parent = cgroup_parent_path(group); /* "/" for a top-level group */
        if (!parent)
                return -ENOMEM;
        if (!streq(parent, "/")) {
                r = add_subtree_control(parent, ws, values);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < _PLACED_VALUE_MAX; i++) {
                const char *c = placed_values[i].controller;
                _cleanup_free_ char *word = NULL;
                bool seen = false;

                if (!values[i] || !c)
                        continue;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = values[j] && placed_values[j].controller && streq(placed_values[j].controller, c);
                if (seen)
                        continue;
                if (asprintf(&word, "+%s", c) < 0)
                        return -ENOMEM;
                r = add_write(ws, ctl, APPLY_V2, parent, word);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void values_free(char *(*values)[_PLACED_VALUE_MAX]) {
        for (size_t i = 0; i < _PLACED_VALUE_MAX; i++)
                free((*values)[i]);
}

/* The value of each row the placement sets on its target (values[i] NULL: row i left alone). */
static int placement_values(const Placement *p, char *values[static _PLACED_VALUE_MAX]) {
        for (size_t i = 0; i < _PLACED_VALUE_MAX; i++) {
                const PlacedValue *pv = &placed_values[i];
                int r;

                if (!placed_place(pv, p->target) || !pv->format)
                        continue;
                r = pv->format(p, p->target, &values[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_placement(const CgroupIO *io, const Originals *originals, const Placement *p, char *const *values,
                         Writes *ws, char **ret_child) {
        /* systemd places the unit; cgroupfs the group. */
        const char *where = p->target == APPLY_SYSTEMD ? p->unit : p->group;
        int r = 0;

        if (!where)
                return -EINVAL;
        if (p->target == APPLY_V2)
                r = add_subtree_control(p->group, ws, values);
        for (size_t i = 0; i < _PLACED_VALUE_MAX && r >= 0; i++) {
                const PlacedValue *pv = &placed_values[i];
                CpuMask m;

                if (!values[i])
                        continue;
                r = add_write(ws, pv, p->target, where, values[i]);
                if (r < 0 || !placed_place(pv, p->target)->descendants)
                        continue;
                r = cpumask_parse_list(values[i], &m);
                if (r >= 0)
                        r = add_descendants(io, originals, pv, p->target, p->group, &m, ws, ret_child);
        }
        return r;
}

int placement_writes(const CgroupIO *io, const Originals *originals, const Placement *p, CgWrite **ret, size_t *ret_n,
                     char **ret_child) {
        _cleanup_(values_free) char *values[_PLACED_VALUE_MAX] = {};
        Writes ws = {};
        int r;

        r = placement_values(p, values);
        if (r >= 0)
                r = add_placement(io, originals, p, values, &ws, ret_child);
        if (r < 0) {
                cg_writes_free(ws.w, ws.n);
                return r;
        }
        *ret = ws.w;
        *ret_n = ws.n;
        return 0;
}
