/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "peltd/time-util.h"

/*
 * The arithmetic of one energy counter between two reads (a RAPL zone's energy_uj): wrap, and the
 * readings that are dropped rather than guessed. Pure: the caller gives the values and the times.
 *
 * A counter counts µJ from 0 to max_range_uj and then starts again at 0, so one that went down
 * wrapped once:
 *
 *     prev                max_range      0            cur
 *      |-------------------->|           |------------->|
 *      delta = (max_range - prev) + 1 + cur
 *
 * It can wrap more than once unseen only if the interval is longer than the shortest possible wrap:
 * max_range at the highest power a node draws. 1,000 W is above any RAPL domain of today's
 * machines (the largest packages stay under 500 W), so an interval longer than max_range / 1,000 W,
 * or a delta that implies more than 1,000 W, is not a reading: it is dropped.
 * 1 W = 1 µJ/µs, so the bounds are plain comparisons in µJ and µs.
 */

/* The highest power a reading may imply, in W (µJ per µs). */
#define ENERGY_MAX_WATTS 1000u

typedef enum EnergyDelta {
        ENERGY_DELTA_OK = 0,
        ENERGY_DELTA_LONG_INTERVAL,  /* longer than the shortest possible wrap: dropped */
        ENERGY_DELTA_TOO_HIGH,       /* implies more than ENERGY_MAX_WATTS: dropped */
        ENERGY_DELTA_BAD_RANGE,      /* a value above max_range_uj, or a wrap with no range known: dropped */
} EnergyDelta;

/*
 * The energy between two reads prev_uj and cur_uj taken interval_usec apart, in *ret_delta_uj
 * (written only for ENERGY_DELTA_OK). Returns an EnergyDelta.
 */
EnergyDelta energy_counter_delta(uint64_t prev_uj, uint64_t cur_uj, uint64_t max_range_uj, usec_t interval_usec,
                                 uint64_t *ret_delta_uj);

/*
 * A counter that stays still while its CPUs are busy is no meter (some VMs show a powercap tree whose
 * counters never move). 10 s: a package draws watts whenever a CPU is busy, and RAPL updates its
 * counters about every millisecond, so ten seconds of busy CPUs without a change is not a quiet
 * moment.
 */
#define ENERGY_STILL_USEC (10 * USEC_PER_SEC)

typedef struct EnergyStill {
        bool have_value;
        uint64_t value_uj;
        usec_t busy_since_usec;      /* the start of the current busy, unchanged stretch; 0: none */
} EnergyStill;

/*
 * Feeds one read (value_uj at now, busy: were the zone's CPUs busy since the last read). Returns
 * true once the counter has stayed at one value through busy reads for ENERGY_STILL_USEC.
 */
bool energy_still_update(EnergyStill *s, uint64_t value_uj, bool busy, usec_t now);
