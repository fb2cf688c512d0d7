/* SPDX-License-Identifier: GPL-2.0-only */
#include <inttypes.h>

#include "policy-classify.h"

/* The deepest idle state's target residency over a set, or the article's 100 µs when unknown. */
static usec_t burst_threshold(const Topology *t, const CpuMask *m) {
        usec_t r = 0;

        CPUMASK_FOREACH(cpu, m) {
                int i = energy_cpu_index(t, cpu);

                if (i >= 0)
                        r = MAX(r, t->cpus[i].idle_residency_usec);
        }
        return r > 0 ? r : POLICY_DEFAULT_BURST_USEC;
}

/* Whether a group can run where it is: on an online CPU (isolated ones run tasks too). */
static bool has_online(const Planner *p, const CpuMask *cpus) {
        return cpumask_intersects(cpus, &p->t->online);
}

/* The operator's Shares= and Policy= where set; else the group's shares and the daemon's policy. */
static void classify_overrides(const Planner *p, const PolicyGroup *g, GroupPlan *gp, PolicyResult *r) {
        const GroupConfig *c = g->config;

        *gp = (GroupPlan){ .mode = PLACE_LEAVE, .min_cpus = c ? c->min_cpus : 0 };
        *r = (PolicyResult){ .cpus = g->cpus, .shares = g->shares };

        if (c && c->shares > 0) {
                r->shares = c->shares;
                r->shares_set = true;
        }
        gp->policy = c && c->policy >= 0 ? c->policy : p->params->policy;
        r->policy = gp->policy;
}

/*
 * The demand a group is planned for: the maximum util over the last rounds (the history takes
 * this round's sample, whether or not the group is placed), or its runnable where it waits for CPU.
 */
static void classify_demand(const PolicyGroup *g, PolicyHistory *h, usec_t now, GroupPlan *gp, PolicyResult *r) {
        double demand = g->util;
        unsigned nr = MAX(g->nr_threads, 1u);

        if (h) {
                if (!h->seen) {
                        h->seen = true;
                        h->first_seen_usec = now;
                }
                h->util[h->n_util % POLICY_UTIL_SAMPLES] = g->util;
                h->n_util++;
                for (unsigned k = 0; k < MIN(h->n_util, (unsigned) POLICY_UTIL_SAMPLES); k++)
                        demand = MAX(demand, h->util[k]);
        }
        gp->waiting = g->runnable > g->util * (1.0 + POLICY_WAIT_RATIO) &&
                      g->runnable - g->util > POLICY_WAIT_UTIL;
        if (gp->waiting)
                demand = MAX(demand, g->runnable);
        gp->demand = MAX(demand, 0.0);
        gp->util = MAX(g->util, 0.0);
        r->demand = gp->demand;
        gp->max_task_util = g->max_task_util >= 0 ? g->max_task_util : g->util / nr;
}

/*
 * Whether a group is left alone whatever CPUs it could have: the operator said Manage=no, its
 * threads pin themselves (a cpuset would fight them), or its history is too short to plan on.
 */
static bool classify_left_alone(const PolicyGroup *g, const PolicyHistory *h, usec_t now, PolicyResult *r) {
        const GroupConfig *c = g->config;

        if (c && c->manage == 0) {
                snprintf(r->reason, sizeof r->reason, "Manage=no: left alone");
                return true;
        }
        /* Its owner placed it: never written; its load lies on its current set (step 2). */
        if (g->owner != OWNER_NONE) {
                snprintf(r->reason, sizeof r->reason, "owned elsewhere (%s)", group_owner_to_string(g->owner));
                return true;
        }
        if (g->pinned_narrower) {
                snprintf(r->reason, sizeof r->reason, "its threads pin themselves narrower than its cpuset: left alone");
                return true;
        }
        if (h && now - h->first_seen_usec < POLICY_MIN_HISTORY_USEC) {
                r->learning = true;
                snprintf(r->reason, sizeof r->reason, "learning its load: %.1f s of history, placing after %.0f s",
                         (double) (now - h->first_seen_usec) / USEC_PER_SEC, (double) POLICY_MIN_HISTORY_USEC / USEC_PER_SEC);
                return true;
        }
        return false;
}

/*
 * AllowedCPUs= cuts the candidates, unless none of its CPUs is usable (offline, isolated, outside
 * the parent) while the group has no online CPU either (v1 empties a cpuset whose CPUs all went
 * offline, and moves its tasks out): never an empty set wins, and the parent's CPUs stand in until
 * one of its own comes back. Otherwise an empty cut leaves the group alone (policy_classify()).
 */
static void restrict_to_allowed_cpus(const Planner *p, const PolicyGroup *g, GroupPlan *gp) {
        CpuMask cut;

        cpumask_and(&cut, &gp->candidates, &g->config->allowed_cpus);
        if (cpumask_empty(&cut) && !cpumask_empty(&gp->candidates) && !has_online(p, &g->cpus))
                snprintf(gp->note, sizeof gp->note, "; no usable CPU in AllowedCPUs=, on its parent's CPUs until one is");
        else
                gp->candidates = cut;
}

/*
 * cpuset.mems cuts the candidates to the CPUs of its NUMA nodes: near its memory. With no usable
 * CPU there and no online one where it is, any usable CPU rather than none.
 */
static void restrict_to_mems(const Planner *p, const PolicyGroup *g, GroupPlan *gp) {
        const Topology *t = p->t;
        CpuMask nodes, cut;

        cpumask_zero(&nodes);
        for (size_t k = 0; k < t->n_numa_nodes; k++)
                if (t->numa_nodes[k].id >= 0 && cpumask_test(&g->mems, t->numa_nodes[k].id))
                        cpumask_or(&nodes, &nodes, &t->numa_nodes[k].cpus);
        cpumask_and(&cut, &gp->candidates, &nodes);
        if (cpumask_empty(&cut) && !cpumask_empty(&gp->candidates) && !has_online(p, &g->cpus))
                snprintf(gp->note, sizeof gp->note, "; no usable CPU in the NUMA nodes of its memory");
        else
                gp->candidates = cut;
}

/*
 * On asymmetric machines a task fits a class when its util fits one CPU of it: the candidates are
 * cut to the classes the group's biggest task fits. One that fits none goes to the biggest class;
 * where no allowed CPU is of a class it fits, the candidates stay as they are.
 */
static void restrict_to_fit(const Topology *t, GroupPlan *gp) {
        CpuMask fit, cut;

        cpumask_zero(&fit);
        for (size_t k = 0; k < t->n_classes; k++)
                if (util_fits_capacity(gp->max_task_util, t->classes[k].capacity))
                        cpumask_or(&fit, &fit, &t->classes[k].cpus);
        if (cpumask_empty(&fit)) {
                fit = t->classes[t->n_classes - 1].cpus;
                gp->fits_none = true;
        }
        cpumask_and(&cut, &gp->candidates, &fit);
        if (cpumask_empty(&cut))
                gp->fit_impossible = true;
        else {
                gp->fit_restricted = !cpumask_equal(&cut, &gp->candidates) && !gp->fits_none;
                gp->candidates = cut;
        }
}

/* Candidates: online, not isolated, not held, allowed (operator and parent), in cpuset.mems' nodes. */
static void classify_candidates(const Planner *p, const PolicyGroup *g, GroupPlan *gp) {
        gp->candidates = p->usable;
        if (g->has_allowed)
                cpumask_and(&gp->candidates, &gp->candidates, &g->allowed);
        if (g->config && g->config->has_allowed_cpus)
                restrict_to_allowed_cpus(p, g, gp);
        if (g->has_mems)
                restrict_to_mems(p, g, gp);
}

/*
 * Why a group has no candidate CPU: where the CPUs other owners hold are all that its allowed
 * CPUs left, the reason names them.
 */
static void describe_no_candidates(const Planner *p, const PolicyGroup *g, PolicyResult *r) {
        const CpuMask *held = p->params->held;
        Planner unheld;
        GroupPlan gp = {};
        char cpus[64];

        if (held && !cpumask_empty(held)) {
                unheld = *p;
                cpumask_andnot(&unheld.usable, &p->t->online, &p->t->isolated);
                classify_candidates(&unheld, g, &gp);
                if (cpumask_intersects(&gp.candidates, held)) {
                        cpumask_and(&gp.candidates, &gp.candidates, held);
                        cpumask_format(&gp.candidates, cpus, sizeof cpus);
                        snprintf(r->reason, sizeof r->reason, "its allowed CPUs (%s) are held by other owners: left alone", cpus);
                        return;
                }
        }
        snprintf(r->reason, sizeof r->reason,
                 "no online, non-isolated CPU in its allowed CPUs%s: left alone", g->has_mems ? " and NUMA nodes" : "");
}

/*
 * How the policy places a group: performance spreads, power packs; balanced chooses by energy on
 * asymmetric machines, and elsewhere packs only a group running in short bursts (a mean run per
 * timeslice under the deepest idle state's target residency), as the article argues.
 */
static void classify_mode(const Topology *t, const PolicyGroup *g, GroupPlan *gp) {
        switch (gp->policy) {
        case POLICY_PERFORMANCE:
                gp->mode = PLACE_SPREAD;
                break;
        case POLICY_POWER:
                gp->mode = PLACE_PACK;
                snprintf(gp->prefix, sizeof gp->prefix, "power: ");
                break;
        default:
                gp->policy = POLICY_BALANCED;
                if (asymmetric(t))
                        gp->mode = PLACE_CHOOSE;
                else {
                        usec_t th = burst_threshold(t, &gp->candidates);
                        bool short_bursts = g->avg_slice_usec > 0 && g->avg_slice_usec < th;

                        gp->burst_usec = g->avg_slice_usec;
                        gp->mode = short_bursts ? PLACE_PACK : PLACE_SPREAD;
                        if (short_bursts)
                                snprintf(gp->prefix, sizeof gp->prefix, "balanced: short bursts (%" PRIu64 " µs < %" PRIu64
                                         " µs residency), packed: ", g->avg_slice_usec, th);
                }
                break;
        }
}

/* Step 1: demand, candidates, mode; the history takes this round's sample. */
void policy_classify(Planner *p, const PolicyGroup *g, PolicyHistory *h, usec_t now, GroupPlan *gp, PolicyResult *r) {
        classify_overrides(p, g, gp, r);
        classify_demand(g, h, now, gp, r);
        if (classify_left_alone(g, h, now, r))
                return;

        classify_candidates(p, g, gp);
        if (cpumask_empty(&gp->candidates)) {
                describe_no_candidates(p, g, r);
                return;
        }
        if (asymmetric(p->t))
                restrict_to_fit(p->t, gp);

        classify_mode(p->t, g, gp);
        r->policy = gp->policy;
        r->managed = true;
}
