/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdlib.h>

#include "peltd/energy.h"
#include "peltd/parse.h"

/*
 * The built-in model's constants, fixed so that no one tunes the model to a target: the README and
 * peltd(8) state them, and the tests pin them. Do not change one without changing those first.
 */

/* One capacity class: a busy package, a busy core, and 1024 util of work. */
#define EM_PACKAGE_COST 30.0
#define EM_CORE_COST 5.0
#define EM_WORK_COST_PER_1024 10.0
/* A core's second thread adds 20% capacity: ENERGY_SMT_FACTOR (energy.h). */

/*
 * Asymmetric: each class is one frequency domain with three operating points at 40%, 70% and 100%
 * of its capacity. Power per CPU at those points, for the lowest and the biggest class; middle
 * classes are interpolated by capacity. A busy cluster (one class within one package) costs a
 * static 10 (lowest class) to 60 (biggest).
 */
#define EM_N_POINTS 3
static const double em_point_fraction[EM_N_POINTS] = { 0.4, 0.7, 1.0 };
static const double em_power_lowest[EM_N_POINTS] = { 20.0, 50.0, 110.0 };
static const double em_power_biggest[EM_N_POINTS] = { 120.0, 380.0, 1000.0 };
#define EM_CLUSTER_STATIC_LOWEST 10.0
#define EM_CLUSTER_STATIC_BIGGEST 60.0

int energy_cpu_index(const Topology *t, int cpu) {
        const TopoCpu *c = topology_cpu(t, cpu);

        return c ? (int) (c - t->cpus) : -1;
}

double energy_set_capacity(const Topology *t, const CpuMask *set) {
        size_t ng = MAX(t->n_smt_groups, 1u);
        unsigned cap[ng];
        int n[ng];
        double total = 0;

        memset(cap, 0, sizeof cap);
        memset(n, 0, sizeof n);
        for (size_t i = 0; i < t->n_cpus; i++) {
                int g = t->cpus[i].smt_index;

                if (g < 0 || (size_t) g >= t->n_smt_groups || !cpumask_test(set, t->cpus[i].cpu))
                        continue;
                cap[g] = MAX(cap[g], t->cpus[i].capacity);
                n[g]++;
        }
        for (size_t g = 0; g < t->n_smt_groups; g++)
                if (n[g] > 0)
                        total += cap[g] * (n[g] >= 2 ? ENERGY_SMT_FACTOR : 1.0);
        return total;
}

void energy_spread(const Topology *t, const CpuMask *set, double util, double *cpu_util) {
        size_t ng = MAX(t->n_smt_groups, 1u), n_cores = 0;
        int first[ng], n[ng];
        double share;

        if (util <= 0)
                return;
        memset(n, 0, sizeof n);
        for (size_t i = 0; i < t->n_cpus; i++) {
                int g = t->cpus[i].smt_index;

                if (g < 0 || (size_t) g >= t->n_smt_groups || !cpumask_test(set, t->cpus[i].cpu))
                        continue;
                if (n[g]++ == 0) {
                        first[g] = (int) i;
                        n_cores++;
                }
        }
        if (n_cores == 0)
                return;

        share = util / (double) n_cores;
        for (size_t i = 0; i < t->n_cpus; i++) {
                int g = t->cpus[i].smt_index;
                double head;

                if (g < 0 || (size_t) g >= t->n_smt_groups || n[g] == 0 || !cpumask_test(set, t->cpus[i].cpu))
                        continue;
                /* One thread per core before second threads. */
                head = n[g] > 1 ? MIN(share, (double) t->cpus[first[g]].capacity) : share;
                if ((int) i == first[g])
                        cpu_util[i] += head;
                else
                        cpu_util[i] += (share - head) / (n[g] - 1);
        }
}

static double builtin_one_class(const Topology *t, const double *cpu_util) {
        bool pkg_busy[MAX(t->n_packages, 1u)], core_busy[MAX(t->n_smt_groups, 1u)];
        double e = 0, work = 0;

        memset(pkg_busy, 0, sizeof pkg_busy);
        memset(core_busy, 0, sizeof core_busy);
        for (size_t i = 0; i < t->n_cpus; i++) {
                int g = t->cpus[i].smt_index;

                if (cpu_util[i] <= 0)
                        continue;
                work += cpu_util[i];
                pkg_busy[t->cpus[i].package_index] = true;
                if (g >= 0 && (size_t) g < t->n_smt_groups)
                        core_busy[g] = true;
        }
        for (size_t k = 0; k < t->n_packages; k++)
                if (pkg_busy[k])
                        e += EM_PACKAGE_COST;
        for (size_t g = 0; g < t->n_smt_groups; g++)
                if (core_busy[g])
                        e += EM_CORE_COST;
        return e + EM_WORK_COST_PER_1024 * work / 1024.0;
}

/* Where a class sits between the lowest (0) and the biggest (1), by capacity. */
static double class_position(const Topology *t, size_t c) {
        double lo = t->classes[0].capacity, hi = t->classes[t->n_classes - 1].capacity;

        return hi > lo ? ((double) t->classes[c].capacity - lo) / (hi - lo) : 1.0;
}

static double builtin_asymmetric(const Topology *t, const double *cpu_util) {
        size_t nc = t->n_classes, np = MAX(t->n_packages, 1u);
        double busiest[nc], e = 0;
        bool cluster_busy[nc * np];

        memset(busiest, 0, sizeof busiest);
        memset(cluster_busy, 0, sizeof cluster_busy);
        for (size_t i = 0; i < t->n_cpus; i++) {
                const TopoCpu *c = &t->cpus[i];

                if (cpu_util[i] <= 0)
                        continue;
                busiest[c->class_index] = MAX(busiest[c->class_index], cpu_util[i]);
                /* A cluster is one capacity class within one package. */
                cluster_busy[c->class_index * np + c->package_index] = true;
        }

        for (size_t c = 0; c < nc; c++) {
                double pos = class_position(t, c), cap_at, power_at;
                size_t point;

                if (busiest[c] <= 0)
                        continue;
                /* The lowest operating point that fits the busiest CPU, with the 20% margin; else the top. */
                for (point = 0; point < EM_N_POINTS - 1; point++)
                        if (util_fits_capacity(busiest[c], em_point_fraction[point] * t->classes[c].capacity))
                                break;
                cap_at = em_point_fraction[point] * t->classes[c].capacity;
                power_at = em_power_lowest[point] + pos * (em_power_biggest[point] - em_power_lowest[point]);

                for (size_t i = 0; i < t->n_cpus; i++)
                        if ((size_t) t->cpus[i].class_index == c && cpu_util[i] > 0)
                                e += power_at * cpu_util[i] / cap_at;
                for (size_t k = 0; k < np; k++)
                        if (cluster_busy[c * np + k])
                                e += EM_CLUSTER_STATIC_LOWEST + pos * (EM_CLUSTER_STATIC_BIGGEST - EM_CLUSTER_STATIC_LOWEST);
        }
        return e;
}

double energy_estimate_builtin(const Topology *t, const double *cpu_util) {
        if (t->asymmetric && t->n_classes > 1)
                return builtin_asymmetric(t, cpu_util);
        return builtin_one_class(t, cpu_util);
}

/*
 * As EAS (kernel/power/energy_model.h, em_cpu_energy()): the domain runs at the lowest state whose
 * frequency covers its busiest CPU's util plus the 20% margin, and costs that state's cost × the
 * domain's summed util / the CPUs' capacity.
 */
static double kernel_estimate(const Topology *t, const EnergyModel *m, const double *cpu_util) {
        double e = 0;

        for (size_t d = 0; d < m->n_domains; d++) {
                const EnergyPerfDomain *pd = &m->domains[d];
                double busiest = 0, sum = 0, scale = 0, freq;
                const EnergyPerfState *ps = NULL;

                if (pd->n_states == 0)
                        continue;
                CPUMASK_FOREACH(cpu, &pd->cpus) {
                        int i = energy_cpu_index(t, cpu);

                        if (i < 0)
                                continue;
                        busiest = MAX(busiest, cpu_util[i]);
                        sum += cpu_util[i];
                        scale = MAX(scale, (double) t->cpus[i].capacity);
                }
                if (sum <= 0 || scale <= 0)
                        continue;

                freq = (double) pd->states[pd->n_states - 1].frequency_khz * busiest * 1.25 / scale;
                for (size_t s = 0; s < pd->n_states && !ps; s++)
                        if ((double) pd->states[s].frequency_khz >= freq)
                                ps = &pd->states[s];
                if (!ps)
                        ps = &pd->states[pd->n_states - 1];
                e += (double) ps->cost * sum / scale;
        }
        return e;
}

bool energy_model_covers(const EnergyModel *m, const Topology *t) {
        CpuMask all;

        if (!m || m->n_domains == 0)
                return false;
        cpumask_zero(&all);
        for (size_t d = 0; d < m->n_domains; d++)
                cpumask_or(&all, &all, &m->domains[d].cpus);
        return cpumask_subset(&t->online, &all);
}

double energy_estimate(const Topology *t, const EnergyModel *m, const double *cpu_util) {
        if (energy_model_covers(m, t))
                return kernel_estimate(t, m, cpu_util);
        return energy_estimate_builtin(t, cpu_util);
}

bool energy_overutilized(const Topology *t, const double *cpu_util, const CpuMask *within) {
        size_t ng = MAX(t->n_smt_groups, 1u);
        double util[ng];
        unsigned cap[ng];
        int busy[ng];
        bool in[ng];

        memset(util, 0, sizeof util);
        memset(cap, 0, sizeof cap);
        memset(busy, 0, sizeof busy);
        memset(in, 0, sizeof in);
        for (size_t i = 0; i < t->n_cpus; i++) {
                int g = t->cpus[i].smt_index;

                if (g < 0 || (size_t) g >= t->n_smt_groups)
                        continue;
                cap[g] = MAX(cap[g], t->cpus[i].capacity);
                in[g] = in[g] || !within || cpumask_test(within, t->cpus[i].cpu);
                if (cpu_util[i] > 0) {
                        util[g] += cpu_util[i];
                        busy[g]++;
                }
        }
        for (size_t g = 0; g < t->n_smt_groups; g++)
                if (in[g] && busy[g] > 0 && !util_fits_capacity(util[g], cap[g] * (busy[g] >= 2 ? ENERGY_SMT_FACTOR : 1.0)))
                        return true;
        return false;
}

/* ---- The kernel's Energy Model, from plain tables ------------------------------------------- */

EnergyModel *energy_model_free(EnergyModel *m) {
        if (!m)
                return NULL;
        for (size_t d = 0; d < m->n_domains; d++)
                free(m->domains[d].states);
        free(m->domains);
        free(m);
        return NULL;
}

static int compare_states(const void *a, const void *b) {
        const EnergyPerfState *x = a, *y = b;

        return x->frequency_khz < y->frequency_khz ? -1 : x->frequency_khz > y->frequency_khz;
}

static int compare_domains(const void *a, const void *b) {
        const EnergyPerfDomain *x = a, *y = b;

        return cpumask_first(&x->cpus) - cpumask_first(&y->cpus);
}

int energy_model_new(EnergyPerfDomain *domains, size_t n_domains, EnergyModel **ret) {
        EnergyModel *m;

        for (size_t d = 0; d < n_domains; d++) {
                EnergyPerfDomain *pd = &domains[d];
                bool have_cost = true;
                uint64_t fmax;

                if (cpumask_empty(&pd->cpus) || pd->n_states == 0)
                        goto invalid;
                for (size_t s = 0; s < pd->n_states; s++) {
                        if (pd->states[s].frequency_khz == 0)
                                goto invalid;
                        have_cost = have_cost && pd->states[s].cost > 0;
                }
                qsort(pd->states, pd->n_states, sizeof(EnergyPerfState), compare_states);
                if (have_cost)
                        continue;
                /* Older kernels have no cost file: em_compute_costs() makes it power × fmax / f. */
                fmax = pd->states[pd->n_states - 1].frequency_khz;
                for (size_t s = 0; s < pd->n_states; s++)
                        pd->states[s].cost = pd->states[s].power * fmax / pd->states[s].frequency_khz;
        }
        m = new0(EnergyModel, 1);
        if (!m)
                goto fail;
        qsort(domains, n_domains, sizeof(EnergyPerfDomain), compare_domains);
        m->domains = domains;
        m->n_domains = n_domains;
        *ret = m;
        return 0;
invalid:
        for (size_t d = 0; d < n_domains; d++)
                free(domains[d].states);
        free(domains);
        return -EINVAL;
fail:
        for (size_t d = 0; d < n_domains; d++)
                free(domains[d].states);
        free(domains);
        return -ENOMEM;
}
