/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The GetTopology document as text (peltctl-topology.h): its facts parsed, then written by the
 * renderer peltd's own text comes from (topology-text.h); tests/fixture/test-peltctl-topology.sh
 * compares the two on every fixture machine.
 */
#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/peltctl-topology.h"
#include "peltd/topology-text.h"

typedef struct Doc {
        CpuMask online;
        TopoTextGroup *packages, *dies, *clusters, *numa, *classes;
        size_t n_packages, n_dies, n_clusters, n_numa, n_classes;
        bool has_clusters;
        CpuMask *smt, *llc;
        size_t n_smt, n_llc;
        bool asymmetric;
        TopoTextCpu *cpus;           /* per entry of "cpus": its number and max_freq_khz (0: null) */
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
        free(d->cpus);
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
static int parse_groups(json_object *a, const char *id_key, TopoTextGroup **ret, size_t *ret_n) {
        _cleanup_free_ TopoTextGroup *g = NULL;
        size_t n;

        if (!a || !json_object_is_type(a, json_type_array))
                return -EINVAL;
        n = json_object_array_length(a);
        g = new0(TopoTextGroup, MAX(n, (size_t) 1));
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
        d->cpus = new0(TopoTextCpu, MAX(n, (size_t) 1));
        if (!d->cpus)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_array_get_idx(a, i), *cpu, *freq;

                if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "cpu", &cpu) ||
                    parse_int(cpu, CPUMASK_MAX - 1, &d->cpus[i].cpu) < 0 || !json_object_object_get_ex(o, "max_freq_khz", &freq))
                        return -EINVAL;
                if (freq) {
                        if (!json_object_is_type(freq, json_type_int) || json_object_get_int64(freq) <= 0)
                                return -EINVAL;
                        d->cpus[i].max_freq_khz = (uint64_t) json_object_get_int64(freq);
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

/*
 * The document's facts for the renderer. It has no isolated CPUs, idle states, frequency domains
 * or source of the capacities: their lines are left out, or written without them.
 */
static TopoText doc_text(const Doc *d) {
        return (TopoText){
                .online = d->online,
                .cpus = d->cpus,
                .n_cpus = d->n_cpus,
                .packages = d->packages,
                .n_packages = d->n_packages,
                .dies = d->dies,
                .n_dies = d->n_dies,
                .clusters = d->clusters,
                .n_clusters = d->n_clusters,
                .has_clusters = d->has_clusters,
                .smt_groups = d->smt,
                .n_smt_groups = d->n_smt,
                .llc_groups = d->llc,
                .n_llc_groups = d->n_llc,
                .numa_nodes = d->numa,
                .n_numa_nodes = d->n_numa,
                .classes = d->classes,
                .n_classes = d->n_classes,
                .asymmetric = d->asymmetric,
        };
}

static int render(json_object *doc, int (*format)(const TopoText *t, char **ret), char **ret) {
        Doc d;
        int r;

        r = doc_parse(doc, &d);
        if (r >= 0) {
                TopoText t = doc_text(&d);

                r = format(&t, ret);
        }
        doc_done(&d);
        return r;
}

int topology_json_to_text(json_object *doc, char **ret) {
        return render(doc, topology_text_format, ret);
}

int topology_json_summary(json_object *doc, char **ret) {
        return render(doc, topology_text_summary, ret);
}
