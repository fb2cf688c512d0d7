/* SPDX-License-Identifier: GPL-2.0-only */
/* The topology as DESIGN.md's JSON contract, or a summary a person reads at a glance. */
#include <inttypes.h>
#include <json-c/json.h>

#include "peltd/json-util.h"
#include "peltd/topology.h"

/* Adds v to the array a, taking ownership of v in every case. */
static int array_add(json_object *a, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* Adds v under key, taking ownership of v in every case; v may be NULL only when null is meant. */
static int object_add(json_object *o, const char *key, json_object *v, bool null_ok) {
        if (!v && !null_ok)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static json_object *mask_to_json(const CpuMask *m) {
        _cleanup_json_ json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        CPUMASK_FOREACH(cpu, m)
                if (array_add(a, json_object_new_int(cpu)) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

static json_object *group_to_json(int id, const CpuMask *m, const char *id_key) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (object_add(o, id_key, json_object_new_int(id), false) < 0 ||
            object_add(o, "cpus", mask_to_json(m), false) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static json_object *groups_to_json(const TopoGroup *g, size_t n) {
        _cleanup_json_ json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (array_add(a, group_to_json(g[i].id, &g[i].cpus, "id")) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

static json_object *masks_to_json(const CpuMask *m, size_t n) {
        _cleanup_json_ json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (array_add(a, mask_to_json(&m[i])) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

static json_object *cpu_to_json(const Topology *t, const TopoCpu *c) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        /* A field sysfs does not give is null (DESIGN.md): no clusters, no core_id, no cpufreq. */
        if (object_add(o, "cpu", json_object_new_int(c->cpu), false) < 0 ||
            object_add(o, "package", json_object_new_int(c->package), false) < 0 ||
            object_add(o, "die", json_object_new_int(c->die), false) < 0 ||
            object_add(o, "cluster", t->has_clusters ? json_object_new_int(c->cluster) : NULL, !t->has_clusters) < 0 ||
            object_add(o, "core", c->core >= 0 ? json_object_new_int(c->core) : NULL, c->core < 0) < 0 ||
            object_add(o, "capacity", json_object_new_int((int) c->capacity), false) < 0 ||
            object_add(o, "max_freq_khz", c->max_freq_khz > 0 ? json_object_new_int64(c->max_freq_khz) : NULL,
                       c->max_freq_khz == 0) < 0)
                return NULL;
        return TAKE_PTR(o);
}

int topology_to_json(const Topology *t, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_json_ json_object *classes = NULL, *cpus = NULL;

        if (!o)
                return -ENOMEM;

        classes = json_object_new_array();
        if (!classes)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_classes; i++)
                if (array_add(classes, group_to_json((int) t->classes[i].capacity, &t->classes[i].cpus, "capacity")) < 0)
                        return -ENOMEM;

        cpus = json_object_new_array();
        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cpus; i++)
                if (array_add(cpus, cpu_to_json(t, &t->cpus[i])) < 0)
                        return -ENOMEM;

        if (object_add(o, "online_cpus", mask_to_json(&t->online), false) < 0 ||
            object_add(o, "packages", groups_to_json(t->packages, t->n_packages), false) < 0 ||
            object_add(o, "dies", groups_to_json(t->dies, t->n_dies), false) < 0 ||
            object_add(o, "clusters", t->has_clusters ? groups_to_json(t->clusters, t->n_clusters) : NULL,
                       !t->has_clusters) < 0 ||
            object_add(o, "smt_groups", masks_to_json(t->smt_groups, t->n_smt_groups), false) < 0 ||
            object_add(o, "llc_groups", masks_to_json(t->llc_groups, t->n_llc_groups), false) < 0 ||
            object_add(o, "numa_nodes", groups_to_json(t->numa_nodes, t->n_numa_nodes), false) < 0 ||
            object_add(o, "capacity_classes", TAKE_PTR(classes), false) < 0 ||
            object_add(o, "asymmetric", json_object_new_boolean(t->asymmetric), false) < 0 ||
            object_add(o, "cpus", TAKE_PTR(cpus), false) < 0)
                return -ENOMEM;

        *ret = TAKE_PTR(o);
        return 0;
}

/* "1 package", "2 packages". */
static void plural(FILE *f, size_t n, const char *one, const char *many) {
        fprintf(f, "%zu %s", n, n == 1 ? one : many);
}

/* Prints at most a few groups of a long list, then how many there are in all. */
#define TEXT_GROUPS_MAX 8

static void print_groups(FILE *f, const char *label, const TopoGroup *g, size_t n, bool ids) {
        char buf[256];

        fprintf(f, "%-14s", label);
        if (n == 0)
                fputs("none", f);
        for (size_t i = 0; i < n && i < TEXT_GROUPS_MAX; i++) {
                if (ids)
                        fprintf(f, "%s%d: %s", i ? "; " : "", g[i].id, cpumask_format(&g[i].cpus, buf, sizeof buf));
                else
                        fprintf(f, "%s%s", i ? "; " : "", cpumask_format(&g[i].cpus, buf, sizeof buf));
        }
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

static void print_headline(FILE *f, const Topology *t) {
        _cleanup_free_ size_t *cores_per_package = new0(size_t, MAX(t->n_packages, (size_t) 1));
        size_t cmin = SIZE_MAX, cmax = 0, tmin = SIZE_MAX, tmax = 0;

        if (cores_per_package)
                for (size_t g = 0; g < t->n_smt_groups; g++) {
                        const TopoCpu *c = topology_cpu(t, cpumask_first(&t->smt_groups[g]));

                        if (c)
                                cores_per_package[c->package_index]++;
                }
        for (size_t p = 0; cores_per_package && p < t->n_packages; p++) {
                cmin = MIN(cmin, cores_per_package[p]);
                cmax = MAX(cmax, cores_per_package[p]);
        }
        for (size_t g = 0; g < t->n_smt_groups; g++) {
                size_t n = (size_t) cpumask_count(&t->smt_groups[g]);

                tmin = MIN(tmin, n);
                tmax = MAX(tmax, n);
        }

        if (cores_per_package && cmin == cmax && tmin == tmax) {
                plural(f, t->n_packages, "package", "packages");
                fputs(" × ", f);
                plural(f, cmin, "core", "cores");
                fputs(" × ", f);
                plural(f, tmin, "thread", "threads");
        } else if (tmin == tmax) {
                plural(f, t->n_packages, "package", "packages");
                fputs(", ", f);
                plural(f, t->n_smt_groups, "core", "cores");
                fprintf(f, " (%zu–%zu a package) × ", cmin, cmax);
                plural(f, tmin, "thread", "threads");
        } else {
                plural(f, t->n_packages, "package", "packages");
                fputs(", ", f);
                plural(f, t->n_smt_groups, "core", "cores");
                fputs(", ", f);
                plural(f, t->n_cpus, "CPU", "CPUs");
                fprintf(f, " (%zu–%zu threads a core)", tmin, tmax);
        }
        fputs(", ", f);
        plural(f, t->n_numa_nodes, "NUMA node", "NUMA nodes");
        fputs(", ", f);
        plural(f, t->n_classes, "capacity class", "capacity classes");
        fputc('\n', f);
}

int topology_format_text(const Topology *t, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        char m[256];
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;

        print_headline(f, t);
        fprintf(f, "%-14s%s (%zu)\n", "online CPUs", cpumask_format(&t->online, m, sizeof m), t->n_cpus);
        fprintf(f, "%-14s%s\n", "isolated", cpumask_empty(&t->isolated) ? "none" : cpumask_format(&t->isolated, m, sizeof m));
        print_groups(f, "packages", t->packages, t->n_packages, true);
        print_groups(f, "dies", t->dies, t->n_dies, true);
        if (t->has_clusters)
                print_groups(f, "clusters", t->clusters, t->n_clusters, true);
        else
                fprintf(f, "%-14snone\n", "clusters");
        if (t->n_smt_groups == t->n_cpus)
                fprintf(f, "%-14s%zu, one thread each\n", "cores", t->n_smt_groups);
        else
                print_masks(f, "cores", t->smt_groups, t->n_smt_groups);
        print_masks(f, "LLC groups", t->llc_groups, t->n_llc_groups);
        print_groups(f, "NUMA nodes", t->numa_nodes, t->n_numa_nodes, true);
        {
                CpuMask nodeless;

                cpumask_zero(&nodeless);
                for (size_t i = 0; i < t->n_cpus; i++)
                        if (t->cpus[i].numa_index < 0)
                                (void) cpumask_set(&nodeless, t->cpus[i].cpu);
                if (!cpumask_empty(&nodeless))
                        fprintf(f, "%-14s%s\n", "in no node", cpumask_format(&nodeless, m, sizeof m));
        }

        fprintf(f, "%-14s", "capacity");
        for (size_t i = 0; i < t->n_classes; i++)
                fprintf(f, "%s%u: %s", i ? "; " : "", t->classes[i].capacity,
                        cpumask_format(&t->classes[i].cpus, m, sizeof m));
        fprintf(f, " (%s%s%s)\n", t->capacity_source == CAPACITY_UNIFORM ? "" : "from ",
                capacity_source_to_string(t->capacity_source), t->asymmetric ? ", asymmetric" : "");

        /* Per-CPU policies are common (x86): say how many, then which CPUs reach which frequency. */
        fprintf(f, "%-14s", "freq domains");
        if (t->n_freq_domains == 0)
                fputs("none", f);
        else {
                _cleanup_free_ unsigned *freqs = new0(unsigned, t->n_cpus);
                size_t n_freqs = 0;

                fprintf(f, "%zu", t->n_freq_domains);
                for (size_t i = 0; freqs && i < t->n_cpus; i++) {
                        size_t k = 0;

                        while (k < n_freqs && freqs[k] != t->cpus[i].max_freq_khz)
                                k++;
                        if (k == n_freqs)
                                freqs[n_freqs++] = t->cpus[i].max_freq_khz;
                }
                for (size_t k = 0; freqs && k < n_freqs; k++) {
                        CpuMask at;

                        cpumask_zero(&at);
                        for (size_t i = 0; i < t->n_cpus; i++)
                                if (t->cpus[i].max_freq_khz == freqs[k])
                                        (void) cpumask_set(&at, t->cpus[i].cpu);
                        if (freqs[k] > 0)
                                fprintf(f, "%s%u MHz: %s", k ? "; " : " (", freqs[k] / 1000, cpumask_format(&at, m, sizeof m));
                        else
                                fprintf(f, "%sunknown: %s", k ? "; " : " (", cpumask_format(&at, m, sizeof m));
                }
                if (n_freqs > 0)
                        fputc(')', f);
        }
        fputc('\n', f);

        {
                usec_t lo = USEC_INFINITY, hi = 0;

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

        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}
