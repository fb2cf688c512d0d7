/* SPDX-License-Identifier: GPL-2.0-only */
#include <inttypes.h>

#include "policy-place.h"

/* The package ids (not indexes) a set touches, for reasons: "package 0" / "packages 0, 1". */
static void describe_package_ids(const Planner *p, const CpuMask *set, char *buf, size_t size) {
        size_t n = 0, l;

        for (size_t k = 0; k < p->t->n_packages; k++)
                n += cpumask_intersects(&p->t->packages[k].cpus, set);
        if (n == 0) {
                snprintf(buf, size, "no package");
                return;
        }
        snprintf(buf, size, "%s", n == 1 ? "package " : "packages ");
        for (size_t k = 0, i = 0; k < p->t->n_packages; k++) {
                if (!cpumask_intersects(&p->t->packages[k].cpus, set))
                        continue;
                l = strlen(buf);
                snprintf(buf + l, size - l, "%s%d", i++ ? ", " : "", p->t->packages[k].id);
        }
}

static int count_cores(const Topology *t, const CpuMask *set) {
        int n = 0;

        for (size_t g = 0; g < t->n_smt_groups; g++)
                if (cpumask_intersects(&t->smt_groups[g], set))
                        n++;
        return n;
}

/* Adds whole cores (their candidate CPUs) in packing order until set holds min_cpus CPUs. */
void policy_extend_to_min(const Planner *p, const CpuMask *candidates, unsigned min_cpus, CpuMask *set) {
        for (size_t k = 0; k < p->t->n_smt_groups && (unsigned) cpumask_count(set) < min_cpus; k++) {
                CpuMask m;

                cpumask_and(&m, &p->t->smt_groups[p->core_order[k]], candidates);
                cpumask_or(set, set, &m);
        }
}

/*
 * power with one capacity class: the shortest prefix of the packing order (packages, then
 * clusters or LLCs, then cores, all threads of a core together) whose capacity fits the demand on
 * top of the load already there. A prefix fills package 0 before package 1 is touched, and a
 * cluster before the next: the fewest packages, clusters and cores that fit.
 *
 * power on asymmetric machines: whole classes, lowest first, spilling upward until the demand
 * fits; classes are frequency domains, so spreading inside a busy class is what runs it at its
 * lowest operating point.
 *
 * Returns false when not even every candidate fits the demand (the set is then all of them).
 */
bool policy_pack(const Planner *p, const CpuMask *candidates, double demand, CpuMask *ret) {
        const Topology *t = p->t;
        double cap = 0, occ = 0;
        CpuMask set;
        int last_class = -1;

        cpumask_zero(&set);
        for (size_t k = 0; k < t->n_smt_groups; k++) {
                size_t g = p->core_order[k];
                unsigned core_cap = 0;
                double core_occ = 0;
                int n = 0, cls = -1;

                for (size_t j = p->core_start[g]; j < p->core_start[g + 1]; j++) {
                        size_t i = p->core_cpus[j];

                        core_occ += p->cpu_util[i];
                        if (!cpumask_test(candidates, t->cpus[i].cpu))
                                continue;
                        core_cap = MAX(core_cap, t->cpus[i].capacity);
                        cls = t->cpus[i].class_index;
                        n++;
                }
                if (n == 0)
                        continue;

                /* On asymmetric machines the unit is a class: stop only at a class boundary. */
                if (asymmetric(t) && last_class >= 0 && cls != last_class && util_fits_capacity(demand + occ, cap))
                        break;
                if (!asymmetric(t) && !cpumask_empty(&set) && util_fits_capacity(demand + occ, cap))
                        break;

                for (size_t j = p->core_start[g]; j < p->core_start[g + 1]; j++) {
                        int cpu = t->cpus[p->core_cpus[j]].cpu;

                        if (cpumask_test(candidates, cpu))
                                (void) cpumask_set(&set, cpu);
                }
                cap += core_cap * (n >= 2 ? ENERGY_SMT_FACTOR : 1.0);
                occ += core_occ;
                last_class = cls;
        }
        if (!util_fits_capacity(demand + occ, cap)) {
                /* Not even every candidate fits: all of them, the most it can have. */
                *ret = *candidates;
                return false;
        }
        *ret = set;
        return true;
}

static void describe_pack(const Planner *p, const GroupPlan *gp, const CpuMask *set, bool fits, char *buf, size_t size) {
        const Topology *t = p->t;
        char where[160];

        if (!fits) {
                snprintf(buf, size, "demand %.1f CPUs exceeds what its %d CPUs fit, all of them",
                         cpus_of(gp->demand), cpumask_count(set));
                return;
        }
        if (asymmetric(t)) {
                unsigned lo = UINT32_MAX, hi = 0;

                for (size_t c = 0; c < t->n_classes; c++)
                        if (cpumask_intersects(&t->classes[c].cpus, set)) {
                                lo = MIN(lo, t->classes[c].capacity);
                                hi = MAX(hi, t->classes[c].capacity);
                        }
                if (lo == hi)
                        snprintf(buf, size, "demand %.1f CPUs fits the %d CPUs of capacity %u", cpus_of(gp->demand),
                                 cpumask_count(set), lo);
                else
                        snprintf(buf, size, "demand %.1f CPUs spills from capacity %u up to %u (%d CPUs)",
                                 cpus_of(gp->demand), lo, hi, cpumask_count(set));
                return;
        }
        describe_package_ids(p, set, where, sizeof where);
        /* Cut at the buffer's end like every reason; only an encoding error leaves none. */
        if (snprintf(buf, size, "demand %.1f CPUs fits %d core%s (%d CPUs) of %s", cpus_of(gp->demand),
                     count_cores(t, set), count_cores(t, set) == 1 ? "" : "s", cpumask_count(set), where) < 0)
                buf[0] = '\0';
}

/* Where the candidates were cut by the fit rule, say so. */
void policy_describe_fit(const GroupPlan *gp, char *reason) {
        if (gp->fits_none)
                reason_append(reason, "; its biggest task (%.0f) fits no class, kept on the biggest", gp->max_task_util);
        else if (gp->fit_impossible)
                reason_append(reason, "; no allowed CPU fits its biggest task (%.0f)", gp->max_task_util);
        else if (gp->fit_restricted)
                reason_append(reason, "; only classes its biggest task (%.0f) fits", gp->max_task_util);
}

static void spread_reason(const GroupPlan *gp, char *reason) {
        int n = cpumask_count(&gp->proposal);

        if (gp->policy == POLICY_BALANCED) {
                if (gp->burst_usec > 0)
                        snprintf(reason, POLICY_REASON_MAX, "balanced: long-running (%" PRIu64 " µs runs), spread over all %d allowed CPUs",
                                 gp->burst_usec, n);
                else
                        snprintf(reason, POLICY_REASON_MAX, "balanced: long-running, spread over all %d allowed CPUs", n);
        } else
                snprintf(reason, POLICY_REASON_MAX, "performance: all %d allowed CPUs", n);
        policy_describe_fit(gp, reason);
}

/* Where MinCPUs= asks for more CPUs than the group may have, say so. */
static void describe_min_cpus_short(const GroupPlan *gp, char *reason) {
        if (gp->min_cpus > 0 && (unsigned) cpumask_count(&gp->proposal) < gp->min_cpus)
                reason_append(reason, ", only %d allowed CPUs for MinCPUs=%u", cpumask_count(&gp->proposal), gp->min_cpus);
}

void policy_place_spread(Planner *p, GroupPlan *gp) {
        gp->proposal = gp->candidates;
        energy_spread(p->t, &gp->proposal, gp->demand, p->cpu_util);
        energy_spread(p->t, &gp->proposal, gp->util, p->cpu_energy);
}

void policy_place_pack(Planner *p, GroupPlan *gp) {
        char what[200];
        bool fits;
        int before;

        fits = policy_pack(p, &gp->candidates, gp->demand, &gp->proposal);
        describe_pack(p, gp, &gp->proposal, fits, what, sizeof what);
        if (fits && !asymmetric(p->t)) {
                double there = load_on(p->t, p->cpu_util, &gp->proposal);

                /* The set is sized with the other groups' load on it: say so, or it looks too wide. */
                if (there > 0)
                        snprintf(what + strlen(what), sizeof what - strlen(what), " with %.1f CPUs of others' load",
                                 cpus_of(there));
        }
        before = cpumask_count(&gp->proposal);
        policy_extend_to_min(p, &gp->candidates, gp->min_cpus, &gp->proposal);
        gp->reason[0] = 0;
        reason_append(gp->reason, "%s%s", gp->prefix, what);
        if (cpumask_count(&gp->proposal) > before)
                reason_append(gp->reason, ", widened to %d CPUs by MinCPUs=%u", cpumask_count(&gp->proposal), gp->min_cpus);
        else
                describe_min_cpus_short(gp, gp->reason);
        policy_describe_fit(gp, gp->reason);
        energy_spread(p->t, &gp->proposal, gp->demand, p->cpu_util);
        energy_spread(p->t, &gp->proposal, gp->util, p->cpu_energy);
}

/*
 * Step 2: the load of groups left alone (on the online CPUs of their current sets) and of spread
 * groups is laid down first, so that packing sees what is already there.
 */
void policy_lay_down_base(Planner *p, const PolicyGroup *groups, GroupPlan *gps, const PolicyResult *results, size_t n) {
        const Topology *t = p->t;

        for (size_t i = 0; i < n; i++)
                if (!results[i].managed) {
                        CpuMask m;

                        cpumask_and(&m, &groups[i].cpus, &t->online);
                        energy_spread(t, &m, gps[i].demand, p->cpu_util);
                        energy_spread(t, &m, groups[i].util, p->cpu_energy);
                }
        for (size_t i = 0; i < n; i++)
                if (results[i].managed && gps[i].mode == PLACE_SPREAD) {
                        policy_place_spread(p, &gps[i]);
                        spread_reason(&gps[i], gps[i].reason);
                        describe_min_cpus_short(&gps[i], gps[i].reason);
                }
}
