/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * Helpers the benchmarks (and the sampling tests on the real kernel) share: a private cgroup subtree
 * in the cpu, cpuacct and cpuset hierarchies (v1) or in the unified one (v2), processes started in
 * its groups and ended at the end, /proc read, and running peltd --once with its JSON captured.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#define BENCH_CG_V1 "/sys/fs/cgroup"
#define BENCH_CG_V2 "/sys/fs/cgroup"

static inline _Noreturn void bench_die(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        fprintf(stderr, "bench: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
        exit(2);
}

static inline uint64_t bench_now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* This thread's CPU time, in ns. */
static inline uint64_t bench_thread_cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* Sleeps until deadline (CLOCK_MONOTONIC, ns), across signals. */
static inline void bench_sleep_until_ns(uint64_t deadline) {
        struct timespec ts = { .tv_sec = (time_t) (deadline / 1000000000ULL), .tv_nsec = (long) (deadline % 1000000000ULL) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

/* Spins until this thread has used ns of CPU time. */
static inline void bench_spin_cpu_ns(uint64_t ns) {
        uint64_t start = bench_thread_cpu_ns();

        while (bench_thread_cpu_ns() - start < ns)
                ;
}

/*
 * Runs busy_ns of CPU time every period_ns, forever, on absolute period boundaries. Busy in CPU
 * time, not wall time: a late wakeup then does not shorten the work, and each period holds the
 * same run time.
 */
static inline _Noreturn void bench_duty_loop(uint64_t period_ns, uint64_t busy_ns) {
        uint64_t next = bench_now_ns();

        prctl(PR_SET_TIMERSLACK, 1UL);
        for (;;) {
                bench_spin_cpu_ns(busy_ns);
                next += period_ns;
                bench_sleep_until_ns(next);
        }
}

static inline int bench_cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0), which it sorts. */
static inline double bench_median(double *v, size_t n) {
        qsort(v, n, sizeof *v, bench_cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* v2 when /sys/fs/cgroup itself is cgroup2 (the cpu controller lives there). */
static inline bool bench_cgroup_v2(void) {
        struct statfs s;

        return statfs("/sys/fs/cgroup", &s) == 0 && (uint64_t) s.f_type == (uint64_t) CGROUP2_SUPER_MAGIC;
}

static inline int bench_write(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, value, strlen(value));
        close(fd);
        return n < 0 ? -errno : 0;
}

static inline void bench_writef(const char *path, const char *fmt, ...) {
        char buf[256];
        va_list ap;
        int r;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        r = bench_write(path, buf);
        if (r < 0)
                bench_die("writing \"%s\" to %s: %s", buf, path, strerror(-r));
}

/* The hierarchies a group lives in: v1 cpu, cpuacct, cpuset; v2 the unified one. */
static inline int bench_hierarchies(const char *ret[3]) {
        if (bench_cgroup_v2()) {
                ret[0] = BENCH_CG_V2;
                return 1;
        }
        ret[0] = BENCH_CG_V1 "/cpu";
        ret[1] = BENCH_CG_V1 "/cpuacct";
        ret[2] = BENCH_CG_V1 "/cpuset";
        return 3;
}

/* Creates group (a path like "/peltd-bench-1/a") in every hierarchy; cpuset gets every online CPU. */
static inline void bench_cgroup_create(const char *group) {
        const char *h[3];
        int n = bench_hierarchies(h);
        char path[512];
        bool v2 = bench_cgroup_v2();

        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof path, "%s%s", h[i], group);
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        bench_die("mkdir %s: %s", path, strerror(errno));
                if (!v2 && strstr(h[i], "cpuset")) {
                        char parent[512], v[256] = "";
                        FILE *f;

                        /* A new v1 cpuset starts empty: copy the parent's. */
                        snprintf(parent, sizeof parent, "%s", path);
                        *strrchr(parent, '/') = 0;
                        for (const char *file = "cpuset.cpus"; file; file = strcmp(file, "cpuset.cpus") == 0 ? "cpuset.mems" : NULL) {
                                char p[600];

                                snprintf(p, sizeof p, "%s/%s", parent, file);
                                f = fopen(p, "re");
                                if (!f || !fgets(v, sizeof v, f))
                                        bench_die("reading %s", p);
                                fclose(f);
                                v[strcspn(v, "\n")] = 0;
                                snprintf(p, sizeof p, "%s/%s", path, file);
                                bench_writef(p, "%s", v);
                        }
                }
        }
        if (v2) {
                /* Enable the controllers below the parent. */
                char p[600], parent[512];

                snprintf(parent, sizeof parent, "%s%s", BENCH_CG_V2, group);
                *strrchr(parent, '/') = 0;
                snprintf(p, sizeof p, "%s/cgroup.subtree_control", parent);
                (void) bench_write(p, "+cpu +cpuset");
        }
}

/*
 * Gives group the largest CPU weight there is (v1 cpu.shares 262144, v2 cpu.weight 10000): against
 * the machine's other work, which runs at the default weight, its tasks get their CPU when they
 * want it. Measurements then see what the workers do, not what else runs on the machine.
 */
static inline void bench_cgroup_max_weight(const char *group) {
        char path[512];

        if (bench_cgroup_v2()) {
                snprintf(path, sizeof path, "%s%s/cpu.weight", BENCH_CG_V2, group);
                bench_writef(path, "10000");
        } else {
                snprintf(path, sizeof path, "%s/cpu%s/cpu.shares", BENCH_CG_V1, group);
                bench_writef(path, "262144");
        }
}

/* Confines group to the CPUs in list ("0", "1-3"). */
static inline void bench_cgroup_cpus(const char *group, const char *list) {
        char path[512];

        if (bench_cgroup_v2())
                snprintf(path, sizeof path, "%s%s/cpuset.cpus", BENCH_CG_V2, group);
        else
                snprintf(path, sizeof path, "%s/cpuset%s/cpuset.cpus", BENCH_CG_V1, group);
        bench_writef(path, "%s", list);
}

/* Moves a process (all its threads) into group in every hierarchy. */
static inline void bench_cgroup_attach(const char *group, pid_t pid) {
        const char *h[3];
        int n = bench_hierarchies(h);
        char path[600];

        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof path, "%s%s/cgroup.procs", h[i], group);
                bench_writef(path, "%d", (int) pid);
        }
}

/*
 * The processes started in the groups (bench_spawn() and what is built on it keep theirs here):
 * bench_kill_children() kills and reaps every one still kept, as a program's cleanup does.
 */
static pid_t *bench_children;
static size_t bench_n_children;

static inline void bench_add_child(pid_t pid) {
        pid_t *c = realloc(bench_children, (bench_n_children + 1) * sizeof *c);

        if (!c)
                bench_die("out of memory");
        bench_children = c;
        bench_children[bench_n_children++] = pid;
}

/* A child the caller has reaped itself: not killed again. */
static inline void bench_forget_child(pid_t pid) {
        for (size_t i = 0; i < bench_n_children; i++)
                if (bench_children[i] == pid)
                        bench_children[i] = 0;
}

/* Sends sig to a kept child, reaps it and forgets it. */
static inline void bench_stop_child(pid_t pid, int sig) {
        kill(pid, sig);
        waitpid(pid, NULL, 0);
        bench_forget_child(pid);
}

/* Kills every child first and reaps them after: they end side by side. */
static inline void bench_kill_children(void) {
        for (size_t i = 0; i < bench_n_children; i++)
                if (bench_children[i] > 0)
                        kill(bench_children[i], SIGKILL);
        for (size_t i = 0; i < bench_n_children; i++)
                if (bench_children[i] > 0)
                        waitpid(bench_children[i], NULL, 0);
        free(bench_children);
        bench_children = NULL;
        bench_n_children = 0;
}

/* In a child of bench_spawn(): tells the parent it is ready (exits 3 where it cannot). */
static inline void bench_ready(int ready_fd) {
        if (write(ready_fd, "x", 1) != 1)
                _exit(3);
        close(ready_fd);
}

/*
 * Starts a child in group (every hierarchy), named comm (NULL: as this program), that dies with
 * this process and runs body(ready_fd, arg), which calls bench_ready(ready_fd) once it is set up
 * and never returns. Returns the child's pid once it is ready; it is kept among the children.
 */
static inline pid_t bench_spawn(const char *group, const char *comm, void (*body)(int ready_fd, const void *arg), const void *arg) {
        int p[2];
        pid_t pid;
        char c;

        if (pipe2(p, O_CLOEXEC) < 0)
                bench_die("pipe: %s", strerror(errno));
        pid = fork();
        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                /* Not this process's cleanup: a signal to the process group just ends the child. */
                signal(SIGINT, SIG_DFL);
                signal(SIGTERM, SIG_DFL);
                signal(SIGHUP, SIG_DFL);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (comm)
                        prctl(PR_SET_NAME, comm);
                close(p[0]);
                bench_cgroup_attach(group, getpid());
                body(p[1], arg);
                _exit(3);
        }
        close(p[1]);
        if (read(p[0], &c, 1) != 1)
                bench_die("a process in %s failed to start", group);
        close(p[0]);
        bench_add_child(pid);
        return pid;
}

typedef struct BenchDuty {
        int nice;
        uint64_t period_ns, busy_ns;
} BenchDuty;

static inline void bench_duty_body(int ready_fd, const void *arg) {
        const BenchDuty *d = arg;

        if (setpriority(PRIO_PROCESS, 0, d->nice) < 0)
                _exit(3);
        bench_ready(ready_fd);
        bench_duty_loop(d->period_ns, d->busy_ns);
}

/* A process in group at nice, named comm (NULL: as this program), running busy_ns of every period_ns (bench_duty_loop). */
static inline pid_t bench_spawn_duty(const char *group, const char *comm, int nice, uint64_t period_ns, uint64_t busy_ns) {
        return bench_spawn(group, comm, bench_duty_body, &(BenchDuty){ .nice = nice, .period_ns = period_ns, .busy_ns = busy_ns });
}

static inline void *bench_sleeping_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static inline void bench_sleepers_body(int ready_fd, const void *arg) {
        size_t n = *(const size_t *) arg;
        pthread_attr_t a;

        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 * 1024);
        for (size_t i = 1; i < n; i++) {
                pthread_t t;

                if (pthread_create(&t, &a, bench_sleeping_thread, NULL) != 0)
                        _exit(3);
        }
        bench_ready(ready_fd);
        for (;;)
                pause();
}

/* A process of n threads (its main thread one of them) that only sleep, in group, named comm (NULL: as this program); returns once they all exist. */
static inline pid_t bench_spawn_sleepers(const char *group, const char *comm, size_t n) {
        return bench_spawn(group, comm, bench_sleepers_body, &n);
}

/*
 * Removes top and everything below it in every hierarchy (children first). A group whose last task
 * is still exiting refuses rmdir for a moment: tries again for up to a second. Quiet on failure.
 */
static inline void bench_cgroup_remove(const char *top) {
        const char *h[3];
        int n = bench_hierarchies(h);
        char cmd[1024], path[512];

        if (!top[0])
                return;
        for (int attempt = 0; attempt < 20; attempt++) {
                bool left = false;

                for (int i = 0; i < n; i++) {
                        snprintf(path, sizeof path, "%s%s", h[i], top);
                        if (access(path, F_OK) < 0)
                                continue;
                        snprintf(cmd, sizeof cmd, "find '%s' -depth -type d -exec rmdir {} + 2>/dev/null", path);
                        (void) !system(cmd);
                        left |= access(path, F_OK) == 0;
                }
                if (!left)
                        return;
                usleep(50 * 1000);
        }
}

/* Removes path and everything below it (rm -rf); quiet on failure. */
static inline void bench_rm_rf(const char *path) {
        char cmd[600];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
        (void) !system(cmd);
}

/*
 * Runs argv with stdout into a new string (*ret_out) and waits; returns the exit status, or -1.
 * ret_usage gets the child's resource usage (CPU time, peak RSS).
 */
static inline int bench_run(char *const argv[], char **ret_out, struct rusage *ret_usage) {
        int p[2], status;
        pid_t pid;
        size_t n = 0, allocated = 65536;
        char *out = malloc(allocated);

        if (!out || pipe2(p, O_CLOEXEC) < 0)
                bench_die("pipe: %s", strerror(errno));
        pid = fork();
        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                dup2(p[1], STDOUT_FILENO);
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        for (;;) {
                ssize_t k;

                if (allocated - n < 4096) {
                        allocated *= 2;
                        out = realloc(out, allocated);
                        if (!out)
                                bench_die("out of memory");
                }
                k = read(p[0], out + n, allocated - n - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t) k;
        }
        out[n] = 0;
        close(p[0]);
        if (wait4(pid, &status, 0, ret_usage) < 0)
                bench_die("wait4: %s", strerror(errno));
        *ret_out = out;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static inline double bench_tv_sec(struct timeval tv) {
        return (double) tv.tv_sec + (double) tv.tv_usec / 1e6;
}

/* Reads path whole (up to size - 1 bytes) into buf, NUL-terminated; returns the length, or -errno. */
static inline ssize_t bench_read_text(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = -errno;
        close(fd);
        buf[n > 0 ? n : 0] = 0;
        return n;
}

/* The value of key in the text of a /proc/PID/task/TID/sched ("se.avg.util_avg   :   123"); false where it has none. */
static inline bool bench_sched_field(const char *text, const char *key, double *ret) {
        const char *p = strstr(text, key);

        if (!p)
                return false;
        p = strchr(p, ':');
        return p && sscanf(p + 1, "%lf", ret) == 1;
}
