/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cost of sampling, against a floor measured in the same run.
 *
 *   1. Per thread-sample: 2,000 extra sleeping threads (in a private cgroup). The floor is a loop
 *      that only preads kept-open schedstat fds of every thread on the machine. peltd is
 *      `peltd --once 6 --interval 100`; its CPU time from its 2nd to its 6th second (40 rounds,
 *      start-up and output left out), per thread and round. Target: at most 1.5x the floor.
 *      Peak RSS (`--once 2` and `--once 6`): at most 16 MiB. Then (1', printed, no target) the
 *      same with a busy thread (another process) in the sleepers' group, whose usage counter then
 *      moves every round: the sleepers are left unread by their process's CPU clock alone.
 *   2. Defaults: the same 2,000 threads; the daemon (`peltd --config`, default rates: group rounds
 *      every 100 ms, task rounds every 1000 ms; dry run, managing the private subtree) for 10 s
 *      after its start-up, its CPU time from its threads' schedstat; in the same seconds the floor
 *      preads every schedstat fd, and the mandated reads run, at the task rate. Targets: CPU share
 *      at most 1.5x the floor's and at most 1% of one CPU. libpeltd's sampling alone, run in this
 *      process at the same rates, is printed too.
 *   3. Scale: 20,000 threads in 2,000 cgroups (2,000 processes of 10 threads, one per group, in a
 *      private subtree): `peltd --once 3 --interval 100 --json` with CgroupRoot on the subtree must
 *      succeed and report them all, with each sampling backend; its cost is printed.
 *   4. The metrics file at 100 groups (each a process of 5 sleeping threads, two of them with a
 *      busy thread too): the daemon at the default rates (dry run) for 20 s after its start-up,
 *      the CPU time it counts for its metrics file (peltd_metrics_cpu_seconds_total: taking the
 *      figures, rendering, writing) against its whole CPU time in the same seconds. And, in this
 *      process, a 100-group file rendered and written 200 times: one write's CPU time against
 *      that daemon's CPU time a second. Target: at most 2%, for both, with the file on a tmpfs
 *      as the default /run/peltd is; the same on a disk is printed. (Two daemons side by side,
 *      one with the file and one without, differ by up to 17% of their CPU time with the file
 *      off in both: too coarse for a 2% target.)
 *
 * Each peltd run names its backend (--backend, SamplingBackend=): 1 and 2 run with /proc and, in a
 * build with it, with the BPF task iterator, whose own read of every thread is measured in this
 * process against the floor too (1b; target: at most half the floor), and the ratios bpf / proc
 * printed. The targets of 1 and 2 hold for both backends; peak RSS is a target for /proc only (the
 * BPF sampler's load parses the kernel's BTF, several MiB, and frees it: printed, with the steady RSS).
 *
 * Exit 1 when a target is missed, 2 on setup errors.
 * Usage: sample PELTD [--no-scale] [--only-metrics]
 */
#include <dirent.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/vfs.h>

#include "../tests/lib/machine-lock.h"
#include "bench-util.h"
#include "peltd/config.h"
#include "peltd/log.h"
#include "peltd/metrics.h"
#include "peltd/sample-bpf.h"
#include "peltd/sampling.h"

#define SLEEPERS 2000
#define SCALE_GROUPS 2000
#define SCALE_THREADS_PER_GROUP 10
#define METRICS_GROUPS 100
#define METRICS_SECONDS 20

static char top[64];
static void cleanup(void) {
        bench_kill_children();
        bench_cgroup_remove(top);
}

/* ---- the floor: kept-open schedstat fds of every thread, pread in a loop ----------------------- */

typedef struct Floor {
        int *fds;
        int *stat_fds;               /* for the "mandated reads" reference */
        size_t n;
        char **groups;               /* tasks files of every cgroup in the usage hierarchy */
        size_t n_groups;
} Floor;

static void floor_open(Floor *f) {
        DIR *d = opendir("/proc");
        struct dirent *de;

        *f = (Floor){};
        while ((de = readdir(d))) {
                char path[300];
                DIR *td;
                struct dirent *te;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/%s/task", de->d_name);
                td = opendir(path);
                if (!td)
                        continue;
                while ((te = readdir(td))) {
                        char p2[600];
                        int fd;

                        if (te->d_name[0] < '1' || te->d_name[0] > '9')
                                continue;
                        snprintf(p2, sizeof p2, "/proc/%s/task/%s/schedstat", de->d_name, te->d_name);
                        fd = open(p2, O_RDONLY | O_CLOEXEC);
                        if (fd < 0)
                                continue;
                        f->fds = realloc(f->fds, (f->n + 1) * sizeof *f->fds);
                        f->stat_fds = realloc(f->stat_fds, (f->n + 1) * sizeof *f->stat_fds);
                        f->fds[f->n] = fd;
                        snprintf(p2, sizeof p2, "/proc/%s/task/%s/stat", de->d_name, te->d_name);
                        f->stat_fds[f->n++] = open(p2, O_RDONLY | O_CLOEXEC);
                }
                closedir(td);
        }
        closedir(d);
}

static void floor_round(const Floor *f) {
        char buf[96];

        for (size_t i = 0; i < f->n; i++)
                (void) !pread(f->fds[i], buf, sizeof buf, 0);
}

/* Every cgroup of the usage hierarchy (v1 cpuacct, v2 the unified one), for the reference below. */
static void floor_find_groups(Floor *f, const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return;
        f->groups = realloc(f->groups, (f->n_groups + 1) * sizeof *f->groups);
        if (asprintf(&f->groups[f->n_groups++], "%s/%s", dir, bench_cgroup_v2() ? "cgroup.threads" : "tasks") < 0)
                bench_die("out of memory");
        while ((de = readdir(d))) {
                char *sub;

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                if (asprintf(&sub, "%s/%s", dir, de->d_name) < 0)
                        bench_die("out of memory");
                floor_find_groups(f, sub);
                free(sub);
        }
        closedir(d);
}

/*
 * What the design requires to be read in a task round, and nothing else: every schedstat, every
 * group's membership file (reopened), a tenth of the threads' stat.
 */
static void mandated_round(const Floor *f, unsigned round) {
        static char buf[1 << 20];

        floor_round(f);
        for (size_t i = 0; i < f->n; i++)
                if (i % 10 == round % 10 && f->stat_fds[i] >= 0)
                        (void) !pread(f->stat_fds[i], buf, 1024, 0);
        for (size_t i = 0; i < f->n_groups; i++) {
                int fd = open(f->groups[i], O_RDONLY | O_CLOEXEC);

                if (fd < 0)
                        continue;
                while (read(fd, buf, sizeof buf) > 0)
                        ;
                close(fd);
        }
}

static void floor_close(Floor *f) {
        for (size_t i = 0; i < f->n; i++) {
                close(f->fds[i]);
                if (f->stat_fds[i] >= 0)
                        close(f->stat_fds[i]);
        }
        for (size_t i = 0; i < f->n_groups; i++)
                free(f->groups[i]);
        free(f->groups);
        free(f->fds);
        free(f->stat_fds);
}

/*
 * The references' rounds, timed in this thread's CPU time: the floor's at floor_at, the mandated
 * reads' at mandated_at (absolute, CLOCK_MONOTONIC); adds their CPU time to *flr and *mandated.
 */
static void reference_round(const Floor *f, uint64_t floor_at, uint64_t mandated_at, unsigned round, uint64_t *flr,
                            uint64_t *mandated) {
        uint64_t cpu0;

        bench_sleep_until_ns(floor_at);
        cpu0 = bench_thread_cpu_ns();
        floor_round(f);
        *flr += bench_thread_cpu_ns() - cpu0;
        bench_sleep_until_ns(mandated_at);
        cpu0 = bench_thread_cpu_ns();
        mandated_round(f, round);
        *mandated += bench_thread_cpu_ns() - cpu0;
}

/* ---- peltd runs -------------------------------------------------------------------------------- */

typedef struct Run {
        double cpu_s;
        long maxrss_kib;
        unsigned rounds;
        size_t tasks, groups;
} Run;

static Run run_peltd(const char *peltd, const char *conf, const char *seconds, const char *backend) {
        char *argv[] = { (char *) peltd, "--config", (char *) conf, "--once", (char *) seconds, "--interval", "100",
                         "--backend", (char *) backend, "--json", NULL };
        struct rusage ru;
        char *out;
        json_object *root, *v;
        Run r = {};
        int status = bench_run(argv, &out, &ru);

        if (status != 0)
                bench_die("peltd --once %s exited with %d", seconds, status);
        root = json_tokener_parse(out);
        if (!root)
                bench_die("peltd's output is not JSON");
        r.cpu_s = bench_tv_sec(ru.ru_utime) + bench_tv_sec(ru.ru_stime);
        r.maxrss_kib = ru.ru_maxrss;
        if (json_object_object_get_ex(root, "rounds", &v))
                r.rounds = (unsigned) json_object_get_int(v);
        if (json_object_object_get_ex(root, "tasks", &v))
                r.tasks = json_object_array_length(v);
        if (json_object_object_get_ex(root, "groups", &v))
                r.groups = json_object_array_length(v);
        json_object_put(root);
        free(out);
        return r;
}

static size_t count_threads(void) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        size_t n = 0;

        while ((de = readdir(d))) {
                char path[300];
                DIR *td;
                struct dirent *te;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/%s/task", de->d_name);
                td = opendir(path);
                if (!td)
                        continue;
                while ((te = readdir(td)))
                        n += te->d_name[0] >= '1' && te->d_name[0] <= '9';
                closedir(td);
        }
        closedir(d);
        return n;
}

static char *write_conf(const char *cgroup_root) {
        static char path[64];
        int fd;
        FILE *f;

        snprintf(path, sizeof path, "/tmp/peltd-bench-sample-XXXXXX");
        fd = mkstemp(path);
        if (fd < 0)
                bench_die("mkstemp: %s", strerror(errno));
        f = fdopen(fd, "w");
        fprintf(f, "[Daemon]\nCgroupRoot=%s\n", cgroup_root);
        fclose(f);
        return path;
}

/* ---- 2: the defaults, in process ------------------------------------------------------------- */

/* The BPF sampler, loaded (its load logged), or NULL for /proc. */
static BpfSampler *bpf_sampler(const CgroupFs *fs, bool bpf) {
        _cleanup_rootdir_ RootDir *root = NULL;
        BpfSampler *b = NULL;

        if (bpf && (rootdir_open("/", &root) < 0 ||
                    sampling_open_backend(root, fs->mode, SAMPLING_BACKEND_BPF, "SamplingBackend=", &b) < 0))
                bench_die("the BPF sampler does not load");
        return b;
}

static void defaults(bool bpf, double *ret_peltd_share, double *ret_floor_share, double *ret_mandated_share, unsigned seconds) {
        _cleanup_config_ Config *config = NULL;
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_rootdir_ RootDir *proc = NULL;
        _cleanup_sampling_ Sampling *s = NULL;
        unsigned capacity[2] = { 1024, 1024 };
        uint64_t start, cpu0, group_ns, task_every;
        Floor f;

        if (config_new_default(&config) < 0 || cgroup_fs_open_system(&fs) < 0 || rootdir_open("/proc", &proc) < 0)
                bench_die("setting up libpeltd");
        group_ns = config->sample_interval_usec * 1000;
        task_every = config->task_sample_interval_usec / config->sample_interval_usec;
        if (sampling_new(proc, fs, config,
                         &(SamplingOptions){ .task_tracking = true, .netlink = true, .process_clocks = true, .capacity = capacity,
                                             .n_capacity = 2, .bpf = bpf_sampler(fs, bpf) },
                         &s) < 0)
                bench_die("sampling_new");

        /*
         * Start-up (opening every fd) is not part of the steady state: one task round first. Then
         * peltd's rounds, the floor's and the mandated reads' interleave over the same seconds
         * (peltd's task round at the top of each second, the floor a third of a second later, the
         * mandated reads two thirds): the machine's other work weighs on all three alike.
         */
        floor_open(&f);
        floor_find_groups(&f, bench_cgroup_v2() ? BENCH_CG_V2 : BENCH_CG_V1 "/cpuacct");
        start = bench_now_ns();
        if (sampling_round(s, start, true) < 0)
                bench_die("sampling_round");
        {
                uint64_t peltd = 0, flr = 0, mandated = 0, third = task_every * group_ns / 3;

                for (uint64_t k = 1; k <= seconds * task_every; k++) {
                        bench_sleep_until_ns(start + k * group_ns);
                        cpu0 = bench_thread_cpu_ns();
                        if (sampling_round(s, bench_now_ns(), k % task_every == 0) < 0)
                                bench_die("sampling_round");
                        peltd += bench_thread_cpu_ns() - cpu0;
                        if (k % task_every == 0 && k < seconds * task_every) {
                                uint64_t at = start + k * group_ns;

                                reference_round(&f, at + third, at + 2 * third, (unsigned) (k / task_every), &flr, &mandated);
                        }
                }
                /* The last second's floor and mandated rounds: once more, so each counts `seconds` rounds. */
                cpu0 = bench_thread_cpu_ns();
                floor_round(&f);
                flr += bench_thread_cpu_ns() - cpu0;
                bench_sleep_until_ns(bench_now_ns() + third);
                cpu0 = bench_thread_cpu_ns();
                mandated_round(&f, 0);
                mandated += bench_thread_cpu_ns() - cpu0;

                *ret_peltd_share = (double) peltd / ((double) seconds * 1e9);
                *ret_floor_share = (double) flr / ((double) seconds * 1e9);
                *ret_mandated_share = (double) mandated / ((double) seconds * 1e9);
        }
        floor_close(&f);
}

/* peltd with argv, its stdout (and stderr when quiet) on /dev/null; dies with this process. */
static pid_t spawn_peltd(char *const argv[], bool quiet) {
        pid_t pid = fork();

        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                prctl(PR_SET_PDEATHSIG, SIGTERM);
                dup2(null, STDOUT_FILENO);
                if (quiet)
                        dup2(null, STDERR_FILENO);
                execv(argv[0], argv);
                _exit(127);
        }
        return pid;
}

/* CPU time of every thread of a process, from their schedstat (ns). */
static uint64_t process_run_ns(pid_t pid) {
        char path[64];
        DIR *d;
        struct dirent *de;
        uint64_t sum = 0;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                bench_die("peltd (%d) is gone", (int) pid);
        while ((de = readdir(d))) {
                char p2[300];
                unsigned long long run;
                FILE *f;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(p2, sizeof p2, "/proc/%d/task/%s/schedstat", (int) pid, de->d_name);
                f = fopen(p2, "re");
                if (f && fscanf(f, "%llu", &run) == 1)
                        sum += run;
                if (f)
                        fclose(f);
        }
        closedir(d);
        return sum;
}

/* A process's resident set now (VmRSS), in KiB. */
static long process_rss_kib(pid_t pid) {
        char path[64], line[256];
        long kib = -1;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                bench_die("peltd (%d) is gone", (int) pid);
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
                        break;
        fclose(f);
        return kib;
}

/*
 * 2'. The daemon itself at the default rates (dry run, managing the private subtree), its CPU time
 * over `seconds` against the floor's and the mandated reads' at the same rates, in the same seconds.
 */
static void defaults_daemon(const char *peltd, const char *backend, double *ret_peltd_share, double *ret_floor_share,
                            double *ret_mandated_share, long *ret_rss_kib, unsigned seconds) {
        char conf[] = "/tmp/peltd-bench-daemon-XXXXXX", state[128];
        uint64_t start, run0, flr = 0, mandated = 0;
        Floor f;
        pid_t pid;
        int fd;
        FILE *cf;

        fd = mkstemp(conf);
        if (fd < 0)
                bench_die("mkstemp: %s", strerror(errno));
        snprintf(state, sizeof state, "%s.state", conf);
        cf = fdopen(fd, "w");
        /* Defaults but for where it looks and that it writes nothing: every interval and rate is the default. */
        fprintf(cf, "[Daemon]\nCgroupRoot=%s\nStateFile=%s/originals\nDryRun=yes\nTaskTracking=yes\nMetricsFile=\nSamplingBackend=%s\n", top,
                state, backend);
        fclose(cf);
        if (mkdir(state, 0700) < 0)
                bench_die("mkdir %s: %s", state, strerror(errno));

        pid = spawn_peltd((char *[]){ (char *) peltd, "--config", conf, NULL }, true);
        bench_add_child(pid);

        /* Its start-up (a descriptor per thread, the first rounds) is not the steady state. */
        floor_open(&f);
        floor_find_groups(&f, bench_cgroup_v2() ? BENCH_CG_V2 : BENCH_CG_V1 "/cpuacct");
        usleep(2500 * 1000);

        start = bench_now_ns();
        run0 = process_run_ns(pid);
        for (unsigned k = 0; k < seconds; k++) {
                uint64_t at = start + (uint64_t) k * 1000000000ULL;

                reference_round(&f, at + 333 * 1000 * 1000, at + 666 * 1000 * 1000, k, &flr, &mandated);
        }
        bench_sleep_until_ns(start + (uint64_t) seconds * 1000000000ULL);
        *ret_peltd_share = (double) (process_run_ns(pid) - run0) / (double) (bench_now_ns() - start);
        *ret_floor_share = (double) flr / ((double) seconds * 1e9);
        *ret_mandated_share = (double) mandated / ((double) seconds * 1e9);
        *ret_rss_kib = process_rss_kib(pid);
        floor_close(&f);

        bench_stop_child(pid, SIGTERM);
        unlink(conf);
        bench_rm_rf(state);
}

/*
 * 1. Per thread-sample. `peltd --once 6 --interval 100` runs; from its 2nd to its 6th second (40
 * rounds, start-up and output left out) its CPU time is read from its threads' schedstat. In the
 * same seconds, at the same cadence, this process does the floor's round a third of the way into
 * each of peltd's 100 ms and the mandated reads two thirds in: the machine's other work weighs on
 * all three alike. Per thread and round, in ns.
 */
static void once_steady(const char *peltd, const char *conf, const char *backend, size_t threads, double *ret_floor_ns,
                        double *ret_mandated_ns, double *ret_peltd_ns, Run *ret_run) {
        char *pargv[] = { (char *) peltd, "--config", (char *) conf, "--once", "6", "--interval", "100",
                          "--backend", (char *) backend, "--json", NULL };
        uint64_t start, run0, run1, flr = 0, mandated = 0;
        struct rusage ru;
        int status;
        pid_t pid;
        Floor f;

        floor_open(&f);
        floor_find_groups(&f, bench_cgroup_v2() ? BENCH_CG_V2 : BENCH_CG_V1 "/cpuacct");
        pid = spawn_peltd(pargv, false);
        start = bench_now_ns();
        bench_sleep_until_ns(start + 2000ULL * 1000 * 1000);
        run0 = process_run_ns(pid);
        for (uint64_t i = 0; i < 40; i++) {
                uint64_t at = start + 2000ULL * 1000 * 1000 + i * 100 * 1000 * 1000;

                reference_round(&f, at + 33 * 1000 * 1000, at + 66 * 1000 * 1000, (unsigned) i, &flr, &mandated);
        }
        bench_sleep_until_ns(start + 6000ULL * 1000 * 1000);
        run1 = process_run_ns(pid);
        if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                bench_die("peltd --once 6 failed");
        *ret_floor_ns = (double) flr / (40.0 * (double) f.n);
        *ret_mandated_ns = (double) mandated / (40.0 * (double) f.n);
        *ret_peltd_ns = (double) (run1 - run0) / (40.0 * (double) threads);
        *ret_run = (Run){ .cpu_s = bench_tv_sec(ru.ru_utime) + bench_tv_sec(ru.ru_stime), .maxrss_kib = ru.ru_maxrss, .rounds = 60 };
        floor_close(&f);
}

/*
 * 1b. The BPF sampler's read of every thread, in this process, against the floor in the same
 * seconds: 40 rounds 100 ms apart, the floor a third of the way into each. Per thread read, in ns;
 * *ret_threads: how many one read gave.
 */
static void bpf_read_steady(double *ret_floor_ns, double *ret_bpf_ns, size_t *ret_threads) {
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_(bpf_sampler_freep) BpfSampler *b = NULL;
        const ProcThreadSample *v;
        uint64_t start, cpu0, flr = 0, bpf = 0;
        size_t n = 0, reads = 0;
        Floor f;

        if (cgroup_fs_open_system(&fs) < 0)
                bench_die("setting up libpeltd");
        b = bpf_sampler(fs, true);
        floor_open(&f);
        start = bench_now_ns();
        for (uint64_t i = 0; i < 40; i++) {
                uint64_t at = start + (i + 1) * 100 * 1000 * 1000;

                bench_sleep_until_ns(at);
                cpu0 = bench_thread_cpu_ns();
                if (bpf_sampler_read(b, &v, &n) < 0)
                        bench_die("reading the BPF task iterator");
                bpf += bench_thread_cpu_ns() - cpu0;
                reads += n;
                bench_sleep_until_ns(at + 33 * 1000 * 1000);
                cpu0 = bench_thread_cpu_ns();
                floor_round(&f);
                flr += bench_thread_cpu_ns() - cpu0;
        }
        *ret_floor_ns = (double) flr / (40.0 * (double) f.n);
        *ret_bpf_ns = (double) bpf / (double) reads;
        *ret_threads = reads / 40;
        floor_close(&f);
}

/* A process with one thread busy 20% of every 3.1 ms, in group. */
static void spawn_busy(const char *group) {
        bench_spawn_duty(group, NULL, 0, 3100 * 1000, 620 * 1000);
}

/* ---- 4: the metrics file ---------------------------------------------------------------------- */

/* A dry-run daemon at the default rates on top, its metrics file at metrics ("" for none). */
static pid_t spawn_metrics_daemon(const char *peltd, const char *name, const char *metrics, char *conf, size_t size) {
        char state[160];
        FILE *f;

        snprintf(conf, size, "/tmp/peltd-bench-%s-%d.conf", name, (int) getpid());
        snprintf(state, sizeof state, "/tmp/peltd-bench-%s-%d.state", name, (int) getpid());
        if (mkdir(state, 0700) < 0)
                bench_die("mkdir %s: %s", state, strerror(errno));
        f = fopen(conf, "we");
        if (!f)
                bench_die("%s: %s", conf, strerror(errno));
        fprintf(f, "[Daemon]\nCgroupRoot=%s\nStateFile=%s/originals\nMetricsFile=%s\nDryRun=yes\n", top, state, metrics);
        fclose(f);
        return spawn_peltd((char *[]){ (char *) peltd, "--config", conf, NULL }, true);
}

static void remove_metrics_daemon_files(const char *conf) {
        char cmd[400];

        snprintf(cmd, sizeof cmd, "rm -rf '%.*s.state' '%s'", (int) (strlen(conf) - 5), conf, conf);
        (void) !system(cmd);
}

/* The value of a sample in a metrics file (name as written, labels and all), or -1. */
static double metrics_value(const char *path, const char *name) {
        FILE *f = fopen(path, "re");
        char line[512];
        double v = -1;

        while (f && fgets(line, sizeof line, f))
                if (strneq(line, name, strlen(name)) && line[strlen(name)] == ' ')
                        v = strtod(line + strlen(name) + 1, NULL);
        if (f)
                fclose(f);
        return v;
}

/* ns of this thread's CPU time a render + write of a 100-group file costs, averaged over n. */
static double render_write_ns(const char *dir, unsigned n) {
        MetricsGroup groups[METRICS_GROUPS];
        char paths[METRICS_GROUPS][96], file[128];
        uint64_t cpu0;

        for (unsigned i = 0; i < METRICS_GROUPS; i++) {
                snprintf(paths[i], sizeof paths[i], "%s/g%03u", top, i);
                /* Values of every width: fractions of a CPU, shares, counters in the thousands. */
                groups[i] = (MetricsGroup){ .path = paths[i], .util = 37 * i + 5, .runnable = 41 * i + 7, .load = 1024 + i,
                                            .cpus = 1 + (int) (i % 2), .shares = 1024, .placement_changes = i,
                                            .throttled_ns = 1234567891ULL * i };
        }
        /* Beside the daemon's file, not in its way. */
        snprintf(file, sizeof file, "%s/alone.prom", dir);
        cpu0 = bench_thread_cpu_ns();
        for (unsigned k = 0; k < n; k++) {
                MetricsSnapshot s = { .version = "0.1.0", .policy = "balanced", .group_rounds = 9000 + k, .task_rounds = 1000 + k,
                                      .threads_tracked = 2345, .groups_managed = METRICS_GROUPS, .sampling_cpu_ns = 123456789ULL * k,
                                      .energy_estimate = 123.456 + k, .energy_estimate_spread = 234.567 + k, .groups = groups,
                                      .n_groups = METRICS_GROUPS };
                char *text;
                size_t size;

                if (metrics_render(&s, &text, &size) < 0 || metrics_write_file(file, text, size, NULL) < 0)
                        bench_die("rendering or writing %s", file);
                free(text);
        }
        return (double) (bench_thread_cpu_ns() - cpu0) / n;
}

typedef struct MetricsRun {
        double daemon_s;             /* the daemon's CPU time a second */
        double metrics_s;            /* what it counted for its metrics file, a second */
        double per_write_ns;         /* a render + write alone, in this process */
        double rounds, groups;
} MetricsRun;

/*
 * The daemon at the default rates (dry run) on top, its metrics file in a new directory under base.
 * Its start-up (a descriptor per thread, the first rounds, the groups' first second) is not the
 * steady state: then its CPU time over METRICS_SECONDS, and what it counted for the file in the
 * same seconds (the file's counter runs up to the write before it: a second behind at both ends).
 */
static MetricsRun metrics_run(const char *peltd, const char *base) {
        char dir[128], file[160], conf[128];
        uint64_t run0, run1, start;
        double m0, m1, rounds0;
        MetricsRun r = {};
        pid_t pid;

        snprintf(dir, sizeof dir, "%s/peltd-bench-metrics-XXXXXX", base);
        if (!mkdtemp(dir))
                bench_die("mkdtemp %s: %s", dir, strerror(errno));
        snprintf(file, sizeof file, "%s/peltd.prom", dir);
        pid = spawn_metrics_daemon(peltd, "metrics", file, conf, sizeof conf);
        bench_add_child(pid);

        usleep(3000 * 1000);
        start = bench_now_ns();
        run0 = process_run_ns(pid);
        m0 = metrics_value(file, "peltd_metrics_cpu_seconds_total");
        rounds0 = metrics_value(file, "peltd_rounds_total{kind=\"group\"}") + metrics_value(file, "peltd_rounds_total{kind=\"task\"}");
        bench_sleep_until_ns(start + METRICS_SECONDS * 1000000000ULL);
        run1 = process_run_ns(pid);
        m1 = metrics_value(file, "peltd_metrics_cpu_seconds_total");
        r.rounds = metrics_value(file, "peltd_rounds_total{kind=\"group\"}") + metrics_value(file, "peltd_rounds_total{kind=\"task\"}") -
                   rounds0;
        r.groups = metrics_value(file, "peltd_groups_managed");
        if (m0 < 0 || m1 < 0)
                bench_die("%s holds no peltd_metrics_cpu_seconds_total", file);
        r.daemon_s = (double) (run1 - run0) / 1e9 / METRICS_SECONDS;
        r.metrics_s = (m1 - m0) / METRICS_SECONDS;

        /* The same work alone in this thread, on made-up values, in the same directory: 200 writes. */
        r.per_write_ns = render_write_ns(dir, 200);

        bench_stop_child(pid, SIGTERM);
        remove_metrics_daemon_files(conf);
        bench_rm_rf(dir);
        return r;
}

/* Prints a run; returns whether it missed a target (target: whether it has one). */
static bool print_metrics_run(const char *where, const MetricsRun *r, bool target) {
        const char *t = target ? "(target <= 2%)" : "(no target)";

        printf("%s: %.0f groups in the file, %.0f rounds\n", where, r->groups, r->rounds);
        printf("the daemon            all of it                %7.3f%% of one CPU\n", r->daemon_s * 100);
        printf("                      its metrics file         %7.4f%% of one CPU   %.2f%% of the daemon's CPU %s\n",
               r->metrics_s * 100, r->metrics_s / r->daemon_s * 100, t);
        printf("render + write alone  once a second            %7.1f us a write      %.2f%% of the daemon's CPU %s\n",
               r->per_write_ns / 1e3, r->per_write_ns / 1e9 / r->daemon_s * 100, t);
        return target && (r->metrics_s > 0.02 * r->daemon_s || r->per_write_ns / 1e9 > 0.02 * r->daemon_s ||
                          r->groups != METRICS_GROUPS);
}

/*
 * Returns whether a target was missed. The target holds where the default MetricsFile= lives,
 * /run/peltd, a tmpfs wherever systemd runs (/dev/shm stands in for it: this machine's /run is on
 * its disk). On a disk file system (ext4 here) creating, renaming and freeing a 48 KiB file costs
 * several times as much, and varies with what else writes to that disk: printed, no target.
 */
static bool metrics_cost(const char *peltd) {
        char group[128];
        struct statfs sfs;
        MetricsRun tmpfs, disk;
        bool missed;

        if (statfs("/dev/shm", &sfs) < 0 || (uint64_t) sfs.f_type != (uint64_t) TMPFS_MAGIC)
                bench_die("/dev/shm is not a tmpfs");
        bench_cgroup_create(top);
        for (int i = 0; i < METRICS_GROUPS; i++) {
                snprintf(group, sizeof group, "%s/g%03d", top, i);
                bench_cgroup_create(group);
                bench_spawn_sleepers(group, NULL, 5);
                if (i < 2)
                        spawn_busy(group);
        }

        tmpfs = metrics_run(peltd, "/dev/shm");
        disk = metrics_run(peltd, "/tmp");
        printf("\nmetrics file, %d groups, default rates, dry run, %d s after start-up\n", METRICS_GROUPS, METRICS_SECONDS);
        missed = print_metrics_run("on a tmpfs (/dev/shm, as /run)", &tmpfs, true);
        (void) print_metrics_run("on a disk (/tmp)", &disk, false);
        cleanup();
        return missed;
}

/* Prints a defaults run's shares of one CPU; returns whether peltd missed a target. */
static bool print_defaults(const char *what, const char *peltd_label, double peltd_share, double floor_share,
                           double mandated_share) {
        printf("%-22s%-25s%7.3f%% of one CPU\n", what, "floor", floor_share * 100);
        printf("%-22s%-25s%7.3f%% of one CPU   %.2fx floor\n", "", "every thread read", mandated_share * 100,
               mandated_share / floor_share);
        printf("%-22s%-25s%7.3f%% of one CPU   %.2fx floor (targets <= 1.5x, <= 1%%)\n", "", peltd_label,
               peltd_share * 100, peltd_share / floor_share);
        return peltd_share > 1.5 * floor_share || peltd_share > 0.01;
}

/* The backends to run: /proc, and the BPF task iterator where this build has it. */
static const char *const backends[] = { "proc", "bpf" };
#define N_BACKENDS (bpf_sampler_built() ? 2 : 1)

/* 1. Per thread-sample and peak RSS, with one backend; returns whether a target was missed. */
static bool per_thread(const char *peltd, const char *conf, const char *backend, size_t threads, double *ret_peltd_ns) {
        double floor_ns, mandated_ns, peltd_ns, whole_ns;
        bool proc = streq(backend, "proc");
        Run r2, r6;

        once_steady(peltd, conf, backend, threads, &floor_ns, &mandated_ns, &peltd_ns, &r6);
        r2 = run_peltd(peltd, conf, "2", backend);
        whole_ns = r6.cpu_s * 1e9 / ((double) threads * (double) (r6.rounds + 1));

        printf("--backend %-4s        floor (pread kept fds)   %7.0f ns   (every 100 ms, in the same seconds as peltd)\n", backend,
               floor_ns);
        printf("                      every thread read        %7.0f ns   %.2fx floor (schedstat, a tenth of stat, every tasks file)\n",
               mandated_ns, mandated_ns / floor_ns);
        printf("                      peltd, steady state      %7.0f ns   %.2fx floor (target <= 1.5x), %.2fx the every-thread reads\n",
               peltd_ns, peltd_ns / floor_ns, peltd_ns / mandated_ns);
        printf("                      peltd, whole 6 s run     %7.0f ns   %.2fx floor (start-up and JSON output included)\n", whole_ns,
               whole_ns / floor_ns);
        printf("peak RSS              peltd --once 2           %7.1f MiB  %s; --once 6: %.1f MiB\n", (double) r2.maxrss_kib / 1024,
               proc ? "(target <= 16 MiB)" : "(no target: the kernel's BTF parsed at load)", (double) r6.maxrss_kib / 1024);
        *ret_peltd_ns = peltd_ns;
        return peltd_ns > 1.5 * floor_ns || (proc && (r2.maxrss_kib > 16 * 1024 || r6.maxrss_kib > 16 * 1024));
}

int main(int argc, char *argv[]) {
        bool scale = true, only_metrics = false;
        char group[128], *conf;
        size_t threads;
        double floor_ns, mandated_ns, peltd_ns[2] = {}, peltd_share, floor_share, mandated_share, daemon_share[2] = {};
        Run r6;
        int failed = 0;
        struct rlimit rl = { 1 << 20, 1 << 20 };

        if (argc < 2)
                bench_die("usage: sample PELTD [--no-scale] [--only-metrics]");
        for (int i = 2; i < argc; i++) {
                if (streq(argv[i], "--no-scale"))
                        scale = false;
                else if (streq(argv[i], "--only-metrics"))
                        only_metrics = true;
                else
                        bench_die("unknown option %s; usage: sample PELTD [--no-scale] [--only-metrics]", argv[i]);
        }
        machine_lock();
        (void) setrlimit(RLIMIT_NOFILE, &rl);
        log_set_max_level(LOG_WARNING);
        snprintf(top, sizeof top, "/peltd-bench-%d", (int) getpid());
        atexit(cleanup);
        signal(SIGINT, exit);
        signal(SIGTERM, exit);

        if (only_metrics) {
                failed = metrics_cost(argv[1]);
                printf("\n%s\n", failed ? "FAIL" : "PASS");
                return failed;
        }

        bench_cgroup_create(top);
        snprintf(group, sizeof group, "%s/sleepers", top);
        bench_cgroup_create(group);
        bench_spawn_sleepers(group, NULL, SLEEPERS);
        threads = count_threads();
        conf = write_conf(top);

        /* 1. Per thread-sample, each backend. */
        printf("sample: %zu threads on the machine (%d sleeping extra)\n\n", threads, SLEEPERS);
        for (int b = 0; b < N_BACKENDS; b++)
                if (per_thread(argv[1], conf, backends[b], threads, &peltd_ns[b]))
                        failed = 1;
        if (N_BACKENDS == 2)
                printf("bpf / proc            peltd, steady state      %7.2fx\n", peltd_ns[1] / peltd_ns[0]);

        /* 1b. The BPF sampler's own read of every thread against the floor. */
        if (bpf_sampler_built()) {
                double bpf_ns;
                size_t n;

                bpf_read_steady(&floor_ns, &bpf_ns, &n);
                printf("\nthe BPF task iterator's read of every thread (%zu a read, 40 reads 100 ms apart, in this process)\n", n);
                printf("per thread            floor (pread kept fds)   %7.0f ns\n", floor_ns);
                printf("                      BPF read                 %7.0f ns   %.3fx floor, %.1fx cheaper (target <= 0.5x)\n", bpf_ns,
                       bpf_ns / floor_ns, floor_ns / bpf_ns);
                if (bpf_ns > 0.5 * floor_ns)
                        failed = 1;
        }

        /* 2. Defaults: libpeltd's sampling alone in this process, and the daemon itself, each backend. */
        printf("\ndefaults (groups every 100 ms, tasks every 1000 ms, 10 s each)\n");
        for (int b = 0; b < N_BACKENDS; b++) {
                char what[64];

                defaults(b == 1, &peltd_share, &floor_share, &mandated_share, 10);
                snprintf(what, sizeof what, "sampling alone, %s", backends[b]);
                if (print_defaults(what, "peltd's sampling", peltd_share, floor_share, mandated_share))
                        failed = 1;
        }
        for (int b = 0; b < N_BACKENDS; b++) {
                char what[64];
                long rss;

                defaults_daemon(argv[1], backends[b], &daemon_share[b], &floor_share, &mandated_share, &rss, 10);
                snprintf(what, sizeof what, "the daemon, %s", backends[b]);
                if (print_defaults(what, "peltd (dry run)", daemon_share[b], floor_share, mandated_share))
                        failed = 1;
                printf("%-22s%-25s%7.1f MiB\n", "", "its RSS, steady", (double) rss / 1024);
        }
        if (N_BACKENDS == 2)
                printf("bpf / proc            the daemon's CPU share   %7.2fx\n", daemon_share[1] / daemon_share[0]);

        /*
         * 1'. The sleepers' group is never idle once a busy thread shares it: its usage counter moves
         * every round, and only their process's CPU clock tells that they did not run. No target.
         */
        spawn_busy(group);
        threads = count_threads();
        printf("\nsleepers sharing their group with a busy thread of another process (no target)\n");
        for (int b = 0; b < N_BACKENDS; b++) {
                once_steady(argv[1], conf, backends[b], threads, &floor_ns, &mandated_ns, &peltd_ns[b], &r6);
                printf("--backend %-4s        floor                    %7.0f ns\n", backends[b], floor_ns);
                printf("                      every thread read        %7.0f ns   %.2fx floor\n", mandated_ns, mandated_ns / floor_ns);
                printf("                      peltd, steady state      %7.0f ns   %.2fx floor, %.2fx the every-thread reads\n",
                       peltd_ns[b], peltd_ns[b] / floor_ns, peltd_ns[b] / mandated_ns);
        }
        if (N_BACKENDS == 2)
                printf("bpf / proc            peltd, steady state      %7.2fx\n", peltd_ns[1] / peltd_ns[0]);

        cleanup();

        /* 3. Scale. */
        if (scale) {
                uint64_t t0 = bench_now_ns();

                bench_cgroup_create(top);
                for (int i = 0; i < SCALE_GROUPS; i++) {
                        snprintf(group, sizeof group, "%s/g%04d", top, i);
                        bench_cgroup_create(group);
                        bench_spawn_sleepers(group, NULL, SCALE_THREADS_PER_GROUP);
                }
                threads = count_threads();
                printf("\nscale: %zu threads, %d groups (set up in %.1f s)\n", threads, SCALE_GROUPS, (double) (bench_now_ns() - t0) / 1e9);
                for (int b = 0; b < N_BACKENDS; b++) {
                        Run rs = run_peltd(argv[1], conf, "3", backends[b]);

                        printf("peltd --once 3 --interval 100 --backend %s: %u rounds, %zu tasks, %zu groups reported, %.2f s CPU (%.1f ms a round, %.0f ns a thread-sample with start-up), peak RSS %.1f MiB\n",
                               backends[b], rs.rounds, rs.tasks, rs.groups, rs.cpu_s, rs.cpu_s * 1e3 / (rs.rounds + 1),
                               rs.cpu_s * 1e9 / ((double) threads * (rs.rounds + 1)), (double) rs.maxrss_kib / 1024);
                        if (rs.tasks < (size_t) SCALE_GROUPS * SCALE_THREADS_PER_GROUP || rs.groups != SCALE_GROUPS) {
                                printf("scale run did not report every thread and group\n");
                                failed = 1;
                        }
                }
                cleanup();
        }
        unlink(conf);

        /* 4. The metrics file. */
        if (metrics_cost(argv[1]))
                failed = 1;

        printf("\n%s\n", failed ? "FAIL" : "PASS");
        return failed;
}
