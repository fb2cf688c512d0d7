/* SPDX-License-Identifier: GPL-2.0-only */
#include <inttypes.h>

#include "peltd/apply-cgroup.h"
#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/parse.h"

bool cg_file_is_cpulist(const char *file) {
        return streq(file, "cpuset.cpus") || streq(file, "AllowedCPUs");
}

static bool is_subtree_control(const char *file) {
        return streq(file, "cgroup.subtree_control");
}

void cg_write_done(CgWrite *w) {
        free(w->group);
        free(w->value);
        free(w->old);
        *w = (CgWrite){ 0 };
}

#define WORD_SEPARATORS " \t\n"

/* The next word of a space-separated list at *p (its start and length), moving *p past it; false at the end. */
static bool next_word(const char **p, const char **ret, size_t *ret_len) {
        const char *w = *p + strspn(*p, WORD_SEPARATORS);

        if (!*w)
                return false;
        *ret = w;
        *ret_len = strcspn(w, WORD_SEPARATORS);
        *p = w + *ret_len;
        return true;
}

/* Whether a space-separated controller list holds the len characters at name as a word. */
static bool list_has_n(const char *list, const char *name, size_t len) {
        const char *w;
        size_t l;

        for (const char *p = list; p && next_word(&p, &w, &l);)
                if (l == len && strneq(w, name, len))
                        return true;
        return false;
}

static bool list_has(const char *list, const char *name) {
        return list_has_n(list, name, strlen(name));
}

/* Names of controllers in "+name"/"-name" words are at most this long. */
#define CONTROLLER_NAME_MAX 63

/* Whether a controller list holds what each of the words "+cpuset -cpu ..." asks for. */
static bool controllers_hold(const char *current, const char *value) {
        const char *w;
        size_t l;

        for (const char *p = value; next_word(&p, &w, &l);) {
                if ((w[0] != '+' && w[0] != '-') || l < 2 || l - 1 > CONTROLLER_NAME_MAX)
                        return false;
                if (list_has_n(current, w + 1, l - 1) != (w[0] == '+'))
                        return false;
        }
        return true;
}

/*
 * Whether the file holding `current` already says `value`: CPU lists compare as sets; a
 * subtree_control write "+cpuset" / "-cpuset +cpu" is done when each controller is (not) listed.
 */
static bool value_holds(const char *file, const char *current, const char *value) {
        if (cg_file_is_cpulist(file)) {
                CpuMask a, b;

                if (cpumask_parse_list(current, &a) < 0 || cpumask_parse_list(value, &b) < 0)
                        return false;
                return cpumask_equal(&a, &b);
        }
        if (is_subtree_control(file) && (value[0] == '+' || value[0] == '-'))
                return controllers_hold(current, value);
        return streq(current, value);
}

/*
 * What the state file keeps as peltd's last write of a file. A group's subtree_control takes one
 * write per controller ("+cpuset", then "+cpu"): the record keeps all that peltd enabled
 * ("+cpuset +cpu"), so that a restore disables each of them.
 */
static char *recorded_value(const Originals *o, const CgWrite *w, const char *value) {
        const Original *e = o ? originals_find(o, w->hierarchy, w->group, w->file) : NULL;
        char *s;

        if (!is_subtree_control(w->file) || !e || e->written[0] != '+' || value[0] != '+')
                return strdup(value);
        if (list_has(e->written, value))
                return strdup(e->written);
        if (asprintf(&s, "%s %s", e->written, value) < 0)
                return NULL;
        return s;
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
 * The order the kernel accepts: controllers enabled first, then widening cpusets top-down,
 * everything that is not a cpuset, narrowing cpusets bottom-up, and controllers disabled last.
 */
static long step_rank(const CgWrite *w, const char *value, bool widening) {
        if (is_subtree_control(w->file))
                return value[0] == '-' ? 3000000 - depth(w->group) : -3000000 + depth(w->group);
        if (!cg_file_is_cpulist(w->file))
                return 0;
        return widening ? -1000000 + depth(w->group) : 1000000 - depth(w->group);
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

        if (value_holds(w->file, from, to))
                return 0;
        if (!cg_file_is_cpulist(w->file) || cpumask_parse_list(from, &f) < 0 || cpumask_parse_list(to, &t) < 0)
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

        return e && !is_subtree_control(w->file) && value_holds(w->file, value, e->original);
}

/*
 * Takes items[i]'s file from from[i] to to[i], in an order the kernel accepts, retrying refusals
 * while any write makes progress. errors[i] gets each item's result. Nothing is recorded here: the
 * records of these values are saved before (cg_batch_record(), originals_commit()). Returns the
 * first error, or 0.
 */
static int write_items(const CgroupIO *io, CgWrite *const *items, const char *const *from, const char *const *to,
                       int *errors, size_t n) {
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

                        if (st->error != -EAGAIN && !retryable(st->error))
                                continue;
                        if (st->after >= 0 && steps[st->after].error != 0)
                                continue;
                        r = io->write(io->userdata, w->hierarchy, w->group, w->file, st->value);
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
        if (value_holds(w->file, now, e->original))
                (void) originals_drop(o, w->hierarchy, w->group, w->file);
        else if (!value_holds(w->file, now, e->written))
                (void) originals_put(o, w->hierarchy, w->group, w->file, e->original, now);
}

/*
 * v2: a group's cpuset.* and cpu.* files exist only while its parent passes the controller on. When
 * this batch enables it there ("+cpuset" in the parent's cgroup.subtree_control, which is written
 * first), the missing file is read as what the kernel creates it with: an empty cpuset (every CPU
 * of the parent) and the default weight. NULL: the file is missing for another reason.
 */
static const char *initial_value(const CgWrite *w, size_t n, const CgWrite *item) {
        static const char *const initial[][2] = {
                { "cpuset.cpus", "" },
                { "cpuset.mems", "" },
                { "cpu.weight", "100" },
        };
        const char *value = NULL, *slash = strrchr(item->group, '/');
        size_t plen;

        if (!streq(item->hierarchy, "unified") || !slash)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(initial); i++)
                if (streq(item->file, initial[i][0]))
                        value = initial[i][1];
        if (!value)
                return NULL;
        plen = slash == item->group ? 1 : (size_t) (slash - item->group); /* the parent: "/" or "/a" */
        for (size_t i = 0; i < n; i++) {
                const char *ctl = w[i].value + 1, *dot = strchr(item->file, '.');

                if (!is_subtree_control(w[i].file) || !streq(w[i].hierarchy, "unified") || w[i].value[0] != '+' ||
                    strlen(w[i].group) != plen || !strneq(w[i].group, item->group, plen))
                        continue;
                if (strlen(ctl) == (size_t) (dot - item->file) && strneq(ctl, item->file, strlen(ctl)))
                        return value;
        }
        return NULL;
}

/* Whether a write's group is still there (its children can be listed); systemd units are not groups. */
static bool group_exists(const CgroupIO *io, const CgWrite *w) {
        _cleanup_strv_free_ char **kids = NULL;

        if (streq(w->hierarchy, "systemd"))
                return false;
        return io->children(io->userdata, w->hierarchy, w->group, &kids) >= 0;
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
                if (streq(w[i].file, "cpuset.cpus")) {
                        CpuMask v;

                        if (cpumask_parse_list(w[i].value, &v) < 0 || cpumask_empty(&v))
                                return w[i].error = -EINVAL; /* never written empty */
                }
                r = io->read(io->userdata, w[i].hierarchy, w[i].group, w[i].file, &w[i].old);
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
                w[i].changed = !value_holds(w[i].file, w[i].old, w[i].value);
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
 * What failed is taken back: every file this batch touched goes back to what it held before. What
 * each holds now is read again (a move may have stopped half way). Values going back that are not
 * originals are recorded first (as any write); the records then follow what the files hold, in
 * memory. Returns the rollback's error, or 0.
 */
static int roll_back(const CgroupIO *io, Originals *o, CgWrite **items, const int *errors, size_t m) {
        _cleanup_free_ CgWrite **back = new0(CgWrite *, MAX(m, 1u));
        _cleanup_free_ const char **bfrom = new0(const char *, MAX(m, 1u)), **bto = new0(const char *, MAX(m, 1u));
        _cleanup_free_ int *berrors = new0(int, MAX(m, 1u));
        _cleanup_strv_free_ char **now = new0(char *, m + 1);
        _cleanup_free_ const char **undo = new0(const char *, MAX(m, 1u));
        _cleanup_strv_free_ char **words = new0(char *, m + 1);
        size_t k = 0;
        int rb = 0;

        if (!back || !bfrom || !bto || !berrors || !now || !undo || !words)
                return -ENOMEM;
        /* What takes each file back: its old value, but for subtree_control (written as "+cpuset", read as a list) the opposite word. */
        for (size_t i = 0, nw = 0; i < m; i++) {
                const char *v = items[i]->value;

                undo[i] = items[i]->old;
                if (is_subtree_control(items[i]->file) && (v[0] == '+' || v[0] == '-')) {
                        /* words stays NULL-terminated: strings are added one after another. */
                        if (asprintf(&words[nw], "%c%s", v[0] == '+' ? '-' : '+', v + 1) < 0) {
                                words[nw] = NULL;
                                return -ENOMEM;
                        }
                        undo[i] = words[nw++];
                }
        }
        for (size_t i = 0; i < m; i++) {
                items[i]->error = errors[i];
                if (io->read(io->userdata, items[i]->hierarchy, items[i]->group, items[i]->file, &now[i]) < 0)
                        continue;
                if (value_holds(items[i]->file, now[i], undo[i]))
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
                int r = write_items(io, back, bfrom, bto, berrors, k);

                rb = rb < 0 ? rb : r;
        }

        /* Whatever happened, the records must describe what the files hold. */
        for (size_t i = 0; i < m; i++) {
                _cleanup_free_ char *cur = NULL;
                int r2;

                r2 = io->read(io->userdata, items[i]->hierarchy, items[i]->group, items[i]->file, &cur);
                if (r2 == -ENOENT || r2 == -ENODEV) {
                        /* The group went away meanwhile: nothing of it to restore. */
                        items[i]->changed = false;
                        if (o)
                                (void) originals_drop(o, items[i]->hierarchy, items[i]->group, items[i]->file);
                        continue;
                }
                if (r2 < 0)
                        continue;
                items[i]->changed = !value_holds(items[i]->file, cur, undo[i]);
                sync_record(o, items[i], cur);
        }
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
                if (is_subtree_control(w[i].file)) {
                        _cleanup_free_ char *cur = NULL;

                        if (io->read(io->userdata, w[i].hierarchy, w[i].group, w[i].file, &cur) >= 0 &&
                            value_holds(w[i].file, cur, w[i].value)) {
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

        r = write_items(io, items, from, to, errors, m);
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

static int read_current_cpus(const CgroupIO *io, ParentCache *c, const char *hierarchy, const char *group, CpuMask *ret) {
        _cleanup_free_ char *cur = NULL;

        if (!c->group || !streq(c->group, group) || !streq(c->hierarchy, hierarchy)) {
                parent_cache_done(c);
                c->hierarchy = strdup(hierarchy);
                c->group = strdup(group);
                if (!c->hierarchy || !c->group) {
                        parent_cache_done(c);
                        *c = (ParentCache){};
                        return -ENOMEM;
                }
                c->r = io->read(io->userdata, hierarchy, group, "cpuset.cpus", &cur);
                if (c->r >= 0 && cpumask_parse_list(cur, &c->cpus) < 0)
                        c->r = -EBADMSG;
        }
        if (c->r >= 0)
                *ret = c->cpus;
        return c->r;
}

/*
 * The CPUs a cpuset is restored to: its original, less offline CPUs (they cannot be written; the
 * daemon re-widens when they return) and, on v1, less what its parent will not hold — the parent's
 * own restore target where the parent is restored too, else what it holds now (v1 never gives a
 * cpuset back a CPU that went offline, so a parent peltd never touched may have lost some).
 */
static int restore_cpus(const CgroupIO *io, const Originals *o, ParentCache *cache, const char *hierarchy,
                        const char *group, const CpuMask *online, int level, CpuMask *ret) {
        const Original *e = originals_find(o, hierarchy, group, "cpuset.cpus");
        _cleanup_free_ char *parent = NULL;
        CpuMask m, lim;
        int r;

        if (!e)
                return read_current_cpus(io, cache, hierarchy, group, ret);
        if (cpumask_parse_list(e->original, &m) < 0)
                m = *online;
        cpumask_and(&m, &m, online);

        if (!streq(hierarchy, "cpuset") || !strchr(group, '/') || streq(group, "/") || level > 64) {
                *ret = m;
                return 0;
        }
        parent = cgroup_parent_path(group);
        if (!parent)
                return -ENOMEM;
        r = restore_cpus(io, o, cache, hierarchy, parent, online, level + 1, &lim);
        if (r >= 0 && !cpumask_empty(&lim) && !cpumask_subset(&m, &lim)) {
                CpuMask cut;

                cpumask_and(&cut, &m, &lim);
                log_info("%s: restoring cpuset.cpus without the CPUs its parent %s no longer has.", group, parent);
                m = cut;
        }
        *ret = m;
        return 0;
}

/* "-cpuset -cpu" for each "+X" of written that original does not list; NULL when there is none. */
static int controllers_to_disable(const char *original, const char *written, char **ret) {
        _cleanup_free_ char *s = strdup("");
        const char *w;
        size_t l;

        *ret = NULL;
        if (!s)
                return -ENOMEM;
        for (const char *p = written; next_word(&p, &w, &l);) {
                char *n;

                if (w[0] != '+' || l < 2 || l - 1 > CONTROLLER_NAME_MAX || list_has_n(original, w + 1, l - 1))
                        continue;
                if (asprintf(&n, "%s%s-%.*s", s, *s ? " " : "", (int) (l - 1), w + 1) < 0)
                        return -ENOMEM;
                free(s);
                s = n;
        }
        if (*s)
                *ret = TAKE_PTR(s);
        return 0;
}

bool cg_holds_written(const char *file, const char *cur, const char *written, const CpuMask *online, bool empty_ok) {
        CpuMask c, w;

        if (value_holds(file, cur, written))
                return true;
        /* The kernel drops offline CPUs from v1 cpusets: our value less those is still ours. */
        if (!cg_file_is_cpulist(file) || cpumask_parse_list(cur, &c) < 0 || cpumask_parse_list(written, &w) < 0)
                return false;
        cpumask_and(&w, &w, online);
        return cpumask_equal(&c, &w) && (empty_ok || !cpumask_empty(&c));
}

/* What a recorded file goes back to, in *ret (NULL: nothing to write). */
typedef enum RestoreVerdict {
        RESTORE_WRITE,               /* *ret is the value to write */
        RESTORE_DONE,                /* back already, or not ours: forget it */
        RESTORE_KEEP,                /* cannot be restored now: keep it recorded */
} RestoreVerdict;

static int restore_target(const CgroupIO *io, const Originals *o, ParentCache *cache, const Original *e,
                          const char *cur, const CpuMask *online, char **ret) {
        bool ours;
        int r;

        *ret = NULL;
        /* Already back (a restore that stopped half way, or a crash before the state file was written again): done. */
        if (value_holds(e->file, cur, e->original) && !value_holds(e->file, cur, e->written))
                return RESTORE_DONE;

        ours = cg_holds_written(e->file, cur, e->written, online, false);
        if (!ours) {
                log_notice("%s of %s was changed by someone else (\"%s\", peltd wrote \"%s\"); leaving it.", e->file,
                           e->group, cur, e->written);
                return RESTORE_DONE;
        }

        if (is_subtree_control(e->file)) {
                /* peltd enabled controllers ("+cpuset +cpu"): disable those that were not on before. */
                r = controllers_to_disable(e->original, e->written, ret);
                if (r < 0)
                        return r;
                return *ret ? RESTORE_WRITE : RESTORE_DONE;
        }
        if (streq(e->file, "cpuset.cpus") && isempty(e->original))
                /* v2: empty is "the parent's CPUs", and is written back as it was. */
                *ret = strdup("");
        else if (streq(e->file, "cpuset.cpus")) {
                CpuMask m;

                r = restore_cpus(io, o, cache, e->hierarchy, e->group, online, 0, &m);
                if (r < 0)
                        return r;
                if (cpumask_empty(&m)) {
                        log_warning("The original cpuset.cpus of %s (%s) has no online CPU its parent allows; leaving %s for now.",
                                    e->group, e->original, cur);
                        return RESTORE_KEEP;
                }
                *ret = cpumask_to_list(&m);
        } else
                *ret = strdup(e->original);
        if (!*ret)
                return -ENOMEM;
        if (value_holds(e->file, cur, *ret)) {
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
                const Original *e = &o->entries[i];
                _cleanup_free_ char *cur = NULL;
                char *target;

                r = io->read(io->userdata, e->hierarchy, e->group, e->file, &cur);
                if (r == -ENOENT || r == -ENODEV) {
                        log_info("%s of %s is gone, nothing to restore.", e->file, e->group);
                        continue;
                }
                if (r < 0) {
                        log_warning_errno(r, "Failed to read %s of %s, leaving its original recorded: %m", e->file, e->group);
                        keep[i] = true;
                        continue;
                }
                r = restore_target(io, o, &cache, e, cur, online, &target);
                if (r < 0)
                        return r;
                if (r == RESTORE_KEEP)
                        keep[i] = true;
                if (r != RESTORE_WRITE)
                        continue;
                /* error carries the entry's index until the writes are done. */
                w[n] = (CgWrite){ .hierarchy = e->hierarchy, .file = e->file, .value = target, .error = (int) i,
                                  .group = strdup(e->group), .old = TAKE_PTR(cur) };
                if (!w[n].group) {
                        cg_write_done(&w[n]);
                        return -ENOMEM;
                }
                n++;
                *ret_n = n;
        }
        return 0;
}

int cg_restore(const CgroupIO *io, Originals *originals, const CpuMask *online, bool dry_run) {
        _cleanup_free_ CgWrite *w = NULL;
        _cleanup_free_ CgWrite **order = NULL;
        _cleanup_free_ const char **values = NULL, **from = NULL;
        _cleanup_free_ int *errors = NULL;
        _cleanup_free_ bool *keep = NULL;
        size_t n = 0, left = 0, total = originals->n_entries;
        int r;

        if (total == 0)
                return 0;
        w = new0(CgWrite, total);
        order = new0(CgWrite *, total);
        values = new0(const char *, total);
        from = new0(const char *, total);
        errors = new0(int, total);
        keep = new0(bool, total);
        if (!w || !order || !values || !from || !errors || !keep)
                return -ENOMEM;

        r = restore_writes(io, originals, online, w, &n, keep);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        cg_write_done(&w[i]);
                return r;
        }
        for (size_t i = 0; i < n; i++) {
                order[i] = &w[i];
                from[i] = w[i].old;
                values[i] = w[i].value;
        }

        if (dry_run) {
                for (size_t i = 0; i < n; i++)
                        log_info("Would restore %s of %s to %s.", w[i].file, w[i].group, w[i].value);
                for (size_t i = 0; i < n; i++)
                        cg_write_done(&w[i]);
                return 0;
        }

        /*
         * The state file is written once, after the writes: after a crash half way, a file found
         * back at its original is simply done (restore_target()), and the rest is still peltd's.
         */
        (void) write_items(io, order, from, values, errors, n);
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
                                (void) io->read(io->userdata, w[i].hierarchy, w[i].group, w[i].file, &now);
                        log_info("Restored %s of %s: %s -> %s.", w[i].file, w[i].group, isempty(w[i].old) ? "(empty)" : w[i].old,
                                 !isempty(now) ? now : isempty(w[i].value) ? "(empty)" : w[i].value);
                } else
                        log_error_errno(w[i].error, "Failed to restore %s of %s to %s: %m", w[i].file, w[i].group, w[i].value);
        for (size_t i = 0; i < n; i++)
                cg_write_done(&w[i]);

        /* Forget what was restored, or is not ours to restore; keep what failed. Then one save. */
        for (size_t i = total; i-- > 0;) {
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

void cg_writes_free(CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                cg_write_done(&w[i]);
        free(w);
}

typedef struct Writes {
        CgWrite *w;
        size_t n;
} Writes;

static int add_write(Writes *ws, const char *hierarchy, const char *group, const char *file, const char *value) {
        CgWrite *n = realloc(ws->w, sizeof(CgWrite) * (ws->n + 1));

        if (!n)
                return -ENOMEM;
        ws->w = n;
        n[ws->n] = (CgWrite){ .hierarchy = hierarchy, .file = file, .group = strdup(group), .value = strdup(value) };
        if (!n[ws->n].group || !n[ws->n].value) {
                cg_write_done(&n[ws->n]);
                return -ENOMEM;
        }
        ws->n++;
        return 0;
}

/*
 * Descendants with a cpuset of their own keep what of their original set lies in the new one. On
 * v1 a descendant none of whose CPUs the new set keeps stops the placement (-EBUSY, as the kernel
 * would say, and *ret_child names it): moving it outside its own CPUs is not peltd's to do. On v2
 * it takes the group's set (the kernel would give it the parent's effective CPUs anyway).
 */
static int add_descendants(const CgroupIO *io, const Originals *o, const char *hierarchy, const char *group,
                           const CpuMask *cpus, Writes *ws, char **ret_child) {
        _cleanup_strv_free_ char **kids = NULL;
        int r;

        r = io->children(io->userdata, hierarchy, group, &kids);
        if (r < 0)
                return r;
        for (char **k = kids; k && *k; k++) {
                _cleanup_free_ char *cur = NULL, *value = NULL;
                const Original *e = originals_find(o, hierarchy, *k, "cpuset.cpus");
                CpuMask own, m;

                r = io->read(io->userdata, hierarchy, *k, "cpuset.cpus", &cur);
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
                if (cpumask_empty(&m) && streq(hierarchy, "cpuset")) {
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
                r = add_write(ws, hierarchy, *k, "cpuset.cpus", value);
                if (r < 0)
                        return r;
                r = add_descendants(io, o, hierarchy, *k, &m, ws, ret_child);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* v2: every ancestor from the root down to the group's parent must pass the controllers on. */
static int add_subtree_control(const char *group, Writes *ws, bool cpuset, bool cpu) {
        _cleanup_free_ char *parent = NULL;
        int r;

        if (!strchr(group, '/'))
                return 0;
        parent = cgroup_parent_path(group); /* "/" for a top-level group */
        if (!parent)
                return -ENOMEM;
        if (!streq(parent, "/")) {
                r = add_subtree_control(parent, ws, cpuset, cpu);
                if (r < 0)
                        return r;
        }
        if (cpuset && (r = add_write(ws, "unified", parent, "cgroup.subtree_control", "+cpuset")) < 0)
                return r;
        if (cpu && (r = add_write(ws, "unified", parent, "cgroup.subtree_control", "+cpu")) < 0)
                return r;
        return 0;
}

int placement_writes(const CgroupIO *io, const Originals *originals, const Placement *p, CgWrite **ret, size_t *ret_n,
                     char **ret_child) {
        Writes ws = {};
        _cleanup_free_ char *cpus = NULL, *num = NULL;
        int r = 0;

        cpus = cpumask_to_list(&p->cpus);
        if (!cpus)
                return -ENOMEM;
        if (cpumask_empty(&p->cpus))
                return -EINVAL;

        switch (p->target) {
        case APPLY_V1:
                r = add_write(&ws, "cpuset", p->group, "cpuset.cpus", cpus);
                if (r >= 0)
                        r = add_descendants(io, originals, "cpuset", p->group, &p->cpus, &ws, ret_child);
                if (r >= 0 && p->shares > 0 && asprintf(&num, "%" PRIu64, p->shares) < 0)
                        r = -ENOMEM;
                if (r >= 0 && num)
                        r = add_write(&ws, "cpu", p->group, "cpu.shares", num);
                break;
        case APPLY_V2:
                r = add_subtree_control(p->group, &ws, true, p->shares > 0);
                if (r >= 0)
                        r = add_write(&ws, "unified", p->group, "cpuset.cpus", cpus);
                if (r >= 0)
                        r = add_descendants(io, originals, "unified", p->group, &p->cpus, &ws, ret_child);
                if (r >= 0 && p->shares > 0 && asprintf(&num, "%" PRIu64, cgroup_shares_to_weight(p->shares)) < 0)
                        r = -ENOMEM;
                if (r >= 0 && num)
                        r = add_write(&ws, "unified", p->group, "cpu.weight", num);
                break;
        case APPLY_SYSTEMD:
                if (!p->unit)
                        return -EINVAL;
                r = add_write(&ws, "systemd", p->unit, "AllowedCPUs", cpus);
                if (r >= 0 && p->shares > 0 && asprintf(&num, "%" PRIu64, cgroup_shares_to_weight(p->shares)) < 0)
                        r = -ENOMEM;
                if (r >= 0 && num)
                        r = add_write(&ws, "systemd", p->unit, "CPUWeight", num);
                break;
        }
        if (r < 0) {
                cg_writes_free(ws.w, ws.n);
                return r;
        }
        *ret = ws.w;
        *ret_n = ws.n;
        return 0;
}
