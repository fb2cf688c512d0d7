/* SPDX-License-Identifier: GPL-2.0-only */
/* The energy model: the pinned constants, the spreading rule, and the kernel's EM from debugfs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/energy.h"
#include "peltd/topology-energy.h"
#include "peltd/macro.h"
#include "fixture-util.h"
#include "topo-builder.h"
#include "test-cleanup.h"

#define assert_close(a, b) assert_true(absdiff((double) (a), (double) (b)) < 1e-6)

static double absdiff(double a, double b) {
        return a > b ? a - b : b - a;
}

static CpuMask mask(const char *list) {
        CpuMask m;

        assert_int_equal(cpumask_parse_list(list, &m), 0);
        return m;
}

static double *util_for(const Topology *t, const char *list, double util) {
        double *u = new0(double, t->n_cpus);
        CpuMask m = mask(list);

        assert_non_null(u);
        energy_spread(t, &m, util, u);
        return u;
}

static void test_set_capacity_smt(void **state) {
        _unused_ void *s = state;
        /* x86 numbering: cores 0-3 on package 0, 4-7 on package 1, siblings +8. */
        Topology *t = topo_build_smp(2, 4, 2, TOPO_NUMBER_X86);
        CpuMask m;

        m = mask("0");
        assert_close(energy_set_capacity(t, &m), 1024);
        m = mask("0,8");
        assert_close(energy_set_capacity(t, &m), 1024 * 1.2);
        m = mask("0-1");
        assert_close(energy_set_capacity(t, &m), 2048);
        m = mask("0-15");
        assert_close(energy_set_capacity(t, &m), 8 * 1024 * 1.2);
        /* Fit: util * 1280 < capacity * 1024. */
        assert_true(util_fits_capacity(818, 1024));
        assert_false(util_fits_capacity(819.2, 1024));
        topo_build_free(t);
}

static void test_spread_one_thread_per_core_first(void **state) {
        _unused_ void *s = state;
        Topology *t = topo_build_smp(1, 4, 2, TOPO_NUMBER_X86); /* cores {0,4} {1,5} {2,6} {3,7} */
        _cleanup_free_ double *u = util_for(t, "0-7", 2048);

        /* 512 per core, all on the first threads. */
        for (int i = 0; i < 4; i++) {
                assert_close(u[i], 512);
                assert_close(u[i + 4], 0);
        }
        free(u);
        /* 1200 per core: the first thread takes its capacity, the second the rest. */
        u = util_for(t, "0-7", 4800);
        assert_close(u[0], 1024);
        assert_close(u[4], 176);
        free(u);
        /* A set with one thread of a core: that thread takes the core's whole share. */
        u = util_for(t, "0,1,5", 3000);
        assert_close(u[0], 1500);
        assert_close(u[1], 1024);
        assert_close(u[5], 476);
        topo_build_free(t);
}

static void test_builtin_one_class_constants(void **state) {
        _unused_ void *s = state;
        Topology *t = topo_build_smp(2, 4, 2, TOPO_NUMBER_X86);
        _cleanup_free_ double *u = NULL;

        /* One busy CPU: a package (30), a core (5), and 1024 util of work (10). */
        u = util_for(t, "0", 1024);
        assert_close(energy_estimate_builtin(t, u), 30 + 5 + 10);
        free(u);
        /* Both threads of one core: still one core. */
        u = util_for(t, "0,8", 2048);
        assert_close(energy_estimate_builtin(t, u), 30 + 5 + 20);
        free(u);
        /* One core on each package. */
        u = util_for(t, "0,4", 1024);
        assert_close(energy_estimate_builtin(t, u), 60 + 10 + 10);
        free(u);
        /* Every CPU: 2 packages, 8 cores. */
        u = util_for(t, "0-15", 512);
        assert_close(energy_estimate_builtin(t, u), 60 + 40 + 5);
        free(u);
        /* Nothing busy costs nothing; the kernel model is not used without one. */
        u = new0(double, t->n_cpus);
        assert_close(energy_estimate(t, NULL, u), 0);
        topo_build_free(t);
}

static Topology *build_big_little(unsigned little, unsigned big) {
        const TopoClusterSpec cs[] = {
                { .package = 0, .cores = 4, .threads = 1, .capacity = little },
                { .package = 0, .cores = 4, .threads = 1, .capacity = big },
        };

        return topo_build(&(TopoSpec){ cs, ELEMENTSOF(cs), TOPO_NUMBER_LINEAR, true });
}

static void test_builtin_asymmetric_constants(void **state) {
        _unused_ void *s = state;
        Topology *t = build_big_little(512, 1024);
        _cleanup_free_ double *u = NULL;

        assert_true(t->asymmetric);
        /* 100 on one LITTLE: 100 fits 40% of 512 (204.8) with the margin; 20 × 100/204.8 + static 10. */
        u = util_for(t, "0", 100);
        assert_close(energy_estimate_builtin(t, u), 20.0 * 100 / 204.8 + 10);
        free(u);
        /* 200 does not fit 204.8 with the margin (200 × 1.25 = 250): 70% point, 50 × 200/358.4. */
        u = util_for(t, "0", 200);
        assert_close(energy_estimate_builtin(t, u), 50.0 * 200 / 358.4 + 10);
        free(u);
        /* 400 fits only the 100% point: 110 × 400/512. */
        u = util_for(t, "0", 400);
        assert_close(energy_estimate_builtin(t, u), 110.0 * 400 / 512 + 10);
        free(u);
        /* Over every point: the top one. */
        u = util_for(t, "0", 600);
        assert_close(energy_estimate_builtin(t, u), 110.0 * 600 / 512 + 10);
        free(u);
        /* The biggest class: 120 / 380 / 1000, static 60; the domain's point follows its busiest CPU. */
        u = util_for(t, "4-5", 1000); /* 500 each: 500 × 1.25 = 625 < 716.8: the 70% point */
        assert_close(energy_estimate_builtin(t, u), 380.0 * 1000 / 716.8 + 60);
        topo_build_free(t);
}

static void test_builtin_middle_class_interpolated(void **state) {
        _unused_ void *s = state;
        const TopoClusterSpec cs[] = {
                { .package = 0, .cores = 2, .threads = 1, .capacity = 256 },
                { .package = 0, .cores = 2, .threads = 1, .capacity = 640 },
                { .package = 0, .cores = 1, .threads = 1, .capacity = 1024 },
        };
        Topology *t = topo_build(&(TopoSpec){ cs, ELEMENTSOF(cs), TOPO_NUMBER_LINEAR, true });
        _cleanup_free_ double *u = NULL;

        assert_int_equal(t->n_classes, 3);
        /* The middle class sits halfway: power 70 at 40%, static 35. */
        u = util_for(t, "2", 100);
        assert_close(energy_estimate_builtin(t, u), 70.0 * 100 / (0.4 * 640) + 35);
        topo_build_free(t);
}

static void test_overutilized(void **state) {
        _unused_ void *s = state;
        Topology *t = topo_build_smp(1, 2, 2, TOPO_NUMBER_X86); /* cores {0,2} {1,3} */
        CpuMask within = mask("1");
        _cleanup_free_ double *u = new0(double, t->n_cpus);

        u[0] = 800; /* 800 × 1.25 = 1000 < 1024 */
        assert_false(energy_overutilized(t, u, NULL));
        u[0] = 820;
        assert_true(energy_overutilized(t, u, NULL));
        assert_false(energy_overutilized(t, u, &within));
        /* Two busy threads: the core has 1.2 × 1024. */
        u[0] = 500;
        u[2] = 480;
        assert_false(energy_overutilized(t, u, NULL));
        topo_build_free(t);
}

/* ---- The kernel's Energy Model ------------------------------------------------------------- */

static char tmpdir[] = "/tmp/peltd-test-energy-XXXXXX";

static void put_state(const char *pd, unsigned khz, unsigned power, int cost) {
        char rel[256];

        snprintf(rel, sizeof rel, "sys/kernel/debug/energy_model/%s/ps:%u/frequency", pd, khz);
        fx_write(tmpdir, rel, "%u\n", khz);
        snprintf(rel, sizeof rel, "sys/kernel/debug/energy_model/%s/ps:%u/power", pd, khz);
        fx_write(tmpdir, rel, "%u\n", power);
        if (cost >= 0) {
                snprintf(rel, sizeof rel, "sys/kernel/debug/energy_model/%s/ps:%u/cost", pd, khz);
                fx_write(tmpdir, rel, "%d\n", cost);
        }
}

/* The pure constructor: tables in any order, costs filled only where none is given. */
static void test_model_from_tables(void **state) {
        EnergyPerfDomain *d = new0(EnergyPerfDomain, 2);
        EnergyModel *m = NULL;

        (void) state;
        cpumask_set(&d[0].cpus, 4);
        d[0].states = new0(EnergyPerfState, 2);
        d[0].states[0] = (EnergyPerfState){ .frequency_khz = 2000000, .power = 1000, .cost = 7 };
        d[0].states[1] = (EnergyPerfState){ .frequency_khz = 1000000, .power = 300, .cost = 5 };
        d[0].n_states = 2;
        cpumask_set(&d[1].cpus, 0);
        d[1].states = new0(EnergyPerfState, 2);
        d[1].states[0] = (EnergyPerfState){ .frequency_khz = 1000000, .power = 100 };
        d[1].states[1] = (EnergyPerfState){ .frequency_khz = 500000, .power = 50 };
        d[1].n_states = 2;
        assert_int_equal(energy_model_new(d, 2, &m), 0);
        assert_int_equal(cpumask_first(&m->domains[0].cpus), 0);
        assert_int_equal(m->domains[0].states[0].frequency_khz, 500000);
        assert_int_equal(m->domains[0].states[0].cost, 100); /* 50 × 1 GHz / 500 MHz */
        assert_int_equal(m->domains[0].states[1].cost, 100);
        assert_int_equal(m->domains[1].states[0].cost, 5); /* given: kept */
        assert_int_equal(m->domains[1].states[1].cost, 7);
        energy_model_free(m);

        /* A state at 0 kHz, or a domain with no states: refused, the tables freed (ASan says). */
        d = new0(EnergyPerfDomain, 1);
        cpumask_set(&d[0].cpus, 0);
        d[0].states = new0(EnergyPerfState, 1);
        d[0].n_states = 1;
        assert_int_equal(energy_model_new(d, 1, &m), -EINVAL);
        d = new0(EnergyPerfDomain, 1);
        cpumask_set(&d[0].cpus, 0);
        assert_int_equal(energy_model_new(d, 1, &m), -EINVAL);
}

static void test_kernel_model(void **state) {
        _unused_ void *s = state;
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_energy_model_ EnergyModel *m = NULL;
        Topology *t = build_big_little(512, 1024);
        _cleanup_free_ double *u = NULL;

        assert_non_null(test_mkdtemp(tmpdir));
        assert_int_equal(rootdir_open(tmpdir, &root), 0);
        assert_int_equal(energy_model_load(root, &m), -ENOENT);

        /* pd0: the LITTLEs, without cost files (older kernels); pd4: the bigs, with them. */
        fx_write(tmpdir, "sys/kernel/debug/energy_model/pd0/cpus", "0-3\n");
        put_state("pd0", 500000, 50, -1);
        put_state("pd0", 1000000, 200, -1);
        fx_write(tmpdir, "sys/kernel/debug/energy_model/pd4/cpus", "4-7\n");
        put_state("pd4", 2000000, 1000, 1000);
        put_state("pd4", 1000000, 300, 600);
        assert_int_equal(energy_model_load(root, &m), 0);
        assert_int_equal(m->n_domains, 2);
        assert_int_equal(cpumask_first(&m->domains[0].cpus), 0);
        assert_int_equal(m->domains[0].n_states, 2);
        /* cost = power × fmax / f where the kernel gives none; sorted by frequency. */
        assert_int_equal(m->domains[0].states[0].frequency_khz, 500000);
        assert_int_equal(m->domains[0].states[0].cost, 100);
        assert_int_equal(m->domains[0].states[1].cost, 200);
        assert_int_equal(m->domains[1].states[0].cost, 600);
        assert_true(energy_model_covers(m, t));

        /*
         * 100 util on CPU 0 (capacity 512): needs 100 × 1.25 / 512 × 1000000 = 244140 kHz: the
         * 500 MHz state, cost 100 × 100 / 512. 600 on CPU 4: 750/1024 × 2 GHz = 1464843 kHz: the
         * 2 GHz state, cost 1000 × 600 / 1024.
         */
        u = new0(double, t->n_cpus);
        u[0] = 100;
        u[4] = 600;
        assert_close(energy_estimate(t, m, u), 100.0 * 100 / 512 + 1000.0 * 600 / 1024);
        topo_build_free(t);

        /* A model that leaves a CPU out is not used: the built-in one is. */
        t = topo_build_smp(1, 12, 1, TOPO_NUMBER_LINEAR);
        assert_false(energy_model_covers(m, t));
        free(u);
        u = new0(double, t->n_cpus);
        u[0] = 1024;
        assert_close(energy_estimate(t, m, u), 30 + 5 + 10);
        topo_build_free(t);

        /* A domain without states, or a file that does not parse, is no model / an error. */
        fx_write(tmpdir, "sys/kernel/debug/energy_model/pd8/cpus", "8\n");
        m = energy_model_free(m);
        assert_int_equal(energy_model_load(root, &m), -ENOENT);
        put_state("pd8", 100000, 10, 5);
        fx_write(tmpdir, "sys/kernel/debug/energy_model/pd8/ps:100000/power", "lots\n");
        assert_int_equal(energy_model_load(root, &m), -EINVAL);

        {
                char cmd[128];

                snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
                assert_int_equal(system(cmd), 0);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set_capacity_smt),
                cmocka_unit_test(test_spread_one_thread_per_core_first),
                cmocka_unit_test(test_builtin_one_class_constants),
                cmocka_unit_test(test_builtin_asymmetric_constants),
                cmocka_unit_test(test_builtin_middle_class_interpolated),
                cmocka_unit_test(test_overutilized),
                cmocka_unit_test(test_model_from_tables),
                cmocka_unit_test(test_kernel_model),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
