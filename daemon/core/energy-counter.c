/* SPDX-License-Identifier: GPL-2.0-only */
/* One energy counter's reads: wrap, dropped readings and a counter that never moves (energy-counter.h). */
#include "peltd/energy-counter.h"

EnergyDelta energy_counter_delta(uint64_t prev_uj, uint64_t cur_uj, uint64_t max_range_uj, usec_t interval_usec,
                                 uint64_t *ret_delta_uj) {
        uint64_t delta;

        if (max_range_uj > 0 && (prev_uj > max_range_uj || cur_uj > max_range_uj))
                return ENERGY_DELTA_BAD_RANGE;
        /* Longer than max_range at 1,000 W: it may have wrapped twice. */
        if (max_range_uj > 0 && interval_usec > max_range_uj / ENERGY_MAX_WATTS)
                return ENERGY_DELTA_LONG_INTERVAL;
        if (cur_uj >= prev_uj)
                delta = cur_uj - prev_uj;
        else if (max_range_uj == 0)
                return ENERGY_DELTA_BAD_RANGE;
        else
                delta = max_range_uj - prev_uj + cur_uj + 1;
        /* delta / interval > 1,000 W, without dividing (interval 0 with a delta is infinite power). */
        if (delta > 0 && (interval_usec == 0 || delta / ENERGY_MAX_WATTS > interval_usec ||
                          (delta / ENERGY_MAX_WATTS == interval_usec && delta % ENERGY_MAX_WATTS > 0)))
                return ENERGY_DELTA_TOO_HIGH;
        *ret_delta_uj = delta;
        return ENERGY_DELTA_OK;
}

bool energy_still_update(EnergyStill *s, uint64_t value_uj, bool busy, usec_t now) {
        if (!s->have_value || s->value_uj != value_uj || !busy) {
                s->have_value = true;
                s->value_uj = value_uj;
                s->busy_since_usec = busy && now > 0 ? now : 0;
                return false;
        }
        if (s->busy_since_usec == 0) {
                s->busy_since_usec = now;
                return false;
        }
        return now - s->busy_since_usec >= ENERGY_STILL_USEC;
}
