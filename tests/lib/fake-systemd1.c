/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A stand-in for org.freedesktop.systemd1 on a private bus: just enough of the Manager for peltd's
 * systemd backend, and strict about what it accepts. Units come from the command line:
 *
 *   fake-systemd1 NAME:CGROUP[:delegate] ...
 *
 * Each accepted SetUnitProperties call is printed on stdout as one line
 * ("SetUnitProperties web.service AllowedCPUs=0-1 CPUWeight=200"), after "READY" once the name is
 * owned. Anything peltd must not send (persistent changes, other properties, wrong types, values
 * out of range) is refused with InvalidArgs and printed as "REFUSED <why>".
 */
#include <inttypes.h>
#include <stddef.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"

#define UNIT_PREFIX "/org/freedesktop/systemd1/unit"

typedef struct Unit {
        char *name, *cgroup, *path;
        int delegate;                /* sd-bus reads "b" as an int */
        CpuMask allowed;
        uint64_t weight;
} Unit;

static Unit units[32];
static size_t n_units;

static Unit *unit_by_name(const char *name) {
        for (size_t i = 0; i < n_units; i++)
                if (streq(units[i].name, name))
                        return &units[i];
        return NULL;
}

static int refuse(sd_bus_error *error, const char *why) {
        printf("REFUSED %s\n", why);
        fflush(stdout);
        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, why);
}

static int method_get_unit(sd_bus_message *m, _unused_ void *userdata, sd_bus_error *error) {
        const char *name;
        Unit *u;
        int r = sd_bus_message_read(m, "s", &name);

        if (r < 0)
                return r;
        u = unit_by_name(name);
        if (!u)
                return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name);
        return sd_bus_reply_method_return(m, "o", u->path);
}

/* As systemd 252 answers: the unit of the cgroup or of its nearest ancestor, never the root slice. */
static int method_get_unit_by_cgroup(sd_bus_message *m, _unused_ void *userdata, sd_bus_error *error) {
        const char *cg;
        char p[512];
        int r = sd_bus_message_read(m, "s", &cg);

        if (r < 0)
                return r;
        snprintf(p, sizeof p, "%s", cg);
        for (;;) {
                char *slash;

                for (size_t i = 0; i < n_units; i++)
                        if (streq(units[i].cgroup, p))
                                return sd_bus_reply_method_return(m, "o", units[i].path);
                slash = strrchr(p, '/');
                if (!slash || slash == p)
                        break;
                *slash = 0;
        }
        return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoUnitForControlGroup", "No unit for %s.", cg);
}

static int method_set_unit_properties(sd_bus_message *m, _unused_ void *userdata, sd_bus_error *error) {
        const char *name, *prop, *contents;
        CpuMask allowed;
        uint64_t weight = 0;
        bool has_allowed = false, has_weight = false;
        int runtime, r;
        Unit *u;
        char type;

        r = sd_bus_message_read(m, "sb", &name, &runtime);
        if (r < 0)
                return r;
        u = unit_by_name(name);
        if (!u)
                return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name);
        if (!runtime)
                return refuse(error, "runtime=false: persistent changes");

        r = sd_bus_message_enter_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &prop);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r < 0)
                        return r;
                if (streq(prop, "AllowedCPUs")) {
                        const uint8_t *bytes;
                        size_t n;

                        if (!streq(contents, "ay"))
                                return refuse(error, "AllowedCPUs is not ay");
                        r = sd_bus_message_enter_container(m, 'v', "ay");
                        if (r < 0)
                                return r;
                        r = sd_bus_message_read_array(m, 'y', (const void **) &bytes, &n);
                        if (r < 0)
                                return r;
                        cpumask_zero(&allowed);
                        for (size_t i = 0; i < n; i++)
                                for (int b = 0; b < 8; b++)
                                        if (bytes[i] & (1u << b))
                                                cpumask_set(&allowed, (int) (i * 8 + (size_t) b));
                        has_allowed = true;
                } else if (streq(prop, "CPUWeight")) {
                        if (!streq(contents, "t"))
                                return refuse(error, "CPUWeight is not t");
                        r = sd_bus_message_enter_container(m, 'v', "t");
                        if (r < 0)
                                return r;
                        r = sd_bus_message_read(m, "t", &weight);
                        if (r < 0)
                                return r;
                        if (weight != UINT64_MAX && (weight < 1 || weight > 10000))
                                return refuse(error, "CPUWeight out of range");
                        has_weight = true;
                } else
                        return refuse(error, "unexpected property");
                r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        printf("SetUnitProperties %s", name);
        if (has_allowed) {
                char buf[256];

                u->allowed = allowed;
                printf(" AllowedCPUs=%s", cpumask_format(&allowed, buf, sizeof buf));
        }
        if (has_weight) {
                u->weight = weight;
                if (weight == UINT64_MAX)
                        printf(" CPUWeight=");
                else
                        printf(" CPUWeight=%" PRIu64, weight);
        }
        printf("\n");
        fflush(stdout);
        return sd_bus_reply_method_return(m, NULL);
}

static int find_unit(_unused_ sd_bus *bus, const char *path, _unused_ const char *iface, _unused_ void *userdata,
                     void **found, _unused_ sd_bus_error *error) {
        for (size_t i = 0; i < n_units; i++)
                if (streq(units[i].path, path)) {
                        *found = &units[i];
                        return 1;
                }
        return 0;
}

static int prop_allowed(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *iface,
                        _unused_ const char *prop, sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *error) {
        Unit *u = userdata;
        uint8_t bytes[CPUMASK_MAX / 8];

        return sd_bus_message_append_array(reply, 'y', bytes, cpumask_to_bytes(&u->allowed, bytes));
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("GetUnit", "s", "o", method_get_unit, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("GetUnitByControlGroup", "s", "o", method_get_unit_by_cgroup, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("SetUnitProperties", "sba(sv)", "", method_set_unit_properties, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable unit_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "s", NULL, offsetof(Unit, name), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable service_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("ControlGroup", "s", NULL, offsetof(Unit, cgroup), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Delegate", "b", NULL, offsetof(Unit, delegate), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("AllowedCPUs", "ay", prop_allowed, 0, 0),
        SD_BUS_PROPERTY("CPUWeight", "t", NULL, offsetof(Unit, weight), 0),
        SD_BUS_VTABLE_END,
};

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        sd_event *event = NULL;
        int r;

        for (int i = 1; i < argc && n_units < ELEMENTSOF(units); i++) {
                Unit *u = &units[n_units++];
                char *spec = strdup(argv[i]), *c1 = strchr(spec, ':'), *c2;

                if (!c1)
                        return 2;
                *c1++ = 0;
                c2 = strchr(c1, ':');
                if (c2)
                        *c2++ = 0;
                u->name = spec;
                u->cgroup = c1;
                u->delegate = c2 && streq(c2, "delegate");
                u->weight = UINT64_MAX;
                if (sd_bus_path_encode(UNIT_PREFIX, u->name, &u->path) < 0)
                        return 1;
        }

        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "fake-systemd1: cannot connect: %s\n", strerror(-r));
                return 1;
        }
        if (sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                     manager_vtable, NULL) < 0 ||
            sd_bus_add_fallback_vtable(bus, NULL, UNIT_PREFIX, "org.freedesktop.systemd1.Unit", unit_vtable, find_unit,
                                       NULL) < 0 ||
            sd_bus_add_fallback_vtable(bus, NULL, UNIT_PREFIX, "org.freedesktop.systemd1.Service", service_vtable,
                                       find_unit, NULL) < 0 ||
            sd_bus_add_fallback_vtable(bus, NULL, UNIT_PREFIX, "org.freedesktop.systemd1.Slice", service_vtable,
                                       find_unit, NULL) < 0)
                return 1;
        r = sd_bus_request_name(bus, "org.freedesktop.systemd1", 0);
        if (r < 0) {
                fprintf(stderr, "fake-systemd1: cannot own the name: %s\n", strerror(-r));
                return 1;
        }
        printf("READY\n");
        fflush(stdout);

        if (sd_event_default(&event) < 0 || sd_bus_attach_event(bus, event, 0) < 0)
                return 1;
        r = sd_event_loop(event);
        sd_bus_unref(bus);
        sd_event_unref(event);
        return r < 0 ? 1 : 0;
}
