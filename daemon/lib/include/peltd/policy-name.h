/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The policies (peltd(8), "PLACEMENT POLICIES") and their names in peltd.conf, plans and output. */

typedef enum Policy {
        POLICY_INVALID = -1,
        POLICY_BALANCED,
        POLICY_POWER,
        POLICY_PERFORMANCE,
        _POLICY_MAX,
} Policy;

/* "balanced", "power", "performance"; NULL for anything else. */
const char *policy_to_string(Policy p);
/* The policy of that name, or POLICY_INVALID. */
Policy policy_from_string(const char *s);
