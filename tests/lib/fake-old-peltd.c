/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A stand-in for a peltd from before ListGroupDetails on a private bus: org.peltd1 with
 * ListGroups and GetGroup (one group) and the properties peltctl reads, so that a test sees what peltctl
 * does with a daemon that answers ListGroupDetails with UnknownMethod.
 *
 *   fake-old-peltd PATH
 *
 * ListGroups gives one row: (PATH, 512, 600, 1024, 1024, "0", "power", "power: packed"); GetGroup
 * that row for PATH, InvalidArgs for any other.
 * Prints "READY" once the name is owned; runs until SIGTERM.
 */
#include <stdio.h>
#include <string.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "peltd/macro.h"

static const char *group_path;

static int method_list_groups(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        return sd_bus_reply_method_return(m, "a(sdddtsss)", 1, group_path, 512.0, 600.0, 1024.0, (uint64_t) 1024, "0",
                                          "power", "power: packed");
}

static int method_get_group(sd_bus_message *m, _unused_ void *userdata, sd_bus_error *error) {
        const char *path;
        int r;

        r = sd_bus_message_read(m, "s", &path);
        if (r < 0)
                return r;
        if (!streq(path, group_path))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s is not a group peltd manages.", path);
        return sd_bus_reply_method_return(m, "(sdddtsss)", group_path, 512.0, 600.0, 1024.0, (uint64_t) 1024, "0", "power",
                                          "power: packed");
}

static int property_string(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *interface,
                           const char *property, sd_bus_message *reply, _unused_ void *userdata,
                           _unused_ sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", streq(property, "Policy") ? "power" : "cgroupfs");
}

static int property_u64(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *interface,
                        const char *property, sd_bus_message *reply, _unused_ void *userdata,
                        _unused_ sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", (uint64_t) (streq(property, "Rounds") ? 42 : 3));
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Policy", "s", property_string, 0, 0),
        SD_BUS_PROPERTY("Backend", "s", property_string, 0, 0),
        SD_BUS_PROPERTY("Rounds", "t", property_u64, 0, 0),
        SD_BUS_PROPERTY("Changes", "t", property_u64, 0, 0),
        SD_BUS_METHOD("ListGroups", "", "a(sdddtsss)", method_list_groups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("GetGroup", "s", "(sdddtsss)", method_get_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        sd_event *e = NULL;
        int r;

        if (argc != 2) {
                fprintf(stderr, "usage: fake-old-peltd PATH\n");
                return 2;
        }
        group_path = argv[1];

        r = sd_event_default(&e);
        if (r >= 0)
                r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, "/org/peltd1", "org.peltd1.Manager", manager_vtable, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.peltd1", 0);
        if (r >= 0)
                r = sd_bus_attach_event(bus, e, 0);
        if (r < 0) {
                fprintf(stderr, "fake-old-peltd: %s\n", strerror(-r));
                return 1;
        }
        printf("READY\n");
        fflush(stdout);
        r = sd_event_loop(e); /* until SIGTERM ends it */
        sd_bus_flush_close_unref(bus);
        sd_event_unref(e);
        return r < 0 ? 1 : 0;
}
