/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The topology text on described machines (struct literals): the lines peltd writes, the lines
 * peltctl writes from what the GetTopology document holds, and the status line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/topology-text.h"

static CpuMask mask(const char *list) {
        CpuMask m;

        assert_int_equal(cpumask_parse_list(list, &m), 0);
        return m;
}

static void expect_text(int (*format)(const TopoText *t, char **ret), const TopoText *t, const char *want) {
        _cleanup_free_ char *got = NULL;

        assert_int_equal(format(t, &got), 0);
        if (!streq(got, want))
                fail_msg("got:\n%s\nwanted:\n%s", got, want);
}

/*
 * 4 CPUs in 2 packages (groups[0..1], the dies too), one thread a core; node 0 (groups[2]) lists
 * CPUs 0-2 only; a small and a big pair; CPU 2's frequency unknown.
 */
static const TopoTextCpu cpus[] = {
        { .cpu = 0, .max_freq_khz = 1800000, .idle_residency_usec = 100 },
        { .cpu = 1, .max_freq_khz = 1800000, .idle_residency_usec = 100 },
        { .cpu = 2, .max_freq_khz = 0, .idle_residency_usec = 200 },
        { .cpu = 3, .max_freq_khz = 2400000, .idle_residency_usec = 200 },
};

static TopoText machine(TopoTextGroup groups[3], CpuMask smt[4], CpuMask llc[2], TopoTextGroup classes[2]) {
        groups[0] = (TopoTextGroup){ 0, mask("0-1") };
        groups[1] = (TopoTextGroup){ 1, mask("2-3") };
        groups[2] = (TopoTextGroup){ 0, mask("0-2") };
        for (int i = 0; i < 4; i++) {
                cpumask_zero(&smt[i]);
                (void) cpumask_set(&smt[i], i);
        }
        llc[0] = mask("0-1");
        llc[1] = mask("2-3");
        classes[0] = (TopoTextGroup){ 512, mask("0-1") };
        classes[1] = (TopoTextGroup){ 1024, mask("2-3") };
        return (TopoText){
                .online = mask("0-3"),
                .cpus = cpus,
                .n_cpus = ELEMENTSOF(cpus),
                .packages = groups,
                .n_packages = 2,
                .dies = groups,
                .n_dies = 2,
                .smt_groups = smt,
                .n_smt_groups = 4,
                .llc_groups = llc,
                .n_llc_groups = 2,
                .numa_nodes = &groups[2],
                .n_numa_nodes = 1,
                .classes = classes,
                .n_classes = 2,
                .asymmetric = true,
        };
}

static void test_daemon(_unused_ void **state) {
        TopoTextGroup groups[3], classes[2];
        CpuMask smt[4], llc[2], isolated = mask("");
        TopoText t = machine(groups, smt, llc, classes);

        t.isolated = &isolated;
        t.capacity_source = "from cpu_capacity";
        t.has_freq_domains = true;
        t.n_freq_domains = 3;
        t.has_idle = true;
        expect_text(topology_text_format, &t,
                    "2 packages × 2 cores × 1 thread, 1 NUMA node, 2 capacity classes\n"
                    "online CPUs   0-3 (4)\n"
                    "isolated      none\n"
                    "packages      0: 0-1; 1: 2-3\n"
                    "dies          0: 0-1; 1: 2-3\n"
                    "clusters      none\n"
                    "cores         4, one thread each\n"
                    "LLC groups    0-1; 2-3\n"
                    "NUMA nodes    0: 0-2\n"
                    "in no node    3\n"
                    "capacity      512: 0-1; 1024: 2-3 (from cpu_capacity, asymmetric)\n"
                    "freq domains  3 (1800 MHz: 0-1; unknown: 2; 2400 MHz: 3)\n"
                    "deepest idle  100–200 µs target residency\n");

        t.n_freq_domains = 0;
        t.has_clusters = true;
        t.clusters = groups;
        t.n_clusters = 1;
        t.asymmetric = false;
        t.capacity_source = "no capacity information";
        expect_text(topology_text_format, &t,
                    "2 packages × 2 cores × 1 thread, 1 NUMA node, 2 capacity classes\n"
                    "online CPUs   0-3 (4)\n"
                    "isolated      none\n"
                    "packages      0: 0-1; 1: 2-3\n"
                    "dies          0: 0-1; 1: 2-3\n"
                    "clusters      0: 0-1\n"
                    "cores         4, one thread each\n"
                    "LLC groups    0-1; 2-3\n"
                    "NUMA nodes    0: 0-2\n"
                    "in no node    3\n"
                    "capacity      512: 0-1; 1024: 2-3 (no capacity information)\n"
                    "freq domains  none\n"
                    "deepest idle  100–200 µs target residency\n");
}

/* What the document does not hold is left out, and "max freq" takes the place of "freq domains". */
static void test_document(_unused_ void **state) {
        TopoTextGroup groups[3], classes[2];
        CpuMask smt[4], llc[2];
        TopoText t = machine(groups, smt, llc, classes);

        expect_text(topology_text_format, &t,
                    "2 packages × 2 cores × 1 thread, 1 NUMA node, 2 capacity classes\n"
                    "online CPUs   0-3 (4)\n"
                    "packages      0: 0-1; 1: 2-3\n"
                    "dies          0: 0-1; 1: 2-3\n"
                    "clusters      none\n"
                    "cores         4, one thread each\n"
                    "LLC groups    0-1; 2-3\n"
                    "NUMA nodes    0: 0-2\n"
                    "in no node    3\n"
                    "capacity      512: 0-1; 1024: 2-3 (asymmetric)\n"
                    "max freq      1800 MHz: 0-1; unknown: 2; 2400 MHz: 3\n");
        expect_text(topology_text_summary, &t, "4 CPUs, 2 packages, 4 cores, 1 NUMA node, 2 capacity classes, asymmetric");
}

/* A core of two threads and one of one, ten LLC groups (more than a line lists), no frequency known. */
static void test_shapes(_unused_ void **state) {
        static const TopoTextCpu unknown[] = { { .cpu = 0 }, { .cpu = 1 }, { .cpu = 2 } };
        TopoTextGroup groups[3], classes[2];
        CpuMask smt[4], llc[10];
        TopoText t = machine(groups, smt, llc, classes);

        for (int i = 0; i < 10; i++) {
                cpumask_zero(&llc[i]);
                (void) cpumask_set(&llc[i], i);
        }
        t.online = mask("0-2");
        t.cpus = unknown;
        t.n_cpus = ELEMENTSOF(unknown);
        t.n_packages = t.n_dies = 1;
        groups[0].cpus = mask("0-2");
        smt[0] = mask("0-1");
        smt[1] = mask("2");
        t.n_smt_groups = 2;
        t.n_llc_groups = 10;
        t.n_classes = 1;
        t.asymmetric = false;
        expect_text(topology_text_format, &t,
                    "1 package, 2 cores, 3 CPUs (1–2 threads a core), 1 NUMA node, 1 capacity class\n"
                    "online CPUs   0-2 (3)\n"
                    "packages      0: 0-2\n"
                    "dies          0: 0-2\n"
                    "clusters      none\n"
                    "cores         0-1; 2\n"
                    "LLC groups    0; 1; 2; 3; 4; 5; 6; 7; … (10 in all)\n"
                    "NUMA nodes    0: 0-2\n"
                    "capacity      512: 0-1\n"
                    "max freq      unknown\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_daemon),
                cmocka_unit_test(test_document),
                cmocka_unit_test(test_shapes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
