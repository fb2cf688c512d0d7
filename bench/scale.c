/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cost of many groups, against references measured in the same run: a private subtree of the
 * real hierarchies, the daemon as an operator runs it (Policy=power, every interval at its default).
 *
 *   a. First placement of GROUPS groups (1,000) with 2,000 sleeping threads spread over them: the
 *      daemon's CPU time over the round that places them (from its last sleep before the first
 *      group changes to its first sleep after the last one did; that round's sampling included),
 *      against a loop that does per group what placing needs at the least: read cpuset.cpus (the
 *      original), list the group's children (descendant cpusets are narrowed with it), write the
 *      new set (open, write, close), and before the writes one state file with every record,
 *      written as peltd writes it (temporary file, fsync, rename, fsync of the directory).
 *   b. SIGTERM restore of those groups: the daemon's CPU time from SIGTERM to its exit, against a
 *      loop that reads each cpuset.cpus, writes the original back, and removes the state file.
 *   c. `peltd --restore` of VALUES recorded values (4,000: cpuset.cpus and the shares of 2,000
 *      groups): its CPU time, start-up included, against the same loop over those files.
 *   d. Steady state: 100 and 1,000 managed groups with 2,000 sleeping threads spread over them,
 *      every group placed and nothing changing: the daemon's share of one CPU over 10 s against
 *      the floor in the same seconds, a loop that only preads every group's usage counter every
 *      SampleIntervalMSec (100 ms) and every thread's schedstat every TaskSampleIntervalMSec (1 s)
 *      through kept-open fds.
 *
 * Targets: a, b and c at most 3x their loop; d at 1,000 groups at most 2x the floor. The loops run
 * before the daemon and again after it, and count by their mean. CPU time is the criterion; the
 * wall-clock ratio is printed beside it (a disk's fsync waits weigh there). --quick (the test
 * suite): 100 groups and 400 threads for a, b and d (3 s), 400 values for c, bounds of 10x (a-c)
 * and 4x (d). Exit 1 when a target is missed, 2 on setup errors.
 *
 * --curve [OUTDIR] (default bench-scale/): a and b at 250, 500, 1,000 and 2,000 groups (two
 * sleeping threads each), each against its loop measured at the same size, printed as a table and
 * drawn (OUTDIR/scale.png, by gnuplot); the target: peltd's ratio to the loop at the biggest point
 * at most twice its ratio at the smallest (linear in the groups, as the kernel's own writes allow).
 *
 * Usage: scale PELTD [--quick | --curve [OUTDIR]]
 */
#include <dirent.h>
#include <sys/prctl.h>

#include "../tests/lib/machine-lock.h"
#include "run-util.h"

static bool str_eq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

typedef struct Sizes {
        unsigned place_groups;       /* a, b, and d's second run */
        unsigned restore_groups;     /* c: two values each */
        unsigned small_groups;       /* d's first run; 0: none */
        unsigned threads;            /* sleeping threads, spread over the groups */
        unsigned steady_seconds;
        double bound_abc, bound_d;
} Sizes;

static const Sizes full = {
        .place_groups = 1000, .restore_groups = 2000, .small_groups = 100, .threads = 2000, .steady_seconds = 10,
        .bound_abc = 3, .bound_d = 2,
};
static const Sizes quick = {
        .place_groups = 100, .restore_groups = 200, .small_groups = 0, .threads = 400, .steady_seconds = 3,
        .bound_abc = 10, .bound_d = 4,
};

static char top[64], tmp[64], conf[128], state[128], logpath[128];
static const char *peltd;
static pid_t daemon_pid;
static bool v2;
static char all_cpus[256];

/* ---- the subtree and its sleepers --------------------------------------------------------------- */

static void cleanup(void) {
        if (daemon_pid > 0) {
                kill(daemon_pid, SIGKILL);
                waitpid(daemon_pid, NULL, 0);
                daemon_pid = 0;
        }
        bench_kill_children();
        bench_cgroup_remove(top);
        if (tmp[0]) {
                bench_rm_rf(tmp);
                tmp[0] = 0;
        }
}

static const char *group_name(unsigned i) {
        static char buf[128];

        snprintf(buf, sizeof buf, "%s/g%04u", top, i);
        return buf;
}

/* A file of a group in the hierarchy holding it (v1: named by the hierarchy; v2: the unified one). */
static void group_file(char *buf, size_t size, const char *hierarchy, unsigned i, const char *file) {
        snprintf(buf, size, "%s%s%s%s%s%s", BENCH_CG_V1, v2 ? "" : "/", v2 ? "" : hierarchy, group_name(i),
                 file ? "/" : "", file ?: "");
}

static void cpus_file(char *buf, size_t size, unsigned i) {
        group_file(buf, size, "cpuset", i, "cpuset.cpus");
}

static void shares_file(char *buf, size_t size, unsigned i) {
        group_file(buf, size, "cpu", i, v2 ? "cpu.weight" : "cpu.shares");
}

/* Groups g0000.. below top; threads sleeping threads spread over them (one process a group; 0: none). */
static void make_tree(unsigned n, unsigned threads) {
        bench_cgroup_create(top);
        for (unsigned i = 0; i < n; i++) {
                bench_cgroup_create(group_name(i));
                if (threads > 0)
                        bench_spawn_sleepers(group_name(i), NULL, threads / n + (i < threads % n));
        }
}

static void remove_tree(void) {
        bench_kill_children();
        bench_cgroup_remove(top);
}

/* ---- small files ------------------------------------------------------------------------------- */

/* open, read, close: the first line of path. */
static int read_file(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

static void read_or_die(const char *path, char *buf, size_t size) {
        int r = read_file(path, buf, size);

        if (r < 0)
                bench_die("reading %s: %s", path, strerror(-r));
}

/* A kept-open file read again from its start. */
static int pread_line(int fd, char *buf, size_t size) {
        ssize_t n = pread(fd, buf, size - 1, 0);

        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

typedef struct Text {
        char *s;
        size_t len, allocated;
} Text;

static void text_add(Text *t, const char *fmt, ...) {
        va_list ap;
        int n;

        for (;;) {
                size_t room = t->allocated - t->len;

                va_start(ap, fmt);
                n = vsnprintf(t->s ? t->s + t->len : NULL, room, fmt, ap);
                va_end(ap);
                if (n >= 0 && (size_t) n < room)
                        break;
                t->allocated = (t->allocated + (size_t) n + 1) * 2;
                t->s = realloc(t->s, t->allocated);
                if (!t->s)
                        bench_die("out of memory");
        }
        t->len += (size_t) n;
}

/* peltd's state file format, as json-c pretty-prints it. */
static void state_entry(Text *t, bool first, const char *hierarchy, const char *group, const char *file,
                        const char *original, const char *written) {
        if (first)
                text_add(t, "{\n  \"version\":1,\n  \"entries\":[\n");
        text_add(t,
                 "%s    {\n      \"hierarchy\":\"%s\",\n      \"group\":\"%s\",\n      \"file\":\"%s\",\n"
                 "      \"original\":\"%s\",\n      \"written\":\"%s\"\n    }",
                 first ? "" : ",\n", hierarchy, group, file, original, written);
}

/* Closes the document and writes it as peltd does: a temporary file, fsync, rename, fsync of the directory. */
static void state_write(Text *t, const char *path) {
        char tp[256], dir[256];
        int fd;

        text_add(t, "\n  ]\n}\n");
        snprintf(tp, sizeof tp, "%s.tmp", path);
        (void) unlink(tp);
        fd = open(tp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, t->s, t->len) != (ssize_t) t->len || fsync(fd) < 0)
                bench_die("writing %s: %s", tp, strerror(errno));
        close(fd);
        if (rename(tp, path) < 0)
                bench_die("rename %s: %s", tp, strerror(errno));
        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = 0;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                (void) fsync(fd);
                close(fd);
        }
        free(t->s);
        *t = (Text){};
}

/* ---- the references ---------------------------------------------------------------------------- */

typedef struct Cost {
        double cpu_s, wall_s;
} Cost;

typedef struct Clock {
        uint64_t cpu, wall;
} Clock;

static Clock clock_start(void) {
        return (Clock){ bench_thread_cpu_ns(), bench_now_ns() };
}

static Cost clock_stop(Clock c) {
        return (Cost){ (double) (bench_thread_cpu_ns() - c.cpu) / 1e9, (double) (bench_now_ns() - c.wall) / 1e9 };
}

/* Placing n groups on cpus: what a placement must do at the least (a). */
static Cost ref_place(unsigned n, const char *cpus) {
        Text t = {};
        Clock c = clock_start();
        char path[512], old[256];

        for (unsigned i = 0; i < n; i++) {
                DIR *d;

                cpus_file(path, sizeof path, i);
                read_or_die(path, old, sizeof old);
                group_file(path, sizeof path, "cpuset", i, NULL);
                d = opendir(path);
                if (!d)
                        bench_die("opendir %s: %s", path, strerror(errno));
                while (readdir(d))
                        ;
                closedir(d);
                state_entry(&t, i == 0, v2 ? "unified" : "cpuset", group_name(i), "cpuset.cpus", old, cpus);
        }
        state_write(&t, state);
        for (unsigned i = 0; i < n; i++) {
                cpus_file(path, sizeof path, i);
                bench_writef(path, "%s", cpus);
        }
        return clock_stop(c);
}

/* Putting back n groups' cpusets that hold `placed`, and the state file removed (b). */
static Cost ref_restore(unsigned n, const char *placed, const char *original) {
        Clock c = clock_start();
        char path[512], cur[256];

        for (unsigned i = 0; i < n; i++) {
                cpus_file(path, sizeof path, i);
                read_or_die(path, cur, sizeof cur);
                if (str_eq(cur, placed))
                        bench_writef(path, "%s", original);
        }
        if (unlink(state) < 0)
                bench_die("unlink %s: %s", state, strerror(errno));
        return clock_stop(c);
}

/* The values of c: each group's cpuset and shares, set to what peltd would have written or to the originals. */
static const char *placed_shares(void) {
        return v2 ? "200" : "2048";
}

static const char *original_shares(void) {
        return v2 ? "100" : "1024";
}

static void set_values(unsigned n, bool placed) {
        char path[512];

        for (unsigned i = 0; i < n; i++) {
                cpus_file(path, sizeof path, i);
                bench_writef(path, "%s", placed ? "0" : all_cpus);
                shares_file(path, sizeof path, i);
                bench_writef(path, "%s", placed ? placed_shares() : original_shares());
        }
}

/* Restoring 2n recorded values (c). */
static Cost ref_restore_values(unsigned n) {
        Clock c = clock_start();
        char path[512], cur[256];

        for (unsigned i = 0; i < n; i++) {
                cpus_file(path, sizeof path, i);
                read_or_die(path, cur, sizeof cur);
                if (str_eq(cur, "0"))
                        bench_writef(path, "%s", all_cpus);
                shares_file(path, sizeof path, i);
                read_or_die(path, cur, sizeof cur);
                if (str_eq(cur, placed_shares()))
                        bench_writef(path, "%s", original_shares());
        }
        if (unlink(state) < 0)
                bench_die("unlink %s: %s", state, strerror(errno));
        return clock_stop(c);
}

static void record_values(unsigned n) {
        Text t = {};

        for (unsigned i = 0; i < n; i++) {
                state_entry(&t, i == 0, v2 ? "unified" : "cpuset", group_name(i), "cpuset.cpus", all_cpus, "0");
                state_entry(&t, false, v2 ? "unified" : "cpu", group_name(i), v2 ? "cpu.weight" : "cpu.shares",
                            original_shares(), placed_shares());
        }
        state_write(&t, state);
}

/* ---- the daemon -------------------------------------------------------------------------------- */

/* Its main thread's CPU clock and its state (R, S, D ...), through kept-open /proc files. */
typedef struct Watch {
        int schedstat_fd, stat_fd;
} Watch;

static uint64_t watch_cpu(const Watch *w) {
        char buf[128];

        if (pread_line(w->schedstat_fd, buf, sizeof buf) < 0)
                bench_die("peltd is gone");
        return strtoull(buf, NULL, 10);
}

static char watch_state(const Watch *w) {
        char buf[512], *p;

        if (pread_line(w->stat_fd, buf, sizeof buf) < 0 || !(p = strrchr(buf, ')')) || !p[1])
                bench_die("peltd is gone");
        return p[2];
}

static void start_daemon(Watch *w) {
        char path[128], buf[4096];
        int fd;
        pid_t pid;

        fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0)
                bench_die("open %s: %s", logpath, strerror(errno));
        pid = fork();
        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                execl(peltd, peltd, "--config", conf, (char *) NULL);
                _exit(127);
        }
        close(fd);
        daemon_pid = pid;
        snprintf(path, sizeof path, "/proc/%d/schedstat", (int) pid);
        w->schedstat_fd = open(path, O_RDONLY | O_CLOEXEC);
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        w->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (w->schedstat_fd < 0 || w->stat_fd < 0)
                bench_die("peltd did not start");
        /* The main thread's clock is the process's: peltd runs one thread. */
        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        usleep(100 * 1000);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                ssize_t n = read(fd, buf, sizeof buf - 1);
                char *t;

                close(fd);
                buf[n > 0 ? n : 0] = 0;
                t = strstr(buf, "\nThreads:");
                if (t && strtoul(t + 9, NULL, 10) != 1)
                        bench_die("peltd runs more than one thread; this bench reads its main thread's clock");
        }
}

/* Waits until peltd sleeps (state S) and returns its CPU clock then. */
static uint64_t wait_asleep(const Watch *w) {
        for (unsigned k = 0; k < 100000; k++) {
                uint64_t cpu = watch_cpu(w);

                if (watch_state(w) == 'S' && watch_cpu(w) == cpu)
                        return cpu;
                usleep(200);
        }
        bench_die("peltd never sleeps");
}

static unsigned groups_placed(unsigned n) {
        char path[512], cur[256];
        unsigned k = 0;

        for (unsigned i = 0; i < n; i++) {
                cpus_file(path, sizeof path, i);
                if (read_file(path, cur, sizeof cur) >= 0 && !str_eq(cur, all_cpus))
                        k++;
        }
        return k;
}

/*
 * a: the round that places the n groups, from peltd's last sleep before the first group changed to
 * its first sleep after the last did. Polls every 500 µs: the first and the last group's cpuset
 * (peltd places in path order), its clock and its state.
 */
static Cost daemon_place(const Watch *w, unsigned n, char *ret_cpus, size_t size) {
        char first[512], last[512], cur[256];
        int ffd, lfd;
        /* 60 s, and 20 ms more a group: the kernel's own cpuset writes grow slower with many groups. */
        uint64_t idle_cpu = 0, idle_wall = 0, start_cpu = 0, start_wall = 0,
                 deadline = bench_now_ns() + 60000000000ULL + (uint64_t) n * 20000000ULL;
        bool first_changed = false, last_changed = false;

        cpus_file(first, sizeof first, 0);
        cpus_file(last, sizeof last, n - 1);
        ffd = open(first, O_RDONLY | O_CLOEXEC);
        lfd = open(last, O_RDONLY | O_CLOEXEC);
        if (ffd < 0 || lfd < 0)
                bench_die("open %s: %s", first, strerror(errno));
        while (bench_now_ns() < deadline) {
                uint64_t cpu = watch_cpu(w), now = bench_now_ns();
                char st = watch_state(w);

                if (!first_changed) {
                        if (st == 'S' && watch_cpu(w) == cpu) {
                                idle_cpu = cpu;
                                idle_wall = now;
                        }
                        if (pread_line(ffd, cur, sizeof cur) >= 0 && !str_eq(cur, all_cpus)) {
                                first_changed = true;
                                start_cpu = idle_cpu;
                                start_wall = idle_wall;
                        }
                }
                if (first_changed && !last_changed && pread_line(lfd, cur, sizeof cur) >= 0 && !str_eq(cur, all_cpus)) {
                        last_changed = true;
                        snprintf(ret_cpus, size, "%s", cur);
                }
                if (last_changed && st == 'S' && watch_cpu(w) == cpu) {
                        close(ffd);
                        close(lfd);
                        if (start_cpu == 0)
                                bench_die("peltd placed the groups before it was first seen asleep");
                        return (Cost){ (double) (cpu - start_cpu) / 1e9, (double) (now - start_wall) / 1e9 };
                }
                usleep(500);
        }
        {
                /* The scratch directory goes at exit: the daemon's last words now. */
                char cmd[256];

                snprintf(cmd, sizeof cmd, "tail -n 30 '%s' >&2", logpath);
                if (system(cmd) != 0)
                        fprintf(stderr, "scale: could not show %s\n", logpath);
        }
        bench_die("peltd did not place %u groups within %u s (its log's end above)", n, 60 + n / 50);
}

/* b: SIGTERM, from its sleep to its exit. */
static Cost daemon_stop(const Watch *w) {
        struct rusage ru;
        uint64_t cpu0 = wait_asleep(w), t0 = bench_now_ns();
        int status;

        kill(daemon_pid, SIGTERM);
        if (wait4(daemon_pid, &status, 0, &ru) < 0)
                bench_die("wait4: %s", strerror(errno));
        daemon_pid = 0;
        close(w->schedstat_fd);
        close(w->stat_fd);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                bench_die("peltd exited with status %d at SIGTERM (see %s)", status, logpath);
        return (Cost){ bench_tv_sec(ru.ru_utime) + bench_tv_sec(ru.ru_stime) - (double) cpu0 / 1e9,
                       (double) (bench_now_ns() - t0) / 1e9 };
}

/* c: peltd --restore, start-up included. */
static Cost daemon_restore(void) {
        struct rusage ru;
        uint64_t t0 = bench_now_ns();
        int status, fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        pid_t pid = fork();

        if (pid < 0 || fd < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                execl(peltd, peltd, "--restore", "--config", conf, (char *) NULL);
                _exit(127);
        }
        close(fd);
        if (wait4(pid, &status, 0, &ru) < 0)
                bench_die("wait4: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                bench_die("peltd --restore exited with status %d (see %s)", status, logpath);
        return (Cost){ bench_tv_sec(ru.ru_utime) + bench_tv_sec(ru.ru_stime), (double) (bench_now_ns() - t0) / 1e9 };
}

/* ---- d: the floor ------------------------------------------------------------------------------ */

typedef struct Floor {
        int *usage;                  /* every group's usage counter */
        size_t n_usage;
        int *schedstat;              /* every thread's in those groups */
        size_t n_schedstat;
} Floor;

static void floor_open(Floor *f, unsigned n) {
        char path[512];

        *f = (Floor){ .usage = calloc(n, sizeof(int)) };
        for (unsigned i = 0; i < n; i++) {
                FILE *t;
                int tid;

                if (v2)
                        group_file(path, sizeof path, "", i, "cpu.stat");
                else
                        group_file(path, sizeof path, "cpuacct", i, "cpuacct.usage");
                f->usage[f->n_usage] = open(path, O_RDONLY | O_CLOEXEC);
                if (f->usage[f->n_usage] < 0)
                        bench_die("open %s: %s", path, strerror(errno));
                f->n_usage++;

                group_file(path, sizeof path, "cpuacct", i, v2 ? "cgroup.threads" : "tasks");
                t = fopen(path, "re");
                if (!t)
                        bench_die("open %s: %s", path, strerror(errno));
                while (fscanf(t, "%d", &tid) == 1) {
                        char p[128];
                        int fd;

                        /* /proc/TID/task/TID: the thread's own, whichever thread of its process it is. */
                        snprintf(p, sizeof p, "/proc/%d/task/%d/schedstat", tid, tid);
                        fd = open(p, O_RDONLY | O_CLOEXEC);
                        if (fd < 0)
                                bench_die("open the schedstat of %d: %s", tid, strerror(errno));
                        f->schedstat = realloc(f->schedstat, (f->n_schedstat + 1) * sizeof(int));
                        if (!f->schedstat)
                                bench_die("out of memory");
                        f->schedstat[f->n_schedstat++] = fd;
                }
                fclose(t);
        }
}

static void floor_close(Floor *f) {
        for (size_t i = 0; i < f->n_usage; i++)
                close(f->usage[i]);
        for (size_t i = 0; i < f->n_schedstat; i++)
                close(f->schedstat[i]);
        free(f->usage);
        free(f->schedstat);
}

static void floor_round(const Floor *f, bool task_round) {
        char buf[512];

        for (size_t i = 0; i < f->n_usage; i++)
                (void) !pread(f->usage[i], buf, sizeof buf, 0);
        if (task_round)
                for (size_t i = 0; i < f->n_schedstat; i++)
                        (void) !pread(f->schedstat[i], buf, sizeof buf, 0);
}

static unsigned count_lines(const char *needle) {
        FILE *f = fopen(logpath, "re");
        char line[4096];
        unsigned n = 0;

        if (!f)
                return 0;
        while (fgets(line, sizeof line, f))
                n += strstr(line, needle) != NULL;
        fclose(f);
        return n;
}

typedef struct Steady {
        double peltd_share, floor_share;
        unsigned changes;            /* placement changes logged in the window */
        size_t threads;
} Steady;

/* d: the daemon (running, every group placed) over `seconds`, the floor in the same seconds. */
static Steady steady(const Watch *w, unsigned n, unsigned seconds) {
        Floor f;
        uint64_t start, cpu0, flr = 0;
        unsigned changes0;
        Steady s;

        /* Whatever settles after the first placement (a narrowing that waits for its plan to hold) settles first. */
        sleep(3);
        floor_open(&f, n);
        changes0 = count_lines(": CPUs ");
        start = bench_now_ns();
        cpu0 = watch_cpu(w);
        for (unsigned k = 0; k < seconds * 10; k++) {
                uint64_t c;

                /* Half-way between two of peltd's rounds, wherever they fall: the machine weighs alike. */
                bench_sleep_until_ns(start + (uint64_t) k * 100000000ULL + 50000000ULL);
                c = bench_thread_cpu_ns();
                floor_round(&f, k % 10 == 0);
                flr += bench_thread_cpu_ns() - c;
        }
        bench_sleep_until_ns(start + (uint64_t) seconds * 1000000000ULL);
        s = (Steady){
                .peltd_share = (double) (watch_cpu(w) - cpu0) / (double) (bench_now_ns() - start),
                .floor_share = (double) flr / ((double) seconds * 1e9),
                .changes = count_lines(": CPUs ") - changes0,
                .threads = f.n_schedstat,
        };
        floor_close(&f);
        return s;
}

/* ---- the runs ---------------------------------------------------------------------------------- */

static void write_conf(void) {
        FILE *f = fopen(conf, "we");

        if (!f)
                bench_die("open %s: %s", conf, strerror(errno));
        /* An operator's configuration: every interval and rate at its default. */
        fprintf(f, "[Daemon]\nPolicy=power\nCgroupRoot=%s\nStateFile=%s\nMetricsFile=\n", top, state);
        fclose(f);
}

static double mean(double a, double b) {
        return (a + b) / 2;
}

static bool print_ratio(const char *what, Cost peltd_cost, Cost ref1, Cost ref2, double bound) {
        double ref_cpu = mean(ref1.cpu_s, ref2.cpu_s), ref_wall = mean(ref1.wall_s, ref2.wall_s);
        double ratio = peltd_cost.cpu_s / ref_cpu;

        printf("%-44s %6.2fx the loop's CPU time (target <= %gx)   wall %5.2fx   [peltd %.1f ms CPU, loop %.1f ms]\n", what,
               ratio, bound, peltd_cost.wall_s / ref_wall, peltd_cost.cpu_s * 1e3, ref_cpu * 1e3);
        return ratio > bound;
}

static bool print_steady(unsigned n, const Steady *s, double bound) {
        double ratio = s->peltd_share / s->floor_share;
        char what[64], target[32] = "";

        snprintf(what, sizeof what, "d. steady state, %u groups, %zu threads", n, s->threads);
        if (bound > 0)
                snprintf(target, sizeof target, " (target <= %gx)", bound);
        printf("%-44s %6.2fx the floor's CPU time%-14s   [peltd %.2f%% of one CPU, floor %.2f%%; %u changes meanwhile]\n",
               what, ratio, target, s->peltd_share * 100, s->floor_share * 100, s->changes);
        return bound > 0 && ratio > bound;
}

/* a, d and b on one tree of n groups; returns whether a target was missed. */
static bool place_steady_stop(const Sizes *z, unsigned n, bool place_and_stop, double bound_d) {
        Cost ref_p1 = {}, ref_r1 = {}, ref_p2 = {}, ref_r2 = {}, placed, stopped;
        char cpus[256] = "";
        bool failed = false;
        Watch w;
        Steady s;

        make_tree(n, z->threads);
        if (place_and_stop) {
                ref_p1 = ref_place(n, "0");
                ref_r1 = ref_restore(n, "0", all_cpus);
        }
        start_daemon(&w);
        placed = daemon_place(&w, n, cpus, sizeof cpus);
        if (groups_placed(n) != n)
                bench_die("peltd placed %u of %u groups (see %s)", groups_placed(n), n, logpath);
        s = steady(&w, n, z->steady_seconds);
        stopped = daemon_stop(&w);
        if (groups_placed(n) != 0 || access(state, F_OK) == 0)
                bench_die("SIGTERM left %u groups placed, or the state file (see %s)", groups_placed(n), logpath);
        if (place_and_stop) {
                ref_p2 = ref_place(n, cpus);
                ref_r2 = ref_restore(n, cpus, all_cpus);
                failed |= print_ratio("a. first placement of groups", placed, ref_p1, ref_p2, z->bound_abc);
                failed |= print_ratio("b. SIGTERM restore of groups", stopped, ref_r1, ref_r2, z->bound_abc);
        }
        failed |= print_steady(n, &s, bound_d);
        remove_tree();
        return failed;
}

static bool restore_values(const Sizes *z) {
        unsigned n = z->restore_groups;
        Cost ref1, ref2, peltd_cost;
        char label[64];
        bool failed;

        make_tree(n, 0);
        set_values(n, true);
        record_values(n);
        ref1 = ref_restore_values(n);
        set_values(n, true);
        record_values(n);
        peltd_cost = daemon_restore();
        if (groups_placed(n) != 0 || access(state, F_OK) == 0)
                bench_die("peltd --restore left %u cpusets placed, or the state file (see %s)", groups_placed(n), logpath);
        for (unsigned i = 0; i < n; i++) {
                char path[512], cur[64];

                shares_file(path, sizeof path, i);
                read_or_die(path, cur, sizeof cur);
                if (!str_eq(cur, original_shares()))
                        bench_die("peltd --restore left %s at %s (see %s)", path, cur, logpath);
        }
        set_values(n, true);
        record_values(n);
        ref2 = ref_restore_values(n);
        snprintf(label, sizeof label, "c. peltd --restore of %u values", 2 * n);
        failed = print_ratio(label, peltd_cost, ref1, ref2, z->bound_abc);
        remove_tree();
        return failed;
}

/* ---- The curve (--curve): first placement and restore as the number of groups grows ------------ */

/*
 * Up to 2,000 groups (4,000 threads): at 4,000 groups with 8,000 threads peltd runs out of file
 * descriptors today (it keeps several per group and thread), so that point would measure a failure.
 */
static const unsigned curve_points[] = { 250, 500, 1000, 2000 };
#define CURVE_N(a) (sizeof(a) / sizeof((a)[0]))

typedef struct CurvePoint {
        unsigned n;
        Cost placed, stopped, ref_place, ref_restore;
} CurvePoint;

static void curve_measure(unsigned n, CurvePoint *pt) {
        char cpus[256] = "";
        Watch w;

        make_tree(n, 2 * n);
        pt->n = n;
        pt->ref_place = ref_place(n, "0");
        pt->ref_restore = ref_restore(n, "0", all_cpus);
        start_daemon(&w);
        pt->placed = daemon_place(&w, n, cpus, sizeof cpus);
        if (groups_placed(n) != n)
                bench_die("peltd placed %u of %u groups (see %s)", groups_placed(n), n, logpath);
        pt->stopped = daemon_stop(&w);
        if (groups_placed(n) != 0)
                bench_die("SIGTERM left %u groups placed (see %s)", groups_placed(n), logpath);
        remove_tree();
}

/* The data and the gnuplot script beside it, in out/: CPU time per group against the number of groups. */
static void curve_plot(const char *out, const CurvePoint *pts, size_t n) {
        char dat[256], gp[256], png[256];
        FILE *f;

        if (mkdir(out, 0755) < 0 && errno != EEXIST)
                bench_die("mkdir %s: %s", out, strerror(errno));
        snprintf(dat, sizeof dat, "%s/scale.dat", out);
        snprintf(gp, sizeof gp, "%s/scale.gp", out);
        snprintf(png, sizeof png, "%s/scale.png", out);
        f = fopen(dat, "we");
        if (!f)
                bench_die("fopen %s: %s", dat, strerror(errno));
        fprintf(f, "# groups  place_us_per_group  restore_us_per_group  loop_place_us  loop_restore_us (CPU time)\n");
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%u %.2f %.2f %.2f %.2f\n", pts[i].n, pts[i].placed.cpu_s * 1e6 / pts[i].n,
                        pts[i].stopped.cpu_s * 1e6 / pts[i].n, pts[i].ref_place.cpu_s * 1e6 / pts[i].n,
                        pts[i].ref_restore.cpu_s * 1e6 / pts[i].n);
        fclose(f);
        f = fopen(gp, "we");
        if (!f)
                bench_die("fopen %s: %s", gp, strerror(errno));
        fprintf(f, "set terminal pngcairo size 900,540 noenhanced\nset output '%s'\n"
                   "set title 'peltd: CPU time per group, first placement and SIGTERM restore'\n"
                   "set xlabel 'groups (2 sleeping threads each)'\nset ylabel 'CPU time per group (us)'\n"
                   "set logscale x 2\nset yrange [0:*]\nset key top left\nset grid\n"
                   "plot '%s' using 1:2 with linespoints lw 2 title 'peltd: first placement', \\\n"
                   "     '' using 1:3 with linespoints lw 2 title 'peltd: SIGTERM restore', \\\n"
                   "     '' using 1:4 with lines dt 2 title 'loop: read, record, write', \\\n"
                   "     '' using 1:5 with lines dt 2 title 'loop: write back'\n",
                png, dat);
        fclose(f);
        if (run_gnuplot(gp))
                printf("\nplot: %s (data %s)\n", png, dat);
}

/*
 * Linear: the kernel's own cpuset writes cost more per group as the groups grow (the loop shows
 * it), so the criterion is peltd's cost against the loop's at each point: at the biggest point at
 * most twice what it is at the smallest, for placement and restore alike (a cost of peltd's own
 * that grows with the square of the groups doubles that ratio at every step).
 */
static bool curve(const char *out) {
        CurvePoint pts[CURVE_N(curve_points)];
        const CurvePoint *lo = &pts[0], *hi = &pts[CURVE_N(pts) - 1];
        double place_growth, restore_growth;

        printf("%8s  %14s %14s  %14s %14s  %7s %7s   (CPU time per group)\n", "groups", "peltd place", "peltd restore",
               "loop place", "loop restore", "place", "restore");
        for (size_t i = 0; i < CURVE_N(curve_points); i++) {
                curve_measure(curve_points[i], &pts[i]);
                printf("%8u  %11.1f us %11.1f us  %11.1f us %11.1f us  %6.2fx %6.2fx\n", pts[i].n,
                       pts[i].placed.cpu_s * 1e6 / pts[i].n, pts[i].stopped.cpu_s * 1e6 / pts[i].n,
                       pts[i].ref_place.cpu_s * 1e6 / pts[i].n, pts[i].ref_restore.cpu_s * 1e6 / pts[i].n,
                       pts[i].placed.cpu_s / pts[i].ref_place.cpu_s, pts[i].stopped.cpu_s / pts[i].ref_restore.cpu_s);
                fflush(stdout);
        }
        curve_plot(out, pts, CURVE_N(pts));
        place_growth = (hi->placed.cpu_s / hi->ref_place.cpu_s) / (lo->placed.cpu_s / lo->ref_place.cpu_s);
        restore_growth = (hi->stopped.cpu_s / hi->ref_restore.cpu_s) / (lo->stopped.cpu_s / lo->ref_restore.cpu_s);
        printf("\npeltd against the loop at %u groups, against that at %u: placement %.2fx, restore %.2fx (linear: at most 2x)\n",
               hi->n, lo->n, place_growth, restore_growth);
        return place_growth > 2 || restore_growth > 2;
}

int main(int argc, char *argv[]) {
        const Sizes *z = argc > 2 && str_eq(argv[2], "--quick") ? &quick : &full;
        const char *curve_out = argc > 2 && str_eq(argv[2], "--curve") ? (argc > 3 ? argv[3] : "bench-scale") : NULL;
        struct rlimit rl = { 1 << 20, 1 << 20 };
        bool failed = false;

        if (argc < 2)
                bench_die("usage: scale PELTD [--quick | --curve [OUTDIR]]");
        peltd = argv[1];
        machine_lock();
        (void) setrlimit(RLIMIT_NOFILE, &rl);
        v2 = bench_cgroup_v2();
        /* As a test (--quick), named as the tests' cgroups and scratch directories are: a leftover is seen. */
        snprintf(top, sizeof top, "/peltd-%s-scale-%d", z == &quick ? "test" : "bench", (int) getpid());
        snprintf(tmp, sizeof tmp, "/tmp/peltd-%s-scale-XXXXXX", z == &quick ? "test" : "bench");
        if (!mkdtemp(tmp))
                bench_die("mkdtemp: %s", strerror(errno));
        snprintf(conf, sizeof conf, "%s/peltd.conf", tmp);
        snprintf(state, sizeof state, "%s/state/originals", tmp);
        snprintf(logpath, sizeof logpath, "%s/peltd.log", tmp);
        {
                char dir[160];

                snprintf(dir, sizeof dir, "%s/state", tmp);
                if (mkdir(dir, 0755) < 0)
                        bench_die("mkdir %s: %s", dir, strerror(errno));
        }
        atexit(cleanup);
        signal(SIGINT, exit);
        signal(SIGTERM, exit);
        signal(SIGHUP, exit);
        signal(SIGPIPE, SIG_IGN); /* a reader gone: the output is lost, the subtree still removed */
        write_conf();
        read_or_die(v2 ? BENCH_CG_V2 "/cpuset.cpus.effective" : BENCH_CG_V1 "/cpuset/cpuset.cpus", all_cpus, sizeof all_cpus);
        if (!strchr(all_cpus, '-') && !strchr(all_cpus, ','))
                bench_die("one CPU online: nothing to place");

        if (curve_out) {
                printf("scale: %s, the curve, peltd %s\n\n", v2 ? "cgroup v2" : "cgroup v1", peltd);
                failed = curve(curve_out);
                printf("\n%s\n", failed ? "FAIL" : "PASS");
                return failed;
        }
        printf("scale: %s, %s, peltd %s\n\n", v2 ? "cgroup v2" : "cgroup v1", z == &quick ? "quick" : "full", peltd);
        failed |= place_steady_stop(z, z->place_groups, true, z->bound_d);
        if (z->small_groups > 0)
                failed |= place_steady_stop(z, z->small_groups, false, 0);
        failed |= restore_values(z);

        printf("\n%s\n", failed ? "FAIL" : "PASS");
        return failed;
}
