/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * policy-sim: replays synthetic workloads through policy_plan(), with its history, on three machine
 * shapes, for every policy and for "no peltd" (every group on every CPU), and prints the estimated
 * energy (the built-in model) and the capacity shortfall at loads from 5% to 80% of the machine.
 *
 * The workload at load L (a fraction of the machine's capacity, reached at the daily peak):
 *
 *   /web          a web tier following a daily curve (30% .. 100% of its peak), many threads, 2 ms runs
 *   /batch        a batch job, constant, a quarter as many threads as CPUs, long runs
 *   /daemons/{a,b,c} three background daemons, small, short bursts (40 µs runs)
 *   /heavy        one heavy single thread (up to 900)
 *
 * Each group's util varies by a deterministic noise of up to -10% per round, so the total never
 * exceeds L. A round is 1 s; a day is SIM_ROUNDS rounds.
 *
 * Shortfall is the demand that cannot be served inside the groups' sets with the kernel's 20% margin:
 * with groups as sources and CPU sets as sinks, by max-flow/min-cut it is the largest
 * Σ util(G) − 0.8 × capacity(∪ sets(G)) over subsets G of the groups. It is reported as the worst
 * round's, in CPUs.
 *
 * Deterministic (no timing): it is also a test (tests/meson.build), and exits 1 when a target is
 * missed:
 *   - power saves at least 25% at every load up to 25% on the 2-socket and big.LITTLE shapes, with
 *     no shortfall;
 *   - performance has no shortfall at any load up to 80%;
 *   - on the asymmetric shapes balanced is within 5% of the cheaper of power and performance, with
 *     no shortfall.
 */
#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <errno.h>
#include <math.h>

#include "peltd/energy.h"
#include "peltd/macro.h"
#include "peltd/policy.h"
#include "peltd/rootdir.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"

#define SIM_ROUNDS 720
#define SIM_ROUND_USEC USEC_PER_SEC
#define SIM_MAX_GROUPS 8
/* Shortfall below this (in util) is rounding, not a shortfall. */
#define SIM_SHORTFALL_EPSILON 0.5

static const double loads[] = { 0.05, 0.10, 0.15, 0.20, 0.25, 0.40, 0.60, 0.80 };
#define N_LOADS ELEMENTSOF(loads)

typedef enum SimPolicy {
        SIM_NONE,
        SIM_POWER,
        SIM_PERFORMANCE,
        SIM_BALANCED,
        _SIM_MAX,
} SimPolicy;

static const char *const sim_policy_names[_SIM_MAX] = { "no peltd", "power", "performance", "balanced" };

typedef struct Shape {
        const char *name;
        const char *key;             /* for --allow-miss */
        Topology *t;
        bool power_target;           /* power must save >= 25% at light load */
} Shape;

typedef struct SimResult {
        double energy;               /* mean per round */
        double shortfall;            /* worst round, util */
} SimResult;

typedef struct Workload {
        PolicyGroup groups[SIM_MAX_GROUPS];
        size_t n;
        double peak[SIM_MAX_GROUPS];
        bool daily[SIM_MAX_GROUPS];
} Workload;

static uint64_t rng_state;

static double rng_uniform(void) {
        /* xorshift64*: deterministic, good enough for noise. */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return (double) ((rng_state * UINT64_C(2685821657736338717)) >> 11) / (double) (UINT64_C(1) << 53);
}

static void workload_init(Workload *w, const Topology *t, double load) {
        CpuMask usable;
        double cap, total;

        /* The machine: what the scheduler balances over, isolated CPUs left out. */
        cpumask_andnot(&usable, &t->online, &t->isolated);
        cap = energy_set_capacity(t, &usable);
        total = load * cap;
        double heavy = MIN(0.16 * total, 900.0), daemon = 0.03 * total, web = 0.50 * total;
        double batch = total - heavy - 3 * daemon - web;
        unsigned n_cpus = (unsigned) t->n_cpus;
        static const char *const daemon_paths[] = { "/daemons/a", "/daemons/b", "/daemons/c" };

        *w = (Workload){};
        w->groups[w->n] = (PolicyGroup){ .path = "/web", .nr_threads = 2 * n_cpus, .avg_slice_usec = 2000 };
        w->peak[w->n] = web;
        w->daily[w->n++] = true;
        w->groups[w->n] = (PolicyGroup){ .path = "/batch", .nr_threads = MAX(n_cpus / 4, 1u), .avg_slice_usec = 10000 };
        w->peak[w->n++] = batch;
        for (size_t i = 0; i < 3; i++) {
                w->groups[w->n] = (PolicyGroup){ .path = daemon_paths[i], .nr_threads = 2, .avg_slice_usec = 40 };
                w->peak[w->n++] = daemon;
        }
        w->groups[w->n] = (PolicyGroup){ .path = "/heavy", .nr_threads = 1, .avg_slice_usec = 50000 };
        w->peak[w->n++] = heavy;

        for (size_t i = 0; i < w->n; i++) {
                w->groups[i].shares = 1024;
                w->groups[i].cpus = t->online;
                w->groups[i].max_task_util = -1;
        }
}

/* Util of every group at round r: the daily curve, then noise of up to -10%. */
static void workload_step(Workload *w, unsigned r) {
        double day = 0.65 - 0.35 * cos(2.0 * M_PI * (double) r / SIM_ROUNDS);

        for (size_t i = 0; i < w->n; i++) {
                PolicyGroup *g = &w->groups[i];
                double u = w->peak[i] * (w->daily[i] ? day : 1.0) * (1.0 - 0.1 * rng_uniform());

                g->util = u;
                g->runnable = u;
                g->load = MIN(u, 1024.0);
                g->max_task_util = MIN(u / g->nr_threads, 1024.0);
        }
}

/* CPU sets as bits of CPU indexes: the sim's machines have at most 64 CPUs. */
static uint64_t compact(const Topology *t, const CpuMask *m) {
        uint64_t b = 0;

        for (size_t i = 0; i < t->n_cpus; i++)
                if (cpumask_test(m, t->cpus[i].cpu))
                        b |= UINT64_C(1) << i;
        return b;
}

static double compact_capacity(const Topology *t, uint64_t set) {
        double cap = 0;

        for (size_t g = 0; g < t->n_smt_groups; g++) {
                uint64_t core = compact(t, &t->smt_groups[g]) & set;
                int n = __builtin_popcountll(core);

                if (n > 0)
                        cap += t->cpus[__builtin_ctzll(core)].capacity * (n >= 2 ? ENERGY_SMT_FACTOR : 1.0);
        }
        return cap;
}

/* The largest Σ util(G) − 0.8 × capacity(∪ sets(G)) over subsets G of the groups (min-cut). */
static double shortfall(const Topology *t, const PolicyGroup *groups, const CpuMask *sets, size_t n) {
        uint64_t bits[SIM_MAX_GROUPS];
        double worst = 0;

        for (size_t i = 0; i < n; i++)
                bits[i] = compact(t, &sets[i]);
        for (unsigned s = 1; s < (1u << n); s++) {
                uint64_t u = 0;
                double util = 0;

                for (size_t i = 0; i < n; i++)
                        if (s & (1u << i)) {
                                util += groups[i].util;
                                u |= bits[i];
                        }
                worst = MAX(worst, util - compact_capacity(t, u) * 1024.0 / 1280.0);
        }
        return worst;
}

static int simulate(const Topology *t, SimPolicy sp, double load, SimResult *ret) {
        static const Policy map[_SIM_MAX] = { POLICY_INVALID, POLICY_POWER, POLICY_PERFORMANCE, POLICY_BALANCED };
        PolicyHistory history[SIM_MAX_GROUPS] = {};
        PolicyResult results[SIM_MAX_GROUPS];
        PolicyParams params = { .policy = map[sp] };
        CpuMask sets[SIM_MAX_GROUPS];
        _cleanup_free_ double *util = new0(double, t->n_cpus);
        Workload w;
        double energy = 0, worst = 0;
        CpuMask usable;
        int r;

        if (!util)
                return -ENOMEM;
        /* "No peltd": every group on every CPU the scheduler balances over. */
        cpumask_andnot(&usable, &t->online, &t->isolated);
        rng_state = UINT64_C(0x9e3779b97f4a7c15);
        workload_init(&w, t, load);

        for (unsigned round = 0; round < SIM_ROUNDS; round++) {
                workload_step(&w, round);
                if (sp != SIM_NONE) {
                        r = policy_plan(t, w.groups, w.n, &params, history, (usec_t) round * SIM_ROUND_USEC, results);
                        if (r < 0)
                                return r;
                }
                memset(util, 0, sizeof(double) * t->n_cpus);
                for (size_t i = 0; i < w.n; i++) {
                        sets[i] = sp == SIM_NONE ? usable : results[i].cpus;
                        /* What the daemon would apply is what the group has next round. */
                        w.groups[i].cpus = sets[i];
                        energy_spread(t, &sets[i], w.groups[i].util, util);
                }
                energy += energy_estimate_builtin(t, util);
                worst = MAX(worst, shortfall(t, w.groups, sets, w.n));
        }
        *ret = (SimResult){ .energy = energy / SIM_ROUNDS, .shortfall = worst > SIM_SHORTFALL_EPSILON ? worst : 0 };
        return 0;
}

static bool verbose;
static const char *fixtures_dir = FIXTURES_DIR;
static const char *out_dir;

/* A fixture tree's topology; exits when it cannot be read. */
static Topology *fixture(const char *name) {
        _cleanup_rootdir_ RootDir *root = NULL;
        char path[PATH_MAX];
        Topology *t = NULL;
        int r;

        snprintf(path, sizeof path, "%s/%s", fixtures_dir, name);
        r = rootdir_open(path, &root);
        if (r >= 0)
                r = topology_load(root, &t);
        if (r < 0) {
                fprintf(stderr, "policy-sim: cannot read the topology under %s: %s\n", path, strerror(-r));
                exit(EXIT_FAILURE);
        }
        if (t->n_cpus > 64) {
                fprintf(stderr, "policy-sim: %s has more than 64 CPUs\n", name);
                exit(EXIT_FAILURE);
        }
        return t;
}
static char **allowed_misses;        /* "SHAPE:TARGET" from --allow-miss */
static size_t n_allowed_misses;
static unsigned allowed_missed;

/* Prints a target's verdict; a miss counts unless --allow-miss names it. */
static void verdict(bool ok, const Shape *sh, const char *target, const char *what, unsigned *passes,
                    unsigned *failures) {
        char key[128];
        bool allowed = false;

        snprintf(key, sizeof key, "%s:%s", sh->key, target);
        for (size_t i = 0; i < n_allowed_misses; i++)
                allowed = allowed || streq(allowed_misses[i], key);
        printf("%s: %s: %s\n", ok ? "PASS" : allowed ? "FAIL (allowed miss)" : "FAIL", sh->name, what);
        if (ok)
                (*passes)++;
        else if (allowed)
                allowed_missed++;
        else
                (*failures)++;
}

static void print_plan(const Topology *t, SimPolicy sp, double load) {
        static const Policy map[_SIM_MAX] = { POLICY_INVALID, POLICY_POWER, POLICY_PERFORMANCE, POLICY_BALANCED };
        PolicyResult results[SIM_MAX_GROUPS];
        PolicyParams params = { .policy = map[sp] };
        Workload w;

        rng_state = 1;
        workload_init(&w, t, load);
        workload_step(&w, SIM_ROUNDS / 2);
        if (policy_plan(t, w.groups, w.n, &params, NULL, 0, results) < 0)
                return;
        for (size_t i = 0; i < w.n; i++) {
                char buf[256];

                printf("    %-11s %7.0f  %-16s %s\n", w.groups[i].path, w.groups[i].util,
                       cpumask_format(&results[i].cpus, buf, sizeof buf), results[i].reason);
        }
}

/*
 * --out=DIR: the table as data (DIR/policy-sim.dat, a block per shape: load, then each policy's
 * energy as a share of no peltd's) and a figure of it, one panel a shape (DIR/policy-sim.png, by
 * gnuplot where it is installed).
 */
static int plot(const char *out, const Shape *shapes, size_t n_shapes, SimResult (*res)[N_LOADS][_SIM_MAX]) {
        char dat[PATH_MAX], gp[PATH_MAX], png[PATH_MAX], cmd[PATH_MAX * 2];
        FILE *f;

        if (mkdir(out, 0755) < 0 && errno != EEXIST)
                return fprintf(stderr, "policy-sim: mkdir %s: %s\n", out, strerror(errno)), -1;
        snprintf(dat, sizeof dat, "%s/policy-sim.dat", out);
        snprintf(gp, sizeof gp, "%s/policy-sim.gp", out);
        snprintf(png, sizeof png, "%s/policy-sim.png", out);
        f = fopen(dat, "we");
        if (!f)
                return fprintf(stderr, "policy-sim: %s: %s\n", dat, strerror(errno)), -1;
        for (size_t s = 0; s < n_shapes; s++) {
                fprintf(f, "# %s\n# load%% power%% performance%% balanced%% (energy against no peltd)\n", shapes[s].name);
                for (size_t l = 0; l < N_LOADS; l++)
                        fprintf(f, "%.0f %.1f %.1f %.1f\n", loads[l] * 100, 100 * res[s][l][SIM_POWER].energy / res[s][l][SIM_NONE].energy,
                                100 * res[s][l][SIM_PERFORMANCE].energy / res[s][l][SIM_NONE].energy,
                                100 * res[s][l][SIM_BALANCED].energy / res[s][l][SIM_NONE].energy);
                fprintf(f, "\n\n");
        }
        fclose(f);
        f = fopen(gp, "we");
        if (!f)
                return fprintf(stderr, "policy-sim: %s: %s\n", gp, strerror(errno)), -1;
        fprintf(f, "set terminal pngcairo size 1200,800 noenhanced\nset output '%s'\nset multiplot layout 2,2 title "
                   "'Estimated energy against no peltd (built-in model), by load'\nset yrange [0:*]\nset grid\n"
                   "set xlabel 'load (%% of the machine)'\nset ylabel 'energy (%% of no peltd)'\nset key bottom right\n", png);
        for (size_t s = 0; s < n_shapes; s++)
                fprintf(f, "set title '%s'\nplot '%s' index %zu using 1:2 with linespoints lw 2 title 'power', "
                           "'' index %zu using 1:3 with linespoints lw 2 title 'performance', "
                           "'' index %zu using 1:4 with linespoints lw 2 title 'balanced', 100 with lines dt 2 title 'no peltd'\n",
                        shapes[s].name, dat, s, s, s);
        fprintf(f, "unset multiplot\n");
        fclose(f);
        snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
        if (access("/usr/bin/gnuplot", X_OK) < 0 || system(cmd) != 0)
                return fprintf(stderr, "policy-sim: no figure (gnuplot missing or failed); the data is in %s\n", dat), 0;
        printf("\nplot: %s (data %s)\n", png, dat);
        return 0;
}

int main(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                const char *v;

                if (streq(argv[i], "-v"))
                        verbose = true;
                else if ((v = startswith(argv[i], "--fixtures=")))
                        fixtures_dir = v;
                else if ((v = startswith(argv[i], "--out=")))
                        out_dir = v;
                else if ((v = startswith(argv[i], "--allow-miss="))) {
                        allowed_misses = realloc(allowed_misses, sizeof(char *) * (n_allowed_misses + 1));
                        if (!allowed_misses)
                                return 1;
                        allowed_misses[n_allowed_misses++] = (char *) v;
                } else {
                        fprintf(stderr, "Usage: policy-sim [-v] [--fixtures=DIR] [--out=DIR] [--allow-miss=SHAPE:power|performance|balanced]...\n");
                        return 2;
                }
        }

        Shape shapes[] = {
                { "2-socket x86 (x86-2s-smt: 2x4x2, CPUs 3,11 isolated)", "x86-2s-smt", fixture("x86-2s-smt"), true },
                { "big.LITTLE (exynos5422-linux6.1: 4x377+4x1024)", "exynos5422", fixture("exynos5422-linux6.1"), true },
                { "big.LITTLE (rk3399-linux6.6: 4x381+2x1024)", "rk3399", fixture("rk3399-linux6.6"), true },
                { "Intel hybrid (intel-hybrid-adl: 6Px2+8E)", "intel-hybrid-adl", fixture("intel-hybrid-adl"), false },
        };
        SimResult res[ELEMENTSOF(shapes)][N_LOADS][_SIM_MAX];
        unsigned failures = 0, passes = 0;

        printf("Energy per round (built-in model; %% against no peltd) and worst shortfall (CPUs) over a %u-round day.\n\n",
               SIM_ROUNDS);
        for (size_t s = 0; s < ELEMENTSOF(shapes); s++) {
                printf("%s\n", shapes[s].name);
                printf("  %5s  %9s  %-20s  %-20s  %-20s\n", "load", "no peltd", "power", "performance", "balanced");
                for (size_t l = 0; l < N_LOADS; l++) {
                        printf("  %4.0f%%", loads[l] * 100);
                        for (SimPolicy sp = 0; sp < _SIM_MAX; sp++) {
                                SimResult *r = &res[s][l][sp];
                                char cell[64];

                                if (simulate(shapes[s].t, sp, loads[l], r) < 0) {
                                        fprintf(stderr, "policy-sim: out of memory\n");
                                        return 1;
                                }
                                if (sp == SIM_NONE)
                                        snprintf(cell, sizeof cell, "%9.1f", r->energy);
                                else
                                        snprintf(cell, sizeof cell, "%7.1f %+4.0f%% sf %.1f", r->energy,
                                                 100.0 * (r->energy / res[s][l][SIM_NONE].energy - 1.0), r->shortfall / 1024.0);
                                printf("  %-20s", cell);
                        }
                        printf("\n");
                        if (verbose)
                                for (SimPolicy sp = SIM_POWER; sp < _SIM_MAX; sp++) {
                                        printf("   %s:\n", sim_policy_names[sp]);
                                        print_plan(shapes[s].t, sp, loads[l]);
                                }
                }
                printf("\n");
        }

        for (size_t s = 0; s < ELEMENTSOF(shapes); s++) {
                const Shape *sh = &shapes[s];
                char what[256];
                double sf = 0;

                if (sh->power_target) {
                        double worst = INFINITY;

                        for (size_t l = 0; l < N_LOADS && loads[l] <= 0.25 + 1e-9; l++) {
                                worst = MIN(worst, 1.0 - res[s][l][SIM_POWER].energy / res[s][l][SIM_NONE].energy);
                                sf = MAX(sf, res[s][l][SIM_POWER].shortfall);
                        }
                        snprintf(what, sizeof what,
                                 "power saves >= 25%% at loads <= 25%% with no shortfall (least saving %.0f%%, shortfall %.1f CPUs)",
                                 worst * 100, sf / 1024.0);
                        verdict(worst >= 0.25 && sf == 0, sh, "power", what, &passes, &failures);
                }

                sf = 0;
                for (size_t l = 0; l < N_LOADS; l++)
                        sf = MAX(sf, res[s][l][SIM_PERFORMANCE].shortfall);
                snprintf(what, sizeof what, "performance has no shortfall up to 80%% (worst %.1f CPUs)", sf / 1024.0);
                verdict(sf == 0, sh, "performance", what, &passes, &failures);

                if (sh->t->asymmetric) {
                        double worst = 0;

                        sf = 0;
                        for (size_t l = 0; l < N_LOADS; l++) {
                                double best = MIN(res[s][l][SIM_POWER].energy, res[s][l][SIM_PERFORMANCE].energy);

                                worst = MAX(worst, res[s][l][SIM_BALANCED].energy / best - 1.0);
                                sf = MAX(sf, res[s][l][SIM_BALANCED].shortfall);
                        }
                        snprintf(what, sizeof what,
                                 "balanced within 5%% of the cheaper of power and performance, no shortfall (worst %+.1f%%, shortfall %.1f CPUs)",
                                 worst * 100, sf / 1024.0);
                        verdict(worst <= 0.05 && sf == 0, sh, "balanced", what, &passes, &failures);
                }
        }

        if (out_dir)
                (void) plot(out_dir, shapes, ELEMENTSOF(shapes), res);
        for (size_t s = 0; s < ELEMENTSOF(shapes); s++)
                topology_free(shapes[s].t);

        free(allowed_misses);
        if (allowed_missed > 0)
                printf("\n%u target(s) missed as allowed by --allow-miss\n", allowed_missed);
        printf("\n%u passed, %u failed\n", passes, failures);
        return failures ? 1 : 0;
}
