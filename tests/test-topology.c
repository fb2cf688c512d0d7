/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Topology detection on fixture trees: every tests/fixtures/sysfs/<machine>/ must give exactly its
 * expected.json (the complete --print-topology JSON), plus what the JSON does not show (isolated
 * CPUs, idle residencies, frequency domains, the capacity source), missing and garbled trees built
 * on the fly, and topology_refresh().
 *
 * Usage: test-topology FIXTURE-DIR
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"
#include "topo-builder.h"
#include "test-cleanup.h"

static const char *fixtures;

static Topology *load_at(const char *path) {
        _cleanup_rootdir_ RootDir *root = NULL;
        Topology *t = NULL;

        assert_int_equal(rootdir_open(path, &root), 0);
        assert_int_equal(topology_load(root, &t), 0);
        assert_non_null(t);
        return t;
}

static Topology *load_fixture(const char *name) {
        char path[PATH_MAX];

        (void) snprintf(path, sizeof path, "%s/%s", fixtures, name);
        return load_at(path);
}

static void assert_mask(const CpuMask *m, const char *expected) {
        char buf[512];

        assert_string_equal(cpumask_format(m, buf, sizeof buf), expected);
}

static int compare_fixture(const char *name) {
        _cleanup_topology_ Topology *t = NULL;
        json_object *got = NULL, *want = NULL;
        char path[PATH_MAX];
        int ok;

        t = load_fixture(name);
        assert_int_equal(topology_to_json(t, &got), 0);
        (void) snprintf(path, sizeof path, "%s/%s/expected.json", fixtures, name);
        want = json_object_from_file(path);
        if (!want) {
                fprintf(stderr, "%s: cannot read %s\n", name, path);
                json_object_put(got);
                return 0;
        }
        ok = json_object_equal(got, want);
        if (!ok)
                fprintf(stderr, "%s: output differs from expected.json\n--- got:\n%s\n--- expected:\n%s\n", name,
                        json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY),
                        json_object_to_json_string_ext(want, JSON_C_TO_STRING_PRETTY));
        else
                fprintf(stderr, "%-28s matches expected.json\n", name);
        json_object_put(got);
        json_object_put(want);
        return ok;
}

static void test_fixtures_json(_unused_ void **state) {
        DIR *d = opendir(fixtures);
        struct dirent *de;
        int n = 0, failed = 0;

        assert_non_null(d);
        while ((de = readdir(d))) {
                char path[PATH_MAX];
                struct stat st;

                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(path, sizeof path, "%s/%s/expected.json", fixtures, de->d_name);
                if (stat(path, &st) < 0)
                        continue;
                n++;
                if (!compare_fixture(de->d_name))
                        failed++;
        }
        closedir(d);
        fprintf(stderr, "%d fixture trees, %d differ\n", n, failed);
        assert_true(n >= 10);
        assert_int_equal(failed, 0);
}

static void test_x86_details(_unused_ void **state) {
        _cleanup_topology_ Topology *t = load_fixture("x86-2s-smt");
        const TopoCpu *c;

        assert_mask(&t->isolated, "3,11");
        assert_int_equal(t->capacity_source, CAPACITY_FROM_MAX_FREQ);
        assert_int_equal(t->n_freq_domains, 16);
        assert_int_equal(t->n_smt_groups, 8);
        assert_int_equal(t->n_numa_nodes, 2);
        for (size_t i = 0; i < t->n_cpus; i++)
                assert_int_equal(t->cpus[i].idle_residency_usec, 133);

        c = topology_cpu(t, 12);
        assert_non_null(c);
        assert_int_equal(c->package, 1);
        assert_int_equal(c->core, 0);
        assert_mask(&t->smt_groups[c->smt_index], "4,12");
        assert_mask(&t->llc_groups[c->llc_index], "4-7,12-15");
        assert_int_equal(t->numa_nodes[c->numa_index].id, 1);
        assert_mask(&t->packages[c->package_index].cpus, "4-7,12-15");
        assert_mask(&t->freq_domains[c->freq_domain_index], "12");
        assert_null(topology_cpu(t, 16));
        assert_null(topology_cpu(t, -1));
}

static void test_phone_details(_unused_ void **state) {
        _cleanup_topology_ Topology *t = load_fixture("phone-sm8150-linux5.10");

        assert_int_equal(t->capacity_source, CAPACITY_FROM_CPU_CAPACITY);
        assert_true(t->asymmetric);
        assert_int_equal(t->n_classes, 3);
        assert_int_equal(t->n_freq_domains, 3);
        assert_mask(&t->freq_domains[0], "0-3");
        assert_mask(&t->freq_domains[1], "4-6");
        assert_mask(&t->freq_domains[2], "7");
        assert_int_equal(topology_cpu(t, 5)->freq_domain_index, 1);
        assert_int_equal(topology_cpu(t, 5)->class_index, 1);
        /* cluster-pc (3000 µs) is disabled: the deepest enabled state is cpu-pc. */
        for (size_t i = 0; i < t->n_cpus; i++)
                assert_int_equal(t->cpus[i].idle_residency_usec, 1000);
        assert_true(cpumask_empty(&t->isolated));
}

static void test_old_cpufreq_layout(_unused_ void **state) {
        _cleanup_topology_ Topology *t = load_fixture("exynos5422-linux3.10");

        /* cpu0/cpufreq and cpu4/cpufreq directories, space-separated related_cpus, links from the rest. */
        assert_int_equal(t->capacity_source, CAPACITY_FROM_MAX_FREQ);
        assert_int_equal(t->n_freq_domains, 2);
        assert_mask(&t->freq_domains[0], "0-3");
        assert_mask(&t->freq_domains[1], "4-7");
        assert_int_equal(topology_cpu(t, 3)->max_freq_khz, 1400000);
        assert_int_equal(topology_cpu(t, 6)->max_freq_khz, 2000000);
        assert_int_equal(topology_cpu(t, 6)->capacity, 1024);
        assert_int_equal(topology_cpu(t, 0)->capacity, 716);
}

static void test_sources(_unused_ void **state) {
        Topology *t;

        t = load_fixture("intel-hybrid-adl");
        assert_int_equal(t->capacity_source, CAPACITY_FROM_INTEL_HYBRID);
        assert_int_equal(topology_cpu(t, 13)->capacity, 640);
        assert_int_equal(topology_cpu(t, 1)->capacity, 1024);
        assert_int_equal(t->n_freq_domains, 0);
        topology_free(t);

        t = load_fixture("vm-bare");
        assert_int_equal(t->capacity_source, CAPACITY_UNIFORM);
        assert_false(t->asymmetric);
        assert_false(t->has_clusters);
        assert_null(t->clusters);
        for (size_t i = 0; i < t->n_cpus; i++) {
                assert_int_equal(t->cpus[i].core, -1);
                assert_int_equal(t->cpus[i].llc_index, -1);
                assert_int_equal(t->cpus[i].freq_domain_index, -1);
                assert_int_equal(t->cpus[i].cluster_index, -1);
                assert_int_equal(t->cpus[i].numa_index, 0);
                assert_int_equal(t->cpus[i].idle_residency_usec, 0);
        }
        topology_free(t);

        t = load_fixture("garbled");
        assert_true(cpumask_empty(&t->isolated));
        assert_int_equal(topology_cpu(t, 0)->idle_residency_usec, 100);
        assert_int_equal(topology_cpu(t, 2)->llc_index, -1);
        assert_int_equal(t->capacity_source, CAPACITY_FROM_MAX_FREQ);
        topology_free(t);
}

/* ---- trees built on the fly ------------------------------------------------------------------ */

static int rm_entry(const char *path, _unused_ const struct stat *st, _unused_ int flag, _unused_ struct FTW *ftw) {
        return remove(path);
}

static void rm_rf(const char *path) {
        (void) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void put_bytes(const char *root, const char *rel, const char *content, size_t len) {
        char path[PATH_MAX];
        int fd;

        (void) snprintf(path, sizeof path, "%s/%s", root, rel);
        for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
                *p = 0;
                (void) mkdir(path, 0755);
                *p = '/';
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, len), (ssize_t) len);
        close(fd);
}

static void put(const char *root, const char *rel, const char *content) {
        put_bytes(root, rel, content, strlen(content));
}

static char *tree(void) {
        char *d = strdup("/tmp/peltd-topology-XXXXXX");

        assert_non_null(d);
        assert_non_null(test_mkdtemp(d));
        return d;
}

static void test_missing(_unused_ void **state) {
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_free_ char *d = tree();
        Topology *t = NULL;

        /* Nothing at all: no online CPU. */
        assert_int_equal(rootdir_open(d, &root), 0);
        assert_int_equal(topology_load(root, &t), -ENODEV);
        assert_null(t);

        /* An empty cpu/ directory and no cpuinfo: still none. */
        put(d, "sys/devices/system/cpu/kernel_max", "8191\n");
        assert_int_equal(topology_load(root, &t), -ENODEV);

        /* Only /proc/cpuinfo (a dump without /sys): one CPU per processor entry. */
        put(d, "proc/cpuinfo", "processor\t: 0\nmodel name\t: x\n\nprocessor\t: 1\n\nprocessor\t: 2\n");
        t = load_at(d);
        assert_mask(&t->online, "0-2");
        assert_int_equal(t->n_packages, 1);
        assert_int_equal(t->packages[0].id, 0);
        assert_int_equal(t->n_smt_groups, 3);
        assert_int_equal(t->n_llc_groups, 0);
        assert_int_equal(t->n_numa_nodes, 1);
        assert_mask(&t->numa_nodes[0].cpus, "0-2");
        t = topology_free(t);

        /* cpuinfo without processor lines (alpha): one CPU. */
        put(d, "proc/cpuinfo", "cpu\t\t\t: Alpha\ncpus detected\t\t: 3\n");
        t = load_at(d);
        assert_mask(&t->online, "0");
        t = topology_free(t);

        /* cpu/online empty and each cpuN/online 0: falls through to cpuinfo as well. */
        put(d, "sys/devices/system/cpu/online", "\n");
        put(d, "sys/devices/system/cpu/cpu0/online", "0\n");
        t = load_at(d);
        assert_mask(&t->online, "0");
        t = topology_free(t);

        rm_rf(d);
}

static void test_odd_files(_unused_ void **state) {
        _cleanup_free_ char *d = tree();
        Topology *t;

        put_bytes(d, "sys/devices/system/cpu/online", "0-3\n\0\0", 6);
        /* A package id on some CPUs only, and a cpu3 directory that is missing altogether. */
        put(d, "sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
        put(d, "sys/devices/system/cpu/cpu1/topology/physical_package_id", "0\n");
        put(d, "sys/devices/system/cpu/cpu2/topology/core_id", "2\n");
        /* Masks that disagree with each other: still a partition. */
        put(d, "sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0-1\n");
        put(d, "sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "1\n");
        put(d, "sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "0-3\n");
        /* Every cluster_id -1 or 65535: no clusters although the lists are there. */
        put(d, "sys/devices/system/cpu/cpu0/topology/cluster_id", "-1\n");
        put(d, "sys/devices/system/cpu/cpu0/topology/cluster_cpus_list", "0-3\n");
        put(d, "sys/devices/system/cpu/cpu1/topology/cluster_id", "65535\n");
        put(d, "sys/devices/system/cpu/cpu1/topology/cluster_cpus_list", "0-3\n");
        /* A node directory with no nodes in it: one node. */
        put(d, "sys/devices/system/node/possible", "0\n");
        /* A cpufreq policy without cpuinfo_max_freq, one with a zero: frequency unknown. */
        put(d, "sys/devices/system/cpu/cpufreq/policy0/related_cpus", "0 1\n");
        put(d, "sys/devices/system/cpu/cpufreq/policy2/related_cpus", "2-3\n");
        put(d, "sys/devices/system/cpu/cpufreq/policy2/cpuinfo_max_freq", "0\n");
        put(d, "sys/devices/system/cpu/cpufreq/policyx/related_cpus", "0-3\n");

        t = load_at(d);
        assert_mask(&t->online, "0-3");
        assert_int_equal(t->n_packages, 2);
        assert_mask(&t->packages[0].cpus, "0-1");
        assert_int_equal(t->packages[0].id, 0);
        /* cpu2 and cpu3 have no package information: together, named by the lowest. */
        assert_mask(&t->packages[1].cpus, "2-3");
        assert_int_equal(t->packages[1].id, 2);
        /*
         * The sibling masks disagree (cpu0 claims cpu1, cpu1 claims itself alone, cpu2 claims CPUs
         * of another package): each CPU still lands in exactly one core, inside its package.
         */
        for (size_t i = 0; i < t->n_cpus; i++) {
                int n = 0;

                for (size_t g = 0; g < t->n_smt_groups; g++)
                        n += cpumask_test(&t->smt_groups[g], t->cpus[i].cpu);
                assert_int_equal(n, 1);
                assert_true(cpumask_subset(&t->smt_groups[t->cpus[i].smt_index], &t->packages[t->cpus[i].package_index].cpus));
        }
        assert_mask(&t->smt_groups[topology_cpu(t, 0)->smt_index], "0");
        assert_mask(&t->smt_groups[topology_cpu(t, 1)->smt_index], "1");
        assert_mask(&t->smt_groups[topology_cpu(t, 2)->smt_index], "2");
        assert_false(t->has_clusters);
        assert_int_equal(t->n_numa_nodes, 1);
        assert_mask(&t->numa_nodes[0].cpus, "0-3");
        assert_int_equal(t->n_freq_domains, 2);
        assert_int_equal(topology_cpu(t, 2)->max_freq_khz, 0);
        assert_int_equal(t->capacity_source, CAPACITY_UNIFORM);
        assert_int_equal(topology_cpu(t, 2)->core, 2);
        assert_int_equal(topology_cpu(t, 3)->core, -1);
        topology_free(t);
        rm_rf(d);
}

static void test_refresh(_unused_ void **state) {
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_free_ char *d = tree();
        char cpu[64];

        put(d, "sys/devices/system/cpu/online", "0-3\n");
        for (int i = 0; i < 4; i++) {
                (void) snprintf(cpu, sizeof cpu, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", i);
                put(d, cpu, "0\n");
                (void) snprintf(cpu, sizeof cpu, "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", i);
                put(d, cpu, i % 2 ? "1,3\n" : "0,2\n");
        }
        assert_int_equal(rootdir_open(d, &root), 0);
        assert_int_equal(topology_load(root, &t), 0);
        assert_int_equal(t->n_smt_groups, 2);

        assert_int_equal(topology_online_changed(t, root), 0);
        assert_int_equal(topology_refresh(&t, root), 0);

        put(d, "sys/devices/system/cpu/online", "0-2\n");
        assert_int_equal(topology_online_changed(t, root), 1);
        assert_int_equal(topology_refresh(&t, root), 1);
        assert_mask(&t->online, "0-2");
        assert_int_equal(t->n_smt_groups, 2);
        assert_mask(&t->smt_groups[1], "1");
        assert_int_equal(topology_online_changed(t, root), 0);
        assert_int_equal(topology_refresh(&t, root), 0);

        /* A change that leaves the online set alone is still a change. */
        put(d, "sys/devices/system/cpu/isolated", "2\n");
        assert_int_equal(topology_online_changed(t, root), 0);
        assert_int_equal(topology_refresh(&t, root), 1);
        assert_mask(&t->isolated, "2");

        put(d, "sys/devices/system/cpu/online", "0-3\n");
        assert_int_equal(topology_refresh(&t, root), 1);
        assert_int_equal(t->n_cpus, 4);

        /* A failed re-read keeps the old topology. */
        rm_rf(d);
        assert_true(topology_refresh(&t, root) < 0);
        assert_int_equal(t->n_cpus, 4);
        assert_true(topology_equal(t, t));
        assert_false(topology_equal(t, NULL));
}

static void test_text(_unused_ void **state) {
        _cleanup_free_ char *s = NULL;
        Topology *t;

        t = load_fixture("x86-2s-smt");
        assert_int_equal(topology_format_text(t, &s), 0);
        assert_non_null(startswith(s, "2 packages × 4 cores × 2 threads, 2 NUMA nodes, 1 capacity class\n"));
        assert_non_null(strstr(s, "isolated      3,11\n"));
        topology_free(t);
        free(TAKE_PTR(s));

        t = load_fixture("phone-sm8150-linux5.10");
        assert_int_equal(topology_format_text(t, &s), 0);
        assert_non_null(startswith(s, "1 package × 8 cores × 1 thread, 1 NUMA node, 3 capacity classes\n"));
        assert_non_null(strstr(s, "289: 0-3; 872: 4-6; 1024: 7 (from cpu_capacity, asymmetric)"));
        topology_free(t);
        free(TAKE_PTR(s));

        t = load_fixture("x86-laptop-offline");
        assert_int_equal(topology_format_text(t, &s), 0);
        assert_non_null(startswith(s, "1 package, 4 cores, 6 CPUs (1–2 threads a core), 1 NUMA node, 1 capacity class\n"));
        topology_free(t);
}

/* ---- big machines: a sysfs tree written from a shape built in memory, read back exactly --------- */

static void put_list(const char *root, const char *rel, const CpuMask *m) {
        _cleanup_free_ char *l = cpumask_to_list(m), *line = NULL;

        assert_non_null(l);
        assert_true(asprintf(&line, "%s\n", l) >= 0);
        put(root, rel, line);
}

static void put_num(const char *root, const char *rel, long long v) {
        char b[32];

        (void) snprintf(b, sizeof b, "%lld\n", v);
        put(root, rel, b);
}

/* The files topology_load() reads, as a kernel writes them for the machine t describes. */
static void write_tree(const char *d, const Topology *t) {
        char p[PATH_MAX];

        put_list(d, "sys/devices/system/cpu/online", &t->online);
        for (size_t i = 0; i < t->n_cpus; i++) {
                const TopoCpu *c = &t->cpus[i];

#define AT(fmt, ...) ((void) snprintf(p, sizeof p, "sys/devices/system/cpu/cpu%d/" fmt, c->cpu, ##__VA_ARGS__), p)
                put_num(d, AT("topology/physical_package_id"), c->package);
                put_num(d, AT("topology/die_id"), c->die);
                put_num(d, AT("topology/core_id"), c->core);
                put_list(d, AT("topology/thread_siblings_list"), &t->smt_groups[c->smt_index]);
                put_list(d, AT("topology/core_siblings_list"), &t->packages[c->package_index].cpus);
                put_list(d, AT("topology/package_cpus_list"), &t->packages[c->package_index].cpus);
                put_list(d, AT("topology/die_cpus_list"), &t->dies[c->die_index].cpus);
                put(d, AT("cache/index3/type"), "Unified\n");
                put(d, AT("cache/index3/level"), "3\n");
                put_list(d, AT("cache/index3/shared_cpu_list"), &t->llc_groups[c->llc_index]);
#undef AT
        }
        for (size_t k = 0; k < t->n_freq_domains; k++) {
                (void) snprintf(p, sizeof p, "sys/devices/system/cpu/cpufreq/policy%d/related_cpus", cpumask_first(&t->freq_domains[k]));
                put_list(d, p, &t->freq_domains[k]);
                (void) snprintf(p, sizeof p, "sys/devices/system/cpu/cpufreq/policy%d/cpuinfo_max_freq", cpumask_first(&t->freq_domains[k]));
                put_num(d, p, topology_cpu(t, cpumask_first(&t->freq_domains[k]))->max_freq_khz);
        }
        for (size_t k = 0; k < t->n_numa_nodes; k++) {
                (void) snprintf(p, sizeof p, "sys/devices/system/node/node%d/cpulist", t->numa_nodes[k].id);
                put_list(d, p, &t->numa_nodes[k].cpus);
        }
}

static void check_big_tree(unsigned packages, unsigned cores, unsigned threads, TopoNumbering numbering,
                           size_t longest_at_least) {
        _cleanup_free_ char *d = tree(), *l = NULL;
        Topology *want = topo_build_smp(packages, cores, threads, numbering), *got;

        /* Every CPU at the same top frequency: capacities from it, all 1024. */
        want->capacity_source = CAPACITY_FROM_MAX_FREQ;
        write_tree(d, want);
        l = cpumask_to_list(&want->packages[0].cpus);
        assert_true(strlen(l) >= longest_at_least);

        got = load_at(d);
        assert_int_equal(got->n_cpus, (size_t) packages * cores * threads);
        assert_int_equal(got->n_packages, packages);
        assert_int_equal(got->n_smt_groups, (size_t) packages * cores);
        assert_true(cpumask_equal(&got->packages[packages - 1].cpus, &want->packages[packages - 1].cpus));
        assert_true(topology_equal(got, want));

        topology_free(got);
        topo_build_free(want);
        rm_rf(d);
}

static void test_big_trees(_unused_ void **state) {
        /* 512 CPUs, x86 numbering: a package's list is two ranges. */
        check_big_tree(2, 128, 2, TOPO_NUMBER_X86, 0);
        /* 4,096 CPUs, packages interleaved: each package lists 1,024 CPUs one by one (~5 KB). */
        check_big_tree(4, 512, 2, TOPO_NUMBER_INTERLEAVED, 4096);
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixtures_json),
                cmocka_unit_test(test_x86_details),
                cmocka_unit_test(test_phone_details),
                cmocka_unit_test(test_old_cpufreq_layout),
                cmocka_unit_test(test_sources),
                cmocka_unit_test(test_missing),
                cmocka_unit_test(test_odd_files),
                cmocka_unit_test(test_refresh),
                cmocka_unit_test(test_text),
                cmocka_unit_test(test_big_trees),
        };

        if (argc != 2) {
                fprintf(stderr, "Usage: %s FIXTURE-DIR\n", argv[0]);
                return 2;
        }
        fixtures = argv[1];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
