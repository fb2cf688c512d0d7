/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What the sampling tests on the real kernel share (test-sample-kernel, test-sample-bpf-kernel).
 * Each test case gets a private cgroup subtree, top (/peltd-test-PID-N with groups a and b, in the
 * cpu, cpuacct and cpuset hierarchies on v1, in the unified one on v2, by the detected mode):
 * setup() makes it, teardown() ends the processes started in it (bench-util.h's children) and
 * removes it, and so does the exit, also on failure or a signal. Include after <cmocka.h>.
 */
#include <dirent.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>

#include "../../bench/bench-util.h"
#include "machine-lock.h"
#include "peltd/config.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/sampling.h"
#include "test-cleanup.h"
#include "time-scale.h"

/*
 * The tolerances of the comparisons with the kernel's values and between the backends: generous,
 * as other work may run on this 2-CPU machine while the lock is held (only tests and benchmarks
 * take it; the workers' groups get the largest CPU weight). PELTD_TEST_TOLERANCE_SCALE (at least
 * 1) widens them where time itself is unsteady: in the emulated test guest (tests/vm) a virtual
 * CPU stalls for milliseconds at a time, and the last 100 ms need not look like the last 0.65 s.
 */
#define UTIL_TOLERANCE (64 * tolerance_scale)
#define RUNNABLE_TOLERANCE (160 * tolerance_scale)
#define GROUP_TOLERANCE (96 * tolerance_scale)

static double tolerance_scale = 1;
static char top[64];

/* The processes started and top's subtree: ended and removed. */
static void cleanup(void) {
        bench_kill_children();
        bench_cgroup_remove(top);
}

/* Also when killed: group (made by bench_cgroup_create()) removed in every hierarchy, children first. */
static void cleanup_cgroup_at_exit(const char *group) {
        const char *h[3];
        int n = bench_hierarchies(h);

        for (int i = 0; i < n; i++) {
                char path[512];

                snprintf(path, sizeof path, "%s%s", h[i], group);
                test_cleanup_cgroup(path);
        }
}

/* Each test gets its own subtree: /peltd-test-PID-N. */
static int setup(_unused_ void **state) {
        static unsigned n = 0;

        snprintf(top, sizeof top, "/peltd-test-%d-%u", (int) getpid(), n++);
        bench_cgroup_create(top);
        cleanup_cgroup_at_exit(top);
        /* The machine's other work (builds, other engineers' programs) must not come and go in the workers' CPU time. */
        bench_cgroup_max_weight(top);
        for (const char *g = "a"; g; g = strcmp(g, "a") == 0 ? "b" : NULL) {
                char path[128];

                snprintf(path, sizeof path, "%s/%s", top, g);
                bench_cgroup_create(path);
                cleanup_cgroup_at_exit(path);
        }
        return 0;
}

static int teardown(_unused_ void **state) {
        cleanup();
        return 0;
}

/* The path of group g below top. */
static const char *in_top(const char *g) {
        static char path[128];

        snprintf(path, sizeof path, "%s/%s", top, g);
        return path;
}

/*
 * A process spinning share of every period_ms (bench_duty_loop) in group g (below top), at nice,
 * named comm (NULL: as this program); returns once it is there.
 */
static pid_t duty_worker(const char *g, const char *comm, double period_ms, double share, int nice) {
        return bench_spawn_duty(in_top(g), comm, nice, (uint64_t) (period_ms * 1e6), (uint64_t) (period_ms * share * 1e6));
}

/* The threads of process pid (its main thread among them or not), up to max of them; returns how many there are. */
static size_t process_threads(pid_t pid, bool with_main, pid_t *tids, size_t max) {
        char path[64];
        DIR *d;
        struct dirent *de;
        size_t n = 0;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        assert_non_null(d);
        while ((de = readdir(d))) {
                int tid;

                if (safe_atoi(de->d_name, &tid) < 0 || (!with_main && tid == pid))
                        continue;
                if (n < max)
                        tids[n] = tid;
                n++;
        }
        closedir(d);
        return n;
}

/* The default configuration, managing top's groups. */
static Config *top_config(void) {
        Config *config = NULL;

        assert_int_equal(config_new_default(&config), 0);
        free(config->cgroup_root);
        config->cgroup_root = strdup(top);
        return config;
}

/* A configuration file of fmt, removed at exit; free its path. */
_printf_(1, 2) static char *write_conf(const char *fmt, ...) {
        char *path = strdup("/tmp/peltd-test-kernel-XXXXXX");
        va_list ap;
        FILE *f;
        int fd;

        assert_non_null(path);
        fd = mkstemp(path);
        assert_true(fd >= 0);
        test_cleanup_path(path);
        f = fdopen(fd, "w");
        assert_non_null(f);
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        assert_int_equal(fclose(f), 0);
        return path;
}

/* ---- peltd --once --json -------------------------------------------------------------------------- */

/*
 * peltd --once 2 --interval 100 --json with conf (and --backend, where backend is not NULL), in a
 * thread; done is set once peltd has ended (its output read to the end), at end_ns.
 */
typedef struct Once {
        const char *conf;
        const char *backend;
        char *out;
        int status;
        uint64_t end_ns;
        bool done;
} Once;

static void *run_once(void *arg) {
        Once *o = arg;
        char *argv[12] = { PELTD_BINARY, "--config", (char *) o->conf, "--once", "2", "--interval", "100" };
        size_t n = 7;
        struct rusage ru;

        if (o->backend) {
                argv[n++] = "--backend";
                argv[n++] = (char *) o->backend;
        }
        argv[n] = "--json";
        o->status = bench_run(argv, &o->out, &ru);
        o->end_ns = bench_now_ns();
        __atomic_store_n(&o->done, true, __ATOMIC_RELEASE);
        return NULL;
}

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("peltd's JSON lacks \"%s\"", key);
        return v;
}

/* Runs of peltd --once compared: one run's final values are what its last ~100 ms held. */
#define ONCE_RUNS 3

static double median3(double v[ONCE_RUNS]) {
        return bench_median(v, ONCE_RUNS);
}

/* ---- threads that start, move and exit while sampling runs ----------------------------------------- */

/*
 * The same events for each backend: stay and mover in a, leaver in b (workers named comm); after
 * the sixth round late starts in a and mover moves to b, after the eleventh leaver is killed.
 */
typedef struct Events {
        const char *comm;
        pid_t stay, mover, leaver, late;
        char group_a[128], group_b[128];
        bool found_late;
} Events;

static void events_start(Events *ev, const char *comm) {
        *ev = (Events){ .comm = comm };
        snprintf(ev->group_a, sizeof ev->group_a, "%s/a", top);
        snprintf(ev->group_b, sizeof ev->group_b, "%s/b", top);
        ev->stay = duty_worker("a", comm, 3.1, 0.3, 0);
        ev->mover = duty_worker("a", comm, 2.3, 0.3, 0);
        ev->leaver = duty_worker("b", comm, 4.7, 0.3, 0);
}

/* What happens after sampling's round k (from 0); late is looked for from the eighth on. */
static void events_round(Events *ev, Sampling *s, int k) {
        if (k == 5) {
                ev->late = duty_worker("a", ev->comm, 2.3, 0.2, 0);
                bench_cgroup_attach(ev->group_b, ev->mover);
        }
        if (k == 10)
                bench_stop_child(ev->leaver, SIGKILL);
        if (k > 6 && !ev->found_late) {
                SampledThread *t;
                size_t nt = sampling_threads(s, &t);

                for (size_t i = 0; i < nt; i++)
                        ev->found_late |= t[i].tid == ev->late;
        }
}

/*
 * After the rounds: late was found; the leaver is gone, the mover is in b, stay and late are in a
 * and run. a counts two threads and its runnable comes from them (stay 30%, late 20%); b counts
 * the mover alone.
 */
static void events_check(const Events *ev, Sampling *s) {
        SampledThread *t;
        SampledGroup *g;
        size_t nt, ng;

        assert_true(ev->found_late);
        nt = sampling_threads(s, &t);
        for (size_t i = 0; i < nt; i++) {
                assert_true(t[i].tid != ev->leaver);
                if (t[i].tid == ev->mover)
                        assert_string_equal(t[i].cgroup, ev->group_b);
                if (t[i].tid == ev->stay || t[i].tid == ev->late) {
                        assert_string_equal(t[i].cgroup, ev->group_a);
                        assert_true(t[i].v.util_avg > 100);
                }
                if (startswith(t[i].cgroup, top))
                        printf("# %d %s %s util %d runnable %d\n", (int) t[i].tid, t[i].comm, t[i].cgroup, (int) t[i].v.util_avg,
                               (int) t[i].v.runnable_avg);
        }
        ng = sampling_groups(s, &g);
        assert_int_equal(ng, 2);
        for (size_t i = 0; i < ng; i++) {
                if (streq(g[i].path, ev->group_a)) {
                        assert_int_equal(g[i].nr_tasks, 2);
                        assert_true(g[i].v.runnable_avg > 300);
                } else {
                        assert_string_equal(g[i].path, ev->group_b);
                        assert_int_equal(g[i].nr_tasks, 1);
                        assert_true(g[i].v.runnable_avg > 150);
                }
        }
}

/* ---- a PID namespace of its own ------------------------------------------------------------------- */

/* A thread that waits for a byte on the pipe *arg, then ends. */
static void *waiting_thread(void *arg) {
        int fd = *(int *) arg;
        char c;

        (void) !read(fd, &c, 1);
        return NULL;
}

/*
 * Runs child() as PID 1 of a new PID namespace, in a new mount namespace (where child() mounts that
 * namespace's /proc on proc_dir, a directory the caller made with test_mkdtemp()); this process
 * stays where it is. Fails, naming what, unless child() returns 0.
 */
static void run_in_pid_namespace(int (*child)(void), const char *proc_dir, const char *what) {
        pid_t pid;
        int status;

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                pid_t inner;

                if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
                        _exit(2);
                inner = fork();
                if (inner < 0)
                        _exit(3);
                if (inner == 0) {
                        int k = child();

                        (void) umount2(proc_dir, MNT_DETACH);
                        (void) rmdir(proc_dir);
                        _exit(k);
                }
                if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
                        _exit(4);
                _exit(WEXITSTATUS(status));
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("%s failed: status %d", what, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/*
 * The start of main(): the tolerances' scale read, the machine lock taken (waiting for it), the
 * cleanup at exit, peltd's own log quiet. Returns 0, or the exit status for a bad
 * PELTD_TEST_TOLERANCE_SCALE.
 */
static int kernel_tests_start(void) {
        const char *e = getenv("PELTD_TEST_TOLERANCE_SCALE");

        if (e && (safe_atod(e, &tolerance_scale) < 0 || tolerance_scale < 1)) {
                fprintf(stderr, "PELTD_TEST_TOLERANCE_SCALE=%s: not a number of at least 1\n", e);
                return 2;
        }
        machine_lock();
        atexit(cleanup);
        log_set_max_level(LOG_ERR);
        return 0;
}
