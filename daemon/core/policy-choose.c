/* SPDX-License-Identifier: GPL-2.0-only */
#include <math.h>

#include "policy-choose.h"
#include "policy-place.h"

/*
 * Lays the packed and chosen groups down on top of base, in order: packed groups and chosen groups
 * with packed[i] set are packed, the other chosen groups spread. Returns the plan's energy; sets
 * *ret_admissible to false when a chosen group that is packed has a CPU over 80% busy.
 */
static double lay_down(Planner *p, GroupPlan *gps, size_t n, const bool *packed, bool *ret_admissible) {
        const Topology *t = p->t;
        bool admissible = true;

        memcpy(p->cpu_util, p->base_util, sizeof(double) * t->n_cpus);
        memcpy(p->cpu_energy, p->base_energy, sizeof(double) * t->n_cpus);
        for (size_t i = 0; i < n; i++) {
                if (gps[i].mode == PLACE_PACK || (gps[i].mode == PLACE_CHOOSE && packed[i]))
                        policy_place_pack(p, &gps[i]);
                else if (gps[i].mode == PLACE_CHOOSE)
                        policy_place_spread(p, &gps[i]);
                else
                        continue;

                /*
                 * As EAS decides: at the moment a group is packed, on the load there so far. Groups
                 * placed after it see its load and answer for their own.
                 */
                if (gps[i].mode == PLACE_CHOOSE && packed[i] && !cpumask_equal(&gps[i].proposal, &gps[i].candidates) &&
                    energy_overutilized(t, p->cpu_util, &gps[i].proposal))
                        admissible = false;
        }
        if (ret_admissible)
                *ret_admissible = admissible;
        return energy_estimate(t, p->params->energy_model, p->cpu_energy);
}

/*
 * balanced on asymmetric machines: each group packed or spread, whichever the energy model says
 * is cheaper, as long as packing runs none of its CPUs over 80% busy. The choices interact (a busy
 * cluster's static cost is shared, a domain's operating point follows its busiest CPU), so each
 * group's choice is made on the whole plan's energy given the others': starting from the cheaper
 * of "all packed" and "all spread", each group in turn takes the other placement when that lowers
 * the plan's energy, until no group changes (a few passes at most). The result is never costlier
 * than either uniform plan.
 */
#define CHOOSE_MAX_PASSES 3

/* Whether e_new is cheaper than e_old by enough to leave the placement a group had. */
static bool cheaper(double e_new, double e_old, bool leaving) {
        return leaving ? e_new < e_old * (1.0 - POLICY_CHOICE_MARGIN) : e_new < e_old;
}

/*
 * The plan the passes start from: what the groups had (new ones packed), unless a uniform plan
 * ("all packed", "all spread") is clearly cheaper; ties go to packing. packed comes in all false
 * and leaves holding the start; *ret_energy is its energy.
 */
static int choose_start(Planner *p, GroupPlan *gps, size_t n, const int *previous, bool *packed, double *ret_energy) {
        _cleanup_free_ bool *all = new0(bool, MAX(n, 1u));
        double e, e_spread, e_pack;
        bool adm, have_previous = false;

        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                have_previous = have_previous || (gps[i].mode == PLACE_CHOOSE && previous && previous[i] >= 0);

        e_spread = lay_down(p, gps, n, packed, NULL);
        for (size_t i = 0; i < n; i++)
                all[i] = gps[i].mode == PLACE_CHOOSE;
        e_pack = lay_down(p, gps, n, all, &adm);
        if (!adm)
                e_pack = INFINITY;

        if (have_previous) {
                for (size_t i = 0; i < n; i++)
                        packed[i] = gps[i].mode == PLACE_CHOOSE && (previous[i] < 0 || previous[i] > 0);
                e = lay_down(p, gps, n, packed, &adm);
                if (!adm)
                        e = INFINITY;
        } else
                e = INFINITY;
        if (cheaper(e_pack, e, have_previous) && e_pack <= e_spread) {
                memcpy(packed, all, sizeof(bool) * n);
                e = e_pack;
        } else if (cheaper(e_spread, e, have_previous)) {
                memset(packed, 0, sizeof(bool) * n);
                e = e_spread;
        }
        *ret_energy = e;
        return 0;
}

/*
 * Each chosen group in turn takes the other placement when that lowers the plan's energy given
 * the others' (by the margin where it leaves what it had; a tie goes to packing), until a pass
 * changes nothing. *energy is the plan's, in and out.
 */
static void choose_improve(Planner *p, GroupPlan *gps, size_t n, const int *previous, bool *packed, double *energy) {
        for (unsigned pass = 0; pass < CHOOSE_MAX_PASSES; pass++) {
                bool changed = false;

                for (size_t i = 0; i < n; i++) {
                        bool leaving, adm;
                        double e_flip;

                        if (gps[i].mode != PLACE_CHOOSE)
                                continue;
                        leaving = previous && previous[i] >= 0 && (previous[i] > 0) == packed[i];
                        packed[i] = !packed[i];
                        e_flip = lay_down(p, gps, n, packed, &adm);
                        if (adm && (cheaper(e_flip, *energy, leaving) || (e_flip == *energy && packed[i] && !leaving))) {
                                *energy = e_flip;
                                changed = true;
                        } else
                                packed[i] = !packed[i];
                }
                if (!changed)
                        break;
        }
}

/* A packed group's reason: why packing won, then what packing chose (its reason so far). */
static void describe_chosen_packed(GroupPlan *gp, double e, double e_spread) {
        char what[POLICY_REASON_MAX];

        snprintf(what, sizeof what, "%s", gp->reason);
        gp->reason[0] = 0;
        if (cpumask_equal(&gp->proposal, &gp->candidates))
                reason_append(gp->reason, "balanced: packed and spread agree: %s", what);
        else if (e_spread < e)
                reason_append(gp->reason, "balanced: stays packed (spreading saves under %.0f%%: energy %.0f vs %.0f): %s",
                              POLICY_CHOICE_MARGIN * 100, e_spread, e, what);
        else
                reason_append(gp->reason, "balanced: packed costs less (energy %.0f < %.0f spread): %s",
                              e, e_spread, what);
}

/* A spread group's reason: packing was not admissible, saved too little to switch, or cost more. */
static void describe_chosen_spread(GroupPlan *gp, double e, double e_packed, bool packed_admissible) {
        if (!packed_admissible)
                snprintf(gp->reason, sizeof gp->reason,
                         "balanced: packing would run a CPU over 80%%, spread over all %d allowed CPUs",
                         cpumask_count(&gp->proposal));
        else if (e_packed < e)
                snprintf(gp->reason, sizeof gp->reason,
                         "balanced: stays spread over all %d allowed CPUs (packing saves under %.0f%%: energy %.0f vs %.0f)",
                         cpumask_count(&gp->proposal), POLICY_CHOICE_MARGIN * 100, e_packed, e);
        else
                snprintf(gp->reason, sizeof gp->reason,
                         "balanced: spread costs less (energy %.0f <= %.0f packed), all %d allowed CPUs",
                         e, e_packed, cpumask_count(&gp->proposal));
        policy_describe_fit(gp, gp->reason);
}

/*
 * Each chosen group's reason names what the other placement would have cost: each is flipped
 * alone on the final plan, which is then laid down again (the groups' proposals are its own).
 */
static int describe_choices(Planner *p, GroupPlan *gps, size_t n, bool *packed, double e) {
        _cleanup_free_ double *e_other = new0(double, n);
        _cleanup_free_ bool *adm_other = new0(bool, n);

        if (!e_other || !adm_other)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (gps[i].mode != PLACE_CHOOSE)
                        continue;
                packed[i] = !packed[i];
                e_other[i] = lay_down(p, gps, n, packed, &adm_other[i]);
                packed[i] = !packed[i];
        }
        (void) lay_down(p, gps, n, packed, NULL);

        for (size_t i = 0; i < n; i++) {
                if (gps[i].mode != PLACE_CHOOSE)
                        continue;
                if (packed[i])
                        describe_chosen_packed(&gps[i], e, e_other[i]);
                else
                        describe_chosen_spread(&gps[i], e, e_other[i], adm_other[i]);
        }
        return 0;
}

/* Step 3: the choices (above), then the packed and chosen groups laid down on the plan chosen. */
int policy_choose(Planner *p, GroupPlan *gps, size_t n, const int *previous) {
        _cleanup_free_ bool *packed = new0(bool, MAX(n, 1u));
        bool any = false;
        double e;
        int r;

        if (!packed)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                any = any || gps[i].mode == PLACE_CHOOSE;
        if (!any) {
                (void) lay_down(p, gps, n, packed, NULL);
                return 0;
        }

        r = choose_start(p, gps, n, previous, packed, &e);
        if (r < 0)
                return r;
        choose_improve(p, gps, n, previous, packed, &e);
        for (size_t i = 0; i < n; i++)
                gps[i].packed = packed[i];
        return describe_choices(p, gps, n, packed, e);
}
