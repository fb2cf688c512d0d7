/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The GetTopology document as text (peltctl-topology.h). The lines follow daemon/core/topology-print.c
 * word for word where the document holds the same facts; tests/test-peltctl-topology.sh compares
 * the two on every fixture machine.
 */
#include <inttypes.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/peltctl-topology.h"

/* As topology-print.c: at most a few groups of a long list, then how many there are in all. */
#define TEXT_GROUPS_MAX 8

typedef struct Group {
        int id;
        CpuMask cpus;
} Group;

typedef struct Doc {
        CpuMask online;
        Group *packages, *dies, *clusters, *numa, *classes;
        size_t n_packages, n_dies, n_clusters, n_numa, n_classes;
        bool has_clusters;
        CpuMask *smt, *llc;
        size_t n_smt, n_llc;
        bool asymmetric;
        int *cpu;                    /* per entry of "cpus": its number */
        uint64_t *max_freq_khz;      /* 0: null */
        size_t n_cpus;
} Doc;

static void doc_done(Doc *d) {
        free(d->packages);
        free(d->dies);
        free(d->clusters);
        free(d->numa);
        free(d->classes);
        free(d->smt);
        free(d->llc);
        free(d->cpu);
        free(d->max_freq_khz);
}

static json_object *field(json_object *o, const char *key, json_type type) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static int parse_int(json_object *v, int max, int *ret) {
        int64_t i;

        if (!json_object_is_type(v, json_type_int))
                return -EINVAL;
        i = json_object_get_int64(v);
        if (i < 0 || i > max)
                return -EINVAL;
        *ret = (int) i;
        return 0;
}

static int parse_mask(json_object *a, CpuMask *ret) {
        if (!a || !json_object_is_type(a, json_type_array))
                return -EINVAL;
        cpumask_zero(ret);
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                int cpu;

                if (parse_int(json_object_array_get_idx(a, i), CPUMASK_MAX - 1, &cpu) < 0)
                        return -EINVAL;
                (void) cpumask_set(ret, cpu);
        }
        return 0;
}

/* [{"id"|"capacity": N, "cpus": [..]}, ...] */
static int parse_groups(json_object *a, const char *id_key, Group **ret, size_t *ret_n) {
        _cleanup_free_ Group *g = NULL;
        size_t n;

        if (!a || !json_object_is_type(a, json_type_array))
                return -EINVAL;
        n = json_object_array_length(a);
        g = new0(Group, MAX(n, (size_t) 1));
        if (!g)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_array_get_idx(a, i), *id;

                if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, id_key, &id) ||
                    !json_object_is_type(id, json_type_int) || parse_mask(field(o, "cpus", json_type_array), &g[i].cpus) < 0)
                        return -EINVAL;
                g[i].id = json_object_get_int(id);
        }
        *ret = TAKE_PTR(g);
        *ret_n = n;
        return 0;
}

/* [[..], [..]] */
static int parse_masks(json_object *a, CpuMask **ret, size_t *ret_n) {
        _cleanup_free_ CpuMask *m = NULL;
        size_t n;

        if (!a || !json_object_is_type(a, json_type_array))
                return -EINVAL;
        n = json_object_array_length(a);
        m = new0(CpuMask, MAX(n, (size_t) 1));
        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (parse_mask(json_object_array_get_idx(a, i), &m[i]) < 0)
                        return -EINVAL;
        *ret = TAKE_PTR(m);
        *ret_n = n;
        return 0;
}

static int parse_cpus(json_object *a, Doc *d) {
        size_t n;

        if (!a || !json_object_is_type(a, json_type_array))
                return -EINVAL;
        n = json_object_array_length(a);
        d->cpu = new0(int, MAX(n, (size_t) 1));
        d->max_freq_khz = new0(uint64_t, MAX(n, (size_t) 1));
        if (!d->cpu || !d->max_freq_khz)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_array_get_idx(a, i), *cpu, *freq;

                if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "cpu", &cpu) ||
                    parse_int(cpu, CPUMASK_MAX - 1, &d->cpu[i]) < 0 || !json_object_object_get_ex(o, "max_freq_khz", &freq))
                        return -EINVAL;
                if (freq) {
                        if (!json_object_is_type(freq, json_type_int) || json_object_get_int64(freq) <= 0)
                                return -EINVAL;
                        d->max_freq_khz[i] = (uint64_t) json_object_get_int64(freq);
                }
        }
        d->n_cpus = n;
        return 0;
}

static int doc_parse(json_object *o, Doc *d) {
        json_object *clusters, *asym;
        int r;

        *d = (Doc){};
        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;
        if ((r = parse_mask(field(o, "online_cpus", json_type_array), &d->online)) < 0 ||
            (r = parse_groups(field(o, "packages", json_type_array), "id", &d->packages, &d->n_packages)) < 0 ||
            (r = parse_groups(field(o, "dies", json_type_array), "id", &d->dies, &d->n_dies)) < 0 ||
            (r = parse_masks(field(o, "smt_groups", json_type_array), &d->smt, &d->n_smt)) < 0 ||
            (r = parse_masks(field(o, "llc_groups", json_type_array), &d->llc, &d->n_llc)) < 0 ||
            (r = parse_groups(field(o, "numa_nodes", json_type_array), "id", &d->numa, &d->n_numa)) < 0 ||
            (r = parse_groups(field(o, "capacity_classes", json_type_array), "capacity", &d->classes, &d->n_classes)) < 0 ||
            (r = parse_cpus(field(o, "cpus", json_type_array), d)) < 0)
                return r;
        /* "clusters": null when sysfs gives none. */
        if (!json_object_object_get_ex(o, "clusters", &clusters))
                return -EINVAL;
        if (clusters) {
                r = parse_groups(clusters, "id", &d->clusters, &d->n_clusters);
                if (r < 0)
                        return r;
                d->has_clusters = true;
        }
        asym = field(o, "asymmetric", json_type_boolean);
        if (!asym)
                return -EINVAL;
        d->asymmetric = json_object_get_boolean(asym);
        return 0;
}

/* The index of the package holding cpu, or -1. */
static ssize_t package_of(const Doc *d, int cpu) {
        for (size_t p = 0; p < d->n_packages; p++)
                if (cpumask_test(&d->packages[p].cpus, cpu))
                        return (ssize_t) p;
        return -1;
}

/* "1 package", "2 packages". */
static void plural(FILE *f, size_t n, const char *one, const char *many) {
        fprintf(f, "%zu %s", n, n == 1 ? one : many);
}

/* topology-print.c's print_headline(), from the document. */
static void print_headline(FILE *f, const Doc *d) {
        _cleanup_free_ size_t *cores_per_package = new0(size_t, MAX(d->n_packages, (size_t) 1));
        size_t cmin = SIZE_MAX, cmax = 0, tmin = SIZE_MAX, tmax = 0;

        if (cores_per_package)
                for (size_t g = 0; g < d->n_smt; g++) {
                        ssize_t p = package_of(d, cpumask_first(&d->smt[g]));

                        if (p >= 0)
                                cores_per_package[p]++;
                }
        for (size_t p = 0; cores_per_package && p < d->n_packages; p++) {
                cmin = MIN(cmin, cores_per_package[p]);
                cmax = MAX(cmax, cores_per_package[p]);
        }
        for (size_t g = 0; g < d->n_smt; g++) {
                size_t n = (size_t) cpumask_count(&d->smt[g]);

                tmin = MIN(tmin, n);
                tmax = MAX(tmax, n);
        }

        if (cores_per_package && cmin == cmax && tmin == tmax) {
                plural(f, d->n_packages, "package", "packages");
                fputs(" × ", f);
                plural(f, cmin, "core", "cores");
                fputs(" × ", f);
                plural(f, tmin, "thread", "threads");
        } else if (tmin == tmax) {
                plural(f, d->n_packages, "package", "packages");
                fputs(", ", f);
                plural(f, d->n_smt, "core", "cores");
                fprintf(f, " (%zu–%zu a package) × ", cmin, cmax);
                plural(f, tmin, "thread", "threads");
        } else {
                plural(f, d->n_packages, "package", "packages");
                fputs(", ", f);
                plural(f, d->n_smt, "core", "cores");
                fputs(", ", f);
                plural(f, d->n_cpus, "CPU", "CPUs");
                fprintf(f, " (%zu–%zu threads a core)", tmin, tmax);
        }
        fputs(", ", f);
        plural(f, d->n_numa, "NUMA node", "NUMA nodes");
        fputs(", ", f);
        plural(f, d->n_classes, "capacity class", "capacity classes");
        fputc('\n', f);
}

static void print_groups(FILE *f, const char *label, const Group *g, size_t n, bool ids) {
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

/* The CPUs by their highest frequency, in the order the CPUs first show each one. */
static void print_max_freq(FILE *f, const Doc *d) {
        char m[256];
        size_t k = 0;

        fprintf(f, "%-14s", "max freq");
        for (size_t i = 0; i < d->n_cpus; i++) {
                CpuMask at;
                bool seen = false;

                for (size_t j = 0; j < i && !seen; j++)
                        seen = d->max_freq_khz[j] == d->max_freq_khz[i];
                if (seen)
                        continue;
                cpumask_zero(&at);
                for (size_t j = i; j < d->n_cpus; j++)
                        if (d->max_freq_khz[j] == d->max_freq_khz[i])
                                (void) cpumask_set(&at, d->cpu[j]);
                if (d->max_freq_khz[i] > 0)
                        fprintf(f, "%s%" PRIu64 " MHz: %s", k ? "; " : "", d->max_freq_khz[i] / 1000,
                                cpumask_format(&at, m, sizeof m));
                else if (cpumask_count(&at) < (int) d->n_cpus)
                        fprintf(f, "%sunknown: %s", k ? "; " : "", cpumask_format(&at, m, sizeof m));
                else
                        fputs("unknown", f);
                k++;
        }
        if (d->n_cpus == 0)
                fputs("unknown", f);
        fputc('\n', f);
}

static void print_text(FILE *f, const Doc *d) {
        char m[256];
        CpuMask nodeless;

        print_headline(f, d);
        fprintf(f, "%-14s%s (%zu)\n", "online CPUs", cpumask_format(&d->online, m, sizeof m), d->n_cpus);
        print_groups(f, "packages", d->packages, d->n_packages, true);
        print_groups(f, "dies", d->dies, d->n_dies, true);
        if (d->has_clusters)
                print_groups(f, "clusters", d->clusters, d->n_clusters, true);
        else
                fprintf(f, "%-14snone\n", "clusters");
        if (d->n_smt == d->n_cpus)
                fprintf(f, "%-14s%zu, one thread each\n", "cores", d->n_smt);
        else
                print_masks(f, "cores", d->smt, d->n_smt);
        print_masks(f, "LLC groups", d->llc, d->n_llc);
        print_groups(f, "NUMA nodes", d->numa, d->n_numa, true);

        cpumask_zero(&nodeless);
        for (size_t i = 0; i < d->n_cpus; i++) {
                bool in_node = false;

                for (size_t k = 0; k < d->n_numa && !in_node; k++)
                        in_node = cpumask_test(&d->numa[k].cpus, d->cpu[i]);
                if (!in_node)
                        (void) cpumask_set(&nodeless, d->cpu[i]);
        }
        if (!cpumask_empty(&nodeless))
                fprintf(f, "%-14s%s\n", "in no node", cpumask_format(&nodeless, m, sizeof m));

        fprintf(f, "%-14s", "capacity");
        for (size_t i = 0; i < d->n_classes; i++)
                fprintf(f, "%s%d: %s", i ? "; " : "", d->classes[i].id, cpumask_format(&d->classes[i].cpus, m, sizeof m));
        fprintf(f, "%s\n", d->asymmetric ? " (asymmetric)" : "");
        print_max_freq(f, d);
}

static void print_summary(FILE *f, const Doc *d) {
        plural(f, d->n_cpus, "CPU", "CPUs");
        fputs(", ", f);
        plural(f, d->n_packages, "package", "packages");
        fputs(", ", f);
        plural(f, d->n_smt, "core", "cores");
        fputs(", ", f);
        plural(f, d->n_numa, "NUMA node", "NUMA nodes");
        fputs(", ", f);
        plural(f, d->n_classes, "capacity class", "capacity classes");
        if (d->asymmetric)
                fputs(", asymmetric", f);
}

static int render(json_object *doc, void (*print)(FILE *f, const Doc *d), char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        Doc d;
        FILE *f;
        int r;

        r = doc_parse(doc, &d);
        if (r < 0) {
                doc_done(&d);
                return r;
        }
        f = open_memstream(&buf, &size);
        if (!f) {
                doc_done(&d);
                return -ENOMEM;
        }
        print(f, &d);
        doc_done(&d);
        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

int topology_json_to_text(json_object *doc, char **ret) {
        return render(doc, print_text, ret);
}

int topology_json_summary(json_object *doc, char **ret) {
        return render(doc, print_summary, ret);
}
