/* SPDX-License-Identifier: GPL-2.0-only */
/* The pure parsers of topology detection and hotplug, on good and garbled input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/hotplug.h"
#include "peltd/macro.h"
#include "peltd/topology-util.h"

static void assert_list(const CpuMask *m, const char *expected) {
        char buf[256];

        assert_string_equal(cpumask_format(m, buf, sizeof buf), expected);
}

static void test_cpu_list_relaxed(_unused_ void **state) {
        CpuMask m;

        assert_int_equal(parse_cpu_list_relaxed("0-3,8", &m), 0);
        assert_list(&m, "0-3,8");
        /* cpufreq's related_cpus, old and new kernels alike: "0 1 2 3 \n". */
        assert_int_equal(parse_cpu_list_relaxed("0 1 2 3 \n", &m), 0);
        assert_list(&m, "0-3");
        assert_int_equal(parse_cpu_list_relaxed("4 5 6 7", &m), 0);
        assert_list(&m, "4-7");
        assert_int_equal(parse_cpu_list_relaxed("7", &m), 0);
        assert_list(&m, "7");
        assert_int_equal(parse_cpu_list_relaxed("", &m), 0);
        assert_true(cpumask_empty(&m));
        assert_int_equal(parse_cpu_list_relaxed("0-1 4-5", &m), 0);
        assert_list(&m, "0-1,4-5");
}

static void test_cpu_list_relaxed_bad(_unused_ void **state) {
        CpuMask m;

        assert_int_equal(parse_cpu_list_relaxed("3-1", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("0-3,x", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("bogus", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("0, 1", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("0 1,2", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("0 x", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("-1", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("9-", &m), -EINVAL);
        assert_int_equal(parse_cpu_list_relaxed("0 99999", &m), -ERANGE);
        assert_int_equal(parse_cpu_list_relaxed("8192", &m), -ERANGE);
}

static void test_hex_maps(_unused_ void **state) {
        CpuMask m;

        /* NR_CPUS=48 kernels write masks that are not whole 32-bit words. */
        assert_int_equal(cpumask_parse_hex("0000,00000fff", &m), 0);
        assert_list(&m, "0-11");
        assert_int_equal(cpumask_parse_hex("00000000,00001111", &m), 0);
        assert_list(&m, "0,4,8,12");
        assert_int_equal(cpumask_parse_hex("8", &m), 0);
        assert_list(&m, "3");
        assert_int_equal(cpumask_parse_hex("zz", &m), -EINVAL);
        assert_int_equal(cpumask_parse_hex("", &m), -EINVAL);
}

static void test_topology_ids(_unused_ void **state) {
        int id;

        assert_int_equal(parse_topology_id("0\n", &id), 0);
        assert_int_equal(id, 0);
        assert_int_equal(parse_topology_id("8442", &id), 0);
        assert_int_equal(id, 8442);
        assert_int_equal(parse_topology_id("-1\n", &id), 0);
        assert_int_equal(id, -1);
        assert_false(topology_id_valid(id));
        assert_int_equal(parse_topology_id("65535", &id), 0);
        assert_true(topology_id_valid(id));
        assert_false(cluster_id_valid(id));
        assert_false(cluster_id_valid(-1));
        assert_true(cluster_id_valid(0));
        assert_true(cluster_id_valid(1144));

        assert_int_equal(parse_topology_id("zero", &id), -EINVAL);
        assert_int_equal(parse_topology_id("", &id), -EINVAL);
        assert_int_equal(parse_topology_id("1 2", &id), -EINVAL);
        assert_int_equal(parse_topology_id("0x10", &id), -EINVAL);
        assert_int_equal(parse_topology_id("99999999999", &id), -ERANGE);
}

static void test_cpuinfo(_unused_ void **state) {
        CpuMask m;

        assert_int_equal(parse_cpuinfo_processors("processor\t: 0\nvendor_id\t: GenuineIntel\n\n"
                                                  "processor\t: 1\nvendor_id\t: GenuineIntel\n",
                                                  &m),
                         2);
        assert_list(&m, "0-1");
        /* arm64 and holes. */
        assert_int_equal(parse_cpuinfo_processors("processor : 6\nBogoMIPS : 50\nprocessor : 7\n", &m), 2);
        assert_list(&m, "6-7");
        /* alpha: no "processor" lines at all, only "cpus detected". */
        assert_int_equal(parse_cpuinfo_processors("cpu\t\t\t: Alpha\ncpus detected\t\t: 3\n", &m), 0);
        assert_true(cpumask_empty(&m));
        /* s390's "processor 0: version = ..." names no CPU number line. */
        assert_int_equal(parse_cpuinfo_processors("processor 0: version = FF\n", &m), 0);
        /* Garbage after the colon is skipped, not fatal. */
        assert_int_equal(parse_cpuinfo_processors("processor : x\nprocessor : 2\n", &m), 1);
        assert_list(&m, "2");
        assert_int_equal(parse_cpuinfo_processors("processor : 9000\n", &m), -ERANGE);
        assert_int_equal(parse_cpuinfo_processors("", &m), 0);
}

static void test_capacity_from_freq(_unused_ void **state) {
        assert_int_equal(capacity_from_freq(5200000, 5200000), 1024);
        assert_int_equal(capacity_from_freq(5000000, 5200000), 984);
        assert_int_equal(capacity_from_freq(3900000, 5200000), 768);
        assert_int_equal(capacity_from_freq(2800000, 3000000), 955);
        assert_int_equal(capacity_from_freq(1400000, 2000000), 716);
        assert_int_equal(capacity_from_freq(1, 4000000000ULL), 1);
        assert_int_equal(capacity_from_freq(0, 1000), 0);
        assert_int_equal(capacity_from_freq(1000, 0), 0);
        assert_int_equal(capacity_from_freq(2000, 1000), 0);
}

static void test_capacity_classes(_unused_ void **state) {
        /* GB10: five cpu_capacity values, two classes (997, 1017 and 1024 are within 5%). */
        int cpus[] = { 0, 1, 2, 3, 4, 5 };
        unsigned cap[] = { 1024, 718, 731, 997, 1017, 718 };
        int class_of[6];
        _cleanup_free_ CapacityClass *c = NULL;
        size_t n;

        assert_int_equal(capacity_classes_build(cpus, cap, 6, &c, &n, class_of), 0);
        assert_int_equal(n, 2);
        assert_int_equal(c[0].capacity, 718);
        assert_list(&c[0].cpus, "1-2,5");
        assert_int_equal(c[1].capacity, 997);
        assert_list(&c[1].cpus, "0,3-4");
        assert_int_equal(class_of[0], 1);
        assert_int_equal(class_of[1], 0);
        assert_int_equal(class_of[4], 1);
        free(TAKE_PTR(c));

        /* The margin is against the smallest of the class, not the previous value: a chain of
         * small steps still splits. 1000 * 1078 / 1024 = 1052.7. */
        {
                int cc[] = { 0, 1, 2 };
                unsigned cp[] = { 1000, 1050, 1053 };

                assert_int_equal(capacity_classes_build(cc, cp, 3, &c, &n, NULL), 0);
                assert_int_equal(n, 2);
                assert_int_equal(c[0].capacity, 1000);
                assert_list(&c[0].cpus, "0-1");
                assert_int_equal(c[1].capacity, 1053);
                free(TAKE_PTR(c));
        }

        /* Three classes: phone 280 / 855 / 1024. */
        {
                int cc[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
                unsigned cp[] = { 280, 280, 280, 855, 855, 855, 855, 1024 };

                assert_int_equal(capacity_classes_build(cc, cp, 8, &c, &n, NULL), 0);
                assert_int_equal(n, 3);
                assert_int_equal(c[2].capacity, 1024);
                assert_list(&c[2].cpus, "7");
                free(TAKE_PTR(c));
        }

        assert_int_equal(capacity_classes_build(cpus, cap, 0, &c, &n, NULL), 0);
        assert_int_equal(n, 0);
        assert_null(c);
}

#define UEVENT(s) s, sizeof(s) - 1

static void test_uevent_parse(_unused_ void **state) {
        HotplugEvent e = { .cpu = -1 };

        assert_int_equal(hotplug_parse_uevent(UEVENT("offline@/devices/system/cpu/cpu1\0ACTION=offline\0"
                                                     "DEVPATH=/devices/system/cpu/cpu1\0SUBSYSTEM=cpu\0SEQNUM=4242\0"),
                                              &e),
                         1);
        assert_int_equal(e.action, HOTPLUG_OFFLINE);
        assert_int_equal(e.cpu, 1);

        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpu127\0ACTION=online\0"
                                                     "SUBSYSTEM=cpu\0"),
                                              &e),
                         1);
        assert_int_equal(e.action, HOTPLUG_ONLINE);
        assert_int_equal(e.cpu, 127);

        /* No fields after the header, no terminating NUL. */
        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpu3"), &e), 1);
        assert_int_equal(e.cpu, 3);

        /* Other devices and actions. */
        assert_int_equal(hotplug_parse_uevent(UEVENT("change@/devices/system/cpu/cpu1\0SUBSYSTEM=cpu\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("add@/devices/system/cpu/cpu1\0SUBSYSTEM=cpu\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("offline@/devices/system/memory/memory8\0SUBSYSTEM=memory\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpufreq\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpu1/cache\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpu\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpu1x\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpu99999999999\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("online@/devices/system/cpu/cpu1\0SUBSYSTEM=cpux\0"), &e), 0);
        assert_int_equal(hotplug_parse_uevent(UEVENT("libudev\0\xfe\xed\xca\xfe"), &e), 0);

        /* Not uevents at all. */
        assert_int_equal(hotplug_parse_uevent(UEVENT("garbage"), &e), -EINVAL);
        assert_int_equal(hotplug_parse_uevent(UEVENT("@/devices/system/cpu/cpu1\0"), &e), -EINVAL);
        assert_int_equal(hotplug_parse_uevent("", 0, &e), -EINVAL);
        assert_int_equal(hotplug_parse_uevent(NULL, 4, &e), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu_list_relaxed),
                cmocka_unit_test(test_cpu_list_relaxed_bad),
                cmocka_unit_test(test_hex_maps),
                cmocka_unit_test(test_topology_ids),
                cmocka_unit_test(test_cpuinfo),
                cmocka_unit_test(test_capacity_from_freq),
                cmocka_unit_test(test_capacity_classes),
                cmocka_unit_test(test_uevent_parse),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
