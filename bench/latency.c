/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Wake-up latency of a latency-sensitive group beside batch work, under each policy and without
 * peltd, with the daemon's energy estimate beside it. A private subtree (the largest CPU weight,
 * so that the machine's other work does not decide the figures) holds three managed groups: lat,
 * running Debian's cyclictest (one SCHED_OTHER thread woken every 1 ms: `cyclictest -v -m -i 1000
 * -d 0 -D SETTLE+SECONDS --default-system`, every wake-up's latency on its stdout), and batch-a and
 * batch-b, each running tools/duty-cycle (10 ms periods) at
 *   light:  1 thread at 15% each (0.3 CPUs in all)
 *   medium: 2 threads at 15% each (0.6 CPUs in all)
 * For each of --reps repetitions (3), each load and each policy (none, power, power with the
 * pressure guard off (power-noguard: PressureStallMSec=0), balanced, performance; the order
 * rotates between repetitions and loads, so none always runs first), the groups are made afresh,
 * the batch load and peltd (default intervals) started, cyclictest run; the first SETTLE seconds
 * (--settle, 3) of wake-ups are left out (peltd places after 1 s of history), the next SECONDS
 * (--seconds, 10) counted. Meanwhile, every 100 ms, the groups'
 * cpuset.cpus, and every second peltd_energy_estimate and peltd_energy_estimate_spread from the
 * metrics file (the model's estimate for the plan, and for the same load on every CPU).
 *
 * Prints per load and policy the median over the repetitions of p50, p99 and max wake-up latency
 * (p99's range too), p99 against no peltd in the same run, the groups' CPUs, placement changes
 * while measured, and the mean energy estimates with the saving (spread - estimate) they imply.
 * A bar chart of p99 per policy and load (error bars: the range) goes to --out (bench-latency).
 *
 *   latency PELTD DUTY_CYCLE [--seconds S] [--settle S] [--reps N] [--cyclictest PATH] [--out DIR]
 *
 * Exit 0 after a complete run, 2 on setup errors. Needs root.
 */
#include <dirent.h>
#include <sched.h>

#include "run-util.h"

#define N_POLICIES 5
#define N_LOADS 2
#define MAX_REPS 20
#define INTERVAL_US 1000

typedef struct Load {
        const char *name;
        unsigned threads, pct; /* per batch group */
} Load;

static const Load loads[N_LOADS] = {
        { "light", 1, 15 },
        { "medium", 2, 15 },
};
/* "power-noguard": power with PressureStallMSec=0, what the pressure guard buys. */
static const char *const policies[N_POLICIES] = { "none", "power", "power-noguard", "balanced", "performance" };

typedef struct Sample {
        double p50, p99, max;   /* µs */
        size_t n;               /* wake-ups counted */
        char cpus[3][64];       /* lat, batch-a, batch-b when the counting began */
        unsigned changes;       /* of those three while counted */
        double energy, spread;  /* means; NAN without peltd */
} Sample;

static const char *peltd, *duty_bin, *cyclictest = "/usr/bin/cyclictest", *outdir = "bench-latency";
static char top[64], groups[3][96], tmp[64], all_cpus[64];
static unsigned n_online, settle_s = 3, seconds = 10, reps = 3;
static RunDaemon daemon_;
static pid_t batch_pid[2], ct_pid;
static Sample samples[N_LOADS][N_POLICIES][MAX_REPS];

static void cleanup(void) {
        if (!run_is_main())
                return;
        run_daemon_stop(&daemon_);
        run_end_child(&ct_pid, SIGKILL);
        for (size_t i = 0; i < 2; i++)
                run_end_child(&batch_pid[i], SIGKILL);
        bench_kill_children();
        run_cgroup_purge(top);
        bench_rm_rf(tmp);
}

static void on_signal(int sig) {
        (void) sig;
        exit(1);
}

/*
 * cyclictest starts by checking that it may switch to SCHED_FIFO (and back), whatever policy its
 * measurement thread uses; with RT group scheduling (v1 cpu.rt_runtime_us) a new group has no RT
 * time and the check fails. A little for group (its parent first): nothing here runs as RT. A lat
 * just removed still counts against its parent's RT time for a moment (EINVAL): tries for 2 s.
 */
static void allow_rt_check(const char *group, unsigned usec) {
        char path[512], value[32];
        int r = 0;

        if (bench_cgroup_v2())
                return;
        snprintf(path, sizeof path, "%s/cpu%s/cpu.rt_runtime_us", BENCH_CG_V1, group);
        if (access(path, F_OK) < 0)
                return;
        snprintf(value, sizeof value, "%u", usec);
        for (unsigned k = 0; k < 200; k++) {
                r = bench_write(path, value);
                if (r != -EINVAL)
                        break;
                usleep(10 * 1000);
        }
        if (r < 0)
                bench_die("writing %s to %s: %s", value, path, strerror(-r));
}

/* ---- one measurement --------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
        return bench_cmp_double(a, b);
}

/* The latencies cyclictest -v wrote ("THREAD: CYCLE: LATENCY" lines), the first skip cycles left out. */
static void parse_cyclictest(const char *path, size_t skip, Sample *s) {
        FILE *f = fopen(path, "re");
        double *v = NULL;
        size_t n = 0, allocated = 0;
        char line[256];

        if (!f)
                bench_die("reading %s: %s", path, strerror(errno));
        while (fgets(line, sizeof line, f)) {
                unsigned long thread, cycle;
                double lat;

                if (sscanf(line, " %lu: %lu: %lf", &thread, &cycle, &lat) != 3 || cycle < skip)
                        continue;
                if (n == allocated) {
                        allocated = allocated ? 2 * allocated : 16384;
                        v = realloc(v, allocated * sizeof *v);
                        if (!v)
                                bench_die("out of memory");
                }
                v[n++] = lat;
        }
        fclose(f);
        if (n == 0)
                bench_die("cyclictest wrote no wake-up after the first %zu (see %s)", skip, path);
        qsort(v, n, sizeof *v, cmp_double);
        s->n = n;
        s->p50 = run_quantile(v, n, 0.50);
        s->p99 = run_quantile(v, n, 0.99);
        s->max = v[n - 1];
        free(v);
}

static void start_batch(const Load *l) {
        char threads[16], pct[16];
        char *argv[] = { (char *) duty_bin, threads, (char *) "10000", pct, NULL };

        snprintf(threads, sizeof threads, "%u", l->threads);
        snprintf(pct, sizeof pct, "%u", l->pct);
        for (size_t i = 0; i < 2; i++)
                batch_pid[i] = run_spawn(groups[1 + i], argv, -1, STDERR_FILENO);
}

static pid_t start_cyclictest(const char *out) {
        char duration[32];
        char *argv[] = { (char *) cyclictest, (char *) "-v", (char *) "-m", (char *) "-i", (char *) "1000", (char *) "-d",
                         (char *) "0", (char *) "-D", duration, (char *) "--default-system", NULL };
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        pid_t pid;

        if (fd < 0)
                bench_die("open %s: %s", out, strerror(errno));
        snprintf(duration, sizeof duration, "%u", settle_s + seconds);
        pid = run_spawn(groups[0], argv, fd, -1);
        close(fd);
        return pid;
}

/* The CPUs of a list such as "0-3,8". */
static void cpulist_set(const char *s, cpu_set_t *set) {
        CPU_ZERO(set);
        while (*s) {
                char *end;
                unsigned long a = strtoul(s, &end, 10), b = a;

                if (end == s)
                        return;
                if (*end == '-')
                        b = strtoul(end + 1, &end, 10);
                for (unsigned long c = a; c <= b && c < CPU_SETSIZE; c++)
                        CPU_SET(c, set);
                s = *end == ',' ? end + 1 : end;
        }
}

/*
 * cyclictest pins its measurement thread to one CPU (CPU 0 here, with or without -a): a service's
 * threads do not, and peltd leaves a group whose threads pin themselves narrower than its cpuset
 * alone. For its first second, each thread of pid but the main one whose CPUs are not those of
 * lat's cpuset gets every online CPU back (the cpuset still bounds it). Dies where the measurement
 * thread never shows.
 */
static void unpin(pid_t pid) {
        uint64_t end = bench_now_ns() + 1000000000ULL;
        cpu_set_t online;
        bool seen = false;
        char path[64];

        cpulist_set(all_cpus, &online);
        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        while (bench_now_ns() < end) {
                DIR *d = opendir(path);
                struct dirent *e;
                char cpus[64];
                cpu_set_t want;

                if (!d)
                        break;
                run_group_cpus(groups[0], cpus, sizeof cpus);
                cpulist_set(cpus, &want);
                CPU_AND(&want, &want, &online);
                while ((e = readdir(d))) {
                        pid_t tid = (pid_t) strtol(e->d_name, NULL, 10);
                        cpu_set_t has;

                        if (tid <= 0 || tid == pid || sched_getaffinity(tid, sizeof has, &has) < 0)
                                continue;
                        seen = true;
                        if (!CPU_EQUAL(&has, &want))
                                (void) sched_setaffinity(tid, sizeof online, &online);
                }
                closedir(d);
                usleep(10 * 1000);
        }
        if (!seen)
                bench_die("cyclictest's measurement thread did not start within a second");
}

/* Polls the groups' CPUs (every 100 ms) and the estimates (every second) until cyclictest is done. */
static void watch(const char *policy, Sample *s) {
        uint64_t start = bench_now_ns(), counted = start + (uint64_t) settle_s * 1000000000ULL;
        uint64_t deadline = counted + ((uint64_t) seconds + 30) * 1000000000ULL, next_metric = counted;
        double e_sum = 0, s_sum = 0;
        unsigned n_metric = 0;
        char prev[3][64];
        bool begun = false;

        for (;;) {
                uint64_t now = bench_now_ns();
                int status;

                if (waitpid(ct_pid, &status, WNOHANG) == ct_pid) {
                        bench_forget_child(ct_pid);
                        ct_pid = 0;
                        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                                bench_die("cyclictest failed (status %d)", status);
                        break;
                }
                if (now > deadline)
                        bench_die("cyclictest did not end within %u s of its duration", 30);
                if (now >= counted) {
                        for (size_t g = 0; g < 3; g++) {
                                char cpus[64];

                                run_group_cpus(groups[g], cpus, sizeof cpus);
                                if (!begun)
                                        snprintf(s->cpus[g], sizeof s->cpus[g], "%s", cpus);
                                else if (strcmp(cpus, prev[g]) != 0)
                                        s->changes++;
                                snprintf(prev[g], sizeof prev[g], "%s", cpus);
                        }
                        begun = true;
                }
                if (strcmp(policy, "none") != 0 && now >= next_metric) {
                        double e, sp;

                        if (run_metric(daemon_.metrics, "peltd_energy_estimate", NULL, &e) &&
                            run_metric(daemon_.metrics, "peltd_energy_estimate_spread", NULL, &sp)) {
                                e_sum += e, s_sum += sp;
                                n_metric++;
                        }
                        next_metric += 1000000000ULL;
                }
                usleep(100 * 1000);
        }
        s->energy = n_metric ? e_sum / n_metric : NAN;
        s->spread = n_metric ? s_sum / n_metric : NAN;
}

static void measure(size_t load, size_t pol, unsigned rep) {
        const char *policy = policies[pol];
        Sample *s = &samples[load][pol][rep];
        char out[128], log[700];

        *s = (Sample){ .energy = NAN, .spread = NAN };
        for (size_t g = 0; g < 3; g++)
                bench_cgroup_create(groups[g]);
        allow_rt_check(groups[0], 10000);
        start_batch(&loads[load]);
        if (strcmp(policy, "power-noguard") == 0)
                run_daemon_start(&daemon_, peltd, tmp, top, "power", "PressureStallMSec=0");
        else if (strcmp(policy, "none") != 0)
                run_daemon_start(&daemon_, peltd, tmp, top, policy, NULL);
        snprintf(out, sizeof out, "%s/cyclictest.out", tmp);
        ct_pid = start_cyclictest(out);
        unpin(ct_pid);
        watch(policy, s);
        if (strcmp(policy, "none") != 0) {
                run_daemon_stop(&daemon_);
                snprintf(log, sizeof log, "%s/%s-%s-%u.peltd.log", outdir, loads[load].name, policy, rep + 1);
                run_copy(daemon_.log, log);
        }
        for (size_t i = 0; i < 2; i++)
                run_end_child(&batch_pid[i], SIGTERM);
        for (size_t g = 3; g-- > 0;)
                bench_cgroup_remove(groups[g]);
        parse_cyclictest(out, (size_t) settle_s * (1000000 / INTERVAL_US), s);
        printf("  run %u %-6s %-11s p50 %5.0f  p99 %6.0f  max %6.0f us (%zu wake-ups); CPUs of lat %s, batch-a %s, batch-b %s",
               rep + 1, loads[load].name, policy, s->p50, s->p99, s->max, s->n, s->cpus[0], s->cpus[1], s->cpus[2]);
        if (s->changes)
                printf(" (%u changes while counted)", s->changes);
        printf("\n");
        fflush(stdout);
}

/* ---- the report -------------------------------------------------------------------------------- */

typedef struct Summary {
        double p50, p99, p99_lo, p99_hi, max, energy, spread;
        unsigned changes;
} Summary;

static Summary summarize(size_t load, size_t pol) {
        double p50[MAX_REPS], p99[MAX_REPS], mx[MAX_REPS], e = 0, sp = 0;
        unsigned n_e = 0;
        Summary r = { .changes = 0 };

        for (unsigned k = 0; k < reps; k++) {
                const Sample *s = &samples[load][pol][k];

                p50[k] = s->p50, p99[k] = s->p99, mx[k] = s->max;
                r.changes += s->changes;
                if (!isnan(s->energy))
                        e += s->energy, sp += s->spread, n_e++;
        }
        r.p50 = bench_median(p50, reps);
        r.p99 = bench_median(p99, reps);
        r.p99_lo = p99[0];
        r.p99_hi = p99[reps - 1];
        r.max = bench_median(mx, reps);
        r.energy = n_e ? e / n_e : NAN;
        r.spread = n_e ? sp / n_e : NAN;
        return r;
}

static void chart(Summary sum[N_LOADS][N_POLICIES]) {
        char dat[600], gp[600];
        FILE *f;

        snprintf(dat, sizeof dat, "%s/latency-p99.dat", outdir);
        snprintf(gp, sizeof gp, "%s/latency-p99.gp", outdir);
        f = fopen(dat, "we");
        if (!f)
                bench_die("writing %s: %s", dat, strerror(errno));
        fprintf(f, "# load, then per policy (none power power-noguard balanced performance): p99 median, lowest, highest (us)\n");
        for (size_t l = 0; l < N_LOADS; l++) {
                fprintf(f, "\"%s: batch %.1f CPUs\"", loads[l].name, 2.0 * loads[l].threads * loads[l].pct / 100);
                for (size_t p = 0; p < N_POLICIES; p++)
                        fprintf(f, " %.0f %.0f %.0f", sum[l][p].p99, sum[l][p].p99_lo, sum[l][p].p99_hi);
                fprintf(f, "\n");
        }
        fclose(f);
        f = fopen(gp, "we");
        if (!f)
                bench_die("writing %s: %s", gp, strerror(errno));
        fprintf(f, "set terminal pngcairo size 900,500 font ',10'\nset output '%s/latency-p99.png'\n", outdir);
        fprintf(f, "set title \"cyclictest wake-up latency p99 beside batch groups, median of %u run%s (bars: range)\" noenhanced\n", reps,
                reps == 1 ? "" : "s");
        fprintf(f, "set ylabel 'p99 wake-up latency (us)'\nset yrange [0:*]\nset grid ytics\nset key top left\n");
        fprintf(f, "set style data histogram\nset style histogram errorbars gap 1 lw 1\nset style fill solid 0.8 border -1\n");
        fprintf(f, "set boxwidth 0.9\nplot '%s' using 2:3:4:xtic(1) title 'no peltd' lc rgb '#7f7f7f'", dat);
        fprintf(f, ", '' using 5:6:7 title 'power' lc rgb '#2ca02c', '' using 8:9:10 title 'power, guard off' lc rgb '#98df8a'");
        fprintf(f, ", '' using 11:12:13 title 'balanced' lc rgb '#1f77b4', '' using 14:15:16 title 'performance' lc rgb '#d62728'\n");
        fclose(f);
        if (run_gnuplot(gp))
                printf("\nchart: %s/latency-p99.png\n", outdir);
}

static void report(void) {
        Summary sum[N_LOADS][N_POLICIES];
        double saving_max = 0, spread_at = 0;

        printf("\nmedians over %u run%s; p99's range in brackets; energy: the daemon's model units, mean while measured\n\n", reps,
               reps == 1 ? "" : "s");
        printf("%-7s %-12s %7s %18s %8s %9s %7s %9s %8s %8s\n", "load", "policy", "p50 us", "p99 us (range)", "max us",
               "p99/none", "changes", "estimate", "spread", "saving");
        for (size_t l = 0; l < N_LOADS; l++)
                for (size_t p = 0; p < N_POLICIES; p++) {
                        Summary *s = &sum[l][p];
                        char range[64], e[32] = "-", sp[32] = "-", sv[32] = "-";

                        *s = summarize(l, p);
                        snprintf(range, sizeof range, "%.0f (%.0f-%.0f)", s->p99, s->p99_lo, s->p99_hi);
                        if (!isnan(s->energy)) {
                                snprintf(e, sizeof e, "%.1f", s->energy);
                                snprintf(sp, sizeof sp, "%.1f", s->spread);
                                snprintf(sv, sizeof sv, "%.1f%%", 100 * (s->spread - s->energy) / s->spread);
                                if (s->spread - s->energy > saving_max)
                                        saving_max = s->spread - s->energy, spread_at = s->spread;
                        }
                        printf("%-7s %-12s %7.0f %18s %8.0f %8.2fx %7u %9s %8s %8s\n", loads[l].name, policies[p], s->p50, range, s->max,
                               s->p99 / sum[l][0].p99, s->changes, e, sp, sv);
                }
        printf("\nchanges: placement changes of the three groups while counted, all runs; CPUs per run in the lines above\n");
        if (n_online <= 2 && run_packages() == 1)
                printf("On this machine (%u CPUs, one package) packing can idle one core at most, so the model's saving is small:\n"
                       "at most %.1f units of %.1f (%.1f%%) here.\n",
                       n_online, saving_max, spread_at, spread_at > 0 ? 100 * saving_max / spread_at : 0.0);
        chart(sum);
}

/* ---- main -------------------------------------------------------------------------------------- */

static _Noreturn void usage(void) {
        fprintf(stderr, "usage: latency PELTD DUTY_CYCLE [--seconds S] [--settle S] [--reps N] [--cyclictest PATH] [--out DIR]\n");
        exit(2);
}

static unsigned parse_count(const char *s, unsigned max) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);

        if (end == s || *end || v < 1 || v > max)
                usage();
        return (unsigned) v;
}

int main(int argc, char *argv[]) {
        if (argc < 3)
                usage();
        peltd = argv[1];
        duty_bin = argv[2];
        for (int i = 3; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (!v)
                        usage();
                else if (strcmp(a, "--seconds") == 0)
                        seconds = parse_count(v, 3600), i++;
                else if (strcmp(a, "--settle") == 0)
                        settle_s = parse_count(v, 600), i++;
                else if (strcmp(a, "--reps") == 0)
                        reps = parse_count(v, MAX_REPS), i++;
                else if (strcmp(a, "--cyclictest") == 0)
                        cyclictest = v, i++;
                else if (strcmp(a, "--out") == 0)
                        outdir = v, i++;
                else
                        usage();
        }
        if (access(peltd, X_OK) < 0 || access(duty_bin, X_OK) < 0)
                bench_die("%s or %s is missing", peltd, duty_bin);
        if (access(cyclictest, X_OK) < 0)
                bench_die("no %s (Debian: rt-tests)", cyclictest);

        run_main_pid = getpid();
        run_machine_lock();
        n_online = run_online_cpus(all_cpus, sizeof all_cpus);
        snprintf(top, sizeof top, "/peltd-bench-latency-%d", (int) getpid());
        snprintf(groups[0], sizeof groups[0], "%s/lat", top);
        snprintf(groups[1], sizeof groups[1], "%s/batch-a", top);
        snprintf(groups[2], sizeof groups[2], "%s/batch-b", top);
        snprintf(tmp, sizeof tmp, "/tmp/peltd-bench-latency-XXXXXX");
        run_setup((const char *[]){ top }, 1, tmp, cleanup, on_signal);
        run_mkdir_p(outdir);
        allow_rt_check(top, 30000);

        printf("latency: peltd %s, %s, CPUs %s (%u package%s); cyclictest -i %u (one SCHED_OTHER thread) in lat beside batch-a\n"
               "and batch-b (duty-cycle, 10 ms periods): light %u thread at %u%% each, medium %u threads at %u%% each;\n"
               "%u s counted after %u s of settling, %u repetitions, policies interleaved\n\n",
               peltd, bench_cgroup_v2() ? "cgroup v2" : "cgroup v1", all_cpus, run_packages(), run_packages() == 1 ? "" : "s",
               INTERVAL_US, loads[0].threads, loads[0].pct, loads[1].threads, loads[1].pct, seconds, settle_s, reps);
        fflush(stdout);
        for (unsigned rep = 0; rep < reps; rep++)
                for (size_t l = 0; l < N_LOADS; l++)
                        for (size_t k = 0; k < N_POLICIES; k++)
                                measure(l, (k + rep + l) % N_POLICIES, rep);
        report();
        return 0;
}
