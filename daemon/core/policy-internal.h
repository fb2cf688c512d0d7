/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What the planner's files share: the Planner (the machine and the load laid down so far), the
 * plan of one group as the steps build it, and a few small helpers. policy-planner.c makes and
 * frees a Planner; the steps of a round (policy.c) each live in a file of their own:
 *
 *   policy-classify.c    step 1: a group's demand, candidate CPUs and how it is placed
 *   policy-place.c       one group packed or spread on top of the load there; step 2
 *   policy-choose.c      step 3: packed and chosen groups in order, balanced's choice by energy
 *   policy-stability.c   step 4, with history: packed groups judged again, the stability rules
 *   policy-contention.c  what a group's shares win where its CPUs are contended
 *
 * Each file calls only files listed above it, and this header's; nothing here calls them.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/policy-types.h"
#include "peltd/topology.h"

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
        CpuMask usable;              /* online, not isolated, not held by another owner */
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

/* Makes p for t: the usable CPUs, no load laid down, the cores in packing order. 0 or -ENOMEM. */
int planner_init(Planner *p, const Topology *t, const PolicyParams *params);
void planner_done(Planner *p);

/* One capacity class is the symmetric case, whatever the kernel says about asymmetry. */
static inline bool asymmetric(const Topology *t) {
        return t->asymmetric && t->n_classes > 1;
}

/* Appends to a reason; what does not fit in POLICY_REASON_MAX is cut. */
static inline _printf_(2, 3) void reason_append(char *reason, const char *format, ...) {
        size_t l = strlen(reason);
        va_list ap;

        if (l >= POLICY_REASON_MAX - 1)
                return;
        va_start(ap, format);
        (void) vsnprintf(reason + l, POLICY_REASON_MAX - l, format, ap);
        va_end(ap);
}

/* Util as a number of CPUs of capacity 1024, for reasons. */
static inline double cpus_of(double util) {
        return util / 1024.0;
}

/* The load cpu_util holds on the CPUs of set. */
static inline double load_on(const Topology *t, const double *cpu_util, const CpuMask *set) {
        double sum = 0;

        for (size_t i = 0; i < t->n_cpus; i++)
                if (cpumask_test(set, t->cpus[i].cpu))
                        sum += cpu_util[i];
        return sum;
}
