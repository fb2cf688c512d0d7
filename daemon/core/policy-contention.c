/* SPDX-License-Identifier: GPL-2.0-only */
#include <inttypes.h>
#include <math.h>

#include "peltd/pelt.h"
#include "policy-contention.h"

/*
 * Under contention a group gets what its shares win, not what it wants. Where more demand lies on a
 * group's CPUs than they fit, estimate that (seed 009): each group's shares are split over its CPUs
 * in proportion to its load there (pelt_shares_split()), and on each CPU a group gets the CPU's
 * capacity in proportion to its part of the shares present. The estimate goes into the reason.
 */
int policy_explain_contention(const Planner *p, const GroupPlan *gps, PolicyResult *ret, size_t n) {
        const Topology *t = p->t;
        size_t nc = MAX(t->n_cpus, 1u);
        _cleanup_free_ double *load = NULL, *present = NULL;
        _cleanup_free_ uint64_t *split = NULL, *iload = NULL;
        _cleanup_free_ bool *contended = new0(bool, MAX(n, 1u));
        bool any = false;

        if (!contended)
                return -ENOMEM;
        /* Contended: the demand on a managed group's set does not fit it. */
        for (size_t i = 0; i < n; i++) {
                contended[i] = ret[i].managed &&
                               !util_fits_capacity(load_on(t, p->cpu_util, &ret[i].cpus), energy_set_capacity(t, &ret[i].cpus));
                any = any || contended[i];
        }
        if (!any)
                return 0;

        load = new0(double, n * nc);
        split = new0(uint64_t, n * nc);
        iload = new0(uint64_t, nc);
        present = new0(double, nc);
        if (!load || !split || !iload || !present)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                energy_spread(t, &ret[i].cpus, gps[i].demand, load + i * nc);
                for (size_t k = 0; k < t->n_cpus; k++)
                        iload[k] = (uint64_t) llround(load[i * nc + k]);
                pelt_shares_split(MAX(ret[i].shares, (uint64_t) PELT_MIN_SHARES), iload, t->n_cpus, split + i * nc);
                for (size_t k = 0; k < t->n_cpus; k++)
                        if (load[i * nc + k] > 0)
                                present[k] += (double) split[i * nc + k];
        }
        for (size_t i = 0; i < n; i++) {
                double fair = 0;

                if (!contended[i])
                        continue;
                for (size_t k = 0; k < t->n_cpus; k++)
                        if (cpumask_test(&ret[i].cpus, t->cpus[k].cpu) && load[i * nc + k] > 0 && present[k] > 0)
                                fair += t->cpus[k].capacity * (double) split[i * nc + k] / present[k];
                if (fair >= gps[i].demand)
                        continue;
                reason_append(ret[i].reason, "; contended: its shares (%" PRIu64 ") win it about %.1f of the %.1f CPUs it wants",
                              ret[i].shares, cpus_of(fair), cpus_of(gps[i].demand));
        }
        return 0;
}
