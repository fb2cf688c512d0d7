/* SPDX-License-Identifier: GPL-2.0-only */
#include <stddef.h>
#include <string.h>

#include "peltd/macro.h"
#include "peltd/policy-name.h"

static const char *const policy_names[_POLICY_MAX] = {
        [POLICY_BALANCED] = "balanced",
        [POLICY_POWER] = "power",
        [POLICY_PERFORMANCE] = "performance",
};

const char *policy_to_string(Policy p) {
        return p >= 0 && p < _POLICY_MAX ? policy_names[p] : NULL;
}

Policy policy_from_string(const char *s) {
        for (int i = 0; i < _POLICY_MAX; i++)
                if (s && streq(s, policy_names[i]))
                        return (Policy) i;
        return POLICY_INVALID;
}
