/* SPDX-License-Identifier: GPL-2.0-only */
#include <inttypes.h>
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
 * A narrowing that did not hold: within POLICY_HOLD_USEC of narrowing, a packed group is widened
 * again onto CPUs that narrowing gave up: its demand with the others' load on the narrower set did not fit after all. That is a load sitting
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
 * A narrowing applied now: onto the union of the proposals that held (the widest of them when they
 * are nested), inside the candidates.
 */
static void narrow(GroupPlan *gp, PolicyHistory *h, const CpuMask *cur, usec_t now, CpuMask *ret) {
        CpuMask target = gp->proposal;

        for (unsigned k = 0; k < POLICY_NARROW_HOLD_ROUNDS; k++)
                cpumask_or(&target, &target, &h->narrower[k]);
        cpumask_and(&target, &target, &gp->candidates);
        cpumask_or(&target, &target, &gp->proposal);
        h->narrowed = true;
        h->narrow_undone = false;
        h->last_narrow_usec = now;
        cpumask_andnot(&h->given_up, cur, &target);
        h->bounced = false;
        h->held_rounds = 0;
        *ret = target;
}

/* Why a narrower plan is not applied yet: packing stalled it before, or the hold time. */
static void describe_narrow_wait(GroupPlan *gp, const PolicyHistory *h, usec_t hold, const CpuMask *final, usec_t now) {
        usec_t held = now - h->narrower_since_usec;
        double left = held < hold ? (double) (hold - held) / USEC_PER_SEC : 0;

        if (h->stalls > 0)
                reason_append(gp->reason, "; kept wide: packing stalled it %u times (narrowing to %d CPUs waits %.0f s more)",
                              h->stalls, cpumask_count(&gp->proposal), left);
        else
                reason_append(gp->reason, "; keeping %d CPUs until the narrower plan has held for %.0f s (%.1f s more, %u of %u rounds)",
                              cpumask_count(final), (double) hold / USEC_PER_SEC, left, MIN(h->held_rounds, (unsigned) POLICY_NARROW_HOLD_ROUNDS),
                              POLICY_NARROW_HOLD_ROUNDS);
}

/*
 * A proposal that drops CPUs of the current set cur. Returns true with the narrowed set in *ret
 * when the narrowing is applied this round: narrower proposals held in every round, at least
 * POLICY_NARROW_HOLD_ROUNDS of them, for the group's hold time (policy_hold_usec()). Returns false
 * when the group keeps final (cur and what the proposal adds), with the reason saying why.
 */
static bool try_narrow(const Planner *p, GroupPlan *gp, PolicyHistory *h, const double *others, usec_t now,
                       const CpuMask *cur, const CpuMask *final, CpuMask *ret) {
        usec_t hold = policy_hold_usec(h);

        if (narrowing_blocked(p->t, gp, h, others)) {
                h->held_rounds = 0;
                h->last_wait_usec = now;
                reason_append(gp->reason, "; stays on %d CPUs: narrowing to %d did not hold %.0f s ago, not again before the load there drops by more than %.0f%% from %.1f CPUs",
                              cpumask_count(final), cpumask_count(&gp->proposal), (double) (now - h->bounce_usec) / USEC_PER_SEC,
                              POLICY_BIG_CHANGE_RATIO * 100, cpus_of(h->bounce_load));
                return false;
        }

        if (h->held_rounds == 0)
                h->narrower_since_usec = now;
        h->narrower[h->held_rounds % POLICY_NARROW_HOLD_ROUNDS] = gp->proposal;
        h->held_rounds++;

        /* Groups placed by energy: 3 rounds, and the hold time since the last change (their band is the model's margin). */
        if (h->held_rounds >= POLICY_NARROW_HOLD_ROUNDS &&
            (now - h->narrower_since_usec >= hold || (gp->mode == PLACE_CHOOSE && now - h->last_change_usec >= hold))) {
                narrow(gp, h, cur, now, ret);
                return true;
        }
        h->last_wait_usec = now;
        describe_narrow_wait(gp, h, hold, final, now);
        return false;
}

/*
 * Widened onto what the last narrowing gave up, within POLICY_HOLD_USEC of it: the narrowing did
 * not hold. Remembers where and with what load, for narrowing_blocked().
 */
static void note_bounce(const Planner *p, const GroupPlan *gp, PolicyHistory *h, const double *others, usec_t now,
                        const CpuMask *cur, const CpuMask *final) {
        CpuMask regained;

        cpumask_andnot(&regained, final, cur);
        cpumask_and(&regained, &regained, &h->given_up);
        if (others && !cpumask_empty(&regained) && h->narrowed && now - h->last_narrow_usec < POLICY_HOLD_USEC) {
                h->bounced = true;
                h->bounce_cpus = *cur;
                h->bounce_load = gp->demand + load_on(p->t, others, cur);
                h->bounce_usec = now;
        }
}

/* Whether the load on set (the group's demand and the others' there) fills at most 60% of it. */
static bool pack_fits(const Topology *t, const GroupPlan *gp, const double *others, const CpuMask *set) {
        double load = gp->demand + (others ? load_on(t, others, set) : 0);

        return load * POLICY_PACK_FIT < energy_set_capacity(t, set) * 1024;
}

/*
 * The band: a proposal narrower than cur keeps cores of cur (in packing order) until the load on
 * it fits the packing line, 60%: one that keeps all of cur is no narrowing. A proposal that does
 * not narrow is left as it is (widening uses the kernel's 20% margin).
 */
static void apply_band(const Planner *p, GroupPlan *gp, const double *others, const CpuMask *cur) {
        CpuMask set = gp->proposal;
        int proposed = cpumask_count(&set);

        if (cpumask_subset(cur, &set))
                return;
        while (!pack_fits(p->t, gp, others, &set) && widen_one_core(p, cur, &set))
                ;
        if (cpumask_subset(cur, &set))
                reason_append(gp->reason, "; stays on %d CPUs: %d would be over 60%% busy (%.2f CPUs there), the packing line",
                              cpumask_count(&set), proposed, cpus_of(gp->demand + (others ? load_on(p->t, others, &gp->proposal) : 0)));
        else if (cpumask_count(&set) != proposed)
                reason_append(gp->reason, "; %d CPUs, not %d: fewer would be over 60%% busy, the packing line",
                              cpumask_count(&set), proposed);
        gp->proposal = set;
}

/*
 * The pressure guard fired for a packed group (its threads stalled for CPU) whose demand still
 * fits its set: packing is what stalled it. Widened at once onto every candidate, and the hold
 * grows (policy_hold_usec()). Returns false when it is not packed, or when its demand outgrew the
 * set (the proposal widens it): that is an ordinary widening, which does not hold it wide.
 */
static bool widen_stalled(const PolicyGroup *g, GroupPlan *gp, PolicyHistory *h, const CpuMask *cur, CpuMask *ret) {
        if (g->stall_usec == 0 || cpumask_subset(&gp->candidates, cur) || !cpumask_subset(&gp->proposal, cur))
                return false;
        h->stalls++;
        h->held_rounds = 0;
        *ret = gp->candidates;
        reason_append(gp->reason, "; pressure: %" PRIu64 " ms stalled in the last %" PRIu64 " ms: widened to %d CPUs (packing stalled it %u times)",
                      g->stall_usec / USEC_PER_MSEC, g->stall_window_usec / USEC_PER_MSEC, cpumask_count(ret), h->stalls);
        return true;
}

/*
 * Before a round's rules: a policy change resets the hold; a group put for POLICY_UNDONE_USEC, with
 * no narrower plan waiting in that time, is back to POLICY_HOLD_USEC. (A group kept wide because
 * its narrower plans never hold long enough is not "put": were its hold to drop back while the
 * load goes on as before, it would start flapping again, six changes every ten minutes or so.)
 */
static void age_hold(const GroupPlan *gp, PolicyHistory *h, usec_t now) {
        if (h->placed && h->policy != gp->policy)
                policy_history_reset_hold(h);
        h->policy = gp->policy;
        if (h->changed && now - MAX(h->last_change_usec, h->last_wait_usec) >= POLICY_UNDONE_USEC)
                h->doublings = 0;
}

/* After them: a widening within POLICY_UNDONE_USEC of a narrowing doubles the hold (once a narrowing). */
static void track_hold(PolicyHistory *h, const CpuMask *cur, const CpuMask *final, usec_t now) {
        CpuMask added;

        cpumask_andnot(&added, final, cur);
        if (!cpumask_empty(&added) && h->narrowed && !h->narrow_undone && now - h->last_narrow_usec < POLICY_UNDONE_USEC) {
                h->narrow_undone = true;
                if (h->doublings < 3)
                        h->doublings++;
        }
}

/*
 * The stability rules. Widening (and dropping CPUs a group may no longer use: offline, isolated,
 * outside its allowed CPUs or of a class its biggest task does not fit) happens at once; so does
 * widening onto every candidate when the pressure guard fired for a packed group. A proposal that
 * drops any other CPU of the current set is a narrowing: it must fit the band (apply_band()), and
 * it is applied when narrower proposals held in every round for the group's hold time (the set
 * then becomes the union of the last ones, the widest of them when they are nested), and for a
 * packed group not back onto a set a narrowing did not hold on (above). Meanwhile the CPUs a
 * proposal adds are added. A group waiting for CPU is never narrowed, and grows by at least one
 * core. others: for a packed group, the load the other groups place in this round's plan, per CPU;
 * NULL for the others.
 */
static void stabilise(const Planner *p, const PolicyGroup *g, GroupPlan *gp, PolicyHistory *h, const double *others, usec_t now,
                      CpuMask *ret) {
        CpuMask cur, added, removed, final;

        if (!h->placed)
                h->bounced = false;
        age_hold(gp, h, now);
        cur = h->placed ? h->cpus : g->cpus;
        cpumask_and(&cur, &cur, &gp->candidates);
        if (cpumask_empty(&cur)) {
                h->held_rounds = 0;
                *ret = gp->proposal;
                return;
        }
        if (widen_stalled(g, gp, h, &cur, ret)) {
                track_hold(h, &cur, ret, now);
                return;
        }
        /* Groups placed by energy (balanced on asymmetric machines) have their own band: POLICY_CHOICE_MARGIN. */
        if (!gp->waiting && gp->mode == PLACE_PACK)
                apply_band(p, gp, others, &cur);

        cpumask_andnot(&added, &gp->proposal, &cur);
        cpumask_andnot(&removed, &cur, &gp->proposal);
        cpumask_or(&final, &cur, &added);

        if (gp->waiting)
                stabilise_waiting(p, g, gp, h, &added, &removed, &final);
        else if (cpumask_empty(&removed))
                h->held_rounds = 0;
        else if (try_narrow(p, gp, h, others, now, &cur, &final, ret)) {
                track_hold(h, &cur, ret, now);
                return;
        }

        note_bounce(p, gp, h, others, now, &cur, &final);
        /*
         * Groups placed by energy (balanced on asymmetric machines) switch by the model's margin,
         * POLICY_CHOICE_MARGIN: their hold stays at POLICY_HOLD_USEC, and a narrowing undone
         * there is the model's call, not a load crossing a line.
         */
        if (gp->mode == PLACE_PACK)
                track_hold(h, &cur, &final, now);
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
                if (!cpumask_equal(&final, &previous)) {
                        h->changed = true;
                        h->last_change_usec = now;
                }
                h->cpus = final;
                h->placed = true;
                ret[i].cpus = final;
        }
        /* The plan's load, for what follows (contention). */
        memcpy(p->cpu_util, before, sizeof(double) * t->n_cpus);
        return 0;
}
