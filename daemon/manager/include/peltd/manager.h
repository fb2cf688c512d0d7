/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "peltd/args.h"
#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/policy-name.h"

/*
 * The daemon: one Manager owns the event loop, its timers and signal sources, the configuration,
 * the runtime settings, the topology, the samplers and the planner's history, and the state file
 * of originals. The D-Bus API (peltd/manager-bus.h) and the metrics file
 * (peltd/manager-metrics.h) are started after it, and hear from it through its hooks.
 *
 * Each group round (SampleIntervalMSec) samples the managed groups, tracks them, plans and
 * applies; each task round (TaskSampleIntervalMSec) also samples every thread. A CPU going offline
 * or online re-reads the topology and plans again at once. SIGTERM/SIGINT restore every original
 * and exit; SIGHUP reloads the configuration (keeping the old one when the new one is broken).
 */
typedef struct Manager Manager;

/* Sets everything up (a state file left by a crash is restored first). Logs its own errors. */
int manager_new(const Args *args, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
#define _cleanup_manager_ _cleanup_(manager_freep)

/*
 * Locks and loads the state file (originals.h) for the daemon (running_daemon) or --restore, and
 * logs what stops it (another holder of the lock, an untrusted file, one that does not parse) and
 * every entry it refuses. Returns the locked fd in *ret_lock.
 */
struct Originals;
int state_open(const char *path, bool running_daemon, int *ret_lock, struct Originals **ret);

/* Runs until SIGTERM/SIGINT (then restores) or a fatal error. Returns the exit status. */
int manager_run(Manager *m);

/* A placement applied, as PlacementChanged tells it (DESIGN.md, "D-Bus"). */
typedef struct PlacementChange {
        const char *path;            /* the group's (bytes, not necessarily UTF-8) */
        const CpuMask *old_cpus;
        const CpuMask *cpus;
        uint64_t old_shares;         /* as read before the write (v2: the weight, as shares) */
        uint64_t shares;
        Policy policy;               /* the policy that placed it */
        const char *reason;
} PlacementChange;

/*
 * What the Manager tells others (the D-Bus API, the metrics file) without knowing them: each
 * registers its hooks, and the Manager calls every one registered with its userdata. A NULL
 * callback is skipped. Callbacks must not add or remove hooks.
 */
typedef struct ManagerHooks {
        /* A placement was applied (never in a dry run). */
        void (*placement_changed)(const PlacementChange *c, void *userdata);
        /* The daemon's policy changed: SetPolicy, Reload or SIGHUP. */
        void (*policy_changed)(Policy policy, void *userdata);
        /* A round ran (a task round: task_round), complete or failed. */
        void (*round_done)(bool task_round, void *userdata);
        /* The event loop ended: the originals are restored next, then the daemon exits. */
        void (*stopping)(void *userdata);
} ManagerHooks;

/*
 * Registers hooks (kept by pointer: they must outlive the registration) with userdata. Returns 0,
 * or -ENOSPC when a handful are registered already. Remove them before userdata goes away; the
 * Manager is freed after every registrant.
 */
int manager_add_hooks(Manager *m, const ManagerHooks *hooks, void *userdata);
/* Removes what manager_add_hooks() added with the same hooks and userdata; nothing when it is not there. */
void manager_remove_hooks(Manager *m, const ManagerHooks *hooks, void *userdata);

/* SetGroupShares' range, in cpu.shares' unit (converted on v2); 0 takes a runtime value back. */
#define MANAGER_SHARES_MIN 2
#define MANAGER_SHARES_MAX 262144

/*
 * The runtime settings (SetPolicy, SetGroupShares): in force from the next round until the daemon
 * stops, over Reload and SIGHUP. A runtime policy wins over --policy, which wins over Policy=.
 * manager_set_policy() returns 0 or -EINVAL (not a policy).
 */
int manager_set_policy(Manager *m, Policy policy);
/*
 * A managed group's shares (path as the sampler gives it, bytes), over its Shares=; 0 takes the
 * runtime value back, and with no Shares= the group's own value goes back. Returns 0, -ENOENT (not
 * managed), -ERANGE or -ENOMEM.
 */
int manager_set_group_shares(Manager *m, const char *path, uint64_t shares);

/*
 * Reads the configuration again (SIGHUP, Reload()), systemd told (RELOADING=1, READY=1, STATUS=);
 * the old settings stay when it is broken. Returns 0, or a negative errno with *ret_message (may
 * be NULL) saying what was wrong.
 */
int manager_reload(Manager *m, char **ret_message);
