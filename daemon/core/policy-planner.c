/* SPDX-License-Identifier: GPL-2.0-only */
#include "policy-internal.h"

/* The Planner: the machine's usable CPUs, the per-CPU load of the plan so far, the packing order. */

void planner_done(Planner *p) {
        free(p->cpu_util);
        free(p->cpu_energy);
        free(p->base_util);
        free(p->base_energy);
        free(p->core_order);
        free(p->core_cpus);
        free(p->core_start);
}

/* A core's place in the packing order: class, package, cluster (else LLC), first CPU. */
typedef struct CoreKey {
        int key[4];
        size_t core;                 /* smt_groups index */
} CoreKey;

static CoreKey core_key(const Topology *t, size_t g) {
        int cpu = cpumask_first(&t->smt_groups[g]);
        const TopoCpu *c = topology_cpu(t, cpu);
        CoreKey k = { .key = { 0, 0, 0, cpu }, .core = g };

        if (c) {
                k.key[0] = c->class_index;
                k.key[1] = c->package_index;
                if (t->has_clusters && t->n_clusters > 0)
                        k.key[2] = c->cluster_index;
                else if (c->llc_index >= 0)
                        k.key[2] = c->llc_index;
        }
        return k;
}

static int compare_core_keys(const void *a, const void *b) {
        const CoreKey *x = a, *y = b;

        for (size_t i = 0; i < ELEMENTSOF(x->key); i++)
                if (x->key[i] != y->key[i])
                        return x->key[i] < y->key[i] ? -1 : 1;
        return 0;
}

int planner_init(Planner *p, const Topology *t, const PolicyParams *params) {
        *p = (Planner){ .t = t, .params = params };

        cpumask_andnot(&p->usable, &t->online, &t->isolated);
        /* CPUs another owner holds exclusively are in no set planned: they are not usable. */
        if (params->held)
                cpumask_andnot(&p->usable, &p->usable, params->held);
        p->cpu_util = new0(double, MAX(t->n_cpus, 1u));
        p->cpu_energy = new0(double, MAX(t->n_cpus, 1u));
        p->base_util = new0(double, MAX(t->n_cpus, 1u));
        p->base_energy = new0(double, MAX(t->n_cpus, 1u));
        p->core_order = new0(size_t, MAX(t->n_smt_groups, 1u));
        p->core_cpus = new0(size_t, MAX(t->n_cpus, 1u));
        p->core_start = new0(size_t, t->n_smt_groups + 1);
        if (!p->cpu_util || !p->cpu_energy || !p->base_util || !p->base_energy || !p->core_order || !p->core_cpus || !p->core_start)
                return -ENOMEM;

        /* Each core's CPU indexes, in one array (counting sort by smt_index). */
        for (size_t i = 0; i < t->n_cpus; i++) {
                int g = t->cpus[i].smt_index;

                if (g >= 0 && (size_t) g < t->n_smt_groups)
                        p->core_start[g + 1]++;
        }
        for (size_t g = 0; g < t->n_smt_groups; g++)
                p->core_start[g + 1] += p->core_start[g];
        {
                _cleanup_free_ size_t *fill = new0(size_t, t->n_smt_groups + 1);

                if (!fill)
                        return -ENOMEM;
                for (size_t i = 0; i < t->n_cpus; i++) {
                        int g = t->cpus[i].smt_index;

                        if (g >= 0 && (size_t) g < t->n_smt_groups)
                                p->core_cpus[p->core_start[g] + fill[g]++] = i;
                }
        }

        {
                _cleanup_free_ CoreKey *keys = new0(CoreKey, MAX(t->n_smt_groups, 1u));

                if (!keys)
                        return -ENOMEM;
                for (size_t g = 0; g < t->n_smt_groups; g++)
                        keys[g] = core_key(t, g);
                qsort(keys, t->n_smt_groups, sizeof(CoreKey), compare_core_keys);
                for (size_t k = 0; k < t->n_smt_groups; k++)
                        p->core_order[k] = keys[k].core;
        }
        return 0;
}
