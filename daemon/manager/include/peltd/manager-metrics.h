/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "peltd/macro.h"
#include "peltd/manager.h"

/*
 * The daemon's metrics file (MetricsFile=, DESIGN.md "Metrics") for a Manager: it counts the
 * Manager's rounds through its hooks and writes the file after them, at most once a second; the
 * file is removed when the daemon stops.
 */
typedef struct ManagerMetrics ManagerMetrics;

/* Registers its hooks with m and adds its timer, before the first round. Logs its errors. */
int manager_metrics_start(Manager *m, ManagerMetrics **ret);
/* Removes its hooks and its timer (the file stays): before the Manager is freed. */
ManagerMetrics *manager_metrics_free(ManagerMetrics *mm);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManagerMetrics *, manager_metrics_free);
#define _cleanup_manager_metrics_ _cleanup_(manager_metrics_freep)
