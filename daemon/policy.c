/* SPDX-License-Identifier: GPL-2.0-only */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>

#include "peltd/pelt.h"
#include "peltd/policy.h"

/*
 * One round of placement:
 *
 *   1. per group: its demand (the maximum util over the last rounds; runnable where it waits for
 *      CPU), its candidate CPUs (online, not isolated, inside the allowed CPUs and the NUMA nodes of
 *      cpuset.mems, on asymmetric machines inside the classes its biggest task fits), and how it is
 *      placed: left alone, spread (performance), packed (power) or chosen by energy (balanced);
 *   2. the load of groups left alone and of spread groups is laid down first (per-CPU util, as the
 *      energy model spreads it), so that packing sees what is already there;
 *   3. packed and chosen groups are placed in order, each on top of the ones before;
 *   4. with history, packed groups are judged again against the whole plan, and the stability
 *      rules turn each proposal into the set actually planned (place_with_history()).
 */

typedef enum PlaceMode {
        PLACE_LEAVE,                 /* left alone: keeps its current set */
        PLACE_SPREAD,                /* every candidate CPU */
        PLACE_PACK,                  /* the fewest packages, clusters, cores (or lowest classes) that fit */
        PLACE_CHOOSE,                /* spread or pack, whichever the energy model says is cheaper */
} PlaceMode;

typedef struct GroupPlan {
        PlaceMode mode;
        Policy policy;
        CpuMask candidates;
        double demand;
        double util;                 /* this round's util, for the energy estimate */
        double max_task_util;
        bool waiting;
        bool fit_restricted;         /* candidates cut to the classes its biggest task fits */
        bool fits_none;              /* its biggest task fits no class: kept on the biggest */
        bool fit_impossible;         /* no allowed CPU is of a class it fits */
        bool packed;                 /* balanced on asymmetric machines chose packing */
        usec_t burst_usec;           /* the threshold it was compared with */
        unsigned min_cpus;           /* MinCPUs=, 0 when unset */
        CpuMask proposal;
        char prefix[POLICY_REASON_MAX];  /* what a packed group's reason starts with */
        char reason[POLICY_REASON_MAX];
        char note[96];               /* a restriction that had to be dropped, appended to the reason */
} GroupPlan;

typedef struct Planner {
        const Topology *t;
        const PolicyParams *params;
        CpuMask usable;
        /*
         * Per CPU, the load laid down so far: by demand (what sets are sized and checked for), and
         * by util (what the energy estimate runs on: the expected load, where demand is its
         * recent maximum). Each with a copy of the part laid down before packing starts.
         */
        double *cpu_util;
        double *cpu_energy;
        double *base_util;
        double *base_energy;
        size_t *core_order;          /* smt_groups indices in packing order */
        size_t *core_cpus;           /* per core (smt_groups index): its CPUs' indexes, from core_start[g] */
        size_t *core_start;          /* n_smt_groups + 1 entries */
} Planner;

static void planner_done(Planner *p) {
        free(p->cpu_util);
        free(p->cpu_energy);
        free(p->base_util);
        free(p->base_energy);
        free(p->core_order);
        free(p->core_cpus);
        free(p->core_start);
}

/* A core's place in the packing order: class, package, cluster (else LLC), first CPU. */
typedef struct CoreKey {
        int key[4];
        size_t core;                 /* smt_groups index */
} CoreKey;

static CoreKey core_key(const Topology *t, size_t g) {
        int cpu = cpumask_first(&t->smt_groups[g]);
        const TopoCpu *c = topology_cpu(t, cpu);
        CoreKey k = { .key = { 0, 0, 0, cpu }, .core = g };

        if (c) {
                k.key[0] = c->class_index;
                k.key[1] = c->package_index;
                if (t->has_clusters && t->n_clusters > 0)
                        k.key[2] = c->cluster_index;
                else if (c->llc_index >= 0)
                        k.key[2] = c->llc_index;
        }
        return k;
}

static int compare_core_keys(const void *a, const void *b) {
        const CoreKey *x = a, *y = b;

        for (size_t i = 0; i < ELEMENTSOF(x->key); i++)
                if (x->key[i] != y->key[i])
                        return x->key[i] < y->key[i] ? -1 : 1;
        return 0;
}

static int planner_init(Planner *p, const Topology *t, const PolicyParams *params) {
        *p = (Planner){ .t = t, .params = params };

        cpumask_andnot(&p->usable, &t->online, &t->isolated);
        p->cpu_util = new0(double, MAX(t->n_cpus, 1u));
        p->cpu_energy = new0(double, MAX(t->n_cpus, 1u));
        p->base_util = new0(double, MAX(t->n_cpus, 1u));
        p->base_energy = new0(double, MAX(t->n_cpus, 1u));
        p->core_order = new0(size_t, MAX(t->n_smt_groups, 1u));
        p->core_cpus = new0(size_t, MAX(t->n_cpus, 1u));
        p->core_start = new0(size_t, t->n_smt_groups + 1);
        if (!p->cpu_util || !p->cpu_energy || !p->base_util || !p->base_energy || !p->core_order || !p->core_cpus || !p->core_start)
                return -ENOMEM;

        /* Each core's CPU indexes, in one array (counting sort by smt_index). */
        for (size_t i = 0; i < t->n_cpus; i++) {
                int g = t->cpus[i].smt_index;

                if (g >= 0 && (size_t) g < t->n_smt_groups)
                        p->core_start[g + 1]++;
        }
        for (size_t g = 0; g < t->n_smt_groups; g++)
                p->core_start[g + 1] += p->core_start[g];
        {
                _cleanup_free_ size_t *fill = new0(size_t, t->n_smt_groups + 1);

                if (!fill)
                        return -ENOMEM;
                for (size_t i = 0; i < t->n_cpus; i++) {
                        int g = t->cpus[i].smt_index;

                        if (g >= 0 && (size_t) g < t->n_smt_groups)
                                p->core_cpus[p->core_start[g] + fill[g]++] = i;
                }
        }

        {
                _cleanup_free_ CoreKey *keys = new0(CoreKey, MAX(t->n_smt_groups, 1u));

                if (!keys)
                        return -ENOMEM;
                for (size_t g = 0; g < t->n_smt_groups; g++)
                        keys[g] = core_key(t, g);
                qsort(keys, t->n_smt_groups, sizeof(CoreKey), compare_core_keys);
                for (size_t k = 0; k < t->n_smt_groups; k++)
                        p->core_order[k] = keys[k].core;
        }
        return 0;
}

static bool asymmetric(const Topology *t) {
        return t->asymmetric && t->n_classes > 1;
}

static _printf_(2, 3) void reason_append(char *reason, const char *format, ...) {
        size_t l = strlen(reason);
        va_list ap;

        if (l >= POLICY_REASON_MAX - 1)
                return;
        va_start(ap, format);
        (void) vsnprintf(reason + l, POLICY_REASON_MAX - l, format, ap);
        va_end(ap);
}

static double cpus_of(double util) {
        return util / 1024.0;
}

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

/* The package ids (not indexes) a set touches, for reasons: "package 0" / "packages 0, 1". */
static void describe_package_ids(const Planner *p, const CpuMask *set, char *buf, size_t size) {
        size_t n = 0, l;

        buf[0] = 0;
        for (size_t k = 0; k < p->t->n_packages; k++) {
                if (!cpumask_intersects(&p->t->packages[k].cpus, set))
                        continue;
                l = strlen(buf);
                snprintf(buf + l, size - l, "%s%d", n ? ", " : "", p->t->packages[k].id);
                n++;
        }
        if (n == 0)
                snprintf(buf, size, "no package");
        else {
                char tmp[128];

                snprintf(tmp, sizeof tmp, "%s %s", n == 1 ? "package" : "packages", buf);
                snprintf(buf, size, "%s", tmp);
        }
}

/* The load cpu_util holds on the CPUs of set. */
static double load_on(const Topology *t, const double *cpu_util, const CpuMask *set) {
        double sum = 0;

        for (size_t i = 0; i < t->n_cpus; i++)
                if (cpumask_test(set, t->cpus[i].cpu))
                        sum += cpu_util[i];
        return sum;
}

static int count_cores(const Topology *t, const CpuMask *set) {
        int n = 0;

        for (size_t g = 0; g < t->n_smt_groups; g++)
                if (cpumask_intersects(&t->smt_groups[g], set))
                        n++;
        return n;
}

/* Adds whole cores (their candidate CPUs) in packing order until set holds min_cpus CPUs. */
static void extend_to_min(const Planner *p, const CpuMask *candidates, unsigned min_cpus, CpuMask *set) {
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
static bool pack(const Planner *p, const CpuMask *candidates, double demand, CpuMask *ret) {
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
        snprintf(buf, size, "demand %.1f CPUs fits %d core%s (%d CPUs) of %s", cpus_of(gp->demand),
                 count_cores(t, set), count_cores(t, set) == 1 ? "" : "s", cpumask_count(set), where);
}

/* Where the candidates were cut by the fit rule, say so. */
static void describe_fit(const GroupPlan *gp, char *reason) {
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
        describe_fit(gp, reason);
}

/* Where MinCPUs= asks for more CPUs than the group may have, say so. */
static void describe_min_cpus_short(const GroupPlan *gp, char *reason) {
        if (gp->min_cpus > 0 && (unsigned) cpumask_count(&gp->proposal) < gp->min_cpus)
                reason_append(reason, ", only %d allowed CPUs for MinCPUs=%u", cpumask_count(&gp->proposal), gp->min_cpus);
}

static void place_spread(Planner *p, GroupPlan *gp) {
        gp->proposal = gp->candidates;
        energy_spread(p->t, &gp->proposal, gp->demand, p->cpu_util);
        energy_spread(p->t, &gp->proposal, gp->util, p->cpu_energy);
}

static void place_pack(Planner *p, GroupPlan *gp) {
        char what[200];
        bool fits;
        int before;

        fits = pack(p, &gp->candidates, gp->demand, &gp->proposal);
        describe_pack(p, gp, &gp->proposal, fits, what, sizeof what);
        if (fits && !asymmetric(p->t)) {
                double there = load_on(p->t, p->cpu_util, &gp->proposal);

                /* The set is sized with the other groups' load on it: say so, or it looks too wide. */
                if (there > 0)
                        snprintf(what + strlen(what), sizeof what - strlen(what), " with %.1f CPUs of others' load",
                                 cpus_of(there));
        }
        before = cpumask_count(&gp->proposal);
        extend_to_min(p, &gp->candidates, gp->min_cpus, &gp->proposal);
        gp->reason[0] = 0;
        reason_append(gp->reason, "%s%s", gp->prefix, what);
        if (cpumask_count(&gp->proposal) > before)
                reason_append(gp->reason, ", widened to %d CPUs by MinCPUs=%u", cpumask_count(&gp->proposal), gp->min_cpus);
        else
                describe_min_cpus_short(gp, gp->reason);
        describe_fit(gp, gp->reason);
        energy_spread(p->t, &gp->proposal, gp->demand, p->cpu_util);
        energy_spread(p->t, &gp->proposal, gp->util, p->cpu_energy);
}

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
                        place_pack(p, &gps[i]);
                else if (gps[i].mode == PLACE_CHOOSE)
                        place_spread(p, &gps[i]);
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
        describe_fit(gp, gp->reason);
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
static int choose(Planner *p, GroupPlan *gps, size_t n, const int *previous) {
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
static int place_with_history(Planner *p, const PolicyGroup *groups, GroupPlan *gps, PolicyHistory *history, size_t n,
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
                        place_pack(p, gp);
                        first = gp->proposal;

                        for (size_t k = 0; k < t->n_cpus; k++)
                                p->cpu_util[k] = before[k] + after[k];
                        (void) pack(p, &gp->candidates, gp->demand, &all);
                        extend_to_min(p, &gp->candidates, gp->min_cpus, &all);
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
 * one of its own comes back. Otherwise an empty cut leaves the group alone (classify()).
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

/* Candidates: online, not isolated, allowed (operator and parent), in cpuset.mems' nodes. */
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
static void classify(Planner *p, const PolicyGroup *g, PolicyHistory *h, usec_t now, GroupPlan *gp, PolicyResult *r) {
        classify_overrides(p, g, gp, r);
        classify_demand(g, h, now, gp, r);
        if (classify_left_alone(g, h, now, r))
                return;

        classify_candidates(p, g, gp);
        if (cpumask_empty(&gp->candidates)) {
                snprintf(r->reason, sizeof r->reason,
                         "no online, non-isolated CPU in its allowed CPUs%s: left alone", g->has_mems ? " and NUMA nodes" : "");
                return;
        }
        if (asymmetric(p->t))
                restrict_to_fit(p->t, gp);

        classify_mode(p->t, g, gp);
        r->policy = gp->policy;
        r->managed = true;
}

/*
 * Under contention a group gets what its shares win, not what it wants. Where more demand lies on a
 * group's CPUs than they fit, estimate that (seed 009): each group's shares are split over its CPUs
 * in proportion to its load there (pelt_shares_split()), and on each CPU a group gets the CPU's
 * capacity in proportion to its part of the shares present. The estimate goes into the reason.
 */
static int explain_contention(const Planner *p, const GroupPlan *gps, PolicyResult *ret, size_t n) {
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
                classify(&p, &groups[i], history ? &history[i] : NULL, now, &gps[i], &ret[i]);

        /* What is already there: groups left alone on their current sets, then the spread ones. */
        for (size_t i = 0; i < n; i++)
                if (!ret[i].managed) {
                        CpuMask m;

                        cpumask_and(&m, &groups[i].cpus, &t->online);
                        energy_spread(t, &m, gps[i].demand, p.cpu_util);
                        energy_spread(t, &m, groups[i].util, p.cpu_energy);
                }
        for (size_t i = 0; i < n; i++)
                if (ret[i].managed && gps[i].mode == PLACE_SPREAD) {
                        place_spread(&p, &gps[i]);
                        spread_reason(&gps[i], gps[i].reason);
                        describe_min_cpus_short(&gps[i], gps[i].reason);
                }
        /* Packed and chosen groups, in order, each on top of what is there. */
        memcpy(p.base_util, p.cpu_util, sizeof(double) * t->n_cpus);
        memcpy(p.base_energy, p.cpu_energy, sizeof(double) * t->n_cpus);
        {
                _cleanup_free_ int *previous = new0(int, MAX(n, 1u));

                if (!previous)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        previous[i] = history && history[i].choice != POLICY_CHOICE_NONE ?
                                        history[i].choice == POLICY_CHOICE_PACKED : -1;
                r = choose(&p, gps, n, previous);
                if (r < 0)
                        return r;
                for (size_t i = 0; history && i < n; i++)
                        history[i].choice = gps[i].mode != PLACE_CHOOSE ? POLICY_CHOICE_NONE :
                                            gps[i].packed ? POLICY_CHOICE_PACKED : POLICY_CHOICE_SPREAD;
        }

        if (history) {
                r = place_with_history(&p, groups, gps, history, n, now, ret);
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

        return explain_contention(&p, gps, ret, n);
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
