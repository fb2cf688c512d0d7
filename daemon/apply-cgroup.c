/* SPDX-License-Identifier: GPL-2.0-only */
#include "peltd/apply-cgroup.h"
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

/* Whether a space-separated controller list holds name. */
static bool list_has(const char *list, const char *name) {
        size_t l = strlen(name);

        for (const char *p = list; p && *p;) {
                p += strspn(p, " \t\n");
                if (strncmp(p, name, l) == 0 && (p[l] == 0 || strchr(" \t\n", p[l])))
                        return true;
                p += strcspn(p, " \t\n");
        }
        return false;
}

/*
 * Whether the file holding `current` already says `value`: CPU lists compare as sets; a
 * subtree_control write "+cpuset" / "-cpuset" is done when the controller is (not) listed.
 */
static bool value_holds(const char *file, const char *current, const char *value) {
        if (cg_file_is_cpulist(file)) {
                CpuMask a, b;

                if (cpumask_parse_list(current, &a) < 0 || cpumask_parse_list(value, &b) < 0)
                        return false;
                return cpumask_equal(&a, &b);
        }
        if (is_subtree_control(file) && (value[0] == '+' || value[0] == '-'))
                return list_has(current, value + 1) == (value[0] == '+');
        return streq(current, value);
}

static int depth(const char *group) {
        int d = 0;

        for (const char *p = group; *p; p++)
                d += *p == '/';
        return streq(group, "/") ? 0 : d;
}

/* A cpuset write that only adds CPUs (or does not change the set). */
static bool widens(const CgWrite *w) {
        CpuMask o, n;

        if (!cg_file_is_cpulist(w->file) || !w->old)
                return false;
        if (cpumask_parse_list(w->old, &o) < 0 || cpumask_parse_list(w->value, &n) < 0)
                return false;
        return cpumask_subset(&o, &n);
}

/*
 * The order the kernel accepts in the common case: controllers enabled first, then widening cpusets
 * top-down, everything that is not a cpuset, narrowing cpusets bottom-up, and controllers disabled
 * last. Returns a rank to sort by.
 */
static long rank(const CgWrite *w) {
        if (is_subtree_control(w->file))
                return (w->value[0] == '-' ? 3000000 : -3000000) + (w->value[0] == '-' ? -depth(w->group) : depth(w->group));
        if (!cg_file_is_cpulist(w->file))
                return 0;
        if (widens(w))
                return -1000000 + depth(w->group);
        return 1000000 - depth(w->group);
}

static int cmp_rank(const void *a, const void *b) {
        const CgWrite *const *x = a, *const *y = b;
        long rx = rank(*x), ry = rank(*y);

        return rx < ry ? -1 : rx > ry ? 1 : 0;
}

/* A refusal that another write of the batch may lift: a v1 child outside its parent and back. */
static bool retryable(int r) {
        return r == -EBUSY || r == -EACCES;
}

/*
 * Writes values[i] to order[i]'s file, in that order, retrying refusals while any write makes
 * progress. errors[i] gets each write's result. `before` runs before each attempt; its failure
 * fails the write. Returns the first error, or 0.
 */
static int write_ordered(const CgroupIO *io, CgWrite *const *order, const char *const *values, int *errors, size_t n,
                         int (*before)(CgWrite *w, const char *value, void *userdata), void *userdata) {
        bool progress = true;
        int first = 0;

        for (size_t i = 0; i < n; i++)
                errors[i] = -EAGAIN;

        while (progress) {
                progress = false;
                for (size_t i = 0; i < n; i++) {
                        int r;

                        if (errors[i] != -EAGAIN && !retryable(errors[i]))
                                continue;
                        r = before ? before(order[i], values[i], userdata) : 0;
                        if (r >= 0)
                                r = io->write(io->userdata, order[i]->hierarchy, order[i]->group, order[i]->file,
                                              values[i]);
                        if (r >= 0)
                                progress = true;
                        errors[i] = r < 0 ? r : 0;
                }
        }
        for (size_t i = 0; i < n; i++)
                if (errors[i] < 0 && first == 0)
                        first = errors[i];
        return first;
}

/* Before each write of a batch: record the original; no record, no write. */
static int record_original(CgWrite *w, const char *value, void *userdata) {
        Originals *o = userdata;
        int r;

        if (!o)
                return 0;
        r = originals_record(o, w->hierarchy, w->group, w->file, w->old, value);
        if (r < 0)
                return log_error_errno(r, "Failed to record the original %s of %s in %s, not writing it: %m", w->file,
                                       w->group, o->path);
        return 0;
}

/* The file holds w->old again (rolled back, or the write failed): the state file says so too. */
static void record_rollback(Originals *o, const CgWrite *w) {
        const Original *e;

        if (!o)
                return;
        e = originals_find(o, w->hierarchy, w->group, w->file);
        if (!e)
                return;
        if (value_holds(w->file, w->old, e->original))
                (void) originals_forget(o, w->hierarchy, w->group, w->file);
        else
                (void) originals_record(o, w->hierarchy, w->group, w->file, e->original, w->old);
}

int cg_write_batch(const CgroupIO *io, Originals *originals, CgWrite *w, size_t n, bool dry_run) {
        _cleanup_free_ CgWrite **order = NULL, **back = NULL;
        _cleanup_free_ const char **values = NULL, **olds = NULL;
        _cleanup_free_ int *errors = NULL, *back_errors = NULL;
        size_t m = 0, k = 0;
        int r, rb;

        order = new0(CgWrite *, MAX(n, 1u));
        back = new0(CgWrite *, MAX(n, 1u));
        values = new0(const char *, MAX(n, 1u));
        olds = new0(const char *, MAX(n, 1u));
        errors = new0(int, MAX(n, 1u));
        back_errors = new0(int, MAX(n, 1u));
        if (!order || !back || !values || !olds || !errors || !back_errors)
                return -ENOMEM;

        /* Read everything first: a vanished group or a value that would empty a cpuset stops the batch untouched. */
        for (size_t i = 0; i < n; i++) {
                w[i].changed = false;
                w[i].error = 0;
                free(w[i].old);
                w[i].old = NULL;
                if (streq(w[i].file, "cpuset.cpus")) {
                        CpuMask v;

                        if (cpumask_parse_list(w[i].value, &v) < 0 || cpumask_empty(&v))
                                return log_error_errno(EINVAL, "Refusing to write \"%s\" to cpuset.cpus of %s.",
                                                       w[i].value, w[i].group);
                }
                r = io->read(io->userdata, w[i].hierarchy, w[i].group, w[i].file, &w[i].old);
                if (r < 0)
                        return w[i].error = r;
                if (!value_holds(w[i].file, w[i].old, w[i].value))
                        order[m++] = &w[i];
        }
        if (m == 0)
                return 0;

        qsort(order, m, sizeof *order, cmp_rank);
        for (size_t i = 0; i < m; i++) {
                values[i] = order[i]->value;
                order[i]->changed = true;
        }
        if (dry_run)
                return 0;

        r = write_ordered(io, order, values, errors, m, record_original, originals);
        for (size_t i = 0; i < m; i++) {
                order[i]->error = errors[i];
                order[i]->changed = errors[i] == 0;
                /* Recorded, then refused: the file still holds what it held. */
                if (errors[i] < 0)
                        record_rollback(originals, order[i]);
        }
        if (r == 0)
                return 0;

        /* All or nothing: put back what was written, in the reverse order. */
        for (size_t i = m; i-- > 0;)
                if (order[i]->changed) {
                        back[k] = order[i];
                        olds[k] = order[i]->old;
                        k++;
                }
        rb = write_ordered(io, back, olds, back_errors, k, NULL, NULL);
        for (size_t i = 0; i < k; i++)
                if (back_errors[i] == 0) {
                        back[i]->changed = false;
                        record_rollback(originals, back[i]);
                }
        if (rb < 0)
                log_error_errno(rb, "Failed to roll back changes to %s: %m; the state file keeps the originals.",
                                w[0].group);
        return r;
}

int cg_restore(const CgroupIO *io, Originals *originals, const CpuMask *online, bool dry_run) {
        _cleanup_free_ CgWrite *w = NULL;
        _cleanup_free_ CgWrite **order = NULL;
        _cleanup_free_ const char **values = NULL;
        _cleanup_free_ int *errors = NULL;
        _cleanup_free_ bool *keep = NULL;
        size_t n = 0, left = 0;
        int r;

        if (originals->n_entries == 0)
                return 0;
        w = new0(CgWrite, originals->n_entries);
        order = new0(CgWrite *, originals->n_entries);
        values = new0(const char *, originals->n_entries);
        errors = new0(int, originals->n_entries);
        keep = new0(bool, originals->n_entries);
        if (!w || !order || !values || !errors || !keep)
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
                        const char *ctl = e->written + 1;

                        /* peltd enabled a controller: disable it again only if it was not on before. */
                        if (e->written[0] != '+' || list_has(e->original, ctl))
                                continue;
                        if (asprintf(&target, "-%s", ctl) < 0)
                                return -ENOMEM;
                } else if (streq(e->file, "cpuset.cpus")) {
                        CpuMask m;

                        /* Offline CPUs cannot be written back; the daemon re-widens when they return. */
                        if (cpumask_parse_list(e->original, &m) < 0)
                                m = *online;
                        cpumask_and(&m, &m, online);
                        if (cpumask_empty(&m)) {
                                log_warning("The original cpuset.cpus of %s (%s) has no online CPU; leaving %s for now.",
                                            e->group, e->original, cur);
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

        qsort(order, n, sizeof *order, cmp_rank);
        for (size_t i = 0; i < n; i++)
                values[i] = order[i]->value;

        if (dry_run) {
                for (size_t i = 0; i < n; i++)
                        log_info("Would restore %s of %s to %s.", order[i]->file, order[i]->group, order[i]->value);
                for (size_t i = 0; i < n; i++)
                        cg_write_done(&w[i]);
                return 0;
        }

        (void) write_ordered(io, order, values, errors, n, NULL, NULL);
        for (size_t i = 0; i < n; i++) {
                if (errors[i] < 0)
                        keep[order[i]->error] = true;
                order[i]->error = errors[i];
        }
        for (size_t i = 0; i < n; i++)
                if (order[i]->error == 0)
                        log_info("Restored %s of %s: %s -> %s.", order[i]->file, order[i]->group, order[i]->old,
                                 order[i]->value);
                else
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
