/* SPDX-License-Identifier: GPL-2.0-only */
/* Putting back what the state file recorded (apply-restore.h). */
#include "peltd/apply-backend.h"
#include "peltd/apply-order.h"
#include "peltd/apply-restore.h"
#include "peltd/apply-values.h"
#include "peltd/cgroup-path.h"
#include "peltd/log.h"

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

/*
 * Whether entry i may be written: a cgroup file of a group at or under cgroup_root (a systemd
 * unit's property is named by the unit, which original_check() checked). Refused: logged here.
 */
static bool entry_beneath(const Originals *o, size_t i, const char *cgroup_root) {
        const Original *e = &o->entries[i];
        ApplyTarget t;

        if (placed_target_of(e->hierarchy, &t) >= 0 && t == APPLY_SYSTEMD)
                return true;
        if (cgroup_path_under(e->group, cgroup_root))
                return true;
        log_error("%s: refusing entry %zu (%s of %s): the group is not under CgroupRoot=%s; it stays recorded.", o->path, i,
                  e->file, e->group, cgroup_root);
        return false;
}

/* The writes that put back every recorded value that is still peltd's; keep[i] for entries to keep recorded. */
static int restore_writes(const CgroupIO *io, const Originals *o, const char *cgroup_root, const CpuMask *online,
                          CgWrite *w, size_t *ret_n, bool *keep) {
        _cleanup_(parent_cache_done) ParentCache cache = {};
        size_t n = 0;
        int r;

        for (size_t i = 0; i < o->n_entries; i++) {
                Recorded rec = { .e = &o->entries[i] };
                const Original *e = rec.e;
                const PlacedPlace *p;
                _cleanup_free_ char *cur = NULL;
                char *target;

                if (!entry_beneath(o, i, cgroup_root)) {
                        keep[i] = true;
                        continue;
                }
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
        (void) cg_writes_in_order(io, order, from, values, errors, n, true);
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
                                (void) cg_write_read(io, &w[i], &now);
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
        return cg_restore_beneath(io, originals, "/", online, dry_run);
}

int cg_restore_beneath(const CgroupIO *io, Originals *originals, const char *cgroup_root, const CpuMask *online,
                       bool dry_run) {
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

        r = restore_writes(io, originals, cgroup_root, online, w, &n, keep);
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
