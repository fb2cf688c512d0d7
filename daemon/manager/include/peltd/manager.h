/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>

#include "peltd/args.h"
#include "peltd/macro.h"

/*
 * The daemon: one Manager owns the event loop, its timers and signal sources, the configuration,
 * the topology, the samplers and the planner's history, and the state file of originals.
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
