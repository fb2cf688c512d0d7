/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

#include "peltd/cpumask.h"

/*
 * Where systemd owns a unit's cgroup (unified hierarchy, systemd is PID 1, the unit is not
 * delegated), its next reload would overwrite our writes to cpuset.cpus and cpu.weight: peltd sets
 * the unit's AllowedCPUs= and CPUWeight= through org.freedesktop.systemd1.Manager.
 * SetUnitProperties(unit, runtime=true, [("AllowedCPUs", ay), ("CPUWeight", t)]) instead.
 *
 * Helpers return negative errno (a D-Bus error is mapped by sd-bus); they log at debug at most.
 */

/* systemd's "not set" CPUWeight (CGROUP_WEIGHT_INVALID): the unit gets the default weight. */
#define SYSTEMD_CPU_WEIGHT_UNSET UINT64_MAX

typedef struct SystemdUnitCpu {
        CpuMask allowed;             /* AllowedCPUs=; empty: not set (every CPU) */
        uint64_t weight;             /* CPUWeight=; SYSTEMD_CPU_WEIGHT_UNSET: not set */
} SystemdUnitCpu;

/* True when systemd runs as PID 1 (sd_booted()). */
bool systemd_is_init(void);

/* The unit owning a cgroup (GetUnitByControlGroup), e.g. "/system.slice/web.service" -> "web.service". */
int systemd_unit_for_cgroup(sd_bus *bus, const char *cgroup, char **ret_unit);

/* Whether the unit has Delegate=yes (then its subtree is the unit's own, written directly). */
int systemd_unit_delegated(sd_bus *bus, const char *unit, bool *ret);

int systemd_unit_get_cpu(sd_bus *bus, const char *unit, SystemdUnitCpu *ret);

/* The unit's cgroup (ControlGroup=, "/system.slice/web.service"); "" while it has none. */
int systemd_unit_control_group(sd_bus *bus, const char *unit, char **ret);

/*
 * Sets AllowedCPUs= (when allowed is non-NULL; an empty mask resets it) and CPUWeight= (when
 * set_weight; SYSTEMD_CPU_WEIGHT_UNSET resets it), at runtime only, in one call.
 *
 * Only the properties: systemd (252) stops writing cpuset.cpus once AllowedCPUs= is reset and
 * leaves the unit's cgroup on the CPUs it had. The systemd backend's restore empties the file
 * after such a reset (apply-backend.h).
 */
int systemd_unit_set_cpu(sd_bus *bus, const char *unit, const CpuMask *allowed, bool set_weight, uint64_t weight);

/*
 * A property peltd places (AllowedCPUs, CPUWeight) as the state file keeps it, read or set (one
 * SetUnitProperties call, at runtime): text, as below. -EINVAL for another property.
 */
int systemd_unit_get_property(sd_bus *bus, const char *unit, const char *property, char **ret);
int systemd_unit_set_property(sd_bus *bus, const char *unit, const char *property, const char *value);

/* The values as the state file keeps them: a CPU list ("" = not set) and a number ("" = not set). */
char *systemd_allowed_to_string(const CpuMask *allowed);
int systemd_allowed_from_string(const char *s, CpuMask *ret);
char *systemd_weight_to_string(uint64_t weight);
int systemd_weight_from_string(const char *s, uint64_t *ret);
