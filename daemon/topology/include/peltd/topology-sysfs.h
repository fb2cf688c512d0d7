/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "peltd/cpumask.h"
#include "peltd/rootdir.h"
#include "peltd/topology.h"

/*
 * Reads the topology under root (its sys/devices/system/cpu, sys/devices/system/node, and
 * proc/cpuinfo as a last resort). Returns -ENODEV when no online CPU can be found, -ENOMEM, or the
 * error of a read that makes the rest meaningless; odd or missing files fall back as the README's "Topology" section says
 * (logged at debug).
 */
int topology_load(const RootDir *root, Topology **ret);

/*
 * Reads the set of online CPUs as topology_load() does (cpu/online, else each cpuN/online, else
 * proc/cpuinfo). Cheap: one small read in the usual case.
 */
int topology_read_online(const RootDir *root, CpuMask *ret);

/* Returns 1 when the online CPUs under root differ from t's, 0 when not, or -errno. */
int topology_online_changed(const Topology *t, const RootDir *root);

/*
 * Re-reads the topology (after a hotplug uevent, or when topology_online_changed() says so). When
 * anything differs, *t is freed and replaced and 1 is returned; otherwise *t is left as it was
 * and 0 is returned. On an error *t is left as it was. Pointers into the old Topology are invalid
 * after a return of 1.
 */
int topology_refresh(Topology **t, const RootDir *root);
