/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Applying: a group's plan written (or, in a dry run, said), each change logged with its
 * structured journal fields, and every recorded original put back.
 */
#include <inttypes.h>

#include "peltd/apply-values.h"
#include "peltd/log.h"
#include "peltd/parse.h"

#include "manager-internal.h"

/* ---- Restoring -------------------------------------------------------------------------------- */

uint64_t manager_original_shares(const Manager *m, const ManagedGroup *g) {
        uint64_t shares = 0;

        for (size_t i = 0; i < m->originals->n_entries; i++) {
                const Original *e = &m->originals->entries[i];
                ApplyTarget t;
                uint64_t v;

                if (!streq(e->group, g->path) || safe_atou64(e->original, &v) < 0 ||
                    placed_value_at(e->hierarchy, e->file, &t) != &placed_values[PLACED_SHARES])
                        continue;
                /* v1 keeps cpu.shares; v2's cpu.weight and systemd's CPUWeight= are weights. */
                shares = t == APPLY_V1 ? v : cgroup_weight_to_shares(v);
        }
        return shares;
}

int manager_restore_all(Manager *m, const char *why) {
        int r;

        if (m->originals->n_entries == 0)
                return 0;
        /* A group renamed since the last task round is put back where it is now. */
        manager_follow_renames(m);
        log_info("Restoring %zu recorded original values (%s)%s.", m->originals->n_entries, why,
                 m->dry_run ? "; dry run: only saying what would be restored" : "");
        /* Only what lies under CgroupRoot=: an entry for any other group is refused (and kept). */
        r = cg_restore_beneath(&m->io, m->originals, m->config->cgroup_root, &m->topology->online, m->dry_run);
        if (r < 0)
                return log_error_errno(r, "Failed to restore the original values: %m");
        if (r > 0)
                log_error("%d original values could not be restored; they stay recorded in %s.", r, m->config->state_file);
        return r;
}

/* ---- Applying --------------------------------------------------------------------------------- */

static void log_change(const ManagedGroup *g, const PolicyResult *res, const CpuMask *old_cpus, uint64_t old_shares,
                       bool shares_changed) {
        char oldb[128], newb[128], demand[32], shares[64], f_group[4200], f_cpus[160], f_old[160], f_policy[64],
                f_demand[64], f_shares[64], f_reason[POLICY_REASON_MAX + 32];
        const char *fields[] = { f_group, f_cpus, f_old, f_policy, f_demand, f_shares, f_reason, NULL };

        fmt_cpus(old_cpus, oldb, sizeof oldb);
        if (cpumask_empty(old_cpus))
                strcpy(oldb, "(none)");
        fmt_cpus(&res->cpus, newb, sizeof newb);
        snprintf(demand, sizeof demand, "%.2f", res->demand / 1024.0);
        if (shares_changed)
                snprintf(shares, sizeof shares, ", shares %" PRIu64 " -> %" PRIu64, old_shares, res->shares);
        else
                shares[0] = 0;

        snprintf(f_group, sizeof f_group, "PELTD_GROUP=%s", g->path);
        snprintf(f_cpus, sizeof f_cpus, "PELTD_CPUS=%s", newb);
        snprintf(f_old, sizeof f_old, "PELTD_OLD_CPUS=%s", oldb);
        snprintf(f_policy, sizeof f_policy, "PELTD_POLICY=%s", strna(policy_to_string(res->policy)));
        snprintf(f_demand, sizeof f_demand, "PELTD_DEMAND=%s", demand);
        snprintf(f_shares, sizeof f_shares, "PELTD_SHARES=%" PRIu64, res->shares);
        snprintf(f_reason, sizeof f_reason, "PELTD_REASON=%s", res->reason);

        log_struct(LOG_INFO, fields, "%s: CPUs %s -> %s%s (%s, demand %s CPUs): %s", g->path, oldb, newb, shares,
                   strna(policy_to_string(res->policy)), demand, res->reason);
}

/*
 * What a group's retry state is keyed on: the planned CPUs and shares, and the online CPUs they
 * were planned on. A reload resets it, a group made again starts afresh.
 */
static char *retry_key(Manager *m, const PolicyResult *res, uint64_t shares) {
        _cleanup_free_ char *cpus = cpumask_to_list(&res->cpus), *online = cpumask_to_list(&m->topology->online);
        char *k;

        if (!cpus || !online || asprintf(&k, "%s/%" PRIu64 " online %s", cpus, shares, online) < 0)
                return NULL;
        return k;
}

/*
 * A placement that failed: said once per episode, here, with the file, the value and the error,
 * and tried again after a growing wait (transient) or not until something changes (permanent).
 */
static void note_failure(Manager *m, ManagedGroup *g, const char *key, int r, const CgWrite *f, const char *child,
                         const CpuMask *cpus) {
        char buf[128];
        CgErrorClass c = cg_error_class(r);

        if (c == CG_ERROR_GONE && !child) {
                log_debug_errno(r, "%s vanished while being placed: %m", g->path);
                return;
        }
        m->placement_errors++;
        if (child) {
                /* A child cpuset that keeps none of its CPUs: it may change, or go. */
                if (cg_retry_failed(&g->retry, key, r, CG_ERROR_TRANSIENT))
                        log_notice("Leaving %s alone: its child %s has its own cpuset outside CPUs %s.", g->path, child,
                                   fmt_cpus(cpus, buf, sizeof buf));
                return;
        }
        if (!cg_retry_failed(&g->retry, key, r, c))
                return;
        if (f)
                log_warning_errno(r, "Failed to write \"%s\" to %s of %s: %m; %s left as it was, %s.", f->value, f->file,
                                  f->group, g->path,
                                  c == CG_ERROR_PERMANENT ? "not trying again until its plan, the configuration or the CPUs change"
                                                          : "trying again later");
        else
                log_warning_errno(r, "Failed to place %s on CPUs %s: %m; left as it was, %s.", g->path,
                                  fmt_cpus(cpus, buf, sizeof buf),
                                  c == CG_ERROR_PERMANENT ? "not trying again until its plan, the configuration or the CPUs change"
                                                          : "trying again later");
}

/* Remembers the files of a written batch that peltd has a record of: what the drift checks read. */
static void note_placed(Manager *m, ManagedGroup *g, const CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++) {
                PlacedFile *p;
                bool known = false;

                /* A parent's subtree_control is not the group's: its siblings need it as much. */
                if (!w[i].changed || placed_value_at(w[i].hierarchy, w[i].file, NULL) == &placed_values[PLACED_CONTROLLERS] ||
                    !originals_find(m->originals, w[i].hierarchy, w[i].group, w[i].file))
                        continue;
                for (size_t j = 0; j < g->n_placed && !known; j++)
                        known = streq(g->placed[j].group, w[i].group) && streq(g->placed[j].file, w[i].file) &&
                                streq(g->placed[j].hierarchy, w[i].hierarchy);
                if (known)
                        continue;
                p = realloc(g->placed, (g->n_placed + 1) * sizeof *p);
                if (!p)
                        return; /* not checked for drift; still restored */
                g->placed = p;
                p[g->n_placed] = (PlacedFile){ .hierarchy = w[i].hierarchy, .file = w[i].file, .group = strdup(w[i].group) };
                if (p[g->n_placed].group)
                        g->n_placed++;
        }
}

/* A group's placement in the making this round: its batch, read, recorded, then written. */
typedef struct Pending {
        ManagedGroup *g;
        const PolicyResult *res;
        uint64_t cur_shares;
        bool shares_differ;
        char *key;
        CgWrite *w;
        size_t n;
} Pending;

static void pending_done(Pending *p) {
        free(p->key);
        cg_writes_free(p->w, p->n);
        *p = (Pending){};
}

/*
 * What a group needs this round: nothing (it holds its plan, or a dry run said it already, or a
 * refusal waits), or a batch read and ready to be recorded (returns 1). Failures are noted here.
 */
static int prepare(Manager *m, Pending *p) {
        ManagedGroup *g = p->g;
        const PolicyResult *res = p->res;
        Placement pl = { .group = g->path, .cpus = res->cpus, .shares = res->shares_set ? res->shares : 0 };
        _cleanup_free_ char *child = NULL;
        bool cpus_differ;
        int r;

        if (g->owner != OWNER_NONE)
                return 0; /* owned elsewhere: never written (manager-owners.c) */
        cpus_differ = !cpumask_equal(&res->cpus, &g->cpus);
        /* cur_shares is what the file reads (v2: a weight, as shares), so compare it with what a write gives. */
        p->shares_differ = res->shares_set &&
                           cgroup_shares_read_back(m->fs->mode == CGROUP_MODE_V2, res->shares) != p->cur_shares;
        if (!cpus_differ && !p->shares_differ && !g->drift) {
                free(g->last_intent);
                g->last_intent = NULL;
                cg_retry_done(&g->retry); /* the group holds its plan: whatever failed is over */
                return 0;
        }

        /* After a reload the target is resolved again, and what failed before is tried again. */
        if (!g->target_known)
                cg_retry_done(&g->retry);
        manager_resolve_target(m, g);
        pl.target = g->target;
        pl.unit = g->unit;

        p->key = retry_key(m, res, pl.shares);
        if (!p->key)
                return log_oom();
        /* A dry run's intent is said once: the same plan again reads nothing. */
        if (m->dry_run && g->last_intent && streq(g->last_intent, p->key))
                return 0;
        if (!cg_retry_due(&g->retry, p->key))
                return 0;

        r = placement_writes(&m->io, m->originals, &pl, &p->w, &p->n, &child);
        if (r < 0) {
                note_failure(m, g, p->key, r, NULL, child, &res->cpus);
                return 0;
        }
        r = cg_batch_read(&m->io, p->w, p->n);
        if (r < 0) {
                note_failure(m, g, p->key, r, cg_batch_failure(p->w, p->n), NULL, &res->cpus);
                return 0;
        }
        return 1;
}

/* A dry run's intended writes, said once per plan. */
static void say_intent(ManagedGroup *g, Pending *p) {
        char demand[32];

        if (g->last_intent && streq(g->last_intent, p->key))
                return;
        free(g->last_intent);
        g->last_intent = TAKE_PTR(p->key);
        snprintf(demand, sizeof demand, "%.2f", p->res->demand / 1024.0);
        for (size_t i = 0; i < p->n; i++)
                if (p->w[i].changed)
                        log_info("Would set %s of %s to %s: %s, demand %s CPUs: %s", p->w[i].file, p->w[i].group,
                                 p->w[i].value, strna(policy_to_string(p->res->policy)), demand, p->res->reason);
}

/*
 * A batch written (or found in place): the group holds its plan now. Returns whether that is a
 * change of placement, logged and described in *ret_change. A plan placed again after someone
 * else's write is not: the drift check said so, once an episode.
 */
static bool placed(Manager *m, Pending *p, AppliedChange *ret_change) {
        ManagedGroup *g = p->g;
        const PolicyResult *res = p->res;
        CpuMask old = g->cpus;
        uint64_t shares = res->shares_set ? res->shares : 0;
        bool again = g->drift && g->applied && cpumask_equal(&g->applied_cpus, &res->cpus) && shares == g->applied_shares;
        unsigned failures;

        failures = cg_retry_succeeded(&g->retry);
        if (failures > 0)
                log_info("%s placed after %u failed tries.", g->path, failures);
        g->drift = false;
        note_placed(m, g, p->w, p->n);
        if (!cpumask_equal(&g->cpus, &res->cpus))
                g->info_gen++;
        /* Its shares and cpuset are read again at the next round, not only at the next task round. */
        if (m->sampling && cg_batch_changed(p->w, p->n))
                sampling_refresh_group(m->sampling, g->path);
        g->cpus = res->cpus;
        g->applied = true;
        g->applied_cpus = res->cpus;
        g->applied_shares = shares;
        if (again)
                return false;
        log_change(g, res, &old, p->cur_shares, p->shares_differ);
        *ret_change = (AppliedChange){ .group = g, .res = res, .old_cpus = old, .old_shares = p->cur_shares };
        return true;
}

/*
 * The state file could not take the round's records: nothing of the round is written, for any
 * group, and the records staged for it are taken back (mark: where they start). What memory held
 * before the round (a record dropped or changed since the last save) stays, unsaved, so that the
 * next round's commit saves it before any write. Said once an episode, counted once a round (one
 * write failed: the state file's); the groups' own retry states are left alone, so that the round
 * after the state file takes a save places them.
 */
static void record_failed(Manager *m, Pending *p, size_t k, size_t mark, int r) {
        originals_rollback_to(m->originals, mark);
        if (m->record_error == 0)
                log_error_errno(r, "Cannot save the state file %s: %m; placing nothing until it can.", m->config->state_file);
        m->record_error = r;
        m->placement_errors++; /* the write of the state file, once a round */
        for (size_t i = 0; i < k; i++)
                if (cg_batch_changed(p[i].w, p[i].n)) {
                        cg_batch_unrecorded(p[i].w, p[i].n, r);
                        pending_done(&p[i]);
                }
}

/*
 * The records of the k batches, saved with one write of the state file before any write (with
 * whatever else changed in memory since the last save: the drift checks, renames, groups made
 * again). No change without its record: when the save fails, nothing of the round is written.
 */
static void record(Manager *m, Pending *p, size_t k) {
        size_t mark = originals_mark(m->originals);
        bool dirty;
        int r = 0;

        for (size_t i = 0; i < k && r >= 0; i++)
                r = cg_batch_record(m->originals, p[i].w, p[i].n);
        dirty = originals_dirty(m->originals);
        if (r >= 0)
                r = originals_commit(m->originals);
        if (r < 0) {
                record_failed(m, p, k, mark, r);
                return;
        }
        if (m->record_error < 0 && dirty) {
                log_info("The state file %s can be saved again; placing groups again.", m->config->state_file);
                m->record_error = 0;
        }
}

int manager_apply_plans(Manager *m, ManagedGroup *const *groups, const PolicyResult *const *res,
                        const uint64_t *cur_shares, size_t n, AppliedChange **ret_changes, size_t *ret_n_changes) {
        _cleanup_free_ Pending *p = new0(Pending, MAX(n, 1u));
        _cleanup_free_ AppliedChange *changes = NULL;
        size_t k = 0, n_changes = 0;
        bool failed = false;
        int r;

        if (!p)
                return -ENOMEM;
        /* Every group's batch read first; the dry run says what it would write. */
        for (size_t i = 0; i < n; i++) {
                p[k] = (Pending){ .g = groups[i], .res = res[i], .cur_shares = cur_shares[i] };
                if (prepare(m, &p[k]) <= 0) {
                        pending_done(&p[k]);
                        continue;
                }
                if (m->dry_run) {
                        (void) cg_retry_succeeded(&p[k].g->retry);
                        say_intent(p[k].g, &p[k]);
                        pending_done(&p[k]);
                        continue;
                }
                k++;
        }
        /* Room for what the writes change, before anything is recorded or written. */
        if (k > 0) {
                changes = new0(AppliedChange, k);
                if (!changes) {
                        for (size_t i = 0; i < k; i++)
                                pending_done(&p[i]);
                        return -ENOMEM;
                }
        }

        /* Then the records of all of them, then the writes. */
        record(m, p, k);
        for (size_t i = 0; i < k; i++) {
                if (!p[i].g)
                        continue;
                r = cg_batch_write(&m->io, m->originals, p[i].w, p[i].n);
                if (r < 0) {
                        note_failure(m, p[i].g, p[i].key, r, cg_batch_failure(p[i].w, p[i].n), NULL, &p[i].res->cpus);
                        failed = true;
                } else if (placed(m, &p[i], &changes[n_changes]))
                        n_changes++;
                pending_done(&p[i]);
        }

        /* A rollback changed records (a file back at its original, or not): saved now, not at the next change. */
        if (failed && originals_dirty(m->originals)) {
                r = originals_commit(m->originals);
                if (r < 0)
                        log_debug_errno(r, "Failed to save %s after a rollback, the next change saves it: %m",
                                        m->config->state_file);
        }
        *ret_changes = TAKE_PTR(changes);
        *ret_n_changes = n_changes;
        return 0;
}
