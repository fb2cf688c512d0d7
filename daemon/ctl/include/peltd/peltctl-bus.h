/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "peltd/peltctl-output.h"

/*
 * peltctl's calls to peltd's D-Bus API (peltd(8), "D-BUS INTERFACE") on the system bus
 * (DBUS_SYSTEM_BUS_ADDRESS honoured), and their answers read. Unless said otherwise a function
 * returns 0, or 1 (the exit status) after logging why not: the daemon's own message, or that
 * peltd is not running.
 */

#define BUS_NAME "org.peltd1"
#define BUS_PATH "/org/peltd1"
#define BUS_INTERFACE "org.peltd1.Manager"

int bus_connect(sd_bus **ret);

/* Logs why a call failed: the daemon's own message, or that nobody owns the name. Returns 1. */
int call_failed(const char *method, const sd_bus_error *e, int r);

/*
 * Calls method with the arguments of types (NULL: none); a change (is_change) lets polkit ask for
 * a password when there is someone at a terminal to type it. The reply goes to ret_reply when
 * given.
 */
int callv(sd_bus *bus, const char *method, bool is_change, sd_bus_message **ret_reply, const char *types, va_list ap);
int call(sd_bus *bus, const char *method, bool is_change, sd_bus_message **ret_reply, const char *types, ...);

/* One "(sdddtsss)" of ListGroups or GetGroup: sd-bus's return (0 at the end of an array). */
int read_row(sd_bus_message *m, Row *ret);
/* The array of ListGroups; the strings live in m. 0 or a negative errno, not logged. */
int read_rows(sd_bus_message *m, Row **ret, size_t *ret_n);
/*
 * The array of ListGroupDetails: keys it does not know, or of another type, are skipped; a
 * dictionary without "path" is -EBADMSG. The strings live in m. 0 or a negative errno, not logged.
 */
int read_detail_rows(sd_bus_message *m, Row **ret, size_t *ret_n);

/*
 * The groups: ListGroupDetails, or ListGroups where the daemon does not know that method (an older
 * peltd: then the rows have no details). The strings live in *ret_reply.
 */
int list_groups(sd_bus *bus, sd_bus_message **ret_reply, Row **ret, size_t *ret_n);

/* Every property of org.peltd1.Manager, by its name in snake_case ("dry_run"). */
int get_properties(sd_bus *bus, json_object **ret);
/* A string property ("?" when there is none), a number (0 when there is none). */
const char *prop_string(json_object *props, const char *key);
uint64_t prop_u64(json_object *props, const char *key);

/*
 * GetTopology's document: as the daemon wrote it (ret_text, which lives in ret_reply) and parsed
 * (ret_doc); each only when asked for.
 */
int get_topology(sd_bus *bus, const char **ret_text, sd_bus_message **ret_reply, json_object **ret_doc);
