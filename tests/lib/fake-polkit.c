/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A stand-in for polkitd on a private bus: org.freedesktop.PolicyKit1's CheckAuthorization, with
 * the answer chosen on the command line:
 *
 *   fake-polkit yes|no|challenge|never
 *
 * "never" takes the call and never answers (a polkit that hangs). Each call is printed on stdout as
 * one line ("CHECK system-bus-name :1.5 org.peltd1.manage flags=1"), after "READY" once the name
 * is owned. A call whose arguments are not what polkit takes is refused with InvalidArgs and
 * printed as "REFUSED <why>".
 */
#include <stdio.h>
#include <string.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "peltd/macro.h"

static const char *answer;

static int refuse(sd_bus_error *error, const char *why) {
        printf("REFUSED %s\n", why);
        fflush(stdout);
        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, why);
}

static int method_check(sd_bus_message *m, _unused_ void *userdata, sd_bus_error *error) {
        const char *kind, *key, *name = NULL, *action, *cancel;
        uint32_t flags;
        int r;

        /* subject (sa{sv}) */
        r = sd_bus_message_enter_container(m, 'r', "sa{sv}");
        if (r < 0)
                return refuse(error, "subject is not (sa{sv})");
        r = sd_bus_message_read(m, "s", &kind);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                if (streq(key, "name")) {
                        r = sd_bus_message_read(m, "v", "s", &name);
                        if (r < 0)
                                return refuse(error, "subject name is not a string");
                } else if ((r = sd_bus_message_skip(m, "v")) < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if ((r = sd_bus_message_exit_container(m)) < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                return r;

        r = sd_bus_message_read(m, "s", &action);
        if (r < 0)
                return refuse(error, "no action id");
        r = sd_bus_message_skip(m, "a{ss}");
        if (r < 0)
                return refuse(error, "details are not a{ss}");
        r = sd_bus_message_read(m, "us", &flags, &cancel);
        if (r < 0)
                return refuse(error, "no flags and cancellation id");
        if (!streq(kind, "system-bus-name") || !name)
                return refuse(error, "subject is not a system-bus-name with a name");

        printf("CHECK %s %s %s flags=%u\n", kind, name, action, flags);
        fflush(stdout);

        if (streq(answer, "never"))
                return 1; /* no answer, ever: the caller times out */
        return sd_bus_reply_method_return(m, "(bba{ss})", streq(answer, "yes"), streq(answer, "challenge"), 0);
}

static const sd_bus_vtable authority_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("CheckAuthorization", "(sa{sv})sa{ss}us", "(bba{ss})", method_check, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        sd_event *e = NULL;
        int r;

        if (argc != 2 || (!streq(argv[1], "yes") && !streq(argv[1], "no") && !streq(argv[1], "challenge") &&
                          !streq(argv[1], "never"))) {
                fprintf(stderr, "usage: fake-polkit yes|no|challenge|never\n");
                return 2;
        }
        answer = argv[1];

        r = sd_event_default(&e);
        if (r >= 0)
                r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/PolicyKit1/Authority",
                                             "org.freedesktop.PolicyKit1.Authority", authority_vtable, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.freedesktop.PolicyKit1", 0);
        if (r >= 0)
                r = sd_bus_attach_event(bus, e, 0);
        if (r < 0) {
                fprintf(stderr, "fake-polkit: %s\n", strerror(-r));
                return 1;
        }
        printf("READY\n");
        fflush(stdout);
        r = sd_event_loop(e); /* until SIGTERM ends it */
        sd_bus_flush_close_unref(bus);
        sd_event_unref(e);
        return r < 0 ? 1 : 0;
}
