/* SPDX-License-Identifier: GPL-2.0-only */
/* "peltctl monitor" (peltctl-monitor.h): peltd's PlacementChanged signals as they come. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-event.h>

#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/peltctl-bus.h"
#include "peltd/peltctl-monitor.h"
#include "peltd/peltctl-output.h"
#include "peltd/peltctl-text.h"

/* One JSON document a line: the signal's fields, and when it came ("timestamp", RFC 3339, UTC). */
static void print_json(const char *path, const char *old_cpus, const char *cpus, uint64_t old_shares, uint64_t shares,
                       const char *policy, const char *reason) {
        _cleanup_json_ json_object *o = json_object_new_object();
        struct timespec ts;
        char stamp[64] = "";
        struct tm tm;

        if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && gmtime_r(&ts.tv_sec, &tm)) {
                size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

                snprintf(stamp + n, sizeof stamp - n, ".%06ldZ", ts.tv_nsec / 1000);
        }
        if (!o || json_add(o, "path", json_object_new_string(path)) < 0 ||
            json_add(o, "old_cpus", json_object_new_string(old_cpus)) < 0 ||
            json_add(o, "cpus", json_object_new_string(cpus)) < 0 ||
            json_add(o, "old_shares", json_object_new_uint64(old_shares)) < 0 ||
            json_add(o, "shares", json_object_new_uint64(shares)) < 0 ||
            json_add(o, "policy", json_object_new_string(policy)) < 0 ||
            json_add(o, "reason", json_object_new_string(reason)) < 0 ||
            json_add(o, "timestamp", json_object_new_string(stamp)) < 0 || json_print(o, true) < 0)
                log_oom();
}

/*
 * Two lines a change: when, the group, its CPUs and shares; then the reason, wrapped to the width
 * the output has, under the path. The reason names its policy already ("power: ..."): the policy is
 * put before it only where it does not.
 */
static void print_text(const char *path, const char *old_cpus, const char *cpus, uint64_t old_shares, uint64_t shares,
                       const char *policy, const char *reason) {
        _cleanup_free_ char *p = text_sanitize(path), *oc = text_sanitize(old_cpus), *c = text_sanitize(cpus),
                            *pol = text_sanitize(policy), *why = text_sanitize(reason), *line = NULL;
        char stamp[16] = "--:--:--";
        time_t now = time(NULL);
        size_t n;
        struct tm tm;

        if (!p || !oc || !c || !pol || !why)
                return (void) log_oom();
        if (localtime_r(&now, &tm))
                strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
        printf("%s %s: CPUs %s -> %s", stamp, p, oc, c);
        if (old_shares != shares)
                printf(", shares %" PRIu64 " -> %" PRIu64, old_shares, shares);
        putchar('\n');
        n = strlen(pol);
        if (isempty(pol) || (strncmp(why, pol, n) == 0 && why[n] == ':'))
                line = strdup(why);
        else if (asprintf(&line, "%s: %s", pol, why) < 0)
                line = NULL;
        if (!line)
                return (void) log_oom();
        printf("%9s", "");
        text_wrap(stdout, line, 9, 9, MAX(text_width_of_stdout(), (size_t) 40));
}

/* userdata: the CtlOptions. */
static int on_placement_changed(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *error) {
        const CtlOptions *opt = userdata;
        const char *path, *old_cpus, *cpus, *policy, *reason;
        uint64_t old_shares, shares;
        int r;

        r = sd_bus_message_read(m, "sssttss", &path, &old_cpus, &cpus, &old_shares, &shares, &policy, &reason);
        if (r < 0) {
                log_warning_errno(r, "A PlacementChanged signal did not parse, ignoring: %m");
                return 0;
        }
        if (opt->json)
                print_json(path, old_cpus, cpus, old_shares, shares, policy, reason);
        else
                print_text(path, old_cpus, cpus, old_shares, shares, policy, reason);
        fflush(stdout);
        return 0;
}

static int on_owner_changed(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 || !streq(name, BUS_NAME) ||
            !isempty(new_owner))
                return 0;
        log_error("peltd stopped (%s has no owner any more).", BUS_NAME);
        return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), EXIT_FAILURE);
}

static int on_disconnected(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        log_error("Lost the system bus.");
        return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), EXIT_FAILURE);
}

static int on_signal(sd_event_source *s, _unused_ const struct signalfd_siginfo *si, _unused_ void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), EXIT_SUCCESS);
}

int cmd_monitor(sd_bus *bus, _unused_ char **args, const CtlOptions *opt) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT | SD_EVENT_SIGNAL_PROCMASK, on_signal, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, on_signal, NULL);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
        /* Matched by the bus on the sender's name: only the daemon's signals, also after a restart. */
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, BUS_NAME, BUS_PATH, BUS_INTERFACE, "PlacementChanged",
                                        on_placement_changed, (void *) opt);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                     "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" BUS_NAME "'",
                                     on_owner_changed, NULL);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, NULL);
        if (r < 0) {
                log_error_errno(r, "Failed to listen for PlacementChanged: %m");
                return EXIT_FAILURE;
        }

        /* Now that nothing is missed: is the daemon there? */
        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetNameOwner", &error, &reply, "s", BUS_NAME);
        if (r < 0)
                return call_failed("GetNameOwner", &error, r);
        log_info("Monitoring peltd's placement changes; press Ctrl-C to stop.");

        r = sd_event_loop(event);
        if (r < 0) {
                log_error_errno(r, "The event loop failed: %m");
                return EXIT_FAILURE;
        }
        return r;
}
