/* SPDX-License-Identifier: GPL-2.0-only */
/* The topology as the JSON document peltd(8) describes, or a summary a person reads at a glance. */
#include <json-c/json.h>

#include "peltd/json-util.h"
#include "peltd/topology-text.h"
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
        /* A field sysfs does not give is null (peltd(8)): no clusters, no core_id, no cpufreq. */
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

/*
 * t's facts as topology-text.h takes them: the CPUs and the groups copied (the groups into one
 * array), the CPU sets of cores and caches borrowed from t.
 */
typedef struct Facts {
        TopoText text;
        TopoTextCpu *cpus;
        TopoTextGroup *groups;
        char capacity_source[64];
} Facts;

static void facts_done(Facts *f) {
        free(f->cpus);
        free(f->groups);
}

/* Copies n groups to *next and moves *next past them; returns where they start. */
static const TopoTextGroup *copy_groups(TopoTextGroup **next, const TopoGroup *g, size_t n) {
        TopoTextGroup *start = *next;

        for (size_t i = 0; i < n; i++)
                start[i] = (TopoTextGroup){ .id = g[i].id, .cpus = g[i].cpus };
        *next += n;
        return start;
}

/* As copy_groups(), a capacity class's id its capacity. */
static const TopoTextGroup *copy_classes(TopoTextGroup **next, const CapacityClass *c, size_t n) {
        TopoTextGroup *start = *next;

        for (size_t i = 0; i < n; i++)
                start[i] = (TopoTextGroup){ .id = (int) c[i].capacity, .cpus = c[i].cpus };
        *next += n;
        return start;
}

static int facts_of(const Topology *t, Facts *f) {
        TopoTextGroup *next;

        *f = (Facts){};
        f->cpus = new0(TopoTextCpu, MAX(t->n_cpus, (size_t) 1));
        f->groups = new0(TopoTextGroup,
                         MAX(t->n_packages + t->n_dies + t->n_clusters + t->n_numa_nodes + t->n_classes, (size_t) 1));
        if (!f->cpus || !f->groups)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cpus; i++)
                f->cpus[i] = (TopoTextCpu){ .cpu = t->cpus[i].cpu, .max_freq_khz = t->cpus[i].max_freq_khz,
                                            .idle_residency_usec = t->cpus[i].idle_residency_usec };
        snprintf(f->capacity_source, sizeof f->capacity_source, "%s%s",
                 t->capacity_source == CAPACITY_UNIFORM ? "" : "from ", capacity_source_to_string(t->capacity_source));

        f->text = (TopoText){
                .online = t->online,
                .cpus = f->cpus,
                .n_cpus = t->n_cpus,
                .n_packages = t->n_packages,
                .n_dies = t->n_dies,
                .n_clusters = t->n_clusters,
                .has_clusters = t->has_clusters,
                .smt_groups = t->smt_groups,
                .n_smt_groups = t->n_smt_groups,
                .llc_groups = t->llc_groups,
                .n_llc_groups = t->n_llc_groups,
                .n_numa_nodes = t->n_numa_nodes,
                .n_classes = t->n_classes,
                .asymmetric = t->asymmetric,
                .isolated = &t->isolated,
                .capacity_source = f->capacity_source,
                .has_freq_domains = true,
                .n_freq_domains = t->n_freq_domains,
                .has_idle = true,
        };
        next = f->groups;
        f->text.packages = copy_groups(&next, t->packages, t->n_packages);
        f->text.dies = copy_groups(&next, t->dies, t->n_dies);
        f->text.clusters = copy_groups(&next, t->clusters, t->n_clusters);
        f->text.numa_nodes = copy_groups(&next, t->numa_nodes, t->n_numa_nodes);
        f->text.classes = copy_classes(&next, t->classes, t->n_classes);
        return 0;
}

int topology_format_text(const Topology *t, char **ret) {
        _cleanup_(facts_done) Facts f = {};
        int r;

        r = facts_of(t, &f);
        if (r < 0)
                return r;
        return topology_text_format(&f.text, ret);
}
