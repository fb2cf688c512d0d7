/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * Helpers the benchmarks share: a private cgroup subtree in the cpu, cpuacct and cpuset hierarchies
 * (v1) or in the unified one (v2), and running peltd --once with its JSON captured.
 */
#include <errno.h>
#include <fcntl.h>
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
