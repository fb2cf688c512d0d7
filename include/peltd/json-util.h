/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <json-c/json.h>

#include "peltd/macro.h"

static inline void json_object_putp(json_object **o) {
        if (*o)
                (void) json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)
