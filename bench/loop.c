/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control loop's quality on the real kernel: peltd (every interval at its default) on a private
 * subtree with one managed group, svc, whose load follows a shape (tools/load-shape). Every 10 ms
 * the bench reads svc's cpuset.cpus and its CPU time; at the end of a run, the daemon's
 * peltd_group_placement_changes_total for it from the metrics file. Each run starts the load and
 * the daemon afresh and ends both.
 *
 *   Shapes (--shape, repeatable; default the three below), one run of --seconds each (60; --long
 *   300): placement changes (the metric, and those seen in cpuset.cpus), those after the first
 *   placement per hour (from the first change to the end of the run), the share of the time svc
 *   was on fewer CPUs than are online, what the load got against what it asked, and the machine's
 *   CPU pressure meanwhile.
 *     square:0.6:1.0:4   a load crossing the widen line every 2 s
 *     walk:0.5:1.1       a random walk across it (1 s steps)
 *     square:0.4:0.7:4   a load that always fits one CPU, near the line
 *   Reactions, --runs runs each (5), median and range:
 *     time to widen after a step up (--up-shape, steps:0.2,4=2: to 2 busy threads at 4 s);
 *     the same with a busy loop, pinned (sched_setaffinity) to the CPU svc is packed on, in a group
 *       outside the managed subtree, running from the step on;
 *     time to pack after the load drops for good (--down-shape, steps:0.3,2=1.5,14=0.1).
 *   The step measured is the shape's last one; a run where svc was not packed at a step up (or was
 *   already packed at a drop) is reported, not counted. Waits: 10 s for a widening, 90 s to pack.
 *
 * The managed subtree and the competitor's group both get the largest CPU weight, so the machine's
 * other work does not starve the load and the competitor gets what the load does. A PNG timeline
 * per run (the demand asked, the group's CPU usage over 100 ms, its CPUs, /proc/pressure/cpu
 * "some avg10") with gnuplot, its data and the daemon's log go to --out (bench-loop).
 *
 *   loop PELTD LOAD_SHAPE [--policy P] [--seconds S | --long] [--runs N] [--threads N]
 *        [--shape SHAPE]... [--up-shape SHAPE] [--down-shape SHAPE] [--no-shapes] [--no-steps]
 *        [--out DIR]
 *
 * Exit 0 after a complete run, 2 on setup errors. Needs root.
 */
#include <sched.h>

#include "../tools/load-shape.h"
#include "run-util.h"

#define POLL_NS (10 * 1000000ULL)
#define WIDEN_WAIT_S 10.0
#define PACK_WAIT_S 90.0
#define MAX_SHAPES 16
#define MAX_RUNS 50

typedef enum React {
        REACT_NONE,
        REACT_WIDEN,
        REACT_PACK,
} React;

typedef struct Scenario {
        const char *name;       /* file names: POLICY-NAME[-RUN] */
        const char *shape_text;
        double seconds;         /* REACT_NONE: how long the run lasts; else the wait after the step */
        React react;            /* at the shape's last step */
        bool rival;             /* a busy loop pinned to svc's CPU from the step on */
} Scenario;

typedef struct Result {
        double changes_metric;  /* NAN: not read */
        unsigned changes_seen;
        double first_change_s;  /* the load's time of the first change; NAN: none */
        double end_s;
        double packed_share;
        double psi_mean;        /* NAN: no PSI */
        double usage_mean, asked_mean;
        double react_s;         /* INFINITY: not within the wait; NAN: not in the starting state */
        double after_step_cpus; /* svc's usage from the step to the reaction or the end of the wait */
        char at_step[64];       /* svc's CPUs at the step */
        char png[600];
} Result;

static const char *peltd, *load_shape_bin, *policy = "power", *outdir = "bench-loop";
static char top[64], rival_top[80], svc[96], tmp[64], all_cpus[64];
static unsigned n_online, n_threads = 2, n_runs = 5;
static RunDaemon daemon_;
static pid_t load_pid, rival_pid;
static int rival_go = -1;

static void cleanup(void) {
        if (!run_is_main())
                return;
        run_daemon_stop(&daemon_);
        run_end_child(&load_pid, SIGKILL);
        run_end_child(&rival_pid, SIGKILL);
        bench_kill_children();
        run_cgroup_purge(top);
        run_cgroup_purge(rival_top);
        bench_rm_rf(tmp);
}

static void on_signal(int sig) {
        (void) sig;
        exit(1);
}

/* ---- the load and the competitor ----------------------------------------------------------------- */

/* Starts load-shape with text in svc; returns the shape's time 0 (CLOCK_MONOTONIC ns). */
static uint64_t start_load(const char *text) {
        char threads[16], line[128];
        char *argv[] = { (char *) load_shape_bin, (char *) "--threads", threads, (char *) text, NULL };
        unsigned long long t0 = 0;
        int p[2], pid;
        ssize_t n;

        snprintf(threads, sizeof threads, "%u", n_threads);
        if (pipe2(p, O_CLOEXEC) < 0)
                bench_die("pipe: %s", strerror(errno));
        load_pid = run_spawn(svc, argv, p[1], STDERR_FILENO);
        close(p[1]);
        n = read(p[0], line, sizeof line - 1);
        close(p[0]);
        line[n > 0 ? n : 0] = 0;
        if (sscanf(line, "%d %llu", &pid, &t0) != 2)
                bench_die("%s %s did not start", load_shape_bin, text);
        return t0;
}

/* A busy loop in rival_top pinned to cpu, which starts spinning when a byte comes on rival_go. */
static void start_rival(unsigned cpu) {
        int p[2];
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                bench_die("pipe: %s", strerror(errno));
        pid = fork();
        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                const char *h[3];
                int n = bench_hierarchies(h);
                char path[600], me[32], c;
                cpu_set_t set;

                signal(SIGINT, SIG_DFL);
                signal(SIGTERM, SIG_DFL);
                signal(SIGHUP, SIG_DFL);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                prctl(PR_SET_NAME, "loop-rival");
                snprintf(me, sizeof me, "%d", (int) getpid());
                for (int i = 0; i < n; i++) {
                        snprintf(path, sizeof path, "%s%s/cgroup.procs", h[i], rival_top);
                        if (bench_write(path, me) < 0)
                                _exit(127);
                }
                CPU_ZERO(&set);
                CPU_SET(cpu, &set);
                if (sched_setaffinity(0, sizeof set, &set) < 0)
                        _exit(127);
                close(p[1]);
                if (read(p[0], &c, 1) != 1)
                        _exit(0);
                for (;;)
                        ;
        }
        close(p[0]);
        rival_go = p[1];
        rival_pid = pid;
        bench_add_child(pid);
}

static void release_rival(void) {
        if (rival_go >= 0 && write(rival_go, "x", 1) != 1)
                bench_die("the competitor is gone");
}

static void end_rival(void) {
        if (rival_go >= 0)
                close(rival_go);
        rival_go = -1;
        run_end_child(&rival_pid, SIGKILL);
}

/* ---- one run ----------------------------------------------------------------------------------- */

typedef struct Poll {
        FILE *dat;
        uint64_t t0, next;
        char cpus[64];
        unsigned count, polls, packed_polls, psi_polls;
        double psi, psi_sum, usage_sum;
        uint64_t usage_ns[10], usage_t[10]; /* the last 10 polls, for the usage over 100 ms */
        uint64_t rival_ns[10];              /* the same for the competitor's group */
        uint64_t step_usage_ns, step_t;
        bool stepped, reacted;
} Poll;

/* One poll: svc's CPUs (a change counted), its usage, PSI each tenth poll; a row of the data file. */
static void poll_once(Poll *p, const Shape *shape, Result *r, uint64_t now) {
        size_t slot = p->polls % 10, oldest = (p->polls + 1) % 10;
        double t = ((double) now - (double) p->t0) / 1e9, usage = NAN, rival = NAN;
        char cpus[64];

        run_group_cpus(svc, cpus, sizeof cpus);
        if (p->polls > 0 && strcmp(cpus, p->cpus) != 0) {
                r->changes_seen++;
                if (isnan(r->first_change_s))
                        r->first_change_s = t;
        }
        snprintf(p->cpus, sizeof p->cpus, "%s", cpus);
        p->count = run_cpulist_count(cpus);
        p->usage_ns[slot] = run_group_usage_ns(svc);
        p->usage_t[slot] = now;
        p->rival_ns[slot] = rival_pid > 0 ? run_group_usage_ns(rival_top) : 0;
        if (p->polls >= 10) {
                double dt = (double) (p->usage_t[slot] - p->usage_t[oldest]);

                usage = (double) (p->usage_ns[slot] - p->usage_ns[oldest]) / dt;
                p->usage_sum += usage;
                if (rival_pid > 0 && p->rival_ns[oldest] > 0)
                        rival = (double) (p->rival_ns[slot] - p->rival_ns[oldest]) / dt;
        }
        if (p->polls % 10 == 0) {
                p->psi = run_psi_some_avg10();
                if (!isnan(p->psi)) {
                        p->psi_sum += p->psi;
                        p->psi_polls++;
                }
        }
        p->packed_polls += p->count < n_online;
        p->polls++;
        fprintf(p->dat, "%.3f %.3f %.4f %u %.2f %.4f\n", t, shape_at(shape, t), usage, p->count, p->psi, rival);
}

/* The step: what svc is on then decides whether the run counts. */
static void at_step(const Scenario *sc, Poll *p, Result *r) {
        snprintf(r->at_step, sizeof r->at_step, "%s", p->cpus);
        p->stepped = true;
        p->step_usage_ns = p->usage_ns[(p->polls - 1) % 10];
        p->step_t = p->usage_t[(p->polls - 1) % 10];
        if ((sc->react == REACT_WIDEN && p->count >= n_online) || (sc->react == REACT_PACK && p->count < n_online))
                r->react_s = NAN;
        if (sc->rival)
                release_rival();
}

/* svc's usage from the step to the last poll. */
static void after_step(const Poll *p, Result *r) {
        size_t last = (p->polls - 1) % 10;

        if (p->usage_t[last] > p->step_t)
                r->after_step_cpus = (double) (p->usage_ns[last] - p->step_usage_ns) / (double) (p->usage_t[last] - p->step_t);
}

/* Polls every 10 ms until the run's end (or shortly after the reaction). */
static void poll_run(const Scenario *sc, const Shape *shape, Poll *p, Result *r) {
        double step_s = sc->react ? shape->at[shape->n - 1] : -1;
        uint64_t step_ns = sc->react ? p->t0 + (uint64_t) (step_s * 1e9) : UINT64_MAX;
        uint64_t end = sc->react ? step_ns + (uint64_t) (sc->seconds * 1e9) : p->t0 + (uint64_t) (sc->seconds * 1e9);
        unsigned count_at_step = 0;

        p->next = bench_now_ns();
        for (;;) {
                uint64_t now = bench_now_ns(), wake;

                if (now >= end)
                        break;
                if (!p->stepped && now >= step_ns) {
                        poll_once(p, shape, r, now);
                        count_at_step = p->count;
                        at_step(sc, p, r);
                } else
                        poll_once(p, shape, r, now);
                if (p->stepped && !p->reacted && !isnan(r->react_s) &&
                    (sc->react == REACT_WIDEN ? p->count > count_at_step : p->count < count_at_step)) {
                        p->reacted = true;
                        r->react_s = ((double) now - (double) step_ns) / 1e9;
                        end = now + 1000000000ULL; /* a second more for the picture */
                        after_step(p, r);
                }
                if (sc->rival && rival_pid == 0 && !p->stepped && p->count < n_online && now + 300000000ULL < step_ns)
                        start_rival((unsigned) strtoul(p->cpus, NULL, 10));
                p->next += POLL_NS;
                if (p->next < now)
                        p->next = now;
                wake = p->next;
                if (!p->stepped && step_ns < wake)
                        wake = step_ns;
                bench_sleep_until_ns(wake);
        }
        if (p->stepped && !p->reacted)
                after_step(p, r);
        r->end_s = ((double) bench_now_ns() - (double) p->t0) / 1e9;
}

static void plot(const Scenario *sc, const Shape *shape, const char *stem, unsigned run, bool psi) {
        char script[600];
        FILE *f;

        snprintf(script, sizeof script, "%s.gp", stem);
        f = fopen(script, "we");
        if (!f)
                bench_die("writing %s: %s", script, strerror(errno));
        fprintf(f, "set terminal pngcairo size 1200,500 font ',10'\nset output '%s.png'\n", stem);
        if (run)
                fprintf(f, "set title \"peltd policy %s, load %s%s, run %u\" noenhanced\n", policy, sc->shape_text,
                        sc->rival ? ", a busy loop pinned to the packed CPU from the step on" : "", run);
        else
                fprintf(f, "set title \"peltd policy %s, load %s\" noenhanced\n", policy, sc->shape_text);
        fprintf(f, "set xlabel 'seconds since the load started'\nset ylabel 'CPUs'\nset yrange [0:%u.5]\n", n_online);
        fprintf(f, "set ytics nomirror\nset key below horizontal\nset grid ytics\n");
        if (psi)
                fprintf(f, "set y2label '/proc/pressure/cpu some avg10 (%%)'\nset y2range [0:100]\nset y2tics\n");
        if (sc->react)
                fprintf(f, "set arrow from %g, graph 0 to %g, graph 1 nohead dashtype 3 lc rgb 'gray40'\n",
                        shape->at[shape->n - 1], shape->at[shape->n - 1]);
        fprintf(f, "plot '%s.dat' using 1:2 with steps lw 1 dt 2 lc rgb 'black' title 'demand asked',"
                   " '' using 1:3 with lines lw 1 lc rgb '#1f77b4' title 'group usage (100 ms)',"
                   " '' using 1:4 with steps lw 2 lc rgb '#d62728' title \"group's CPUs (cpuset.cpus)\"", stem);
        if (sc->rival)
                fprintf(f, ", '' using 1:6 with lines lw 1 lc rgb '#ff7f0e' title 'busy loop usage (100 ms)'");
        if (psi)
                fprintf(f, ", '' using 1:5 axes x1y2 with lines lw 1 lc rgb '#2ca02c' title 'CPU pressure some avg10 (right)'");
        fprintf(f, "\n");
        fclose(f);
        run_gnuplot(script);
}

static void run_one(const Scenario *sc, unsigned run, Result *r) {
        Shape shape;
        Poll p = { 0 };
        char stem[512], path[600];

        if (shape_parse(sc->shape_text, &shape) < 0)
                bench_die("not a shape: %s", sc->shape_text);
        *r = (Result){ .changes_metric = NAN, .first_change_s = NAN, .psi_mean = NAN, .react_s = INFINITY, .after_step_cpus = NAN };
        if (run)
                snprintf(stem, sizeof stem, "%s/%s-%s-%u", outdir, policy, sc->name, run);
        else
                snprintf(stem, sizeof stem, "%s/%s-%s", outdir, policy, sc->name);
        snprintf(path, sizeof path, "%s.dat", stem);
        p.dat = fopen(path, "we");
        if (!p.dat)
                bench_die("writing %s: %s", path, strerror(errno));
        fprintf(p.dat, "# t_s demand_asked_cpus usage_cpus group_cpus psi_some_avg10 busy_loop_cpus\n");

        bench_cgroup_create(svc);
        p.t0 = start_load(sc->shape_text);
        run_daemon_start(&daemon_, peltd, tmp, top, policy, NULL);
        poll_run(sc, &shape, &p, r);
        if (!sc->react) {
                /* The file follows the rounds within a second: one written after the end. */
                if (run_metrics_fresh(daemon_.metrics, run_realtime_ns()))
                        (void) run_metric(daemon_.metrics, "peltd_group_placement_changes_total", svc, &r->changes_metric);
        }
        run_daemon_stop(&daemon_);
        end_rival();
        run_end_child(&load_pid, SIGTERM);
        fclose(p.dat);
        bench_cgroup_remove(svc);
        snprintf(path, sizeof path, "%s.peltd.log", stem);
        run_copy(daemon_.log, path);

        r->packed_share = p.polls ? (double) p.packed_polls / p.polls : NAN;
        r->psi_mean = p.psi_polls ? p.psi_sum / p.psi_polls : NAN;
        r->usage_mean = p.polls > 10 ? p.usage_sum / (p.polls - 10) : NAN;
        r->asked_mean = 0;
        for (unsigned k = 0; k < 1000; k++)
                r->asked_mean += shape_at(&shape, r->end_s * (k + 0.5) / 1000) / 1000;
        plot(sc, &shape, stem, run, p.psi_polls > 0);
        snprintf(r->png, sizeof r->png, "%s.png", stem);
        shape_free(&shape);
}

/* ---- reports ----------------------------------------------------------------------------------- */

static void print_pressure(const Result *r) {
        if (isnan(r->psi_mean))
                printf("no /proc/pressure/cpu");
        else
                printf("machine CPU pressure (some avg10) %.0f%% on average", r->psi_mean);
}

static void report_shape(const Scenario *sc, const Result *r) {
        unsigned total = isnan(r->changes_metric) ? r->changes_seen : (unsigned) r->changes_metric;
        unsigned after = total > 0 ? total - 1 : 0;
        double window = isnan(r->first_change_s) ? r->end_s : r->end_s - r->first_change_s;

        if (isnan(r->changes_metric))
                printf("%-22s %5.0f s  placement changes %u seen in cpuset.cpus (the metric unread)\n", sc->shape_text, r->end_s,
                       r->changes_seen);
        else
                printf("%-22s %5.0f s  placement changes %u (peltd_group_placement_changes_total; seen in cpuset.cpus: %u)\n",
                       sc->shape_text, r->end_s, total, r->changes_seen);
        if (isnan(r->first_change_s))
                printf("%-22s          no placement at all: 0 changes per hour\n", "");
        else
                printf("%-22s          after the first placement (at %.1f s): %u in %.0f s = %.0f per hour\n", "", r->first_change_s,
                       after, window, window > 0 ? after * 3600.0 / window : 0.0);
        printf("%-22s          on fewer CPUs than online %.0f%% of the time; the load got %.2f of %.2f CPUs asked (%.2fx); ", "",
               100 * r->packed_share, r->usage_mean, r->asked_mean, r->usage_mean / r->asked_mean);
        print_pressure(r);
        printf("\n%-22s          %s\n", "", r->png);
}

/* The demand after a steps: shape's last step. */
static double shape_max_after_step(const Scenario *sc) {
        Shape s;
        double v;

        if (shape_parse(sc->shape_text, &s) < 0)
                return NAN;
        v = s.level[s.n - 1];
        shape_free(&s);
        return v;
}

/* Median and range of the runs that count (a run not reacting within the wait counts as infinite). */
static void report_reaction(const char *what, const Scenario *sc, Result *r, unsigned n, double *ret_median) {
        double v[MAX_RUNS], got[MAX_RUNS];
        unsigned k = 0, late = 0, n_got = 0;

        for (unsigned i = 0; i < n; i++)
                if (!isnan(r[i].react_s)) {
                        v[k++] = r[i].react_s;
                        late += isinf(r[i].react_s);
                        if (!isnan(r[i].after_step_cpus))
                                got[n_got++] = r[i].after_step_cpus;
                }
        printf("%s (%s), %u runs:\n", what, sc->shape_text, n);
        printf("    ");
        for (unsigned i = 0; i < n; i++) {
                if (isnan(r[i].react_s))
                        printf(" [%s at the step: not counted]", r[i].at_step);
                else if (isinf(r[i].react_s))
                        printf(" >%.0f s", sc->seconds);
                else
                        printf(" %.0f ms", r[i].react_s * 1000);
        }
        printf("\n");
        *ret_median = NAN;
        if (k == 0) {
                printf("    no run counts: svc was %s at the step in every run\n", sc->react == REACT_WIDEN ? "not packed" : "already packed");
                return;
        }
        *ret_median = bench_median(v, k);
        if (isinf(*ret_median))
                printf("    median > %.0f s", sc->seconds);
        else
                printf("    median %.0f ms", *ret_median * 1000);
        if (isinf(v[0]))
                printf(" (no run within %.0f s)", sc->seconds);
        else if (isinf(v[k - 1]))
                printf(", range %.0f ms to > %.0f s (%u of %u not within %.0f s)", v[0] * 1000, sc->seconds, late, k, sc->seconds);
        else
                printf(", range %.0f-%.0f ms", v[0] * 1000, v[k - 1] * 1000);
        if (k < n)
                printf("; %u of %u runs counted", k, n);
        printf("\n");
        if (sc->react == REACT_WIDEN && n_got > 0)
                printf("    from the step until it widened (or the wait ended) svc got %.2f CPUs (median) of the %.2f it asked\n",
                       bench_median(got, n_got), shape_max_after_step(sc));
}

static double mean_psi(const Result *r, unsigned n) {
        double s = 0;
        unsigned k = 0;

        for (unsigned i = 0; i < n; i++)
                if (!isnan(r[i].psi_mean))
                        s += r[i].psi_mean, k++;
        return k ? s / k : NAN;
}

static void run_reactions(const Scenario *sc, const char *what, double *ret_median) {
        Result r[MAX_RUNS];
        Result avg = { .psi_mean = NAN };

        for (unsigned i = 0; i < n_runs; i++)
                run_one(sc, i + 1, &r[i]);
        report_reaction(what, sc, r, n_runs, ret_median);
        avg.psi_mean = mean_psi(r, n_runs);
        printf("    ");
        print_pressure(&avg);
        if (n_runs > 1)
                printf("; pictures %s/%s-%s-1.png to -%u.png\n", outdir, policy, sc->name, n_runs);
        else
                printf("; picture %s/%s-%s-1.png\n", outdir, policy, sc->name);
        fflush(stdout);
}

/* ---- main -------------------------------------------------------------------------------------- */

static _Noreturn void usage(void) {
        fprintf(stderr, "usage: loop PELTD LOAD_SHAPE [--policy P] [--seconds S | --long] [--runs N] [--threads N]\n"
                        "            [--shape SHAPE]... [--up-shape SHAPE] [--down-shape SHAPE] [--no-shapes] [--no-steps] [--out DIR]\n");
        exit(2);
}

static double parse_positive(const char *s) {
        char *end;
        double v = strtod(s, &end);

        if (end == s || *end || !(v > 0))
                usage();
        return v;
}

/* A steps: shape (the reactions measure its last step). */
static void check_steps(const char *text) {
        Shape s;

        if (shape_parse(text, &s) < 0 || s.kind != SHAPE_STEPS || s.n < 2)
                bench_die("%s: a reaction needs a steps: shape with a step (steps:V0,T=V...)", text);
        shape_free(&s);
}

int main(int argc, char *argv[]) {
        const char *shapes[MAX_SHAPES] = { 0 }, *up = "steps:0.2,4=2", *down = "steps:0.3,2=1.5,14=0.1";
        const char *defaults[] = { "square:0.6:1.0:4", "walk:0.5:1.1", "square:0.4:0.7:4" };
        unsigned n_shapes = 0;
        double seconds = 60, up_median, rival_median, down_median;
        bool do_shapes = true, do_steps = true;

        if (argc < 3)
                usage();
        peltd = argv[1];
        load_shape_bin = argv[2];
        for (int i = 3; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (strcmp(a, "--long") == 0)
                        seconds = 300;
                else if (strcmp(a, "--no-shapes") == 0)
                        do_shapes = false;
                else if (strcmp(a, "--no-steps") == 0)
                        do_steps = false;
                else if (!v)
                        usage();
                else if (strcmp(a, "--policy") == 0)
                        policy = v, i++;
                else if (strcmp(a, "--seconds") == 0)
                        seconds = parse_positive(v), i++;
                else if (strcmp(a, "--runs") == 0 && (n_runs = (unsigned) parse_positive(v)) <= MAX_RUNS)
                        i++;
                else if (strcmp(a, "--threads") == 0 && (n_threads = (unsigned) parse_positive(v)) <= 1024)
                        i++;
                else if (strcmp(a, "--shape") == 0 && n_shapes < MAX_SHAPES)
                        shapes[n_shapes++] = v, i++;
                else if (strcmp(a, "--up-shape") == 0)
                        up = v, i++;
                else if (strcmp(a, "--down-shape") == 0)
                        down = v, i++;
                else if (strcmp(a, "--out") == 0)
                        outdir = v, i++;
                else
                        usage();
        }
        if (n_shapes == 0)
                for (size_t k = 0; k < sizeof defaults / sizeof *defaults; k++)
                        shapes[n_shapes++] = defaults[k];
        for (unsigned k = 0; k < n_shapes; k++) {
                Shape s;

                if (shape_parse(shapes[k], &s) < 0)
                        bench_die("not a shape: %s", shapes[k]);
                shape_free(&s);
        }
        check_steps(up);
        check_steps(down);
        if (access(peltd, X_OK) < 0 || access(load_shape_bin, X_OK) < 0)
                bench_die("%s or %s is missing", peltd, load_shape_bin);

        run_main_pid = getpid();
        run_machine_lock();
        n_online = run_online_cpus(all_cpus, sizeof all_cpus);
        if (n_online < 2)
                bench_die("one CPU online: nothing to pack");
        snprintf(top, sizeof top, "/peltd-bench-loop-%d", (int) getpid());
        snprintf(rival_top, sizeof rival_top, "/peltd-bench-loop-%d-rival", (int) getpid());
        snprintf(svc, sizeof svc, "%s/svc", top);
        snprintf(tmp, sizeof tmp, "/tmp/peltd-bench-loop-XXXXXX");
        run_setup((const char *[]){ top, rival_top }, 2, tmp, cleanup, on_signal);
        run_mkdir_p(outdir);

        printf("loop: peltd %s, policy %s, %s, CPUs %s; load-shape with %u threads, 10 ms periods; svc polled every 10 ms\n\n",
               peltd, policy, bench_cgroup_v2() ? "cgroup v2" : "cgroup v1", all_cpus, n_threads);
        fflush(stdout);
        if (do_shapes) {
                for (unsigned k = 0; k < n_shapes; k++) {
                        char name[64];
                        Scenario sc = { .name = name, .shape_text = shapes[k], .seconds = seconds };
                        Result r;

                        snprintf(name, sizeof name, "shape%u", k + 1);
                        run_one(&sc, 0, &r);
                        report_shape(&sc, &r);
                        fflush(stdout);
                }
                printf("\n");
        }
        if (do_steps) {
                Scenario s_up = { .name = "up", .shape_text = up, .seconds = WIDEN_WAIT_S, .react = REACT_WIDEN };
                Scenario s_rival = { .name = "up-rival", .shape_text = up, .seconds = WIDEN_WAIT_S, .react = REACT_WIDEN, .rival = true };
                Scenario s_down = { .name = "down", .shape_text = down, .seconds = PACK_WAIT_S, .react = REACT_PACK };

                run_reactions(&s_up, "time to widen after a step up", &up_median);
                run_reactions(&s_rival, "time to widen after a step up, a busy loop pinned to the packed CPU from the step on",
                              &rival_median);
                if (!isnan(up_median) && !isnan(rival_median) && !isinf(up_median) && !isinf(rival_median) && up_median > 0)
                        printf("    with the busy loop: %.2fx the median without\n", rival_median / up_median);
                run_reactions(&s_down, "time to pack after the load drops for good", &down_median);
        }
        return 0;
}
