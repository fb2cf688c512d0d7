/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * topology_load() over sysfs-like trees generated from the input, in a private directory. The
 * input is a list of records, each
 *
 *   kind (1 byte)  a (1 byte)  b (1 byte)  length (1 byte)  content (length bytes)
 *
 * kind picks a file from the table below (modulo its size); a file with one number in its name
 * ('#') gets a + 256 * b, one with two gets a and b (a CPU and its cache index, idle state, ...). A file
 * named again is appended to. tree-to-input.py turns a fixture tree into such an input (the seeds).
 *
 * Whatever the files say, a topology that loads is consistent: every online CPU in exactly one
 * group of each level, indices in range, capacities in 1..1024 and classes ascending; it loads
 * again the same (topology_refresh() sees no change) and prints as JSON and text.
 */
#include <json-c/json.h>

#include "fuzz-util.h"
#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"

#define CPU "sys/devices/system/cpu/"
#define NODE "sys/devices/system/node/"

static const struct {
        const char *format;
        int n_numbers;
} files[] = {
        { CPU "online", 0 },
        { CPU "possible", 0 },
        { CPU "present", 0 },
        { CPU "offline", 0 },
        { CPU "isolated", 0 },
        { CPU "kernel_max", 0 },
        { CPU "cpu#/online", 1 },
        { CPU "cpu#/topology/physical_package_id", 1 },
        { CPU "cpu#/topology/die_id", 1 },
        { CPU "cpu#/topology/cluster_id", 1 },
        { CPU "cpu#/topology/core_id", 1 },
        { CPU "cpu#/topology/thread_siblings_list", 1 },
        { CPU "cpu#/topology/thread_siblings", 1 },
        { CPU "cpu#/topology/core_cpus_list", 1 },
        { CPU "cpu#/topology/core_cpus", 1 },
        { CPU "cpu#/topology/core_siblings_list", 1 },
        { CPU "cpu#/topology/core_siblings", 1 },
        { CPU "cpu#/topology/package_cpus_list", 1 },
        { CPU "cpu#/topology/package_cpus", 1 },
        { CPU "cpu#/topology/die_cpus_list", 1 },
        { CPU "cpu#/topology/die_cpus", 1 },
        { CPU "cpu#/topology/cluster_cpus_list", 1 },
        { CPU "cpu#/topology/cluster_cpus", 1 },
        { CPU "cpu#/cache/index#/level", 2 },
        { CPU "cpu#/cache/index#/type", 2 },
        { CPU "cpu#/cache/index#/shared_cpu_list", 2 },
        { CPU "cpu#/cache/index#/shared_cpu_map", 2 },
        { CPU "cpu#/cpu_capacity", 1 },
        { CPU "cpu#/cpuidle/state#/residency", 2 },
        { CPU "cpu#/cpuidle/state#/disable", 2 },
        { CPU "cpu#/cpufreq/related_cpus", 1 },
        { CPU "cpu#/cpufreq/affected_cpus", 1 },
        { CPU "cpu#/cpufreq/cpuinfo_max_freq", 1 },
        { CPU "cpufreq/policy#/related_cpus", 1 },
        { CPU "cpufreq/policy#/affected_cpus", 1 },
        { CPU "cpufreq/policy#/cpuinfo_max_freq", 1 },
        { NODE "possible", 0 },
        { NODE "online", 0 },
        { NODE "node#/cpulist", 1 },
        { NODE "node#/cpumap", 1 },
        { NODE "node#/distance", 1 },
        { "proc/cpuinfo", 0 },
        { "sys/devices/cpu_core/cpus", 0 },
        { "sys/devices/cpu_atom/cpus", 0 },
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

static void append_file(const char *base, const char *path, const uint8_t *data, size_t size) {
        char p[4096];
        int fd;

        FUZZ_CHECK((size_t) snprintf(p, sizeof p, "%s/%s", base, path) < sizeof p);
        for (char *slash = strchr(p + strlen(base) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                FUZZ_CHECK(mkdir(p, 0755) == 0 || errno == EEXIST);
                *slash = '/';
        }
        fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
        FUZZ_CHECK(fd >= 0);
        FUZZ_CHECK(write(fd, data, size) == (ssize_t) size);
        FUZZ_CHECK(close(fd) == 0);
}

/* The file's name with its '#'s replaced by x, then y. */
static void expand(char *buf, size_t size, const char *format, unsigned x, unsigned y) {
        size_t n = 0;
        int k = 0;

        for (const char *p = format; *p; p++) {
                if (*p == '#')
                        n += (size_t) snprintf(buf + n, size - n, "%u", k++ == 0 ? x : y);
                else
                        buf[n++] = *p;
                FUZZ_CHECK(n + 1 < size);
        }
        buf[n] = 0;
}

static void generate(const char *tree, const uint8_t *data, size_t size) {
        FUZZ_CHECK(mkdir(tree, 0700) == 0);
        while (size >= 4) {
                unsigned kind = data[0] % ELEMENTSOF(files), a = data[1], b = data[2];
                size_t len = MIN((size_t) data[3], size - 4);
                char path[256];

                if (files[kind].n_numbers == 1)
                        expand(path, sizeof path, files[kind].format, a + 256 * b, 0);
                else
                        expand(path, sizeof path, files[kind].format, a, b);
                append_file(tree, path, data + 4, len);
                data += 4 + len;
                size -= 4 + len;
        }
}

/*
 * Every online CPU in exactly one of the n masks at stride bytes from masks (in at most one
 * without all; in any number without disjoint).
 */
static void check_partition(const Topology *t, const void *masks, size_t n, size_t stride, bool all, bool disjoint) {
        CpuMask seen;

        cpumask_zero(&seen);
        for (size_t i = 0; i < n; i++) {
                const CpuMask *m = (const CpuMask *) ((const uint8_t *) masks + i * stride);

                FUZZ_CHECK(!cpumask_empty(m));
                FUZZ_CHECK(cpumask_subset(m, &t->online));
                FUZZ_CHECK(!disjoint || !cpumask_intersects(m, &seen));
                cpumask_or(&seen, &seen, m);
        }
        if (all)
                FUZZ_CHECK(cpumask_equal(&seen, &t->online));
}

static void check_index(int index, size_t n, const void *masks, size_t stride, int cpu, bool optional) {
        if (optional && index == -1)
                return;
        FUZZ_CHECK(index >= 0 && (size_t) index < n);
        FUZZ_CHECK(cpumask_test((const CpuMask *) ((const uint8_t *) masks + (size_t) index * stride), cpu));
}

static void check_topology(const Topology *t) {
        const size_t g = sizeof(TopoGroup), m = sizeof(CpuMask), cl = sizeof(CapacityClass);
        _cleanup_free_ char *text = NULL;
        struct json_object *j = NULL;

        FUZZ_CHECK(t->n_cpus == (size_t) cpumask_count(&t->online) && t->n_cpus > 0);
        FUZZ_CHECK(cpumask_subset(&t->isolated, &t->online));
        check_partition(t, &t->packages[0].cpus, t->n_packages, g, true, true);
        check_partition(t, &t->dies[0].cpus, t->n_dies, g, true, true);
        if (t->has_clusters)
                check_partition(t, &t->clusters[0].cpus, t->n_clusters, g, true, true);
        else
                FUZZ_CHECK(t->n_clusters == 0);
        check_partition(t, t->smt_groups, t->n_smt_groups, m, true, true);
        check_partition(t, t->llc_groups, t->n_llc_groups, m, false, true);
        /* Node lists that overlap (a broken tree) are kept as they are; each CPU has one node. */
        check_partition(t, &t->numa_nodes[0].cpus, t->n_numa_nodes, g, false, false);
        for (size_t i = 1; i < t->n_numa_nodes; i++)
                FUZZ_CHECK(t->numa_nodes[i - 1].id < t->numa_nodes[i].id);
        check_partition(t, &t->classes[0].cpus, t->n_classes, cl, true, true);
        check_partition(t, t->freq_domains, t->n_freq_domains, m, false, true);
        FUZZ_CHECK(t->asymmetric == (t->n_classes > 1));
        for (size_t i = 1; i < t->n_classes; i++)
                FUZZ_CHECK(t->classes[i - 1].capacity < t->classes[i].capacity);

        for (size_t i = 0; i < t->n_cpus; i++) {
                const TopoCpu *c = &t->cpus[i];

                FUZZ_CHECK(cpumask_test(&t->online, c->cpu));
                FUZZ_CHECK(i == 0 || t->cpus[i - 1].cpu < c->cpu);
                FUZZ_CHECK(topology_cpu(t, c->cpu) == c);
                FUZZ_CHECK(c->capacity >= 1 && c->capacity <= CAPACITY_SCALE);
                check_index(c->package_index, t->n_packages, &t->packages[0].cpus, g, c->cpu, false);
                check_index(c->die_index, t->n_dies, &t->dies[0].cpus, g, c->cpu, false);
                check_index(c->cluster_index, t->n_clusters, t->clusters ? &t->clusters[0].cpus : NULL, g, c->cpu,
                            !t->has_clusters);
                check_index(c->smt_index, t->n_smt_groups, t->smt_groups, m, c->cpu, false);
                check_index(c->llc_index, t->n_llc_groups, t->llc_groups, m, c->cpu, true);
                check_index(c->numa_index, t->n_numa_nodes, t->numa_nodes ? &t->numa_nodes[0].cpus : NULL, g, c->cpu, true);
                check_index(c->freq_domain_index, t->n_freq_domains, t->freq_domains, m, c->cpu, true);
                check_index(c->class_index, t->n_classes, &t->classes[0].cpus, cl, c->cpu, false);
                FUZZ_CHECK(c->capacity >= t->classes[c->class_index].capacity);
                /* Dies and cores never cross a package. */
                FUZZ_CHECK(cpumask_subset(&t->dies[c->die_index].cpus, &t->packages[c->package_index].cpus));
                FUZZ_CHECK(cpumask_subset(&t->smt_groups[c->smt_index], &t->packages[c->package_index].cpus));
        }

        FUZZ_CHECK(topology_to_json(t, &j) >= 0 && j);
        FUZZ_CHECK(json_object_to_json_string(j));
        json_object_put(j);
        FUZZ_CHECK(topology_format_text(t, &text) >= 0 && text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_rootdir_ RootDir *root = NULL;
        char tree[4096];
        int r;

        snprintf(tree, sizeof tree, "%s/tree", fuzz_private_dir());
        fuzz_rm_rf(tree);
        generate(tree, data, size);
        FUZZ_CHECK(rootdir_open(tree, &root) == 0);

        r = topology_load(root, &t);
        if (r == 0) {
                Topology *same = t;

                check_topology(t);
                FUZZ_CHECK(topology_equal(t, t));
                FUZZ_CHECK(topology_online_changed(t, root) == 0);
                FUZZ_CHECK(topology_refresh(&same, root) == 0 && same == t);
        }
        fuzz_rm_rf(tree);
        return 0;
}
