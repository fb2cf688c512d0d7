/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Writes of placed values, in an order the kernel accepts (apply-order.h): the engine a batch, its
 * rollback and a restore all write through.
 */
#include "peltd/apply-backend.h"
#include "peltd/apply-order.h"
#include "peltd/macro.h"

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

void cg_writes_free(CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                cg_write_done(&w[i]);
        free(w);
}

bool cg_write_holds(const CgWrite *w, const char *current, const char *value) {
        return w->pv->kind->holds(current, value);
}

int cg_write_read(const CgroupIO *io, const CgWrite *w, char **ret) {
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

        if (cg_write_holds(w, from, to))
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
 * Takes items[i]'s file from from[i] to to[i], in an order the kernel accepts, retrying refusals
 * while any write makes progress; back: the values go back to what the files held (a rollback, a
 * restore: the backends' restore). errors[i] gets each item's result. Nothing is recorded here:
 * the records of these values are saved before (cg_batch_record(), originals_commit()). Returns
 * the first error, or 0.
 */
int cg_writes_in_order(const CgroupIO *io, CgWrite *const *items, const char *const *from, const char *const *to,
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
