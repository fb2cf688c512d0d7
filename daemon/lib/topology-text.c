/* SPDX-License-Identifier: GPL-2.0-only */
/* The topology as text (topology-text.h), from the facts the daemon and peltctl both describe. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/topology-text.h"

/* At most a few groups of a long list, then how many there are in all. */
#define TEXT_GROUPS_MAX 8

/* "1 package", "2 packages". */
static void plural(FILE *f, size_t n, const char *one, const char *many) {
        fprintf(f, "%zu %s", n, n == 1 ? one : many);
}

/* The index of the package holding cpu, or -1. */
static ssize_t package_of(const TopoText *t, int cpu) {
        for (size_t p = 0; p < t->n_packages; p++)
                if (cpumask_test(&t->packages[p].cpus, cpu))
                        return (ssize_t) p;
        return -1;
}

/* How many cores the packages have and how many threads the cores, at least and at most. */
typedef struct Shape {
        bool per_package;            /* cores_min/cores_max counted (there was memory to) */
        size_t cores_min, cores_max;
        size_t threads_min, threads_max;
} Shape;

static Shape shape_of(const TopoText *t) {
        _cleanup_free_ size_t *cores_per_package = new0(size_t, MAX(t->n_packages, (size_t) 1));
        Shape s = { .per_package = cores_per_package != NULL, .cores_min = SIZE_MAX, .threads_min = SIZE_MAX };

        for (size_t g = 0; cores_per_package && g < t->n_smt_groups; g++) {
                ssize_t p = package_of(t, cpumask_first(&t->smt_groups[g]));

                if (p >= 0)
                        cores_per_package[p]++;
        }
        for (size_t p = 0; cores_per_package && p < t->n_packages; p++) {
                s.cores_min = MIN(s.cores_min, cores_per_package[p]);
                s.cores_max = MAX(s.cores_max, cores_per_package[p]);
        }
        for (size_t g = 0; g < t->n_smt_groups; g++) {
                size_t n = (size_t) cpumask_count(&t->smt_groups[g]);

                s.threads_min = MIN(s.threads_min, n);
                s.threads_max = MAX(s.threads_max, n);
        }
        return s;
}

/* "2 packages × 4 cores × 2 threads", or the ranges where packages or cores differ; then the rest. */
static void print_headline(FILE *f, const TopoText *t) {
        Shape s = shape_of(t);

        if (s.per_package && s.cores_min == s.cores_max && s.threads_min == s.threads_max) {
                plural(f, t->n_packages, "package", "packages");
                fputs(" × ", f);
                plural(f, s.cores_min, "core", "cores");
                fputs(" × ", f);
                plural(f, s.threads_min, "thread", "threads");
        } else if (s.threads_min == s.threads_max) {
                plural(f, t->n_packages, "package", "packages");
                fputs(", ", f);
                plural(f, t->n_smt_groups, "core", "cores");
                fprintf(f, " (%zu–%zu a package) × ", s.cores_min, s.cores_max);
                plural(f, s.threads_min, "thread", "threads");
        } else {
                plural(f, t->n_packages, "package", "packages");
                fputs(", ", f);
                plural(f, t->n_smt_groups, "core", "cores");
                fputs(", ", f);
                plural(f, t->n_cpus, "CPU", "CPUs");
                fprintf(f, " (%zu–%zu threads a core)", s.threads_min, s.threads_max);
        }
        fputs(", ", f);
        plural(f, t->n_numa_nodes, "NUMA node", "NUMA nodes");
        fputs(", ", f);
        plural(f, t->n_classes, "capacity class", "capacity classes");
        fputc('\n', f);
}

static void print_groups(FILE *f, const char *label, const TopoTextGroup *g, size_t n) {
        char buf[256];

        fprintf(f, "%-14s", label);
        if (n == 0)
                fputs("none", f);
        for (size_t i = 0; i < n && i < TEXT_GROUPS_MAX; i++)
                fprintf(f, "%s%d: %s", i ? "; " : "", g[i].id, cpumask_format(&g[i].cpus, buf, sizeof buf));
        if (n > TEXT_GROUPS_MAX)
                fprintf(f, "; … (%zu in all)", n);
        fputc('\n', f);
}

static void print_masks(FILE *f, const char *label, const CpuMask *m, size_t n) {
        char buf[256];

        fprintf(f, "%-14s", label);
        if (n == 0)
                fputs("none", f);
        for (size_t i = 0; i < n && i < TEXT_GROUPS_MAX; i++)
                fprintf(f, "%s%s", i ? "; " : "", cpumask_format(&m[i], buf, sizeof buf));
        if (n > TEXT_GROUPS_MAX)
                fprintf(f, "; … (%zu in all)", n);
        fputc('\n', f);
}

/* The CPUs no NUMA node lists, when there are any. */
static void print_nodeless(FILE *f, const TopoText *t) {
        char m[256];
        CpuMask nodeless;

        cpumask_zero(&nodeless);
        for (size_t i = 0; i < t->n_cpus; i++) {
                bool in_node = false;

                for (size_t k = 0; k < t->n_numa_nodes && !in_node; k++)
                        in_node = cpumask_test(&t->numa_nodes[k].cpus, t->cpus[i].cpu);
                if (!in_node)
                        (void) cpumask_set(&nodeless, t->cpus[i].cpu);
        }
        if (!cpumask_empty(&nodeless))
                fprintf(f, "%-14s%s\n", "in no node", cpumask_format(&nodeless, m, sizeof m));
}

/* "289: 0-3; 1024: 4-7 (from cpu_capacity, asymmetric)" */
static void print_capacity(FILE *f, const TopoText *t) {
        char m[256];

        fprintf(f, "%-14s", "capacity");
        for (size_t i = 0; i < t->n_classes; i++)
                fprintf(f, "%s%d: %s", i ? "; " : "", t->classes[i].id, cpumask_format(&t->classes[i].cpus, m, sizeof m));
        if (t->capacity_source)
                fprintf(f, " (%s%s)\n", t->capacity_source, t->asymmetric ? ", asymmetric" : "");
        else
                fprintf(f, "%s\n", t->asymmetric ? " (asymmetric)" : "");
}

/*
 * Whether CPU i is the first (in the order of cpus) with its highest frequency; if so, *ret is
 * every CPU with that frequency.
 */
static bool freq_first(const TopoText *t, size_t i, CpuMask *ret) {
        uint64_t khz = t->cpus[i].max_freq_khz;

        for (size_t j = 0; j < i; j++)
                if (t->cpus[j].max_freq_khz == khz)
                        return false;
        cpumask_zero(ret);
        for (size_t j = i; j < t->n_cpus; j++)
                if (t->cpus[j].max_freq_khz == khz)
                        (void) cpumask_set(ret, t->cpus[j].cpu);
        return true;
}

/* Per-CPU policies are common (x86): say how many, then which CPUs reach which frequency. */
static void print_freq_domains(FILE *f, const TopoText *t) {
        char m[256];
        size_t k = 0;

        fprintf(f, "%-14s", "freq domains");
        if (t->n_freq_domains == 0) {
                fputs("none\n", f);
                return;
        }
        fprintf(f, "%zu", t->n_freq_domains);
        for (size_t i = 0; i < t->n_cpus; i++) {
                CpuMask at;

                if (!freq_first(t, i, &at))
                        continue;
                if (t->cpus[i].max_freq_khz > 0)
                        fprintf(f, "%s%" PRIu64 " MHz: %s", k ? "; " : " (", t->cpus[i].max_freq_khz / 1000,
                                cpumask_format(&at, m, sizeof m));
                else
                        fprintf(f, "%sunknown: %s", k ? "; " : " (", cpumask_format(&at, m, sizeof m));
                k++;
        }
        if (k > 0)
                fputc(')', f);
        fputc('\n', f);
}

/* The CPUs by their highest frequency, without the domains; "unknown" alone when no CPU's is known. */
static void print_max_freq(FILE *f, const TopoText *t) {
        char m[256];
        size_t k = 0;

        fprintf(f, "%-14s", "max freq");
        for (size_t i = 0; i < t->n_cpus; i++) {
                CpuMask at;

                if (!freq_first(t, i, &at))
                        continue;
                if (t->cpus[i].max_freq_khz > 0)
                        fprintf(f, "%s%" PRIu64 " MHz: %s", k ? "; " : "", t->cpus[i].max_freq_khz / 1000,
                                cpumask_format(&at, m, sizeof m));
                else if (cpumask_count(&at) < (int) t->n_cpus)
                        fprintf(f, "%sunknown: %s", k ? "; " : "", cpumask_format(&at, m, sizeof m));
                else
                        fputs("unknown", f);
                k++;
        }
        if (t->n_cpus == 0)
                fputs("unknown", f);
        fputc('\n', f);
}

/* The deepest idle state's target residency, or its range over the CPUs. */
static void print_idle(FILE *f, const TopoText *t) {
        uint64_t lo = UINT64_MAX, hi = 0;

        for (size_t i = 0; i < t->n_cpus; i++) {
                lo = MIN(lo, t->cpus[i].idle_residency_usec);
                hi = MAX(hi, t->cpus[i].idle_residency_usec);
        }
        fprintf(f, "%-14s", "deepest idle");
        if (hi == 0)
                fputs("unknown\n", f);
        else if (lo == hi)
                fprintf(f, "%" PRIu64 " µs target residency\n", hi);
        else
                fprintf(f, "%" PRIu64 "–%" PRIu64 " µs target residency\n", lo, hi);
}

static void print_text(FILE *f, const TopoText *t) {
        char m[256];

        print_headline(f, t);
        fprintf(f, "%-14s%s (%zu)\n", "online CPUs", cpumask_format(&t->online, m, sizeof m), t->n_cpus);
        if (t->isolated)
                fprintf(f, "%-14s%s\n", "isolated", cpumask_empty(t->isolated) ? "none" : cpumask_format(t->isolated, m, sizeof m));
        print_groups(f, "packages", t->packages, t->n_packages);
        print_groups(f, "dies", t->dies, t->n_dies);
        if (t->has_clusters)
                print_groups(f, "clusters", t->clusters, t->n_clusters);
        else
                fprintf(f, "%-14snone\n", "clusters");
        if (t->n_smt_groups == t->n_cpus)
                fprintf(f, "%-14s%zu, one thread each\n", "cores", t->n_smt_groups);
        else
                print_masks(f, "cores", t->smt_groups, t->n_smt_groups);
        print_masks(f, "LLC groups", t->llc_groups, t->n_llc_groups);
        print_groups(f, "NUMA nodes", t->numa_nodes, t->n_numa_nodes);
        print_nodeless(f, t);
        print_capacity(f, t);
        if (t->has_freq_domains)
                print_freq_domains(f, t);
        else
                print_max_freq(f, t);
        if (t->has_idle)
                print_idle(f, t);
}

static void print_summary(FILE *f, const TopoText *t) {
        plural(f, t->n_cpus, "CPU", "CPUs");
        fputs(", ", f);
        plural(f, t->n_packages, "package", "packages");
        fputs(", ", f);
        plural(f, t->n_smt_groups, "core", "cores");
        fputs(", ", f);
        plural(f, t->n_numa_nodes, "NUMA node", "NUMA nodes");
        fputs(", ", f);
        plural(f, t->n_classes, "capacity class", "capacity classes");
        if (t->asymmetric)
                fputs(", asymmetric", f);
}

static int render(const TopoText *t, void (*print)(FILE *f, const TopoText *t), char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        print(f, t);
        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

int topology_text_format(const TopoText *t, char **ret) {
        return render(t, print_text, ret);
}

int topology_text_summary(const TopoText *t, char **ret) {
        return render(t, print_summary, ret);
}
