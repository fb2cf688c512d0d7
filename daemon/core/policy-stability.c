/* SPDX-License-Identifier: GPL-2.0-only */
#include <math.h>

#include "policy-place.h"
#include "policy-stability.h"

/* The first core in packing order with a candidate CPU outside set: one step wider. */
static bool widen_one_core(const Planner *p, const CpuMask *candidates, CpuMask *set) {
        for (size_t k = 0; k < p->t->n_smt_groups; k++) {
                CpuMask m;

                cpumask_and(&m, &p->t->smt_groups[p->core_order[k]], candidates);
                cpumask_andnot(&m, &m, set);
                if (!cpumask_empty(&m)) {
                        cpumask_or(set, set, &m);
                        return true;
                }
        }
        return false;
}

static bool big_change(double demand, double planned) {
        double d = fabs(demand - planned);

        return d > POLICY_BIG_CHANGE_RATIO * planned && d > POLICY_BIG_CHANGE_UTIL;
}

/*
 * A narrowing that did not hold: within POLICY_NARROW_INTERVAL_USEC of narrowing, before another
 * narrowing is even allowed, a packed group is widened again onto CPUs that narrowing gave up: its
 * demand with the others' load on the narrower set did not fit after all. That is a load sitting
 * on the threshold, its noise crossing it both ways, and narrowing onto that set again would be
 * undone again, every time a narrowing is allowed: flapping, with a steady load. So the group is
 * not narrowed onto that set (or inside it) again until the load there (its demand and the others'
 * load on those CPUs) is below the load that did not fit by a big change, as for demand: by more
 * than 25% and 32/1024.
 */
static bool narrowing_blocked(const Topology *t, const GroupPlan *gp, PolicyHistory *h, const double *others) {
        double there;

        if (!others || !h->bounced || !cpumask_subset(&gp->proposal, &h->bounce_cpus))
                return false;
        there = gp->demand + load_on(t, others, &gp->proposal);
        if (there < h->bounce_load && big_change(there, h->bounce_load)) {
                h->bounced = false;
                return false;
        }
        return true;
}

/* A group waiting for CPU is never narrowed, and grows by at least one core. */
static void stabilise_waiting(const Planner *p, const PolicyGroup *g, GroupPlan *gp, PolicyHistory *h,
                              const CpuMask *added, const CpuMask *removed, CpuMask *final) {
        h->held_rounds = 0;
        if (cpumask_empty(added) && widen_one_core(p, &gp->candidates, final))
                reason_append(gp->reason, "; waiting for CPU (runnable %.0f > util %.0f): widened to %d CPUs",
                              g->runnable, g->util, cpumask_count(final));
        else if (!cpumask_empty(removed))
                reason_append(gp->reason, "; waiting for CPU (runnable %.0f > util %.0f): not narrowed",
                              g->runnable, g->util);
}

/*
 * A narrowing applied now: onto the proposal after a big change of demand, else onto the union of
 * the proposals that held (the widest of them when they are nested), inside the candidates.
 */
static void narrow(GroupPlan *gp, PolicyHistory *h, const CpuMask *cur, bool big, usec_t now, CpuMask *ret) {
        CpuMask target = gp->proposal;

        if (!big)
                for (unsigned k = 0; k < POLICY_NARROW_HOLD_ROUNDS; k++)
                        cpumask_or(&target, &target, &h->narrower[k]);
        cpumask_and(&target, &target, &gp->candidates);
        cpumask_or(&target, &target, &gp->proposal);
        h->narrowed = true;
        h->last_narrow_usec = now;
        cpumask_andnot(&h->given_up, cur, &target);
        h->bounced = false;
        h->held_rounds = 0;
        *ret = target;
}

/* Why a narrower plan is not applied yet: the interval since the last narrowing, or the hold. */
static void describe_narrow_wait(GroupPlan *gp, const PolicyHistory *h, bool too_soon, const CpuMask *final, usec_t now) {
        if (too_soon)
                reason_append(gp->reason, "; narrowing from %d CPUs waits %.1f s (at most once per %u s)",
                              cpumask_count(final),
                              (double) (POLICY_NARROW_INTERVAL_USEC - (now - h->last_narrow_usec)) / USEC_PER_SEC,
                              (unsigned) (POLICY_NARROW_INTERVAL_USEC / USEC_PER_SEC));
        else
                reason_append(gp->reason, "; keeping %d CPUs until the narrower plan holds (%u of %u rounds)",
                              cpumask_count(final), h->held_rounds, POLICY_NARROW_HOLD_ROUNDS);
}

/*
 * A proposal that drops CPUs of the current set cur. Returns true with the narrowed set in *ret
 * when the narrowing is applied this round: it held long enough or demand moved a lot, and the
 * last narrowing is long enough ago. Returns false when the group keeps final (cur and what the
 * proposal adds), with the reason saying why.
 */
static bool try_narrow(const Planner *p, GroupPlan *gp, PolicyHistory *h, const double *others, usec_t now,
                       const CpuMask *cur, const CpuMask *final, CpuMask *ret) {
        bool big, held, too_soon;

        if (narrowing_blocked(p->t, gp, h, others)) {
                h->held_rounds = 0;
                reason_append(gp->reason, "; stays on %d CPUs: narrowing to %d did not hold %.0f s ago, not again before the load there drops by more than %.0f%% from %.1f CPUs",
                              cpumask_count(final), cpumask_count(&gp->proposal), (double) (now - h->bounce_usec) / USEC_PER_SEC,
                              POLICY_BIG_CHANGE_RATIO * 100, cpus_of(h->bounce_load));
                return false;
        }

        h->narrower[h->held_rounds % POLICY_NARROW_HOLD_ROUNDS] = gp->proposal;
        h->held_rounds++;

        big = h->placed && big_change(gp->demand, h->planned_demand);
        held = h->held_rounds >= POLICY_NARROW_HOLD_ROUNDS;
        too_soon = h->narrowed && now - h->last_narrow_usec < POLICY_NARROW_INTERVAL_USEC;
        if ((held || big) && !too_soon) {
                narrow(gp, h, cur, big, now, ret);
                return true;
        }
        describe_narrow_wait(gp, h, too_soon, final, now);
        return false;
}

/*
 * Widened onto what the last narrowing gave up, before another narrowing was even allowed: the
 * narrowing did not hold. Remembers where and with what load, for narrowing_blocked().
 */
static void note_bounce(const Planner *p, const GroupPlan *gp, PolicyHistory *h, const double *others, usec_t now,
                        const CpuMask *cur, const CpuMask *final) {
        CpuMask regained;

        cpumask_andnot(&regained, final, cur);
        cpumask_and(&regained, &regained, &h->given_up);
        if (others && !cpumask_empty(&regained) && h->narrowed && now - h->last_narrow_usec < POLICY_NARROW_INTERVAL_USEC) {
                h->bounced = true;
                h->bounce_cpus = *cur;
                h->bounce_load = gp->demand + load_on(p->t, others, cur);
                h->bounce_usec = now;
        }
}

/*
 * The stability rules. Widening (and dropping CPUs a group may no longer use: offline, isolated,
 * outside its allowed CPUs or of a class its biggest task does not fit) happens at once. A
 * proposal that drops any other CPU of the current set is a narrowing: it is applied when narrower
 * proposals have held for POLICY_NARROW_HOLD_ROUNDS rounds in a row (the set then becomes the
 * union of those proposals, the widest of them when they are nested), or at once when demand
 * moved by more than 25% and 32/1024 since the set was chosen; either way at most once per
 * POLICY_NARROW_INTERVAL_USEC, and for a packed group not back onto a set a narrowing did not
 * hold on (above). Meanwhile the CPUs a proposal adds are added. A group waiting for CPU is never
 * narrowed, and grows by at least one core. others: for a packed group, the load the other groups
 * place in this round's plan, per CPU; NULL for the others.
 */
static void stabilise(const Planner *p, const PolicyGroup *g, GroupPlan *gp, PolicyHistory *h, const double *others, usec_t now,
                      CpuMask *ret) {
        CpuMask cur, added, removed, final;

        if (!h->placed)
                h->bounced = false;
        cur = h->placed ? h->cpus : g->cpus;
        cpumask_and(&cur, &cur, &gp->candidates);
        if (cpumask_empty(&cur)) {
                h->held_rounds = 0;
                *ret = gp->proposal;
                return;
        }

        cpumask_andnot(&added, &gp->proposal, &cur);
        cpumask_andnot(&removed, &cur, &gp->proposal);
        cpumask_or(&final, &cur, &added);

        if (gp->waiting)
                stabilise_waiting(p, g, gp, h, &added, &removed, &final);
        else if (cpumask_empty(&removed))
                h->held_rounds = 0;
        else if (try_narrow(p, gp, h, others, now, &cur, &final, ret))
                return;

        note_bounce(p, gp, h, others, now, &cur, &final);
        *ret = final;
}

/* Takes a group's load, as energy_spread() laid it on set, off cpu_util again (scratch: n_cpus). */
static void unspread(const Topology *t, const CpuMask *set, double util, double *cpu_util, double *scratch) {
        memset(scratch, 0, sizeof(double) * t->n_cpus);
        energy_spread(t, set, util, scratch);
        for (size_t i = 0; i < t->n_cpus; i++) {
                cpu_util[i] -= scratch[i];
                /* What is left of a group taken off is rounding: no load, not a busy CPU. */
                if (fabs(cpu_util[i]) < 1e-6)
                        cpu_util[i] = 0;
        }
}

/*
 * With history: packed groups are judged again, in order, against this round's whole plan.
 *
 * Step 3 sizes each packed group on the load of the groups placed before it, and only on that.
 * Without history that is the plan. With history it is not enough to narrow on: a group early in
 * the order that has a wider set may see a core free that a later group's set spreads over, and
 * narrow onto it; in the final plan the core is overloaded, and the next round's noise widens the
 * group again at once. With a steady load that repeats every time a narrowing is allowed, every
 * 10 s: flapping. (A later group placed on top of the earlier groups' proposals sees them narrower
 * than they are planned, too, while their narrowing waits.)
 *
 * So each packed group is packed again, in order, on two loads:
 *   - what comes before it: groups left alone and spread groups (step 2), and the groups before it
 *     on the sets this round plans for them. Its set must fit its demand on top of that: if its
 *     current set does not, it widens at once, as in step 3 (the groups before it keep their
 *     place, those after it make room);
 *   - all of the plan: the above, and the groups after it on their current sets. A narrower set
 *     must fit on top of that as well: the group gives up only CPUs that it does not need next to
 *     everything else staying where it is.
 * Its proposal is the first set, with the CPUs of its current set the second one still needs. The
 * stability rules then apply as before, and its load moves to the set planned for it before the
 * next group is judged. Groups placed by energy (balanced on asymmetric machines) keep their
 * proposals: their choice was made on step 3's plan.
 */
int policy_place_with_history(Planner *p, const PolicyGroup *groups, GroupPlan *gps, PolicyHistory *history, size_t n,
                              usec_t now, PolicyResult *ret) {
        const Topology *t = p->t;
        size_t nc = MAX(t->n_cpus, 1u);
        _cleanup_free_ CpuMask *where = new0(CpuMask, MAX(n, 1u));
        _cleanup_free_ double *before = new0(double, nc), *after = new0(double, nc), *scratch = new0(double, nc);

        if (!where || !before || !after || !scratch)
                return -ENOMEM;

        /* Left alone and spread groups come first; packed and chosen ones stand where they are. */
        for (size_t i = 0; i < n; i++) {
                if (!ret[i].managed)
                        cpumask_and(&where[i], &groups[i].cpus, &t->online);
                else if (gps[i].mode == PLACE_PACK) {
                        const PolicyHistory *h = &history[i];

                        where[i] = h->placed ? h->cpus : groups[i].cpus;
                        cpumask_and(&where[i], &where[i], &gps[i].candidates);
                        if (cpumask_empty(&where[i]))
                                where[i] = gps[i].proposal;
                } else
                        where[i] = gps[i].proposal;
                energy_spread(t, &where[i], gps[i].demand,
                              !ret[i].managed || gps[i].mode == PLACE_SPREAD ? before : after);
        }

        for (size_t i = 0; i < n; i++) {
                PolicyHistory *h = &history[i];
                GroupPlan *gp = &gps[i];
                CpuMask final, previous = h->placed ? h->cpus : groups[i].cpus;

                if (!ret[i].managed) {
                        h->placed = false;
                        continue;
                }
                if (gp->mode != PLACE_SPREAD)
                        unspread(t, &where[i], gp->demand, after, scratch);
                if (gp->mode == PLACE_PACK) {
                        CpuMask first, all, cur;

                        memcpy(p->cpu_util, before, sizeof(double) * t->n_cpus);
                        policy_place_pack(p, gp);
                        first = gp->proposal;

                        for (size_t k = 0; k < t->n_cpus; k++)
                                p->cpu_util[k] = before[k] + after[k];
                        (void) policy_pack(p, &gp->candidates, gp->demand, &all);
                        policy_extend_to_min(p, &gp->candidates, gp->min_cpus, &all);
                        cpumask_and(&cur, &previous, &gp->candidates);
                        cpumask_and(&all, &all, &cur);
                        cpumask_or(&gp->proposal, &first, &all);
                        if (!cpumask_equal(&gp->proposal, &first))
                                reason_append(gp->reason, "; %d CPUs, not %d: next to all the others' load in this plan (%.1f CPUs on those %d) fewer do not fit",
                                              cpumask_count(&gp->proposal), cpumask_count(&first),
                                              cpus_of(load_on(t, p->cpu_util, &first)), cpumask_count(&first));
                }
                stabilise(p, &groups[i], gp, h, gp->mode == PLACE_PACK ? p->cpu_util : NULL, now, &final);
                if (gp->mode != PLACE_SPREAD)
                        energy_spread(t, &final, gp->demand, before);

                if (!h->placed || !cpumask_equal(&final, &previous))
                        h->planned_demand = gp->demand;
                h->cpus = final;
                h->placed = true;
                ret[i].cpus = final;
        }
        /* The plan's load, for what follows (contention). */
        memcpy(p->cpu_util, before, sizeof(double) * t->n_cpus);
        return 0;
}
