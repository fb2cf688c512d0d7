/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Applying: a group's plan written (or, in a dry run, said), each change logged with its
 * structured journal fields, and every recorded original put back.
 */
#include <inttypes.h>
#include <time.h>

#include "peltd/log.h"

#include "manager-internal.h"

/* ---- Restoring -------------------------------------------------------------------------------- */

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
        localtime_r(&now, &tm);
        strftime(tbuf, sizeof tbuf, "%H:%M:%S", &tm);
        snprintf(m->last_change, sizeof m->last_change, "%s %.200s %s -> %s", tbuf, g->path, oldb, newb);
}

int manager_apply_group(Manager *m, ManagedGroup *g, const PolicyResult *res, uint64_t cur_shares) {
        Placement p = { .group = g->path, .cpus = res->cpus, .shares = res->shares_set ? res->shares : 0 };
        bool cpus_differ, shares_differ;
        CgWrite *w = NULL;
        size_t n = 0;
        CpuMask old = g->cpus;
        int r;

        cpus_differ = !cpumask_equal(&res->cpus, &g->cpus);
        shares_differ = res->shares_set && res->shares != cur_shares;
        if (!cpus_differ && !shares_differ) {
                free(g->last_intent);
                g->last_intent = NULL;
                return 0;
        }

        manager_resolve_target(m, g);
        p.target = g->target;
        p.unit = g->unit;
        r = placement_writes(&m->io, m->originals, &p, &w, &n);
        if (r < 0)
                return log_warning_errno(r, "Failed to prepare the placement of %s: %m", g->path);

        r = cg_write_batch(&m->io, m->originals, w, n, m->dry_run);
        if (r == -ENOENT || r == -ENODEV) {
                log_debug("%s vanished while being placed.", g->path);
                cg_writes_free(w, n);
                return 0;
        }

        /* Say an intended change (or a refusal) once, not every round. */
        {
                /* The whole list: a cut one would take two sets with a long common start for one intent. */
                _cleanup_free_ char *cpus = cpumask_to_list(&res->cpus), *intent = NULL;

                if (!cpus || asprintf(&intent, "%s/%" PRIu64 "/%d", cpus, p.shares, r) < 0) {
                        cg_writes_free(w, n);
                        return log_oom();
                }
                if (m->dry_run || r < 0) {
                        if (g->last_intent && streq(g->last_intent, intent)) {
                                cg_writes_free(w, n);
                                return 0;
                        }
                        free(g->last_intent);
                        g->last_intent = TAKE_PTR(intent);
                }
        }

        if (r < 0) {
                log_warning_errno(r, "Failed to place %s on CPUs %s: %m; left as it was.", g->path,
                                  fmt_cpus(&res->cpus, (char[128]){}, 128));
                cg_writes_free(w, n);
                return 0;
        }

        if (m->dry_run) {
                char demand[32];

                snprintf(demand, sizeof demand, "%.2f", res->demand / 1024.0);
                for (size_t i = 0; i < n; i++)
                        if (w[i].changed)
                                log_info("Would set %s of %s to %s: %s, demand %s CPUs: %s", w[i].file, w[i].group,
                                         w[i].value, strna(policy_to_string(res->policy)), demand, res->reason);
        } else {
                g->cpus = res->cpus;
                log_change(m, g, res, &old, cur_shares, shares_differ);
                manager_notify_status(m);
        }
        cg_writes_free(w, n);
        return 0;
}
