/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The systemd backend against a stand-in org.freedesktop.systemd1 on a private bus, which checks
 * the types and values of every SetUnitProperties call and reports what it accepted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/apply-backend.h"
#include "peltd/apply-systemd.h"
#include "peltd/cgroup-util.h"
#include "peltd/macro.h"
#include "fixture-util.h"
#include "private-bus.h"
#include "test-cleanup.h"

static PrivateBus pbus;
static pid_t fake_pid;
static FILE *fake_out;
static sd_bus *bus;

/* The next line the stand-in printed, without its newline. */
static char *next_line(void) {
        static char line[512];

        if (!fgets(line, sizeof line, fake_out))
                fail_msg("fake-systemd1 closed its output");
        line[strcspn(line, "\n")] = 0;
        return line;
}

static int setup(_unused_ void **state) {
        int p[2];

        if (private_bus_start(&pbus) < 0 || pipe(p) < 0)
                return -1;
        fake_pid = fork();
        if (fake_pid < 0)
                return -1;
        if (fake_pid == 0) {
                dup2(p[1], STDOUT_FILENO);
                close(p[0]);
                close(p[1]);
                execl(FAKE_SYSTEMD1, "fake-systemd1", "web.service:/system.slice/web.service",
                      "db.service:/system.slice/db.service:delegate", "batch.slice:/batch.slice", (char *) NULL);
                _exit(127);
        }
        close(p[1]);
        fake_out = fdopen(p[0], "r");
        if (!fake_out || !streq(next_line(), "READY"))
                return -1;
        return sd_bus_open_system(&bus) < 0 ? -1 : 0;
}

static int teardown(_unused_ void **state) {
        sd_bus_flush_close_unref(bus);
        if (fake_pid > 0) {
                kill(fake_pid, SIGTERM);
                waitpid(fake_pid, NULL, 0);
        }
        if (fake_out)
                fclose(fake_out);
        private_bus_stop(&pbus);
        return 0;
}

static void test_unit_for_cgroup(_unused_ void **state) {
        _cleanup_free_ char *unit = NULL;
        char *none = NULL;

        assert_int_equal(systemd_unit_for_cgroup(bus, "/system.slice/web.service", &unit), 0);
        assert_string_equal(unit, "web.service");
        free(unit);
        /* A cgroup below a unit's own is said to be the unit's (manager-groups.c checks ControlGroup=). */
        assert_int_equal(systemd_unit_for_cgroup(bus, "/system.slice/web.service/inner", &unit), 0);
        assert_string_equal(unit, "web.service");
        assert_true(systemd_unit_for_cgroup(bus, "/nowhere", &none) < 0);
        assert_null(none);
}

static void test_delegated(_unused_ void **state) {
        bool d = true;

        assert_int_equal(systemd_unit_delegated(bus, "web.service", &d), 0);
        assert_false(d);
        assert_int_equal(systemd_unit_delegated(bus, "db.service", &d), 0);
        assert_true(d);
        assert_true(systemd_unit_delegated(bus, "missing.service", &d) < 0);
        /* A unit type without cgroup settings is refused before any call. */
        assert_int_equal(systemd_unit_delegated(bus, "x.target", &d), -EOPNOTSUPP);
}

static void test_set_and_read_back(_unused_ void **state) {
        SystemdUnitCpu v;
        CpuMask m;

        assert_int_equal(systemd_unit_get_cpu(bus, "web.service", &v), 0);
        assert_true(cpumask_empty(&v.allowed));
        assert_int_equal(v.weight, SYSTEMD_CPU_WEIGHT_UNSET);

        assert_int_equal(cpumask_parse_list("0-1,9", &m), 0);
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", &m, true, 200), 0);
        assert_string_equal(next_line(), "SetUnitProperties web.service AllowedCPUs=0-1,9 CPUWeight=200");
        assert_int_equal(systemd_unit_get_cpu(bus, "web.service", &v), 0);
        assert_true(cpumask_equal(&v.allowed, &m));
        assert_int_equal(v.weight, 200);

        /* One of the two alone. */
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", NULL, true, 10000), 0);
        assert_string_equal(next_line(), "SetUnitProperties web.service CPUWeight=10000");
        assert_int_equal(cpumask_parse_list("1", &m), 0);
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", &m, false, 0), 0);
        assert_string_equal(next_line(), "SetUnitProperties web.service AllowedCPUs=1");

        /* Back to "not set", as a restore does. */
        cpumask_zero(&m);
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", &m, true, SYSTEMD_CPU_WEIGHT_UNSET), 0);
        assert_string_equal(next_line(), "SetUnitProperties web.service AllowedCPUs= CPUWeight=");
        assert_int_equal(systemd_unit_get_cpu(bus, "web.service", &v), 0);
        assert_true(cpumask_empty(&v.allowed));
        assert_int_equal(v.weight, SYSTEMD_CPU_WEIGHT_UNSET);

        /* A slice works the same way (its own interface). */
        assert_int_equal(cpumask_parse_list("0", &m), 0);
        assert_int_equal(systemd_unit_set_cpu(bus, "batch.slice", &m, true, 50), 0);
        assert_string_equal(next_line(), "SetUnitProperties batch.slice AllowedCPUs=0 CPUWeight=50");
}

static void test_control_group(_unused_ void **state) {
        _cleanup_free_ char *cg = NULL;
        char *none = NULL;

        assert_int_equal(systemd_unit_control_group(bus, "web.service", &cg), 0);
        assert_string_equal(cg, "/system.slice/web.service");
        assert_true(systemd_unit_control_group(bus, "missing.service", &none) < 0);
        assert_null(none);
}

/*
 * Through the systemd backend that apply and restore use. Real systemd leaves cpuset.cpus as it
 * was when AllowedCPUs= is reset: the reset empties it (every CPU of the parent), as it was before.
 */
static void test_io_reset_empties_cpuset(_unused_ void **state) {
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        char dir[] = "/tmp/peltd-test-unified-XXXXXX", file[128], cmd[160];
        const char *cpus = "system.slice/web.service/cpuset.cpus";
        const PlacedValue *pv = &placed_values[PLACED_CPUS];
        const ApplyBackend *b = apply_backend(APPLY_SYSTEMD);
        CgroupAccess access;
        CgroupIO io;

        assert_non_null(test_mkdtemp(dir));
        snprintf(file, sizeof file, "%s/system.slice/web.service", dir);
        snprintf(cmd, sizeof cmd, "mkdir -p %s", file);
        assert_int_equal(system(cmd), 0);
        fx_write(dir, cpus, "1\n");
        assert_int_equal(cgroup_fs_open_v2(dir, &fs), 0);
        access = (CgroupAccess){ .fs = fs, .bus = bus };
        io = cgroup_io_real(&access);
        assert_string_equal(placed_place(pv, APPLY_SYSTEMD)->file, "AllowedCPUs");

        /* Setting it is systemd's to write: the file is left alone. */
        assert_int_equal(b->write(&io, pv, APPLY_SYSTEMD, "web.service", "0"), 0);
        assert_string_equal(next_line(), "SetUnitProperties web.service AllowedCPUs=0");
        assert_string_equal(fx_read(dir, cpus), "1");

        assert_int_equal(b->restore(&io, pv, APPLY_SYSTEMD, "web.service", ""), 0);
        assert_string_equal(next_line(), "SetUnitProperties web.service AllowedCPUs=");
        assert_string_equal(fx_read(dir, cpus), "");

        /* A unit whose cgroup has no cpuset.cpus (no controller, not running): nothing to empty. */
        assert_int_equal(b->restore(&io, pv, APPLY_SYSTEMD, "batch.slice", ""), 0);
        assert_string_equal(next_line(), "SetUnitProperties batch.slice AllowedCPUs=");

        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

static void test_refused_before_the_call(_unused_ void **state) {
        CpuMask m;

        assert_int_equal(cpumask_parse_list("0", &m), 0);
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", &m, true, 0), -ERANGE);
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", &m, true, 10001), -ERANGE);
        assert_true(systemd_unit_set_cpu(bus, "missing.service", &m, false, 0) < 0);
        /* Nothing to set: no call at all. */
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", NULL, false, 0), 0);

        /* The stand-in saw none of these: the next line is the next accepted call. */
        assert_int_equal(systemd_unit_set_cpu(bus, "web.service", NULL, true, 1), 0);
        assert_string_equal(next_line(), "SetUnitProperties web.service CPUWeight=1");
}

static void test_state_strings(_unused_ void **state) {
        CpuMask m;
        uint64_t w;
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *s3 = NULL;

        cpumask_zero(&m);
        s1 = systemd_allowed_to_string(&m);
        assert_string_equal(s1, "");
        assert_int_equal(systemd_allowed_from_string("", &m), 0);
        assert_true(cpumask_empty(&m));
        s2 = systemd_weight_to_string(SYSTEMD_CPU_WEIGHT_UNSET);
        assert_string_equal(s2, "");
        s3 = systemd_weight_to_string(300);
        assert_string_equal(s3, "300");
        assert_int_equal(systemd_weight_from_string("", &w), 0);
        assert_int_equal(w, SYSTEMD_CPU_WEIGHT_UNSET);
        assert_int_equal(systemd_weight_from_string("300", &w), 0);
        assert_int_equal(w, 300);
        assert_true(systemd_weight_from_string("x", &w) < 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unit_for_cgroup),
                cmocka_unit_test(test_delegated),
                cmocka_unit_test(test_set_and_read_back),
                cmocka_unit_test(test_control_group),
                cmocka_unit_test(test_io_reset_empties_cpuset),
                cmocka_unit_test(test_refused_before_the_call),
                cmocka_unit_test(test_state_strings),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
