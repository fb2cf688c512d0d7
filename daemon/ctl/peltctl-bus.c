/* SPDX-License-Identifier: GPL-2.0-only */
/* peltctl's calls to peltd and their answers (peltctl-bus.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/peltctl-bus.h"

int call_failed(const char *method, const sd_bus_error *e, int r) {
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                log_error("peltd is not running (nobody owns %s on the system bus).", BUS_NAME);
        else if (sd_bus_error_is_set(e) && e->message)
                log_error("%s", e->message);
        else
                log_error_errno(r, "Failed to call %s on %s: %m", method, BUS_NAME);
        return EXIT_FAILURE;
}

int bus_connect(sd_bus **ret) {
        int r = sd_bus_open_system(ret);

        if (r < 0) {
                log_error_errno(r, "Cannot connect to the system bus: %m");
                return EXIT_FAILURE;
        }
        return 0;
}

int callv(sd_bus *bus, const char *method, bool is_change, sd_bus_message **ret_reply, const char *types, va_list ap) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, BUS_INTERFACE, method);
        if (r >= 0 && types)
                r = sd_bus_message_appendv(m, types, ap);
        if (r >= 0 && is_change)
                r = sd_bus_message_set_allow_interactive_authorization(m, isatty(STDIN_FILENO));
        if (r < 0) {
                log_error_errno(r, "Failed to make the %s call: %m", method);
                return EXIT_FAILURE;
        }
        r = sd_bus_call(bus, m, 0, &error, ret_reply);
        if (r < 0)
                return call_failed(method, &error, r);
        return 0;
}

int call(sd_bus *bus, const char *method, bool is_change, sd_bus_message **ret_reply, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = callv(bus, method, is_change, ret_reply, types, ap);
        va_end(ap);
        return r;
}

/* ---- Groups ----------------------------------------------------------------------------------- */

int read_row(sd_bus_message *m, Row *ret) {
        *ret = (Row){ .owner = "" };
        return sd_bus_message_read(m, "(sdddtsss)", &ret->path, &ret->util, &ret->runnable, &ret->load, &ret->shares,
                                   &ret->cpus, &ret->policy, &ret->reason);
}

int read_rows(sd_bus_message *m, Row **ret, size_t *ret_n) {
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sdddtsss)");
        if (r < 0)
                return r;
        for (;;) {
                Row row;
                Row *nr;

                r = read_row(m, &row);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                nr = reallocarray(rows, n + 1, sizeof *rows);
                if (!nr)
                        return -ENOMEM;
                rows = nr;
                rows[n++] = row;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(rows);
        *ret_n = n;
        return 0;
}

/* Where each key of ListGroupDetails goes in a Row, and its D-Bus type. */
static const struct {
        const char *key;
        char type;
        size_t offset;
} detail_keys[] = {
        { "path", 's', offsetof(Row, path) },
        { "util", 'd', offsetof(Row, util) },
        { "runnable", 'd', offsetof(Row, runnable) },
        { "load", 'd', offsetof(Row, load) },
        { "shares", 't', offsetof(Row, shares) },
        { "cpus", 's', offsetof(Row, cpus) },
        { "policy", 's', offsetof(Row, policy) },
        { "reason", 's', offsetof(Row, reason) },
        { "owner", 's', offsetof(Row, owner) },
        { "pressure_usec", 't', offsetof(Row, pressure_usec) },
        { "changes", 't', offsetof(Row, changes) },
        { "last_change_usec", 't', offsetof(Row, last_change_usec) },
};

/* One "{sv}" entry into row: a known key of its type read, anything else skipped. */
static int read_detail_entry(sd_bus_message *m, Row *row) {
        const char *key, *contents;
        int r;

        r = sd_bus_message_read_basic(m, 's', &key);
        if (r >= 0)
                r = sd_bus_message_peek_type(m, NULL, &contents);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(detail_keys); i++) {
                if (!streq(key, detail_keys[i].key) || contents[0] != detail_keys[i].type || contents[1] != 0)
                        continue;
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r >= 0)
                        r = sd_bus_message_read_basic(m, contents[0], (char *) row + detail_keys[i].offset);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                return r;
        }
        return sd_bus_message_skip(m, "v");
}

/* One dictionary of ListGroupDetails: sd-bus's return (0 at the end of the array). */
static int read_detail_row(sd_bus_message *m, Row *ret) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r <= 0)
                return r;
        *ret = (Row){ .details = true, .cpus = "", .policy = "", .reason = "", .owner = "" };
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = read_detail_entry(m, ret);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        return ret->path ? 1 : -EBADMSG;
}

int read_detail_rows(sd_bus_message *m, Row **ret, size_t *ret_n) {
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "a{sv}");
        if (r < 0)
                return r;
        for (;;) {
                Row row, *nr;

                r = read_detail_row(m, &row);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                nr = reallocarray(rows, n + 1, sizeof *rows);
                if (!nr)
                        return -ENOMEM;
                rows = nr;
                rows[n++] = row;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(rows);
        *ret_n = n;
        return 0;
}

int list_groups(sd_bus *bus, sd_bus_message **ret_reply, Row **ret, size_t *ret_n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *method = "ListGroupDetails";
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, method, &error, &reply, NULL);
        if (r < 0 && sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                /* An older peltd: its groups without owners. */
                method = "ListGroups";
                sd_bus_error_free(&error);
                r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, method, &error, &reply, NULL);
        }
        if (r < 0)
                return call_failed(method, &error, r);
        r = streq(method, "ListGroups") ? read_rows(reply, ret, ret_n) : read_detail_rows(reply, ret, ret_n);
        if (r < 0) {
                log_error_errno(r, "Failed to read %s' answer: %m", method);
                return EXIT_FAILURE;
        }
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

/* ---- Properties ------------------------------------------------------------------------------- */

/* One property's value as JSON: s, b, t, u, i, x, d and as; anything else is skipped (*ret NULL). */
static int variant_to_json(sd_bus_message *m, json_object **ret) {
        const char *contents;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0)
                return r;
        *ret = NULL;
        if (streq(contents, "s")) {
                const char *s;

                if ((r = sd_bus_message_read_basic(m, 's', &s)) >= 0 && !(*ret = json_object_new_string(s)))
                        r = -ENOMEM;
        } else if (streq(contents, "b")) {
                int b;

                if ((r = sd_bus_message_read_basic(m, 'b', &b)) >= 0 && !(*ret = json_object_new_boolean(b)))
                        r = -ENOMEM;
        } else if (streq(contents, "t") || streq(contents, "u")) {
                uint64_t t = 0;
                uint32_t u;

                r = contents[0] == 't' ? sd_bus_message_read_basic(m, 't', &t) : sd_bus_message_read_basic(m, 'u', &u);
                if (contents[0] == 'u')
                        t = u;
                if (r >= 0 && !(*ret = json_object_new_uint64(t)))
                        r = -ENOMEM;
        } else if (streq(contents, "x") || streq(contents, "i")) {
                int64_t x = 0;
                int32_t i;

                r = contents[0] == 'x' ? sd_bus_message_read_basic(m, 'x', &x) : sd_bus_message_read_basic(m, 'i', &i);
                if (contents[0] == 'i')
                        x = i;
                if (r >= 0 && !(*ret = json_object_new_int64(x)))
                        r = -ENOMEM;
        } else if (streq(contents, "d")) {
                double d;

                if ((r = sd_bus_message_read_basic(m, 'd', &d)) >= 0)
                        *ret = json_double(d) ?: json_object_new_null();
        } else if (streq(contents, "as")) {
                _cleanup_strv_free_ char **l = NULL;

                r = sd_bus_message_read_strv(m, &l);
                if (r >= 0 && !(*ret = json_object_new_array()))
                        r = -ENOMEM;
                for (char **s = l; r >= 0 && s && *s; s++)
                        if (json_object_array_add(*ret, json_object_new_string(*s)) < 0)
                                r = -ENOMEM;
        } else
                r = sd_bus_message_skip(m, contents);
        if (r < 0) {
                json_object_put(*ret);
                *ret = NULL;
                return r;
        }
        return sd_bus_message_exit_container(m);
}

/* "SampleIntervalUSec" -> "sample_interval_usec": '_' where a capital follows a small letter or digit. */
static char *snake_case(const char *s) {
        char *out = malloc(strlen(s) * 2 + 1), *o = out;

        if (!out)
                return NULL;
        for (const char *p = s; *p; p++) {
                if (*p >= 'A' && *p <= 'Z') {
                        if (p > s && ((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= '0' && p[-1] <= '9')))
                                *o++ = '_';
                        *o++ = (char) (*p - 'A' + 'a');
                } else
                        *o++ = *p;
        }
        *o = 0;
        return out;
}

int get_properties(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return log_oom(), EXIT_FAILURE;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s",
                               BUS_INTERFACE);
        if (r < 0)
                return call_failed("GetAll", &error, r);

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                _cleanup_free_ char *key = NULL;
                json_object *v = NULL;
                const char *name;

                r = sd_bus_message_read_basic(reply, 's', &name);
                if (r >= 0)
                        r = variant_to_json(reply, &v);
                if (r >= 0 && v && (!(key = snake_case(name)) || json_add(o, key, v) < 0))
                        r = -ENOMEM;
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                log_error_errno(r, "Failed to read peltd's properties: %m");
                return EXIT_FAILURE;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

const char *prop_string(json_object *props, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(props, key, &v) || !json_object_is_type(v, json_type_string))
                return "?";
        return json_object_get_string(v);
}

uint64_t prop_u64(json_object *props, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(props, key, &v))
                return 0;
        return json_object_get_uint64(v);
}

int get_topology(sd_bus *bus, const char **ret_text, sd_bus_message **ret_reply, json_object **ret_doc) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *s;
        int r;

        r = call(bus, "GetTopology", false, &reply, NULL);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "s", &s);
        if (r < 0) {
                log_error_errno(r, "Failed to read GetTopology's answer: %m");
                return EXIT_FAILURE;
        }
        if (ret_doc) {
                *ret_doc = json_tokener_parse(s);
                if (!*ret_doc) {
                        log_error("GetTopology's answer is not JSON.");
                        return EXIT_FAILURE;
                }
        }
        if (ret_text)
                *ret_text = s;
        if (ret_reply)
                *ret_reply = TAKE_PTR(reply);
        return 0;
}
