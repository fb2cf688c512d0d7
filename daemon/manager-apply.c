/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Applying: a group's plan written (or, in a dry run, said), each change logged with its
 * structured journal fields, and every recorded original put back.
 */
#include <inttypes.h>
#include <time.h>

#include "peltd/log.h"
#include "peltd/parse.h"

#include "manager-internal.h"

/* ---- Restoring -------------------------------------------------------------------------------- */

int state_open(const char *path, bool running_daemon, int *ret_lock, Originals **ret) {
        _cleanup_close_ int fd = -1;
        const char *why = "is not trusted";
        int r;

        /* One daemon (or --restore) at a time. */
        fd = originals_lock_checked(path, &why);
        if (fd == -EBUSY) {
                if (running_daemon)
                        return log_error_errno(fd, "Another peltd (or peltd --restore) holds %s.lock; exiting.", path);
                return log_error_errno(fd, "peltd is running (it holds %s.lock): stop it, and it restores everything itself.",
                                       path);
        }
        if (fd == -EPERM || fd == -ELOOP)
                return log_error_errno(fd, "Refusing the state file %s: it or its directory or lock %s.", path, why);
        if (fd < 0)
                return log_error_errno(fd, "Failed to lock %s.lock: %m", path);

        r = originals_load_checked(path, ret, &why);
        if (r == -EBADMSG)
                return log_error_errno(r, "%s is not a peltd state file; move it away to start.", path);
        if (r == -EPERM || r == -ELOOP)
                return log_error_errno(r, "Refusing the state file %s: it %s.", path, why);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", path);
        for (size_t i = 0; i < (*ret)->n_refused; i++)
                log_error("%s: refusing an entry that peltd never writes (%s).", path, (*ret)->refused[i]);
        *ret_lock = TAKE_FD(fd);
        return 0;
}

uint64_t manager_original_shares(const Manager *m, const ManagedGroup *g) {
        const char *file = m->fs->mode == CGROUP_MODE_V2 ? "cpu.weight" : "cpu.shares";
        uint64_t shares = 0;

        for (size_t i = 0; i < m->originals->n_entries; i++) {
                const Original *e = &m->originals->entries[i];
                uint64_t v;

                if (!streq(e->group, g->path) || safe_atou64(e->original, &v) < 0)
                        continue;
                if (streq(e->file, file))
                        shares = m->fs->mode == CGROUP_MODE_V2 ? cgroup_weight_to_shares(v) : v;
                else if (streq(e->file, "CPUWeight"))
                        shares = cgroup_weight_to_shares(v);
        }
        return shares;
}

int manager_restore_all(Manager *m, const char *why) {
        int r;

        if (m->originals->n_entries == 0)
                return 0;
        log_info("Restoring %zu recorded original values (%s)%s.", m->originals->n_entries, why,
                 m->dry_run ? "; dry run: only saying what would be restored" : "");
        r = cg_restore(&m->io, m->originals, &m->topology->online, m->dry_run);
        if (r < 0)
                return log_error_errno(r, "Failed to restore the original values: %m");
        if (r > 0)
                log_error("%d original values could not be restored; they stay recorded in %s.", r, m->config->state_file);
        return r;
}

/* ---- Applying --------------------------------------------------------------------------------- */

static void log_change(Manager *m, ManagedGroup *g, const PolicyResult *res, const CpuMask *old_cpus,
                       uint64_t old_shares, bool shares_changed) {
        char oldb[128], newb[128], demand[32], shares[64], f_group[4200], f_cpus[160], f_old[160], f_policy[64],
                f_demand[64], f_shares[64], f_reason[POLICY_REASON_MAX + 32];
        const char *fields[] = { f_group, f_cpus, f_old, f_policy, f_demand, f_shares, f_reason, NULL };
        char tbuf[32];
        time_t now = time(NULL);
        struct tm tm;

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

        m->n_changes++;
        manager_bus_placement_changed(m, g, old_cpus, old_shares, res);
        localtime_r(&now, &tm);
        strftime(tbuf, sizeof tbuf, "%H:%M:%S", &tm);
        snprintf(m->last_change, sizeof m->last_change, "%s %.200s %s -> %s", tbuf, g->path, oldb, newb);
}

/*
 * What a group's retry state is keyed on: the planned CPUs and shares, and the online CPUs they
 * were planned on. A reload resets it (manager_apply_group()), a group made again starts afresh.
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
        if (f && f->unrecorded) {
                /* The state file's directory full or unwritable: nothing changes without a record. */
                if (m->record_error != r)
                        log_error_errno(r, "Failed to record originals in %s: %m; changing no group until it works.",
                                        m->config->state_file);
                m->record_error = r;
                (void) cg_retry_failed(&g->retry, key, r, CG_ERROR_TRANSIENT);
                return;
        }
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

int manager_apply_group(Manager *m, ManagedGroup *g, const PolicyResult *res, uint64_t cur_shares) {
        Placement p = { .group = g->path, .cpus = res->cpus, .shares = res->shares_set ? res->shares : 0 };
        _cleanup_free_ char *key = NULL, *child = NULL;
        bool cpus_differ, shares_differ;
        CgWrite *w = NULL;
        size_t n = 0;
        CpuMask old = g->cpus;
        unsigned failures;
        int r;

        cpus_differ = !cpumask_equal(&res->cpus, &g->cpus);
        /* cur_shares is what the file reads (v2: a weight, as shares), so compare it with what a write gives. */
        shares_differ = res->shares_set &&
                        cgroup_shares_read_back(m->fs->mode == CGROUP_MODE_V2, res->shares) != cur_shares;
        if (!cpus_differ && !shares_differ) {
                free(g->last_intent);
                g->last_intent = NULL;
                cg_retry_done(&g->retry); /* the group holds its plan: whatever failed is over */
                return 0;
        }

        /* After a reload the target is resolved again, and what failed before is tried again. */
        if (!g->target_known)
                cg_retry_done(&g->retry);
        manager_resolve_target(m, g);
        p.target = g->target;
        p.unit = g->unit;

        key = retry_key(m, res, p.shares);
        if (!key)
                return log_oom();
        if (!cg_retry_due(&g->retry, key))
                return 0;

        r = placement_writes(&m->io, m->originals, &p, &w, &n, &child);
        if (r < 0) {
                note_failure(m, g, key, r, NULL, child, &res->cpus);
                return 0;
        }

        r = cg_write_batch(&m->io, m->originals, w, n, m->dry_run);
        if (r < 0) {
                note_failure(m, g, key, r, cg_batch_failure(w, n), NULL, &res->cpus);
                cg_writes_free(w, n);
                return 0;
        }
        if (m->record_error < 0 && !m->dry_run && cg_batch_changed(w, n)) {
                log_info("The state file %s can be written again.", m->config->state_file);
                m->record_error = 0;
        }
        failures = cg_retry_succeeded(&g->retry);

        if (m->dry_run) {
                char demand[32];

                /* Say an intended change once, not every round. The key holds the whole CPU list. */
                if (!g->last_intent || !streq(g->last_intent, key)) {
                        free(g->last_intent);
                        g->last_intent = TAKE_PTR(key);
                        snprintf(demand, sizeof demand, "%.2f", res->demand / 1024.0);
                        for (size_t i = 0; i < n; i++)
                                if (w[i].changed)
                                        log_info("Would set %s of %s to %s: %s, demand %s CPUs: %s", w[i].file,
                                                 w[i].group, w[i].value, strna(policy_to_string(res->policy)), demand,
                                                 res->reason);
                }
        } else {
                if (failures > 0)
                        log_info("%s placed after %u failed tries.", g->path, failures);
                g->cpus = res->cpus;
                log_change(m, g, res, &old, cur_shares, shares_differ);
                manager_notify_status(m);
        }
        cg_writes_free(w, n);
        return 0;
}
