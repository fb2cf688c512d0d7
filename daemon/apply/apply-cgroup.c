/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A group's placement (apply-cgroup.h): the writes that make it, read, recorded and written as one
 * batch, and taken back when any of them fails for good.
 */
#include "peltd/apply-backend.h"
#include "peltd/apply-cgroup.h"
#include "peltd/apply-order.h"
#include "peltd/cgroup-path.h"
#include "peltd/log.h"

/* What the state file keeps as peltd's last write of a file (its kind may merge it with the record's). */
static char *recorded_value(const Originals *o, const CgWrite *w, const char *value) {
        const Original *e = o ? originals_find(o, w->hierarchy, w->group, w->file) : NULL;

        return w->pv->kind->record(e ? e->written : NULL, value);
}

/*
 * Whether a write puts a file back to its recorded original (a rollback): the record it needs is
 * there already, and the state file forgets it afterwards (sync_record()), so nothing is written
 * to the state file first. A rollback then works with the state file's disk full.
 */
static bool back_to_original(const Originals *o, const CgWrite *w, const char *value) {
        const Original *e = originals_find(o, w->hierarchy, w->group, w->file);

        return e && !w->pv->kind->change && cg_write_holds(w, value, e->original);
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
        if (cg_write_holds(w, now, e->original))
                (void) originals_drop(o, w->hierarchy, w->group, w->file);
        else if (!cg_write_holds(w, now, e->written))
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
                r = cg_write_read(io, &w[i], &w[i].old);
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
                w[i].changed = !cg_write_holds(&w[i], w[i].old, w[i].value);
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
                if (cg_write_read(io, items[i], &now[i]) < 0)
                        continue;
                if (cg_write_holds(items[i], now[i], undo[i]))
                        continue;
                back[k] = items[i];
                bfrom[k] = now[i];
                bto[k] = undo[i];
                k++;
        }
        if (o && k > 0) {
                size_t mark = originals_mark(o);

                rb = stage_records(o, back, bto, k);
                if (rb >= 0)
                        rb = originals_commit(o);
                if (rb < 0) {
                        /* Only these records are taken back: older unsaved changes wait for the next commit. */
                        originals_rollback_to(o, mark);
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
                int r = cg_writes_in_order(io, back, bfrom, bto, berrors, k, true);

                rb = rb < 0 ? rb : r;
        }
        return rb;
}

/* Whatever a rollback did, the records must describe what the files hold (in memory). */
static void records_follow_files(const CgroupIO *io, Originals *o, CgWrite *const *items, char *const *undo, size_t m) {
        for (size_t i = 0; i < m; i++) {
                _cleanup_free_ char *cur = NULL;
                int r;

                r = cg_write_read(io, items[i], &cur);
                if (r == -ENOENT || r == -ENODEV) {
                        /* The group went away meanwhile: nothing of it to restore. */
                        items[i]->changed = false;
                        if (o)
                                (void) originals_drop(o, items[i]->hierarchy, items[i]->group, items[i]->file);
                        continue;
                }
                if (r < 0)
                        continue;
                items[i]->changed = !cg_write_holds(items[i], cur, undo[i]);
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

                        if (cg_write_read(io, &w[i], &cur) >= 0 &&
                            cg_write_holds(&w[i], cur, w[i].value)) {
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

        r = cg_writes_in_order(io, items, from, to, errors, m, false);
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
