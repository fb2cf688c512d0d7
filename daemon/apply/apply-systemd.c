/* SPDX-License-Identifier: GPL-2.0-only */
#include <inttypes.h>
#include <systemd/sd-daemon.h>

#include "peltd/apply-systemd.h"
#include "peltd/log.h"
#include "peltd/parse.h"

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"

/* cgroup v2 weight range (CGROUP_WEIGHT_MIN/MAX). */
#define CPU_WEIGHT_MIN 1
#define CPU_WEIGHT_MAX 10000

bool systemd_is_init(void) {
        return sd_booted() > 0;
}

static void bus_error_freep(sd_bus_error *e) {
        sd_bus_error_free(e);
}
#define _cleanup_bus_error_ _cleanup_(bus_error_freep)

static void bus_message_unrefp(sd_bus_message **m) {
        sd_bus_message_unref(*m);
}
#define _cleanup_bus_message_ _cleanup_(bus_message_unrefp)

int systemd_unit_for_cgroup(sd_bus *bus, const char *cgroup, char **ret_unit) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_message_ sd_bus_message *reply = NULL;
        const char *path;
        char *id = NULL;
        int r;

        r = sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnitByControlGroup", &error,
                               &reply, "s", cgroup);
        if (r < 0)
                return log_debug_errno(r, "GetUnitByControlGroup(%s) failed: %s", cgroup, strna(error.message));
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property_string(bus, SYSTEMD_DEST, path, "org.freedesktop.systemd1.Unit", "Id", &error, &id);
        if (r < 0)
                return log_debug_errno(r, "Failed to read the Id of %s: %s", path, strna(error.message));
        *ret_unit = id;
        return 0;
}

/* The unit's object path and its type-specific interface ("org.freedesktop.systemd1.Service"). */
static int unit_path_and_interface(sd_bus *bus, const char *unit, char **ret_path, char **ret_interface) {
        static const char *const types[][2] = {
                { ".service", "Service" }, { ".scope", "Scope" }, { ".slice", "Slice" },
                { ".socket", "Socket" },   { ".mount", "Mount" }, { ".swap", "Swap" },
        };
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_message_ sd_bus_message *reply = NULL;
        const char *dot = strrchr(unit, '.'), *path, *type = NULL;
        char *p = NULL, *iface = NULL;
        int r;

        for (size_t i = 0; dot && i < ELEMENTSOF(types); i++)
                if (streq(dot, types[i][0]))
                        type = types[i][1];
        if (!type)
                return -EOPNOTSUPP; /* a unit type without cgroup settings */

        r = sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnit", &error, &reply, "s", unit);
        if (r < 0)
                return log_debug_errno(r, "GetUnit(%s) failed: %s", unit, strna(error.message));
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        p = strdup(path);
        if (!p || asprintf(&iface, "org.freedesktop.systemd1.%s", type) < 0) {
                free(p);
                return -ENOMEM;
        }
        *ret_path = p;
        *ret_interface = iface;
        return 0;
}

int systemd_unit_delegated(sd_bus *bus, const char *unit, bool *ret) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_message_ sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL, *iface = NULL;
        int r, b;

        r = unit_path_and_interface(bus, unit, &path, &iface);
        if (r < 0)
                return r;
        r = sd_bus_get_property(bus, SYSTEMD_DEST, path, iface, "Delegate", &error, &reply, "b");
        if (r < 0)
                return log_debug_errno(r, "Failed to read Delegate of %s: %s", unit, strna(error.message));
        r = sd_bus_message_read(reply, "b", &b);
        if (r < 0)
                return r;
        *ret = b;
        return 0;
}

int systemd_unit_get_cpu(sd_bus *bus, const char *unit, SystemdUnitCpu *ret) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_message_ sd_bus_message *allowed = NULL, *weight = NULL;
        _cleanup_free_ char *path = NULL, *iface = NULL;
        SystemdUnitCpu v = { .weight = SYSTEMD_CPU_WEIGHT_UNSET };
        const void *bytes;
        size_t n;
        int r;

        r = unit_path_and_interface(bus, unit, &path, &iface);
        if (r < 0)
                return r;
        r = sd_bus_get_property(bus, SYSTEMD_DEST, path, iface, "AllowedCPUs", &error, &allowed, "ay");
        if (r < 0)
                return log_debug_errno(r, "Failed to read AllowedCPUs of %s: %s", unit, strna(error.message));
        r = sd_bus_message_read_array(allowed, 'y', &bytes, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && i < CPUMASK_MAX / 8; i++)
                for (int b = 0; b < 8; b++)
                        if (((const uint8_t *) bytes)[i] & (1u << b))
                                (void) cpumask_set(&v.allowed, (int) (i * 8 + (size_t) b));

        r = sd_bus_get_property(bus, SYSTEMD_DEST, path, iface, "CPUWeight", &error, &weight, "t");
        if (r < 0)
                return log_debug_errno(r, "Failed to read CPUWeight of %s: %s", unit, strna(error.message));
        r = sd_bus_message_read(weight, "t", &v.weight);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

int systemd_unit_control_group(sd_bus *bus, const char *unit, char **ret) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *iface = NULL;
        char *cg = NULL;
        int r;

        r = unit_path_and_interface(bus, unit, &path, &iface);
        if (r < 0)
                return r;
        r = sd_bus_get_property_string(bus, SYSTEMD_DEST, path, iface, "ControlGroup", &error, &cg);
        if (r < 0)
                return log_debug_errno(r, "Failed to read ControlGroup of %s: %s", unit, strna(error.message));
        *ret = cg;
        return 0;
}

int systemd_unit_set_cpu(sd_bus *bus, const char *unit, const CpuMask *allowed, bool set_weight, uint64_t weight) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_message_ sd_bus_message *m = NULL, *reply = NULL;
        int r;

        if (set_weight && weight != SYSTEMD_CPU_WEIGHT_UNSET && (weight < CPU_WEIGHT_MIN || weight > CPU_WEIGHT_MAX))
                return -ERANGE;
        if (!allowed && !set_weight)
                return 0;

        r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "SetUnitProperties");
        if (r < 0)
                return r;
        /* runtime = true: lost at reboot, like the cgroup itself, never written to /etc. */
        r = sd_bus_message_append(m, "sb", unit, 1);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        if (allowed) {
                uint8_t bytes[CPUMASK_MAX / 8];
                size_t n = cpumask_to_bytes(allowed, bytes);

                r = sd_bus_message_open_container(m, 'r', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "AllowedCPUs");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "ay");
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', bytes, n);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
        }
        if (set_weight) {
                r = sd_bus_message_append(m, "(sv)", "CPUWeight", "t", weight);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;

        r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r < 0)
                return log_debug_errno(r, "SetUnitProperties(%s) failed: %s", unit, strna(error.message));
        return 0;
}

int systemd_unit_get_property(sd_bus *bus, const char *unit, const char *property, char **ret) {
        SystemdUnitCpu v;
        int r;

        r = systemd_unit_get_cpu(bus, unit, &v);
        if (r < 0)
                return r;
        if (streq(property, "AllowedCPUs"))
                *ret = systemd_allowed_to_string(&v.allowed);
        else if (streq(property, "CPUWeight"))
                *ret = systemd_weight_to_string(v.weight);
        else
                return -EINVAL;
        return *ret ? 0 : -ENOMEM;
}

int systemd_unit_set_property(sd_bus *bus, const char *unit, const char *property, const char *value) {
        CpuMask m;
        uint64_t w;
        int r;

        if (streq(property, "AllowedCPUs")) {
                r = systemd_allowed_from_string(value, &m);
                return r < 0 ? r : systemd_unit_set_cpu(bus, unit, &m, false, 0);
        }
        if (streq(property, "CPUWeight")) {
                r = systemd_weight_from_string(value, &w);
                return r < 0 ? r : systemd_unit_set_cpu(bus, unit, NULL, true, w);
        }
        return -EINVAL;
}

char *systemd_allowed_to_string(const CpuMask *allowed) {
        return cpumask_to_list(allowed);
}

int systemd_allowed_from_string(const char *s, CpuMask *ret) {
        return cpumask_parse_list(s, ret);
}

char *systemd_weight_to_string(uint64_t weight) {
        char *s;

        if (weight == SYSTEMD_CPU_WEIGHT_UNSET)
                return strdup("");
        if (asprintf(&s, "%" PRIu64, weight) < 0)
                return NULL;
        return s;
}

int systemd_weight_from_string(const char *s, uint64_t *ret) {
        if (isempty(s)) {
                *ret = SYSTEMD_CPU_WEIGHT_UNSET;
                return 0;
        }
        return safe_atou64(s, ret);
}
