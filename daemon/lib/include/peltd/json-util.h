/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <json-c/json.h>

#include "peltd/macro.h"
#include "peltd/utf8.h"

static inline void json_object_putp(json_object **o) {
        if (*o)
                (void) json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

/*
 * A JSON string of bytes that need not be UTF-8 (group paths, thread names): json-c copies bytes
 * as they are, so invalid ones are written as "\xNN" first (utf8.h). NULL when out of memory.
 */
static inline json_object *json_object_new_text(const char *s) {
        _cleanup_free_ char *alloc = NULL;
        const char *t = utf8_escape(s, &alloc);

        return t ? json_object_new_string(t) : NULL;
}
