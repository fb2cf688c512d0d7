/* SPDX-License-Identifier: GPL-2.0-only */
#include "peltd/policy.h"

#include "policy-choose.h"
#include "policy-classify.h"
#include "policy-contention.h"
#include "policy-internal.h"
#include "policy-place.h"
#include "policy-stability.h"

/*
 * One round of placement:
 *
 *   1. per group: its demand (the maximum util over the last rounds; runnable where it waits for
 *      CPU), its candidate CPUs (online, not isolated, not held by another owner, inside the allowed
 *      CPUs and the NUMA nodes of cpuset.mems, on asymmetric machines inside the classes its biggest
 *      task fits), and how it is placed: left alone (owned elsewhere among other reasons), spread
 *      (performance), packed (power) or chosen by energy (balanced);
 *   2. the load of groups left alone and of spread groups is laid down first (per-CPU util, as the
 *      energy model spreads it), so that packing sees what is already there;
 *   3. packed and chosen groups are placed in order, each on top of the ones before;
 *   4. with history, packed groups are judged again against the whole plan, and the stability
 *      rules turn each proposal into the set actually planned (policy_place_with_history()).
 */

/*
 * Step 3 with the choice each group made last round (balanced on asymmetric machines) from its
 * history, where this round's choice is kept for the next.
 */
static int choose_with_history(Planner *p, GroupPlan *gps, size_t n, PolicyHistory *history) {
        _cleanup_free_ int *previous = new0(int, MAX(n, 1u));
        int r;

        if (!previous)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                previous[i] = history && history[i].choice != POLICY_CHOICE_NONE ?
                                history[i].choice == POLICY_CHOICE_PACKED : -1;
        r = policy_choose(p, gps, n, previous);
        if (r < 0)
                return r;
        for (size_t i = 0; history && i < n; i++)
                history[i].choice = gps[i].mode != PLACE_CHOOSE ? POLICY_CHOICE_NONE :
                                    gps[i].packed ? POLICY_CHOICE_PACKED : POLICY_CHOICE_SPREAD;
        return 0;
}

int policy_plan(
                const Topology *t,
                const PolicyGroup *groups,
                size_t n,
                const PolicyParams *params,
                PolicyHistory *history,
                usec_t now,
                PolicyResult *ret) {

        _cleanup_free_ GroupPlan *gps = NULL;
        _cleanup_(planner_done) Planner p = {};
        int r;

        r = planner_init(&p, t, params);
        if (r < 0)
                return r;
        gps = new0(GroupPlan, MAX(n, 1u));
        if (!gps)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++)
                policy_classify(&p, &groups[i], history ? &history[i] : NULL, now, &gps[i], &ret[i]);

        /* What is already there: groups left alone on their current sets, then the spread ones. */
        policy_lay_down_base(&p, groups, gps, ret, n);
        /* Packed and chosen groups, in order, each on top of what is there. */
        memcpy(p.base_util, p.cpu_util, sizeof(double) * t->n_cpus);
        memcpy(p.base_energy, p.cpu_energy, sizeof(double) * t->n_cpus);
        r = choose_with_history(&p, gps, n, history);
        if (r < 0)
                return r;

        if (history) {
                r = policy_place_with_history(&p, groups, gps, history, n, now, ret);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                if (!ret[i].managed)
                        continue;
                if (!history)
                        ret[i].cpus = gps[i].proposal;
                memcpy(ret[i].reason, gps[i].reason, sizeof ret[i].reason);
                reason_append(ret[i].reason, "%s", gps[i].note);
        }

        return policy_explain_contention(&p, gps, ret, n);
}

bool policy_history_at_rest(const PolicyHistory *h, const PolicyGroup *g) {
        if (!h->seen || h->held_rounds > 0 || h->bounced || h->choice != POLICY_CHOICE_NONE ||
            h->n_util < POLICY_UTIL_SAMPLES)
                return false;
        for (unsigned k = 0; k < POLICY_UTIL_SAMPLES; k++)
                if (h->util[k] != g->util)
                        return false;
        return true;
}

int policy_plan_energy(
                const Topology *t,
                const EnergyModel *m,
                const PolicyGroup *groups,
                const PolicyResult *results,
                size_t n,
                double *ret) {

        _cleanup_free_ double *util = new0(double, MAX(t->n_cpus, 1u));

        if (!util)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                energy_spread(t, &results[i].cpus, groups[i].util, util);
        *ret = energy_estimate(t, m, util);
        return 0;
}
