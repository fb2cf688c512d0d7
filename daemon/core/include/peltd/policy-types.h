/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/config.h"
#include "peltd/cpumask.h"
#include "peltd/energy.h"
#include "peltd/owner.h"
#include "peltd/policy-name.h"
#include "peltd/time-util.h"

/*
 * What the planner (policy.h) takes and returns, and the history it keeps per group: the types its
 * steps (policy-*.c) share with its callers, apart from the planner itself.
 */

/* No placement before a group has this much history: averages need time to mean something. */
#define POLICY_MIN_HISTORY_USEC (1 * USEC_PER_SEC)
/*
 * Pack slowly, unpack at once. A narrower plan is applied only when it has held in every round,
 * at least this many rounds, for the group's hold time:
 *   - none for a group peltd has not changed yet, and after a policy change (the 1 s of history
 *     and the rounds suffice);
 *   - POLICY_HOLD_USEC after any change: a load whose low phases are shorter than that is never
 *     packed;
 *   - doubled each time a widening undoes a narrowing within POLICY_UNDONE_USEC (20 s, 40 s, at
 *     most POLICY_HOLD_MAX_USEC), and back to POLICY_HOLD_USEC once the group stayed put, with no
 *     narrower plan waiting, for POLICY_UNDONE_USEC: a load that keeps coming back costs at most one narrowing and one
 *     widening a minute while it does, and fewer the longer its low phases are; one that drops
 *     for good is packed again within a minute;
 *   - after a widening by the pressure guard, POLICY_STALL_HOLD_USEC, doubled by each further one
 *     (at most POLICY_STALL_HOLD_MAX_USEC): packing is what stalled it, and trying again soon only
 *     stalls it again. A policy change or a Reload resets it.
 */
#define POLICY_NARROW_HOLD_ROUNDS 3
#define POLICY_HOLD_USEC (10 * USEC_PER_SEC)
#define POLICY_HOLD_MAX_USEC (60 * USEC_PER_SEC)
#define POLICY_UNDONE_USEC (10 * 60 * USEC_PER_SEC)
#define POLICY_STALL_HOLD_USEC (10 * 60 * USEC_PER_SEC)
#define POLICY_STALL_HOLD_MAX_USEC (4 * 3600 * USEC_PER_SEC)
/*
 * The band. A set is wide enough while the kernel's 20% margin holds (util * 1280 < capacity *
 * 1024: above that the group is widened at once), but a group is packed onto a narrower set only
 * when it fills at most 60% of it (util * POLICY_PACK_FIT < capacity * 1024): a load must grow by
 * a third after packing before it is widened again. The 20 points between the two lines are more
 * than a steady load's noise in its 3-round maximum (a few percent of a CPU here), and the 0.6 <->
 * 1.0 CPU square wave that flapped around one 0.8 line on one CPU never reaches the packing line.
 */
#define POLICY_PACK_FIT 1707
/* A narrowing back onto a set it did not hold on waits until the load there moved by more than 25% and 32/1024. */
#define POLICY_BIG_CHANGE_RATIO 0.25
#define POLICY_BIG_CHANGE_UTIL 32.0
/* Demand for planning is the maximum util over this many rounds (bursty work must not look small). */
#define POLICY_UTIL_SAMPLES 3
/* The burst threshold where no CPU reports an idle state: the article's ~100 µs. */
#define POLICY_DEFAULT_BURST_USEC 100
/*
 * A group waits for CPU when its runnable is "well above" its util: by the same margins as a big
 * demand change, more than 25% and 32/1024.
 */
#define POLICY_WAIT_RATIO 0.25
#define POLICY_WAIT_UTIL 32.0

/*
 * balanced on asymmetric machines keeps a group's placement (packed or spread) unless the other
 * saves more than this share of the plan's energy: closer than that is within the model's
 * coarseness, and every switch to spreading widens at once while the way back waits.
 */
#define POLICY_CHOICE_MARGIN 0.02

#define POLICY_REASON_MAX 256

typedef enum PolicyChoice {
        POLICY_CHOICE_NONE,          /* not chosen by energy (yet) */
        POLICY_CHOICE_SPREAD,
        POLICY_CHOICE_PACKED,
} PolicyChoice;

/* What the planner knows about one group this round. */
typedef struct PolicyGroup {
        const char *path;            /* full path in the hierarchy */
        double util;                 /* util_avg */
        double runnable;             /* runnable_avg (threads waiting for CPU count here, not in util) */
        double load;                 /* load_avg: shares-weighted demand (seeds 006/007) */
        unsigned nr_threads;         /* 0: unknown, taken as 1 */
        double max_task_util;        /* the biggest thread's util_avg; < 0: unknown (util / nr_threads) */
        usec_t avg_slice_usec;       /* mean run per timeslice; 0: unknown, taken as long-running */
        uint64_t shares;             /* current cpu.shares (v2: cpu.weight converted) */
        CpuMask cpus;                /* current cpuset.cpus (left alone groups keep it) */
        CpuMask allowed;             /* what its cpuset may hold: on v1 the parent's cpuset.cpus */
        bool has_allowed;            /* false: every CPU */
        CpuMask mems;                /* NUMA node ids of cpuset.mems */
        bool has_mems;               /* false: every node */
        bool pinned_narrower;        /* threads pin themselves (sched_setaffinity) narrower than the cpuset */
        GroupOwner owner;            /* OWNER_NONE: peltd's to place; else left alone, its demand counted on cpus */
        const GroupConfig *config;   /* [Group PATH] overrides, or NULL */
        /* The pressure guard fired for it (a packed group): its threads stalled this long in the last window. */
        usec_t stall_usec;           /* 0: it did not fire */
        usec_t stall_window_usec;
} PolicyGroup;

/* What the planner keeps per group between rounds; zero-initialise it for a new group. */
typedef struct PolicyHistory {
        bool seen;
        usec_t first_seen_usec;      /* the round the group was first planned */
        double util[POLICY_UTIL_SAMPLES]; /* recent util samples, a ring */
        unsigned n_util;             /* samples taken (the ring holds the last POLICY_UTIL_SAMPLES) */

        bool placed;                 /* cpus holds the last plan */
        CpuMask cpus;                /* the last plan */
        double planned_demand;       /* the demand cpus was chosen for */
        unsigned held_rounds;        /* rounds in a row a narrower plan than cpus was proposed */
        CpuMask narrower[POLICY_NARROW_HOLD_ROUNDS]; /* those proposals, a ring */
        bool narrowed;
        usec_t last_narrow_usec;     /* the last narrowing, when narrowed */
        CpuMask given_up;            /* the CPUs the last narrowing took away */
        bool bounced;                /* widened back onto them within POLICY_NARROW_INTERVAL_USEC: */
        CpuMask bounce_cpus;         /* the set it did not fit, */
        double bounce_load;          /* its demand and the others' load there then, */
        usec_t bounce_usec;          /* and when */
        PolicyChoice choice;         /* balanced on asymmetric machines: the last choice */

        /* The hold time (POLICY_HOLD_USEC above). */
        Policy policy;               /* the policy it was last planned under: another one resets the hold */
        bool changed;                /* its set was changed since it was first seen, or since the policy changed */
        usec_t last_change_usec;     /* when, the last time */
        usec_t narrower_since_usec;  /* the first round of the narrower proposals held_rounds counts */
        usec_t last_wait_usec;       /* the last round a narrower plan waited (hold, bounce) */
        bool narrow_undone;          /* the last narrowing was undone by a widening (counted in doublings) */
        unsigned doublings;          /* the hold time is POLICY_HOLD_USEC doubled this often, at most POLICY_HOLD_MAX_USEC */
        unsigned stalls;             /* widenings by the pressure guard since the policy changed or a Reload */
} PolicyHistory;

typedef struct PolicyParams {
        Policy policy;               /* the daemon's policy; a group's Policy= wins */
        const EnergyModel *energy_model; /* the kernel's, or NULL: the built-in model */
        const CpuMask *held;         /* CPUs other owners hold exclusively: in no set planned; NULL: none */
} PolicyParams;

typedef struct PolicyResult {
        bool managed;                /* false: left alone (cpus is its current set), see reason */
        bool learning;               /* left alone for now: under POLICY_MIN_HISTORY_USEC of history */
        Policy policy;               /* the policy that placed it */
        CpuMask cpus;                /* never empty for a managed group */
        uint64_t shares;             /* Shares= where set, else its current shares */
        bool shares_set;             /* the operator set Shares= (only then is it written) */
        double demand;               /* the util it was planned for */
        char reason[POLICY_REASON_MAX];
} PolicyResult;

/*
 * The hold time of a group with history h (POLICY_HOLD_USEC above): how long a narrower plan must
 * have held before it is applied.
 */
static inline usec_t policy_hold_usec(const PolicyHistory *h) {
        if (h->stalls > 0) {
                usec_t hold = POLICY_STALL_HOLD_USEC;

                for (unsigned k = 1; k < h->stalls && hold < POLICY_STALL_HOLD_MAX_USEC; k++)
                        hold *= 2;
                return hold < POLICY_STALL_HOLD_MAX_USEC ? hold : POLICY_STALL_HOLD_MAX_USEC;
        }
        if (!h->changed)
                return 0;
        if (h->doublings >= 3)
                return POLICY_HOLD_MAX_USEC;
        return POLICY_HOLD_USEC << h->doublings;
}

/* A policy change or a Reload: the hold starts again as for a group peltd has not changed yet. */
static inline void policy_history_reset_hold(PolicyHistory *h) {
        h->changed = false;
        h->doublings = 0;
        h->stalls = 0;
        h->narrow_undone = false;
}
