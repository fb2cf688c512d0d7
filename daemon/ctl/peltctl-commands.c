/* SPDX-License-Identifier: GPL-2.0-only */
/* peltctl's commands (peltctl-commands.h): each a call or two to peltd, and its answer printed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/peltctl-bus.h"
#include "peltd/peltctl-commands.h"
#include "peltd/peltctl-output.h"
#include "peltd/peltctl-persist.h"
#include "peltd/peltctl-topology.h"
#include "peltd/time-util.h"
#include "peltd/utf8.h"

int cmd_status(sd_bus *bus, _unused_ char **args, const CtlOptions *opt) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *groups = NULL;
        _cleanup_json_ json_object *props = NULL, *topo = NULL;
        _cleanup_free_ char *summary = NULL, *text = NULL;
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0, width = text_width_of_stdout();
        int r;

        if ((r = get_properties(bus, &props)) != 0 || (r = get_topology(bus, NULL, NULL, &topo)) != 0 ||
            (r = list_groups(bus, &groups, &rows, &n)) != 0)
                return r;

        if (opt->json) {
                json_object *a = rows_to_json(rows, n);

                if (json_add(props, "topology", json_object_get(topo)) < 0 || json_add(props, "groups", a) < 0)
                        return log_oom(), EXIT_FAILURE;
                return json_print(props, false) < 0 ? EXIT_FAILURE : 0;
        }

        r = topology_json_summary(topo, &summary);
        if (r < 0) {
                log_error_errno(r, "GetTopology's document is not as peltd writes it: %m");
                return EXIT_FAILURE;
        }
        if (asprintf(&text, "%s, root %s", prop_string(props, "cgroup_mode"), prop_string(props, "cgroup_root")) < 0)
                return log_oom(), EXIT_FAILURE;

        print_field("Policy", prop_string(props, "policy"), width);
        print_field("Backend", prop_string(props, "backend"), width);
        print_field("Cgroup mode", text, width);
        free(text);
        if (asprintf(&text, "%s; groups every %" PRIu64 " ms, threads every %" PRIu64 " ms",
                     prop_string(props, "sampling_backend"), prop_u64(props, "sample_interval_usec") / 1000,
                     prop_u64(props, "task_sample_interval_usec") / 1000) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Sampling", text, width);
        {
                json_object *v;

                print_field("Dry run",
                            json_object_object_get_ex(props, "dry_run", &v) && json_object_get_boolean(v) ? "yes" : "no",
                            width);
        }
        print_field("Topology", summary, width);
        free(text);
        if (asprintf(&text, "%" PRIu64 ", %" PRIu64 " placement change%s", prop_u64(props, "rounds"),
                     prop_u64(props, "changes"), prop_u64(props, "changes") == 1 ? "" : "s") < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Rounds", text, width);
        print_field("Version", prop_string(props, "version"), width);
        putchar('\n');
        return print_table(rows, n, width) < 0 ? EXIT_FAILURE : 0;
}

int cmd_groups(sd_bus *bus, _unused_ char **args, const CtlOptions *opt) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0;
        int r;

        r = list_groups(bus, &reply, &rows, &n);
        if (r != 0)
                return r;
        if (opt->json) {
                _cleanup_json_ json_object *a = rows_to_json(rows, n);

                if (!a)
                        return log_oom(), EXIT_FAILURE;
                return json_print(a, false) < 0 ? EXIT_FAILURE : 0;
        }
        return print_table(rows, n, text_width_of_stdout()) < 0 ? EXIT_FAILURE : 0;
}

/*
 * A group path from the command line, passed as it is: in the form peltd writes paths in, "\xNN" for
 * a byte that is not UTF-8 (which a D-Bus string cannot carry), a control character or a backslash.
 */
static const char *path_arg(const char *arg, char **ret_alloc) {
        *ret_alloc = NULL;
        if (!utf8_is_valid(arg)) {
                log_error("%s is not UTF-8: write each byte that is not as \\xNN, as peltctl groups shows it.",
                          strna(utf8_escape(arg, ret_alloc)));
                return NULL;
        }
        return arg;
}

/*
 * The group at path: its dictionary of ListGroupDetails, else GetGroup's row (from a daemon without
 * ListGroupDetails; for a path the daemon does not list, GetGroup's error). The strings live in
 * *ret_reply.
 */
static int get_group(sd_bus *bus, const char *path, sd_bus_message **ret_reply, Row *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0;
        int r;

        r = list_groups(bus, &reply, &rows, &n);
        if (r != 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (rows[i].details && streq(rows[i].path, path)) {
                        *ret = rows[i];
                        *ret_reply = TAKE_PTR(reply);
                        return 0;
                }
        reply = sd_bus_message_unref(reply);
        r = call(bus, "GetGroup", false, &reply, "s", path);
        if (r != 0)
                return r;
        r = read_row(reply, ret);
        if (r <= 0) {
                log_error_errno(r < 0 ? r : EBADMSG, "Failed to read GetGroup's answer: %m");
                return EXIT_FAILURE;
        }
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

/* What ListGroupDetails adds to a group's fields: its owner, pressure and changes. */
static int print_group_details(const Row *row, size_t width) {
        _cleanup_free_ char *pressure = NULL, *changes = NULL;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        r = asprintf(&pressure, "%.2f s waited for a CPU", row->pressure_usec / 1e6);
        if (r >= 0 && row->changes > 0 && row->last_change_usec > 0 && row->last_change_usec <= now)
                r = asprintf(&changes, "%" PRIu64 ", the last %" PRIu64 " s ago", row->changes,
                             (now - row->last_change_usec) / USEC_PER_SEC);
        else if (r >= 0)
                r = asprintf(&changes, "%" PRIu64, row->changes);
        if (r < 0)
                return log_oom();
        print_field("Owner", isempty(row->owner) ? "- (peltd places it)" : row->owner, width);
        print_field("Pressure", pressure, width);
        print_field("Changes", changes, width);
        return 0;
}

int cmd_group(sd_bus *bus, char **args, const CtlOptions *opt) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *alloc = NULL, *text = NULL;
        const char *path = path_arg(args[0], &alloc);
        size_t width = text_width_of_stdout();
        Row row;
        int r;

        if (!path)
                return EXIT_FAILURE;
        r = get_group(bus, path, &reply, &row);
        if (r != 0)
                return r;
        if (opt->json) {
                _cleanup_json_ json_object *o = row_to_json(&row);

                if (!o)
                        return log_oom(), EXIT_FAILURE;
                return json_print(o, false) < 0 ? EXIT_FAILURE : 0;
        }

        print_field("Group", row.path, width);
        if (asprintf(&text, "%.2f CPUs", row.util / 1024.0) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Util", text, width);
        free(text);
        if (asprintf(&text, "%.2f CPUs", row.runnable / 1024.0) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Runnable", text, width);
        free(text);
        if (asprintf(&text, "%.0f", row.load) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Load", text, width);
        free(text);
        if (asprintf(&text, "%" PRIu64, row.shares) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Shares", text, width);
        print_field("CPUs", row.cpus, width);
        print_field("Policy", isempty(row.policy) ? "-" : row.policy, width);
        print_field("Reason", row.reason, width);
        if (row.details && print_group_details(&row, width) < 0)
                return EXIT_FAILURE;
        return 0;
}

int cmd_topology(sd_bus *bus, _unused_ char **args, const CtlOptions *opt) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_json_ json_object *doc = NULL;
        _cleanup_free_ char *text = NULL;
        const char *s;
        int r;

        r = get_topology(bus, &s, &reply, &doc);
        if (r != 0)
                return r;
        if (opt->json) {
                /* The document as the daemon wrote it: peltd --print-topology --json's. */
                fputs(s, stdout);
                putchar('\n');
                return 0;
        }
        r = topology_json_to_text(doc, &text);
        if (r < 0) {
                log_error_errno(r, "GetTopology's document is not as peltd writes it: %m");
                return EXIT_FAILURE;
        }
        fputs(text, stdout);
        return 0;
}

int cmd_reload(sd_bus *bus, _unused_ char **args, _unused_ const CtlOptions *opt) {
        return call(bus, "Reload", true, NULL, NULL);
}

/* A change, persisted unless --runtime: see peltctl-persist.h for the order. */
static int change(sd_bus *bus, const CtlOptions *opt, const Setting *s, const char *method, const char *types, ...) {
        _cleanup_(dropin_done) Dropin d = { .config_fd = -1, .dir_fd = -1 };
        va_list ap;
        int r;

        if (!opt->runtime && (r = dropin_begin(&d, opt->config_dir, s)) != 0)
                return r;
        va_start(ap, types);
        r = callv(bus, method, true, NULL, types, ap);
        va_end(ap);
        if (r != 0 || opt->runtime)
                return r;
        return dropin_commit(&d, s);
}

int cmd_policy(sd_bus *bus, char **args, const CtlOptions *opt) {
        _cleanup_json_ json_object *props = NULL;
        int r;

        if (args[0])
                return change(bus, opt, &(Setting){ .policy = args[0] }, "SetPolicy", "s", args[0]);

        r = get_properties(bus, &props);
        if (r != 0)
                return r;
        if (opt->json) {
                _cleanup_json_ json_object *o = json_object_new_object();
                json_object *v;

                if (!o || json_add(o, "policy", json_object_new_string(prop_string(props, "policy"))) < 0 ||
                    !json_object_object_get_ex(props, "policies", &v) || json_add(o, "policies", json_object_get(v)) < 0)
                        return log_oom(), EXIT_FAILURE;
                return json_print(o, false) < 0 ? EXIT_FAILURE : 0;
        }
        puts(prop_string(props, "policy"));
        return 0;
}

int cmd_set_shares(sd_bus *bus, char **args, const CtlOptions *opt) {
        _cleanup_free_ char *alloc = NULL;
        const char *path = path_arg(args[0], &alloc);

        if (!path)
                return EXIT_FAILURE;
        return change(bus, opt, &(Setting){ .path = path, .shares = opt->shares }, "SetGroupShares", "st", path, opt->shares);
}
