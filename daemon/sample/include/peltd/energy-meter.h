/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/config.h"
#include "peltd/energy-counter.h"
#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "peltd/time-util.h"

/*
 * The node's energy meter: the RAPL zones of the kernel's powercap tree, read through a RootDir so
 * that tests use fixture trees. Meter kinds are rows of a {probe, read} table (energy-meter.c); the
 * powercap row is the only one today (an AMD hwmon energyN_input would be a second).
 *
 *   - zones are the directories TYPE:ID[:SUBID] of the control types intel-rapl, intel-rapl-tpmi and
 *     intel-rapl-mmio, ids in hex (intel-rapl:a is the tenth); each has name, energy_uj (root only)
 *     and max_energy_range_uj;
 *   - zones are known by name, never by index: package-N or package-N-die-M are summed for the node,
 *     psys and dram are reported beside, core and uncore are parts of their package (never added);
 *     a subzone is named after its package ("package-0/core"); a name that two control types give
 *     is counted once, from the first of intel-rapl, intel-rapl-tpmi, intel-rapl-mmio;
 *   - energy_uj is kept open and read with pread; the caller reads at least once a second and calls
 *     energy_meter_rescan() every ENERGY_METER_RESCAN_USEC (the meter has no timers);
 *   - a zone is gone on ENODEV, when its file's link count is 0, when a read fails, or when a rescan
 *     misses it: said once, left out until it returns (from a fresh baseline);
 *   - wrap and dropped readings: energy-counter.h; a counter that stays still for 10 s while its
 *     CPUs are busy is no meter;
 *   - no meter (no zone, EACCES, a counter that never moves): said once, "no energy meter: figures
 *     are estimates"; the kind is then "none". A tree holding a top-level file peltd-emulated (the
 *     emulated meter, tools/emulated-meter.c) is read the same way and its kind is "emulated".
 *
 * What the meter says goes to the notify callback when one is set (the caller logs), else to the
 * log at notice level. Errors are negative errno.
 */

/* A rescan every 10 s: zones come and go with drivers and hotplug, rarely; a scan costs a directory walk. */
#define ENERGY_METER_RESCAN_USEC (10 * USEC_PER_SEC)

typedef enum EnergyZoneRole {
        ENERGY_ZONE_PACKAGE,         /* package-N, package-N-die-M: the node's energy */
        ENERGY_ZONE_PART,            /* core, uncore: within their package */
        ENERGY_ZONE_DRAM,
        ENERGY_ZONE_PSYS,            /* the platform */
        ENERGY_ZONE_OTHER,           /* any other name: reported beside */
} EnergyZoneRole;

typedef struct EnergyZone {
        char *name;                  /* "package-0", "package-0-die-1", "psys", "package-0/dram" */
        char *path;                  /* its directory under the root */
        EnergyZoneRole role;
        int package;                 /* N of package-N (a part's: its package's); -1: none */
        int die;                     /* M of package-N-die-M; -1: none */
        unsigned type;               /* the control type, by its order */
        int fd;                      /* energy_uj, kept open; -1 when gone */
        bool present;                /* read at the last read; false: gone (said) */
        bool seen;                   /* found by the scan in progress */
        bool said_gone;              /* its going was said; its return will be */
        uint64_t max_range_uj;       /* 0: unknown (a wrap is then dropped) */
        bool have_prev;
        uint64_t prev_uj;
        usec_t prev_usec;
        uint64_t total_uj;           /* energy counted since the meter started */
        uint64_t last_delta_uj;      /* of the last read, when last_ok */
        bool last_ok;                /* the last read gave an interval */
        unsigned n_dropped;          /* intervals dropped (long, too high, bad range) */
        EnergyStill still;
} EnergyZone;

typedef struct EnergyMeter EnergyMeter;

/*
 * Probes the meter kinds that setting allows under dir (relative to root; root must outlive the
 * meter), in the table's order. Without a meter the meter is still made, of kind "none" (said once),
 * and stays none: rescans do not probe again. -ENOMEM only.
 */
int energy_meter_new(const RootDir *root, const char *dir, EnergyMeterSetting setting,
                     void (*notify)(void *userdata, const char *message), void *userdata, EnergyMeter **ret);
EnergyMeter *energy_meter_free(EnergyMeter *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(EnergyMeter *, energy_meter_free);
#define _cleanup_energy_meter_ _cleanup_(energy_meter_freep)

/* "powercap", "emulated" or "none". */
const char *energy_meter_kind(const EnergyMeter *m);
bool energy_meter_measures(const EnergyMeter *m);

/*
 * Reads every zone at now. package_busy[N] (n_busy entries; NULL: none known) says whether package
 * N's CPUs were busy since the last read (zones of no package: any). Returns the number of zones
 * read, 0 without a meter.
 */
int energy_meter_read(EnergyMeter *m, usec_t now, const bool *package_busy, size_t n_busy);

/* Scans the tree again: new zones are opened, missing ones are gone, gone ones may return. */
int energy_meter_rescan(EnergyMeter *m);

/* The zones known, gone ones included (present false); valid until the next rescan. */
const EnergyZone *energy_meter_zones(const EnergyMeter *m, size_t *ret_n);

/* The node's energy since the meter started: the packages' zones (psys, dram and parts not added). */
uint64_t energy_meter_node_uj(const EnergyMeter *m);

/*
 * The node's energy over the last read's interval, in *ret_uj. False when the interval is not
 * whole: a package zone gone, dropped, or without a previous read.
 */
bool energy_meter_node_delta(const EnergyMeter *m, uint64_t *ret_uj);

/*
 * The parsing of the tree, exposed for tests: a zone directory's name "TYPE:ID[:SUBID]" (type: its
 * index in intel-rapl, intel-rapl-tpmi, intel-rapl-mmio; subid -1: none) and a zone's name
 * ("package-N[-die-M]", "psys", ...). -EINVAL for what does not parse.
 */
int energy_zone_parse_dirname(const char *s, unsigned *ret_type, unsigned *ret_id, int *ret_subid);
EnergyZoneRole energy_zone_role(const char *name, int *ret_package, int *ret_die);
