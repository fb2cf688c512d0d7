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
        GroupOwner owner;            /* OWNER_NONE: peltd's to place; else left alone, its demand counted on cpus */
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
