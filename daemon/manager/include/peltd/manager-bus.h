/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "peltd/macro.h"
#include "peltd/manager.h"

/*
 * The daemon's D-Bus API (DESIGN.md, "D-Bus"): org.peltd1 on the system bus, showing a Manager
 * and asking it for changes (manager_set_policy(), manager_set_group_shares(), manager_reload()).
 * It hears of placements and of the policy through the Manager's hooks.
 */
typedef struct ManagerBus ManagerBus;

/*
 * Registers its hooks with m, connects to the system bus and owns org.peltd1: call it after
 * manager_new() and before manager_run(), so the name is owned before READY=1. Without a bus the
 * daemon runs on and says so once, and connects again when the bus is back: only running out of
 * memory fails it (logged).
 */
int manager_bus_start(Manager *m, ManagerBus **ret);
/* Gives up the name, closes the connection and removes its hooks: before the Manager is freed. */
ManagerBus *manager_bus_free(ManagerBus *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManagerBus *, manager_bus_free);
#define _cleanup_manager_bus_ _cleanup_(manager_bus_freep)
