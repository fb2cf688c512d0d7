/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * peltd's systemd backend (apply-systemd.c) as commands, for the guest tests, which check what
 * real systemd makes of each call (the unit's cgroup files, systemctl show):
 *
 *   systemd-backend unit-for-cgroup CGROUP   prints the owning unit
 *   systemd-backend delegated UNIT           prints yes or no
 *   systemd-backend get UNIT                 prints "AllowedCPUs=LIST CPUWeight=N" (empty: not set)
 *   systemd-backend control-group UNIT       prints its cgroup
 *   systemd-backend set UNIT [AllowedCPUs=LIST] [CPUWeight=N]
 *                                            one SetUnitProperties call; an empty value resets
 *   systemd-backend write UNIT PROPERTY VALUE
 *                                            as apply writes it (through the systemd backend), or
 *                                            an empty value as a restore puts it back
 *
 * Exit 0 on success, 1 when a call fails (the error is printed), 2 on bad usage.
 */
#include <systemd/sd-bus.h>

#include "peltd/apply-backend.h"
#include "peltd/apply-systemd.h"
#include "peltd/cgroup-util.h"
#include "peltd/macro.h"

static int fail(const char *what, int r) {
        fprintf(stderr, "systemd-backend: %s: %s\n", what, strerror(-r));
        return 1;
}

int main(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (argc < 3) {
                fprintf(stderr, "usage: systemd-backend unit-for-cgroup CGROUP | delegated UNIT | get UNIT | "
                                "control-group UNIT | set UNIT [AllowedCPUs=LIST] [CPUWeight=N] | write UNIT PROPERTY VALUE\n");
                return 2;
        }
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return fail("connecting to the system bus", r);

        if (streq(argv[1], "unit-for-cgroup")) {
                _cleanup_free_ char *unit = NULL;

                r = systemd_unit_for_cgroup(bus, argv[2], &unit);
                if (r < 0)
                        return fail("systemd_unit_for_cgroup", r);
                printf("%s\n", unit);
        } else if (streq(argv[1], "delegated")) {
                bool d;

                r = systemd_unit_delegated(bus, argv[2], &d);
                if (r < 0)
                        return fail("systemd_unit_delegated", r);
                printf("%s\n", d ? "yes" : "no");
        } else if (streq(argv[1], "get")) {
                _cleanup_free_ char *allowed = NULL, *weight = NULL;
                SystemdUnitCpu v;

                r = systemd_unit_get_cpu(bus, argv[2], &v);
                if (r < 0)
                        return fail("systemd_unit_get_cpu", r);
                allowed = systemd_allowed_to_string(&v.allowed);
                weight = systemd_weight_to_string(v.weight);
                if (!allowed || !weight)
                        return fail("formatting", -ENOMEM);
                printf("AllowedCPUs=%s CPUWeight=%s\n", allowed, weight);
        } else if (streq(argv[1], "control-group")) {
                _cleanup_free_ char *cg = NULL;

                r = systemd_unit_control_group(bus, argv[2], &cg);
                if (r < 0)
                        return fail("systemd_unit_control_group", r);
                printf("%s\n", cg);
        } else if (streq(argv[1], "write")) {
                _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
                const PlacedValue *pv;
                CgroupAccess access;
                ApplyTarget t;
                CgroupIO io;

                if (argc != 5)
                        return fprintf(stderr, "systemd-backend: write UNIT PROPERTY VALUE\n"), 2;
                r = cgroup_fs_open_system(&fs);
                if (r < 0)
                        return fail("finding the cgroup hierarchies", r);
                pv = placed_value_at("systemd", argv[3], &t);
                if (!pv)
                        return fprintf(stderr, "systemd-backend: not a property peltd sets: \"%s\"\n", argv[3]), 2;
                access = (CgroupAccess){ .fs = fs, .bus = bus };
                io = cgroup_io_real(&access);
                /* A value as apply writes it; "" as a restore puts it back (a reset). */
                r = (isempty(argv[4]) ? apply_backend(t)->restore : apply_backend(t)->write)(&io, pv, t, argv[2], argv[4]);
                if (r < 0)
                        return fail("writing through the systemd backend", r);
        } else if (streq(argv[1], "set")) {
                CpuMask allowed;
                bool set_allowed = false, set_weight = false;
                uint64_t weight = SYSTEMD_CPU_WEIGHT_UNSET;
                const char *v;

                for (int i = 3; i < argc; i++) {
                        if ((v = startswith(argv[i], "AllowedCPUs="))) {
                                if (systemd_allowed_from_string(v, &allowed) < 0)
                                        return fprintf(stderr, "systemd-backend: bad CPU list \"%s\"\n", v), 2;
                                set_allowed = true;
                        } else if ((v = startswith(argv[i], "CPUWeight="))) {
                                if (systemd_weight_from_string(v, &weight) < 0)
                                        return fprintf(stderr, "systemd-backend: bad weight \"%s\"\n", v), 2;
                                set_weight = true;
                        } else
                                return fprintf(stderr, "systemd-backend: unknown setting \"%s\"\n", argv[i]), 2;
                }
                r = systemd_unit_set_cpu(bus, argv[2], set_allowed ? &allowed : NULL, set_weight, weight);
                if (r < 0)
                        return fail("systemd_unit_set_cpu", r);
        } else {
                fprintf(stderr, "systemd-backend: unknown command \"%s\"\n", argv[1]);
                return 2;
        }
        return 0;
}
