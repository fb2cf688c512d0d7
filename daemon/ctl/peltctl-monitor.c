/* SPDX-License-Identifier: GPL-2.0-only */
/* "peltctl monitor" (peltctl-monitor.h): peltd's PlacementChanged signals as they come. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <systemd/sd-event.h>

#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/peltctl-bus.h"
#include "peltd/peltctl-monitor.h"
#include "peltd/peltctl-output.h"
#include "peltd/peltctl-text.h"

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
        if (opt->json) {
                _cleanup_json_ json_object *o = json_object_new_object();

                if (!o || json_add(o, "path", json_object_new_string(path)) < 0 ||
                    json_add(o, "old_cpus", json_object_new_string(old_cpus)) < 0 ||
                    json_add(o, "cpus", json_object_new_string(cpus)) < 0 ||
                    json_add(o, "old_shares", json_object_new_uint64(old_shares)) < 0 ||
                    json_add(o, "shares", json_object_new_uint64(shares)) < 0 ||
                    json_add(o, "policy", json_object_new_string(policy)) < 0 ||
                    json_add(o, "reason", json_object_new_string(reason)) < 0 || json_print(o, true) < 0)
                        return log_oom(), 0;
        } else {
                _cleanup_free_ char *p = text_sanitize(path), *oc = text_sanitize(old_cpus), *c = text_sanitize(cpus),
                                    *pol = text_sanitize(policy), *why = text_sanitize(reason);
                char stamp[16] = "";
                time_t now = time(NULL);
                struct tm tm;

                if (!p || !oc || !c || !pol || !why)
                        return log_oom(), 0;
                if (localtime_r(&now, &tm))
                        strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
                printf("%s %s: CPUs %s -> %s, shares %" PRIu64 " -> %" PRIu64 ", %s: %s\n", stamp, p, oc, c, old_shares,
                       shares, isempty(pol) ? "-" : pol, why);
        }
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
