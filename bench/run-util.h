/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What bench/loop and bench/latency share: the machine lock, a guard process that removes their
 * cgroups and scratch directory however they end (SIGKILL included), peltd started on a private
 * subtree with a metrics file of its own, that file read, programs run in a group, the files the
 * control loop acts on read, and gnuplot.
 */
#include <ctype.h>
#include <math.h>
#include <sys/file.h>

#include "bench-util.h"

/* The lock tests/lib/machine-lock.h and machine-lock.sh take: one real-machine run at a time. */
#define RUN_LOCK_PATH "/run/lock/peltd-tests.lock"

/* The process that owns the cleanup: a forked child that exits never runs it. */
static pid_t run_main_pid;

static inline bool run_is_main(void) {
        return getpid() == run_main_pid;
}

/* Takes the machine lock for the life of the process; says so when it has to wait. */
static inline void run_machine_lock(void) {
        int fd = open(RUN_LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

        if (fd < 0)
                bench_die("open %s: %s", RUN_LOCK_PATH, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                return;
        fprintf(stderr, "bench: waiting for the machine lock (%s: a test or benchmark runs)\n", RUN_LOCK_PATH);
        if (flock(fd, LOCK_EX) < 0)
                bench_die("flock %s: %s", RUN_LOCK_PATH, strerror(errno));
}

/*
 * Ends whatever still runs in the groups below top (every hierarchy) and removes them. Only
 * processes in the bench's own private groups are ended.
 */
static inline void run_cgroup_purge(const char *top) {
        const char *h[3];
        int n = bench_hierarchies(h);
        char cmd[1024];

        for (int i = 0; i < n; i++) {
                snprintf(cmd, sizeof cmd,
                         "find '%s%s' -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null", h[i], top);
                (void) !system(cmd);
        }
        bench_cgroup_remove(top);
}

/*
 * A process of its own session (out of reach of Ctrl-C and of a kill of the process group) that
 * waits until this process is gone, however it ended, and then purges the groups below each of
 * tops[0..n) and removes dir. After a normal exit it finds nothing left and just exits.
 */
static inline void run_guard(const char *const *tops, size_t n, const char *dir) {
        int p[2];
        pid_t pid;
        char c;

        if (pipe2(p, O_CLOEXEC) < 0)
                bench_die("pipe: %s", strerror(errno));
        pid = fork();
        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid > 0) {
                close(p[0]);
                return; /* p[1] stays open (close-on-exec) until this process is gone */
        }
        setsid();
        close(p[1]);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        while (read(p[0], &c, 1) < 0 && errno == EINTR)
                ;
        for (size_t i = 0; i < n; i++)
                run_cgroup_purge(tops[i]);
        bench_rm_rf(dir);
        _exit(0);
}

/*
 * What a bench's start shares: its scratch directory (tmp, a "/tmp/NAME-XXXXXX" template, made),
 * the guard over tops[0..n) and tmp, cleanup at exit and on SIGINT, SIGTERM and SIGHUP (on_signal),
 * SIGPIPE ignored, and the subtrees made with the largest CPU weight.
 */
static inline void run_setup(const char *const *tops, size_t n, char *tmp, void (*cleanup)(void),
                             void (*on_signal)(int)) {
        if (!mkdtemp(tmp))
                bench_die("mkdtemp: %s", strerror(errno));
        run_guard(tops, n, tmp);
        atexit(cleanup);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGHUP, on_signal);
        signal(SIGPIPE, SIG_IGN);
        for (size_t i = 0; i < n; i++) {
                bench_cgroup_create(tops[i]);
                bench_cgroup_max_weight(tops[i]);
        }
}

/*
 * Starts argv[0] (a path) in group (every hierarchy; NULL: where this process is), stdout into
 * out_fd and stderr into err_fd (-1: /dev/null). It dies with this process and is kept among
 * bench-util.h's children. Exits 127 where it cannot join the group or run.
 */
static inline pid_t run_spawn(const char *group, char *const argv[], int out_fd, int err_fd) {
        pid_t pid = fork();

        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                signal(SIGINT, SIG_DFL);
                signal(SIGTERM, SIG_DFL);
                signal(SIGHUP, SIG_DFL);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (group) {
                        const char *h[3];
                        int n = bench_hierarchies(h);
                        char path[600], me[32];

                        snprintf(me, sizeof me, "%d", (int) getpid());
                        for (int i = 0; i < n; i++) {
                                snprintf(path, sizeof path, "%s%s/cgroup.procs", h[i], group);
                                if (bench_write(path, me) < 0)
                                        _exit(127);
                        }
                }
                dup2(out_fd >= 0 ? out_fd : null, STDOUT_FILENO);
                dup2(err_fd >= 0 ? err_fd : null, STDERR_FILENO);
                dup2(null, STDIN_FILENO);
                execv(argv[0], argv);
                _exit(127);
        }
        bench_add_child(pid);
        return pid;
}

/* Waits up to timeout_ms for a kept child to exit, then SIGKILLs it; returns its wait status. */
static inline int run_wait_child(pid_t pid, unsigned timeout_ms) {
        int status = 0;

        for (unsigned k = 0; k < timeout_ms / 10; k++) {
                if (waitpid(pid, &status, WNOHANG) == pid) {
                        bench_forget_child(pid);
                        return status;
                }
                usleep(10 * 1000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        bench_forget_child(pid);
        return status;
}

/* Sends sig to a kept child and waits for it (SIGKILL after 5 s). */
static inline void run_end_child(pid_t *pid, int sig) {
        if (*pid <= 0)
                return;
        kill(*pid, sig);
        (void) run_wait_child(*pid, 5000);
        *pid = 0;
}

/* ---- peltd --------------------------------------------------------------------------------------- */

typedef struct RunDaemon {
        pid_t pid;
        char conf[256], log[256], state[256], metrics[256];
} RunDaemon;

/* The last lines of a file, on stderr. */
static inline void run_tail(const char *path, unsigned lines) {
        char cmd[400];

        snprintf(cmd, sizeof cmd, "tail -n %u '%s' >&2", lines, path);
        (void) !system(cmd);
}

/*
 * Starts peltd on the subtree top with policy, every interval at its default but for the line
 * extra ([Daemon] KEY=VALUE; NULL: none), its state and metrics files and its log (appended) in
 * dir; returns once its log says it runs.
 */
static inline void run_daemon_start(RunDaemon *d, const char *peltd, const char *dir, const char *top, const char *policy,
                                    const char *extra) {
        char *argv[] = { (char *) peltd, (char *) "--config", d->conf, NULL };
        FILE *f;
        int fd;

        snprintf(d->conf, sizeof d->conf, "%s/peltd.conf", dir);
        snprintf(d->log, sizeof d->log, "%s/peltd.log", dir);
        snprintf(d->state, sizeof d->state, "%s/state/originals", dir);
        snprintf(d->metrics, sizeof d->metrics, "%s/metrics.prom", dir);
        f = fopen(d->conf, "we");
        if (!f)
                bench_die("writing %s: %s", d->conf, strerror(errno));
        fprintf(f, "[Daemon]\nPolicy=%s\nCgroupRoot=%s\nStateFile=%s\nMetricsFile=%s\n%s\n", policy, top, d->state, d->metrics,
                extra ? extra : "");
        fclose(f);
        fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                bench_die("open %s: %s", d->log, strerror(errno));
        d->pid = run_spawn(NULL, argv, fd, fd);
        close(fd);
        for (unsigned k = 0; k < 1000; k++) {
                char buf[8192];
                int status;

                if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
                        bench_forget_child(d->pid);
                        d->pid = 0;
                        run_tail(d->log, 20);
                        bench_die("peltd exited at start (status %d)", status);
                }
                if (bench_read_text(d->log, buf, sizeof buf) > 0 && strstr(buf, "peltd running"))
                        return;
                usleep(10 * 1000);
        }
        run_tail(d->log, 20);
        bench_die("peltd did not say it runs within 10 s");
}

/* SIGTERM (peltd puts the originals back), then waits; SIGKILL after 5 s. */
static inline void run_daemon_stop(RunDaemon *d) {
        run_end_child(&d->pid, SIGTERM);
}

/*
 * The value of the metric name in the metrics file at path, the sample whose group label is group
 * (NULL: the sample without labels). False where the file or the sample is missing.
 */
static inline bool run_metric(const char *path, const char *name, const char *group, double *ret) {
        char buf[65536], want[512];
        size_t len;

        if (bench_read_text(path, buf, sizeof buf) <= 0)
                return false;
        if (group)
                snprintf(want, sizeof want, "%s{group=\"%s\"} ", name, group);
        else
                snprintf(want, sizeof want, "%s ", name);
        len = strlen(want);
        for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, want, len) == 0)
                        return sscanf(line + len, "%lf", ret) == 1;
        return false;
}

/* Waits (up to 3 s) until the metrics file at path was written at or after the CLOCK_REALTIME time t_ns. */
static inline bool run_metrics_fresh(const char *path, uint64_t t_ns) {
        for (unsigned k = 0; k < 300; k++) {
                struct stat st;

                if (stat(path, &st) == 0 &&
                    (uint64_t) st.st_mtim.tv_sec * 1000000000ULL + (uint64_t) st.st_mtim.tv_nsec >= t_ns)
                        return true;
                usleep(10 * 1000);
        }
        return false;
}

static inline uint64_t run_realtime_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* ---- what the control loop acts on ----------------------------------------------------------------- */

/* The CPUs in a list such as "0-3,8"; 0 for an empty or unreadable one. */
static inline unsigned run_cpulist_count(const char *s) {
        unsigned n = 0;

        while (*s && *s != '\n') {
                char *end;
                unsigned long a = strtoul(s, &end, 10), b = a;

                if (end == s)
                        return n;
                if (*end == '-')
                        b = strtoul(end + 1, &end, 10);
                n += b >= a ? (unsigned) (b - a + 1) : 0;
                s = *end == ',' ? end + 1 : end;
        }
        return n;
}

/* The group's cpuset.cpus (v2: cpuset.cpus.effective), newline cut; "" where unreadable. */
static inline void run_group_cpus(const char *group, char *buf, size_t size) {
        char path[512];

        if (bench_cgroup_v2())
                snprintf(path, sizeof path, "%s%s/cpuset.cpus.effective", BENCH_CG_V2, group);
        else
                snprintf(path, sizeof path, "%s/cpuset%s/cpuset.cpus", BENCH_CG_V1, group);
        if (bench_read_text(path, buf, size) < 0)
                buf[0] = 0;
        buf[strcspn(buf, "\n")] = 0;
}

/* The group's CPU time so far, in ns (v1 cpuacct.usage, v2 cpu.stat usage_usec); 0 where unreadable. */
static inline uint64_t run_group_usage_ns(const char *group) {
        char path[512], buf[1024], *p;

        if (bench_cgroup_v2()) {
                snprintf(path, sizeof path, "%s%s/cpu.stat", BENCH_CG_V2, group);
                if (bench_read_text(path, buf, sizeof buf) <= 0 || !(p = strstr(buf, "usage_usec ")))
                        return 0;
                return strtoull(p + 11, NULL, 10) * 1000;
        }
        snprintf(path, sizeof path, "%s/cpuacct%s/cpuacct.usage", BENCH_CG_V1, group);
        if (bench_read_text(path, buf, sizeof buf) <= 0)
                return 0;
        return strtoull(buf, NULL, 10);
}

/* /proc/pressure/cpu "some avg10" in percent; NAN where the kernel has no PSI. */
static inline double run_psi_some_avg10(void) {
        char buf[512], *p;

        if (bench_read_text("/proc/pressure/cpu", buf, sizeof buf) <= 0 || !(p = strstr(buf, "some avg10=")))
                return NAN;
        return strtod(p + 11, NULL);
}

/* The online CPUs (list into buf) and how many. */
static inline unsigned run_online_cpus(char *buf, size_t size) {
        if (bench_read_text("/sys/devices/system/cpu/online", buf, size) <= 0)
                bench_die("reading /sys/devices/system/cpu/online");
        buf[strcspn(buf, "\n")] = 0;
        return run_cpulist_count(buf);
}

/* How many packages the online CPUs are in (1 where sysfs does not say). */
static inline unsigned run_packages(void) {
        char path[128], buf[32];
        long seen[64];
        unsigned n = 0;

        for (unsigned cpu = 0; cpu < 4096; cpu++) {
                long id;
                bool known = false;

                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u/topology/physical_package_id", cpu);
                if (bench_read_text(path, buf, sizeof buf) <= 0)
                        continue;
                id = strtol(buf, NULL, 10);
                for (unsigned i = 0; i < n; i++)
                        known |= seen[i] == id;
                if (!known && n < 64)
                        seen[n++] = id;
        }
        return n ? n : 1;
}

/* ---- numbers and pictures ------------------------------------------------------------------------ */

/* The p-quantile (0..1) of v[0..n) (n > 0), which it sorts; nearest rank. */
static inline double run_quantile(double *v, size_t n, double p) {
        size_t k;

        qsort(v, n, sizeof *v, bench_cmp_double);
        k = (size_t) ceil(p * (double) n);
        return v[k > 0 ? k - 1 : 0];
}

/* Runs gnuplot on script; says so once where gnuplot is missing or fails. */
static inline bool run_gnuplot(const char *script) {
        static bool said;
        char *argv[] = { (char *) "/usr/bin/gnuplot", (char *) script, NULL };
        pid_t pid;
        int status;

        if (access(argv[0], X_OK) < 0) {
                if (!said)
                        fprintf(stderr, "bench: no /usr/bin/gnuplot (Debian: gnuplot-nox): no pictures\n");
                said = true;
                return false;
        }
        pid = run_spawn(NULL, argv, -1, STDERR_FILENO);
        status = run_wait_child(pid, 60000);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                if (!said)
                        fprintf(stderr, "bench: gnuplot %s failed\n", script);
                said = true;
                return false;
        }
        return true;
}

/* Copies the file from to to (the daemon's log, kept beside the pictures); quiet on failure. */
static inline void run_copy(const char *from, const char *to) {
        char cmd[1200];

        snprintf(cmd, sizeof cmd, "cp '%s' '%s' 2>/dev/null", from, to);
        (void) !system(cmd);
}

/* mkdir -p dir. */
static inline void run_mkdir_p(const char *dir) {
        char cmd[600];

        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
        if (system(cmd) != 0)
                bench_die("cannot make %s", dir);
}
