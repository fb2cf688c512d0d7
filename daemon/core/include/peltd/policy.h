/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/config.h"
#include "peltd/cpumask.h"
#include "peltd/energy.h"
#include "peltd/policy-name.h"
#include "peltd/time-util.h"
#include "peltd/topology.h"

/*
 * Placement (DESIGN.md, "Policies"). Pure: policy_plan() takes the topology, the tracked groups,
 * the operator's overrides, the policy, the history kept between rounds and the time, and returns
 * for every group a CPU set, shares and a one-line reason. It does no I/O, reads no clock and never
 * logs; the history is the caller's and is updated in place.
 *
 * Util is in 1/1024 of a CPU of capacity 1024 (a group's may exceed 1024). A demand fits a CPU set
 * when util * 1280 < capacity * 1024 (energy.h: util_fits_capacity(), energy_set_capacity()).
 */

/* No placement before a group has this much history: averages need time to mean something. */
#define POLICY_MIN_HISTORY_USEC (1 * USEC_PER_SEC)
/* A narrower plan must hold this many rounds in a row before it is applied... */
#define POLICY_NARROW_HOLD_ROUNDS 3
/* ...and a group is narrowed at most once per this long. */
#define POLICY_NARROW_INTERVAL_USEC (10 * USEC_PER_SEC)
/* Unless demand moved by more than 25% and 32/1024 since the set was chosen: then at once. */
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
        const GroupConfig *config;   /* [Group PATH] overrides, or NULL */
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
} PolicyHistory;

typedef struct PolicyParams {
        Policy policy;               /* the daemon's policy; a group's Policy= wins */
        const EnergyModel *energy_model; /* the kernel's, or NULL: the built-in model */
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
 * Plans every group. history is NULL (no history: --plan places at once with demand = util) or
 * an array of n entries, history[i] belonging to groups[i], kept by the caller between rounds.
 * ret has n entries. Returns 0 or -ENOMEM.
 */
int policy_plan(
                const Topology *t,
                const PolicyGroup *groups,
                size_t n,
                const PolicyParams *params,
                PolicyHistory *history,
                usec_t now,
                PolicyResult *ret);

/*
 * Whether a group's history is at rest after a round of policy_plan(): nothing held for a
 * narrowing, nothing bounced, no energy choice (balanced on asymmetric machines), and its util
 * samples all g's util. The time enters a plan only through the learning period (its reason
 * names it), a narrowing's hold and interval, and a bounce: once every group's history is at
 * rest, and a round planned what the round before it planned from the same inputs, a round with
 * those inputs again plans the same and leaves the histories as they are (but for n_util). The
 * daemon then leaves the planner out until an input changes.
 */
bool policy_history_at_rest(const PolicyHistory *h, const PolicyGroup *g);

/*
 * The energy of a plan: each group's util spread over its set (energy_spread()), then
 * energy_estimate() with m (NULL: built-in). Returns a negative errno (-ENOMEM) or 0 and ret.
 */
int policy_plan_energy(
                const Topology *t,
                const EnergyModel *m,
                const PolicyGroup *groups,
                const PolicyResult *results,
                size_t n,
                double *ret);
