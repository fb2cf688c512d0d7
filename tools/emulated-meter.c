/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An energy meter for machines without RAPL (tests and benches; never part of the daemon). It keeps
 * a powercap tree that peltd's meter reads as any other (EnergyMeter=powercap, PowercapDir=DIR),
 * marked by the file DIR/peltd-emulated:
 *
 *   DIR/peltd-emulated                    the model's name
 *   DIR/intel-rapl:N/name                 package-N
 *   DIR/intel-rapl:N/energy_uj            the counter, µJ, wrapping at max_energy_range_uj
 *   DIR/intel-rapl:N/max_energy_range_uj
 *
 * Every 100 ms each energy_uj is rewritten in place by one pwrite of a fixed-width, zero-padded
 * number (never a rename or a truncate, so a reader with a kept fd always sees a whole value), and
 * each write is logged as "MONOTONIC_USEC package-N ENERGY_UJ WATTS" (the first value, at start, with
 * 0 W). Two pinned models:
 *
 *   busy       from /proc/stat, per package: 5 W always, 10 W more while any of its CPUs is awake,
 *              3 W per awake CPU, and 8 W × busy share per CPU (awake: busy share above 2% in the
 *              tick; busy = total − idle − iowait − steal);
 *   placement  one package: 20 W while the cgroup GROUP's cpuset holds one CPU, 23 W otherwise.
 *
 * The power of a tick is the model's value over the tick that just ended, times its measured length.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "peltd/cpumask.h"
#include "peltd/parse.h"

#define TICK_NSEC 100000000ULL                 /* 100 ms */
#define RANGE_UJ 262143328850ULL               /* a common Intel package's max_energy_range_uj */
#define MAX_PACKAGES 64
#define MAX_CPUS CPUMASK_MAX

typedef enum Model { MODEL_BUSY, MODEL_PLACEMENT } Model;

typedef struct CpuTimes {
        uint64_t total, busy;
} CpuTimes;

typedef struct Meter {
        Model model;
        const char *dir;
        const char *group;               /* placement: the cgroup directory whose cpuset.cpus is read */
        const char *proc_stat;
        FILE *log;
        unsigned n_packages;
        int package_of[MAX_CPUS];        /* -1: no such CPU */
        int fd[MAX_PACKAGES];
        uint64_t energy_uj[MAX_PACKAGES];
        CpuTimes last[MAX_CPUS];
        bool have_last;
} Meter;

static void usage(FILE *f) {
        fprintf(f,
                "Usage: emulated-meter --dir DIR --model busy|placement [--group CGROUP_DIR] [--log FILE]\n"
                "                      [--proc-stat FILE] [--start UJ]\n"
                "Keeps an emulated powercap tree in DIR (marked by DIR/peltd-emulated) whose energy_uj\n"
                "files it rewrites in place every 100 ms, and logs each write with its CLOCK_MONOTONIC time.\n"
                "  busy       per package: 5 W, 10 W more while a CPU is awake (busy above 2%%), 3 W per\n"
                "             awake CPU, 8 W x busy share per CPU (from /proc/stat)\n"
                "  placement  20 W while CGROUP_DIR/cpuset.cpus holds one CPU, 23 W otherwise\n"
                "Runs until SIGTERM or SIGINT.\n");
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* A small text file's contents, trailing whitespace cut; NULL when it cannot be read. */
static char *read_text(const char *path) {
        char buf[4096];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        return strdup(strstrip_trailing(buf));
}

/* Which package each CPU is in, from sysfs; CPUs without a topology are in package 0. */
static void read_packages(Meter *m) {
        m->n_packages = 1;
        for (int cpu = 0; cpu < MAX_CPUS; cpu++) {
                char path[128], *text;
                unsigned package = 0;

                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
                text = read_text(path);
                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", cpu);
                m->package_of[cpu] = -1;
                if (access(path, F_OK) < 0) {
                        free(text);
                        continue;
                }
                if (text && (safe_atou(text, &package) < 0 || package >= MAX_PACKAGES))
                        package = 0;
                free(text);
                m->package_of[cpu] = (int) package;
                if (package + 1 > m->n_packages)
                        m->n_packages = package + 1;
        }
        if (m->model == MODEL_PLACEMENT)
                m->n_packages = 1;
}

/* Per-CPU totals from /proc/stat ("cpuN user nice system idle iowait irq softirq steal ..."). */
static int read_stat(const Meter *m, CpuTimes *ret) {
        char line[1024];
        FILE *f = fopen(m->proc_stat, "re");

        if (!f)
                return -errno;
        memset(ret, 0, sizeof(CpuTimes) * MAX_CPUS);
        while (fgets(line, sizeof line, f)) {
                char *save = NULL, *tok = strtok_r(line, " \n", &save);
                uint64_t v[8] = {}, total = 0;
                unsigned cpu;

                if (!tok || strncmp(tok, "cpu", 3) != 0 || safe_atou(tok + 3, &cpu) < 0 || cpu >= MAX_CPUS)
                        continue;
                for (size_t i = 0; i < 8 && (tok = strtok_r(NULL, " \n", &save)); i++)
                        if (safe_atou64(tok, &v[i]) < 0)
                                v[i] = 0;
                for (size_t i = 0; i < 8; i++)
                        total += v[i];
                ret[cpu].total = total;
                ret[cpu].busy = total - v[3] - v[4] - v[7];
        }
        fclose(f);
        return 0;
}

/* The busy model's watts per package over the tick that ended (the first tick: the idle floor). */
static void busy_watts(Meter *m, double *watts) {
        CpuTimes now[MAX_CPUS];
        bool awake_any[MAX_PACKAGES] = {};

        for (unsigned p = 0; p < m->n_packages; p++)
                watts[p] = 5.0;
        if (read_stat(m, now) < 0)
                return;
        for (int cpu = 0; m->have_last && cpu < MAX_CPUS; cpu++) {
                int p = m->package_of[cpu];
                uint64_t dt, db;
                double share;

                if (p < 0 || now[cpu].total < m->last[cpu].total || now[cpu].busy < m->last[cpu].busy)
                        continue;
                dt = now[cpu].total - m->last[cpu].total;
                db = now[cpu].busy - m->last[cpu].busy;
                share = dt > 0 ? (double) db / (double) dt : 0;
                if (share > 1)
                        share = 1;
                if (share > 0.02) {
                        awake_any[p] = true;
                        watts[p] += 3.0;
                }
                watts[p] += 8.0 * share;
        }
        for (unsigned p = 0; p < m->n_packages; p++)
                if (awake_any[p])
                        watts[p] += 10.0;
        memcpy(m->last, now, sizeof now);
        m->have_last = true;
}

/* The placement model: 20 W while the group's cpuset holds one CPU, 23 W otherwise. */
static double placement_watts(const Meter *m) {
        char path[4096], *text;
        CpuMask mask;
        int n = -1;

        snprintf(path, sizeof path, "%s/cpuset.cpus", m->group);
        text = read_text(path);
        if (text && cpumask_parse_list(text, &mask) >= 0)
                n = cpumask_count(&mask);
        free(text);
        return n == 1 ? 20.0 : 23.0;
}

static int write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        fputs(text, f);
        return fclose(f) == 0 ? 0 : -errno;
}

/* Writes text to DIR/intel-rapl:N/FILE (files written once, at start). */
static int write_zone_file(const Meter *m, unsigned package, const char *file, const char *text) {
        char path[4096];

        snprintf(path, sizeof path, "%s/intel-rapl:%x/%s", m->dir, package, file);
        return write_text(path, text);
}

/* One fixed-width pwrite at offset 0: the file's length never changes, a reader never sees half a value. */
static int write_counter(Meter *m, unsigned p) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%020" PRIu64 "\n", m->energy_uj[p]);

        return pwrite(m->fd[p], buf, (size_t) n, 0) == n ? 0 : -EIO;
}

/* The tree: the marker, and per package a zone whose counter goes on from its last value, if any. */
static int make_tree(Meter *m, uint64_t start_uj) {
        char path[4096], text[64];
        int r;

        if (mkdir(m->dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        snprintf(path, sizeof path, "%s/peltd-emulated", m->dir);
        r = write_text(path, m->model == MODEL_BUSY ? "busy\n" : "placement\n");
        if (r < 0)
                return r;
        for (unsigned p = 0; p < m->n_packages; p++) {
                char *old;

                snprintf(path, sizeof path, "%s/intel-rapl:%x", m->dir, p);
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -errno;
                snprintf(text, sizeof text, "package-%u\n", p);
                if ((r = write_zone_file(m, p, "name", text)) < 0)
                        return r;
                snprintf(text, sizeof text, "%llu\n", RANGE_UJ);
                if ((r = write_zone_file(m, p, "max_energy_range_uj", text)) < 0)
                        return r;
                snprintf(path, sizeof path, "%s/intel-rapl:%x/energy_uj", m->dir, p);
                old = read_text(path);
                if (!old || safe_atou64(old, &m->energy_uj[p]) < 0 || m->energy_uj[p] > RANGE_UJ)
                        m->energy_uj[p] = start_uj % (RANGE_UJ + 1);
                free(old);
                /* Mode 0400, as the kernel's: energy_uj is root's. */
                m->fd[p] = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0400);
                if (m->fd[p] < 0)
                        return -errno;
                if ((r = write_counter(m, p)) < 0)
                        return r;
                fprintf(m->log, "%" PRIu64 " package-%u %020" PRIu64 " %.3f\n", now_usec(), p, m->energy_uj[p], 0.0);
        }
        fflush(m->log);
        return 0;
}

/* One tick: the model's watts over dt_usec, added (wrapping at the range), written and logged. */
static int tick(Meter *m, uint64_t dt_usec) {
        double watts[MAX_PACKAGES];
        uint64_t t;
        int r;

        if (m->model == MODEL_BUSY)
                busy_watts(m, watts);
        else
                watts[0] = placement_watts(m);
        t = now_usec();
        for (unsigned p = 0; p < m->n_packages; p++) {
                /* W × µs = µJ. */
                uint64_t uj = (uint64_t) (watts[p] * (double) dt_usec + 0.5);

                m->energy_uj[p] = uj > RANGE_UJ - m->energy_uj[p] ? uj - (RANGE_UJ - m->energy_uj[p]) - 1
                                                                   : m->energy_uj[p] + uj;
                r = write_counter(m, p);
                if (r < 0)
                        return r;
                fprintf(m->log, "%" PRIu64 " package-%u %020" PRIu64 " %.3f\n", t, p, m->energy_uj[p], watts[p]);
        }
        fflush(m->log);
        return 0;
}

static int parse_args(int argc, char **argv, Meter *m, uint64_t *start_uj, const char **log_path) {
        static const struct option options[] = {
                { "dir", required_argument, NULL, 'd' },   { "model", required_argument, NULL, 'm' },
                { "group", required_argument, NULL, 'g' }, { "log", required_argument, NULL, 'l' },
                { "proc-stat", required_argument, NULL, 'p' }, { "start", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },        {},
        };
        const char *model = NULL;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'd': m->dir = optarg; break;
                case 'm': model = optarg; break;
                case 'g': m->group = optarg; break;
                case 'l': *log_path = optarg; break;
                case 'p': m->proc_stat = optarg; break;
                case 's':
                        if (safe_atou64(optarg, start_uj) < 0 || *start_uj > RANGE_UJ) {
                                fprintf(stderr, "emulated-meter: --start %s: expected µJ from 0 to %llu\n", optarg, RANGE_UJ);
                                return -EINVAL;
                        }
                        break;
                case 'h': usage(stdout); exit(0);
                default: usage(stderr); return -EINVAL;
                }
        if (optind < argc || !m->dir || !model) {
                fprintf(stderr, "emulated-meter: %s\n", optind < argc ? "unexpected argument" : "--dir and --model are needed");
                usage(stderr);
                return -EINVAL;
        }
        if (strcmp(model, "busy") == 0)
                m->model = MODEL_BUSY;
        else if (strcmp(model, "placement") == 0 && m->group)
                m->model = MODEL_PLACEMENT;
        else {
                fprintf(stderr, "emulated-meter: --model %s: expected busy, or placement with --group\n", model);
                return -EINVAL;
        }
        return 0;
}

/* Ticks every 100 ms on absolute CLOCK_MONOTONIC times until SIGTERM or SIGINT. */
static int run(Meter *m, const sigset_t *signals) {
        uint64_t last = now_usec(), next = last;

        for (;;) {
                struct timespec wait;
                uint64_t now = now_usec();
                int sig, r;

                next += TICK_NSEC / 1000;
                if (next < now)
                        next = now;     /* late (a loaded machine): no burst of ticks to catch up */
                wait = (struct timespec){ .tv_sec = (time_t) ((next - now) / 1000000),
                                          .tv_nsec = (long) ((next - now) % 1000000) * 1000 };
                sig = sigtimedwait(signals, NULL, &wait);
                if (sig == SIGTERM || sig == SIGINT)
                        return 0;
                if (sig < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
                now = now_usec();
                r = tick(m, now - last);
                if (r < 0)
                        return r;
                last = now;
        }
}

int main(int argc, char **argv) {
        Meter m = { .proc_stat = "/proc/stat", .log = stdout };
        const char *log_path = NULL;
        uint64_t start_uj = 0;
        sigset_t signals;
        int r;

        if (parse_args(argc, argv, &m, &start_uj, &log_path) < 0)
                return 2;
        if (log_path && !(m.log = fopen(log_path, "ae"))) {
                fprintf(stderr, "emulated-meter: --log %s: %s\n", log_path, strerror(errno));
                return 1;
        }
        sigemptyset(&signals);
        sigaddset(&signals, SIGTERM);
        sigaddset(&signals, SIGINT);
        sigprocmask(SIG_BLOCK, &signals, NULL);
        read_packages(&m);
        r = make_tree(&m, start_uj);
        if (r < 0) {
                fprintf(stderr, "emulated-meter: %s: %s\n", m.dir, strerror(-r));
                return 1;
        }
        if (m.model == MODEL_BUSY)
                busy_watts(&m, (double[MAX_PACKAGES]){});  /* the first /proc/stat reading: a baseline */
        r = run(&m, &signals);
        if (r < 0) {
                fprintf(stderr, "emulated-meter: %s: %s\n", m.dir, strerror(-r));
                return 1;
        }
        return 0;
}
