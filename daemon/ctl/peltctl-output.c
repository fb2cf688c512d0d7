/* SPDX-License-Identifier: GPL-2.0-only */
/* peltctl's output (peltctl-output.h): text for a terminal, and JSON. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/peltctl-output.h"
#include "peltd/peltctl-text.h"

/* Tables fit an 80-column terminal; a wider terminal gets wider tables. */
#define TEXT_WIDTH_MIN 80
/* The label column of "status" and "group": "Cgroup mode: " */
#define LABEL_WIDTH 14

/* ---- Text output ------------------------------------------------------------------------------ */

size_t text_width_of_stdout(void) {
        struct winsize ws;

        if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > TEXT_WIDTH_MIN)
                return ws.ws_col;
        return TEXT_WIDTH_MIN;
}

void print_field(const char *label, const char *value, size_t width) {
        _cleanup_free_ char *v = text_sanitize(value);

        printf("%*s: ", LABEL_WIDTH - 2, label);
        text_wrap(stdout, v ?: "", LABEL_WIDTH, LABEL_WIDTH, width);
}

/* ---- JSON ------------------------------------------------------------------------------------- */

json_object *json_double(double v) {
        char buf[32];

        if (!isfinite(v))
                return NULL;
        for (int prec = 1; prec <= 17; prec++) {
                snprintf(buf, sizeof buf, "%.*g", prec, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        return json_object_new_double_s(v, buf);
}

int json_add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_print(json_object *o, bool one_line) {
        const char *s = json_object_to_json_string_ext(
                o, (one_line ? JSON_C_TO_STRING_PLAIN : JSON_C_TO_STRING_PRETTY) | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return log_oom();
        puts(s);
        return 0;
}

/* ---- Groups ----------------------------------------------------------------------------------- */

json_object *row_to_json(const Row *row) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o || json_add(o, "path", json_object_new_string(row->path)) < 0 ||
            json_add(o, "util", json_double(row->util)) < 0 || json_add(o, "runnable", json_double(row->runnable)) < 0 ||
            json_add(o, "load", json_double(row->load)) < 0 || json_add(o, "shares", json_object_new_uint64(row->shares)) < 0 ||
            json_add(o, "cpus", json_object_new_string(row->cpus)) < 0 ||
            json_add(o, "policy", json_object_new_string(row->policy)) < 0 ||
            json_add(o, "reason", json_object_new_string(row->reason)) < 0)
                return NULL;
        if (row->details &&
            (json_add(o, "owner", json_object_new_string(row->owner)) < 0 ||
             json_add(o, "pressure_usec", json_object_new_uint64(row->pressure_usec)) < 0 ||
             json_add(o, "changes", json_object_new_uint64(row->changes)) < 0 ||
             json_add(o, "last_change_usec", json_object_new_uint64(row->last_change_usec)) < 0))
                return NULL;
        return TAKE_PTR(o);
}

json_object *rows_to_json(const Row *rows, size_t n) {
        _cleanup_json_ json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_object *o = row_to_json(&rows[i]);

                if (!o || json_object_array_add(a, o) < 0) {
                        json_object_put(o);
                        return NULL;
                }
        }
        return TAKE_PTR(a);
}

int print_table(const Row *rows, size_t n, size_t width) {
        if (table_print(stdout, rows, n, width) < 0)
                return log_oom();
        return 0;
}
