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
 * while any write makes progress. When record is set, the state file learns each value before it
 * is written (and a write whose value cannot be recorded is not made). errors[i] gets each item's
 * result. Returns the first error, or 0.
 */
static int write_items(const CgroupIO *io, CgWrite *const *items, const char *const *from, const char *const *to,
                       int *errors, size_t n, Originals *record) {
        _cleanup_free_ Step *steps = new0(Step, 2 * MAX(n, 1u));
        size_t m = 0;
        bool progress = true;
        int r, first = 0;

        if (!steps)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                errors[i] = 0;
                r = plan_item(steps, &m, i, items[i], from[i], to[i]);
                if (r < 0)
                        goto finish;
        }
        qsort(steps, m, sizeof *steps, cmp_step);
        /* A second step waits for the first step of its item. */
        for (size_t s = 0; s < m; s++)
                if (steps[s].after >= 0) {
                        steps[s].after = -1;
                        for (size_t t = 0; t < s; t++)
                                if (steps[t].item == steps[s].item)
                                        steps[s].after = (int) t;
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
                        if (record && !back_to_original(record, w, st->value)) {
                                _cleanup_free_ char *v = recorded_value(record, w, st->value);

                                r = v ? originals_record(record, w->hierarchy, w->group, w->file, w->old, v) : -ENOMEM;
                                if (r < 0) {
                                        /* No change without a record: not written; the caller says why. */
                                        log_debug_errno(r, "Failed to record the original %s of %s in %s, not writing it: %m",
                                                        w->file, w->group, record->path);
                                        st->error = r;
                                        w->unrecorded = true;
                                        continue;
                                }
                        }
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

/* Brings the state file in line with what a file holds now (after a failure or a rollback). */
static void sync_record(Originals *o, const CgWrite *w, const char *now) {
        const Original *e;

        if (!o || !now)
                return;
        e = originals_find(o, w->hierarchy, w->group, w->file);
        if (!e)
                return;
        if (value_holds(w->file, now, e->original))
                (void) originals_forget(o, w->hierarchy, w->group, w->file);
        else if (!value_holds(w->file, now, e->written))
                (void) originals_record(o, w->hierarchy, w->group, w->file, e->original, now);
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

int cg_write_batch(const CgroupIO *io, Originals *originals, CgWrite *w, size_t n, bool dry_run) {
        _cleanup_free_ CgWrite **items = NULL;
        _cleanup_free_ const char **from = NULL, **to = NULL;
        _cleanup_free_ int *errors = NULL;
        size_t m = 0, k = 0;
        int r, rb;

        items = new0(CgWrite *, MAX(n, 1u));
        from = new0(const char *, MAX(n, 1u));
        to = new0(const char *, MAX(n, 1u));
        errors = new0(int, MAX(n, 1u));
        if (!items || !from || !to || !errors)
                return -ENOMEM;

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
                if (!value_holds(w[i].file, w[i].old, w[i].value)) {
                        items[m] = &w[i];
                        from[m] = w[i].old;
                        to[m] = w[i].value;
                        w[i].changed = true;
                        m++;
                }
        }
        if (m == 0 || dry_run)
                return 0;

        r = write_items(io, items, from, to, errors, m, originals);
        if (r == 0)
                return 0;

        /*
         * All or nothing: put back every file this batch touched. What each holds now is read
         * again (a move may have stopped half way), and taken back to what it held before.
         */
        {
                _cleanup_free_ CgWrite **back = new0(CgWrite *, m);
                _cleanup_free_ const char **bfrom = new0(const char *, m), **bto = new0(const char *, m);
                _cleanup_free_ int *berrors = new0(int, m);
                _cleanup_strv_free_ char **now = new0(char *, m + 1);
                _cleanup_free_ const char **undo = new0(const char *, m);
                _cleanup_strv_free_ char **words = new0(char *, m + 1);

                if (!back || !bfrom || !bto || !berrors || !now || !undo || !words)
                        return -ENOMEM;
                /*
                 * What takes each file back: its old value, but for subtree_control (written as
                 * "+cpuset", read as a list) the opposite word.
                 */
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
                rb = write_items(io, back, bfrom, bto, berrors, k, originals);
                if (rb < 0)
                        log_error_errno(rb, "Failed to roll back changes to %s: %m; the state file keeps the originals.",
                                        w[0].group);

                /* Whatever happened, the state file must describe what the files hold. */
                for (size_t i = 0; i < m; i++) {
                        _cleanup_free_ char *cur = NULL;
                        int r2;

                        r2 = io->read(io->userdata, items[i]->hierarchy, items[i]->group, items[i]->file, &cur);
                        if (r2 == -ENOENT || r2 == -ENODEV) {
                                /* The group went away meanwhile: nothing of it to restore. */
                                items[i]->changed = false;
                                if (originals)
                                        (void) originals_forget(originals, items[i]->hierarchy, items[i]->group,
                                                                items[i]->file);
                                continue;
                        }
                        if (r2 < 0)
                                continue;
                        items[i]->changed = !value_holds(items[i]->file, cur, undo[i]);
                        sync_record(originals, items[i], cur);
                }
        }
        return r;
}

/*
 * The CPUs a cpuset is restored to: its original, less offline CPUs (they cannot be written; the
 * daemon re-widens when they return) and, on v1, less what its parent will not hold — the parent's
 * own restore target where the parent is restored too, else what it holds now (v1 never gives a
 * cpuset back a CPU that went offline, so a parent peltd never touched may have lost some).
 */
static int restore_cpus(const CgroupIO *io, const Originals *o, const char *hierarchy, const char *group,
                        const CpuMask *online, int level, CpuMask *ret) {
        const Original *e = originals_find(o, hierarchy, group, "cpuset.cpus");
        _cleanup_free_ char *parent = NULL, *cur = NULL;
        CpuMask m, lim;
        int r;

        if (!e) {
                r = io->read(io->userdata, hierarchy, group, "cpuset.cpus", &cur);
                if (r < 0)
                        return r;
                return cpumask_parse_list(cur, ret) < 0 ? -EBADMSG : 0;
        }
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
        r = restore_cpus(io, o, hierarchy, parent, online, level + 1, &lim);
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

int cg_restore(const CgroupIO *io, Originals *originals, const CpuMask *online, bool dry_run) {
        _cleanup_free_ CgWrite *w = NULL;
        _cleanup_free_ CgWrite **order = NULL;
        _cleanup_free_ const char **values = NULL, **from = NULL;
        _cleanup_free_ int *errors = NULL;
        _cleanup_free_ bool *keep = NULL;
        size_t n = 0, left = 0;
        int r;

        if (originals->n_entries == 0)
                return 0;
        w = new0(CgWrite, originals->n_entries);
        order = new0(CgWrite *, originals->n_entries);
        values = new0(const char *, originals->n_entries);
        from = new0(const char *, originals->n_entries);
        errors = new0(int, originals->n_entries);
        keep = new0(bool, originals->n_entries);
        if (!w || !order || !values || !from || !errors || !keep)
                return -ENOMEM;

        for (size_t i = 0; i < originals->n_entries; i++) {
                const Original *e = &originals->entries[i];
                _cleanup_free_ char *cur = NULL;
                CgWrite *x = &w[n];
                char *target = NULL;

                r = io->read(io->userdata, e->hierarchy, e->group, e->file, &cur);
                if (r == -ENOENT || r == -ENODEV) {
                        log_info("%s of %s is gone, nothing to restore.", e->file, e->group);
                        continue;
                }
                if (r < 0) {
                        log_warning_errno(r, "Failed to read %s of %s, leaving its original recorded: %m", e->file,
                                          e->group);
                        keep[i] = true;
                        continue;
                }

                /* Already back (a restore that stopped half way): done. */
                if (value_holds(e->file, cur, e->original) && !value_holds(e->file, cur, e->written))
                        continue;

                bool ours = value_holds(e->file, cur, e->written);
                if (!ours && cg_file_is_cpulist(e->file)) {
                        /* The kernel drops offline CPUs from v1 cpusets: our value less those is still ours. */
                        CpuMask c, wr;

                        if (cpumask_parse_list(cur, &c) >= 0 && cpumask_parse_list(e->written, &wr) >= 0) {
                                cpumask_and(&wr, &wr, online);
                                ours = cpumask_equal(&c, &wr) && !cpumask_empty(&c);
                        }
                }
                if (!ours) {
                        log_notice("%s of %s was changed by someone else (\"%s\", peltd wrote \"%s\"); leaving it.",
                                   e->file, e->group, cur, e->written);
                        continue;
                }

                if (is_subtree_control(e->file)) {
                        /* peltd enabled controllers ("+cpuset +cpu"): disable those that were not on before. */
                        r = controllers_to_disable(e->original, e->written, &target);
                        if (r < 0)
                                return r;
                        if (!target)
                                continue;
                } else if (streq(e->file, "cpuset.cpus") && isempty(e->original)) {
                        /* v2: empty is "the parent's CPUs", and is written back as it was. */
                        target = strdup("");
                } else if (streq(e->file, "cpuset.cpus")) {
                        CpuMask m;

                        r = restore_cpus(io, originals, e->hierarchy, e->group, online, 0, &m);
                        if (r < 0)
                                return r;
                        if (cpumask_empty(&m)) {
                                log_warning("The original cpuset.cpus of %s (%s) has no online CPU its parent allows; "
                                            "leaving %s for now.", e->group, e->original, cur);
                                keep[i] = true;
                                continue;
                        }
                        target = cpumask_to_list(&m);
                } else
                        target = strdup(e->original);
                if (!target)
                        return -ENOMEM;

                if (value_holds(e->file, cur, target)) {
                        free(target);
                        continue;
                }
                /* error carries the entry's index until the writes are done. */
                *x = (CgWrite){ .hierarchy = e->hierarchy, .file = e->file, .value = target, .error = (int) i };
                x->group = strdup(e->group);
                x->old = TAKE_PTR(cur);
                if (!x->group) {
                        cg_write_done(x);
                        return -ENOMEM;
                }
                order[n] = x;
                n++;
        }

        for (size_t i = 0; i < n; i++) {
                from[i] = order[i]->old;
                values[i] = order[i]->value;
        }

        if (dry_run) {
                for (size_t i = 0; i < n; i++)
                        log_info("Would restore %s of %s to %s.", order[i]->file, order[i]->group, order[i]->value);
                for (size_t i = 0; i < n; i++)
                        cg_write_done(&w[i]);
                return 0;
        }

        /*
         * The state file is not updated step by step here: after a crash half way, a file found
         * back at its original is simply done (see above), and the rest is still peltd's.
         */
        (void) write_items(io, order, from, values, errors, n, NULL);
        for (size_t i = 0; i < n; i++) {
                if (errors[i] < 0)
                        keep[order[i]->error] = true;
                order[i]->error = errors[i];
        }
        for (size_t i = 0; i < n; i++)
                if (order[i]->error == 0) {
                        /* What the file holds now: a v2 cpuset with tasks takes its parent's CPUs for "". */
                        _cleanup_free_ char *now = NULL;

                        (void) io->read(io->userdata, order[i]->hierarchy, order[i]->group, order[i]->file, &now);
                        now = now ?: strdup(order[i]->value);
                        log_info("Restored %s of %s: %s -> %s.", order[i]->file, order[i]->group,
                                 isempty(order[i]->old) ? "(empty)" : order[i]->old, isempty(now) ? "(empty)" : now);
                } else
                        log_error_errno(order[i]->error, "Failed to restore %s of %s to %s: %m", order[i]->file,
                                        order[i]->group, order[i]->value);

        /* Forget what was restored, or is not ours to restore; keep what failed. */
        for (size_t i = originals->n_entries; i-- > 0;) {
                Original *e = &originals->entries[i];

                if (keep[i]) {
                        left++;
                        continue;
                }
                r = originals_forget(originals, e->hierarchy, e->group, e->file);
                if (r < 0) {
                        for (size_t j = 0; j < n; j++)
                                cg_write_done(&w[j]);
                        return log_error_errno(r, "Failed to update %s: %m", originals->path);
                }
        }
        for (size_t i = 0; i < n; i++)
                cg_write_done(&w[i]);
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
