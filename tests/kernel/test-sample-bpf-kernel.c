/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF sampler on the real kernel, in a private cgroup subtree (/peltd-test-PID-N with groups a
 * and b, in the cpu, cpuacct and cpuset hierarchies on v1, in the unified one on v2), removed at
 * the end, also on failure:
 *
 *   - a record's cgroup id is the inode of the group's directory in the usage hierarchy; its ids,
 *     comm, nice, counters and start time are what /proc says;
 *   - peltd --once --json with --backend bpf and with --backend proc, side by side over the same
 *     duty-cycle threads: the same threads, cgroup paths, comm and nice, util and runnable within
 *     a tolerance, the same groups with the same thread counts;
 *   - libpeltd's sampling with the BPF sampler: a thread started mid-run is found, one that moves
 *     from a to b is seen in b, one that exits leaves; no thread file is kept open;
 *   - in a PID namespace of its own: ids as that namespace numbers them, nothing of the host's; a
 *     thread that exits is GONE, a TID reused by a new thread is a NEW thread;
 *   - peltd without the kernel's BTF (hidden in a mount namespace) and without CAP_BPF, CAP_PERFMON
 *     and CAP_SYS_ADMIN: --backend bpf exits 1 with the reason, auto samples from /proc and says why.
 *
 * Skips (77) only in a build without the BPF sampler (meson -Dbpf=disabled).
 */
#include <linux/capability.h>
#include <glob.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "kernel-util.h"
#include "peltd/sample-bpf.h"
#include "peltd/sampling.h"

typedef struct DutyCycle {
        char threads[16], period_usec[16], duty[16];
        int nice;
} DutyCycle;

/* Ready once it is in its group at its nice; the caller waits for the tool's threads. */
static void duty_cycle_body(int ready_fd, const void *arg) {
        const DutyCycle *d = arg;
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

        if (setpriority(PRIO_PROCESS, 0, d->nice) < 0 || null < 0 || dup2(null, STDOUT_FILENO) < 0)
                _exit(3);
        bench_ready(ready_fd);
        execl(DUTY_CYCLE, DUTY_CYCLE, d->threads, d->period_usec, d->duty, (char *) NULL);
        _exit(127);
}

/* The duty-cycle tool (THREADS threads, each busy DUTY% of every PERIOD µs) in group g, at nice. */
static pid_t duty_cycle(const char *g, unsigned threads, unsigned period_usec, unsigned duty, int nice) {
        DutyCycle d = { .nice = nice };

        snprintf(d.threads, sizeof d.threads, "%u", threads);
        snprintf(d.period_usec, sizeof d.period_usec, "%u", period_usec);
        snprintf(d.duty, sizeof d.duty, "%u", duty);
        return bench_spawn(in_top(g), NULL, duty_cycle_body, &d);
}

/* A worker that is this test's own code: a process spinning duty% of every period_ms, in group g. */
static pid_t worker(const char *g, double period_ms, double share, int nice) {
        return duty_worker(g, "bpf-worker", period_ms, share, nice);
}

static uint64_t inode_of(const char *path) {
        struct stat st;

        if (stat(path, &st) < 0)
                fail_msg("stat %s: %s", path, strerror(errno));
        return (uint64_t) st.st_ino;
}

/* The directory of group g (below top; "" for this process's own) in the usage hierarchy. */
static void usage_dir(const char *cgroup_path, char *buf, size_t size) {
        if (bench_cgroup_v2())
                snprintf(buf, size, "%s%s", BENCH_CG_V2, cgroup_path);
        else
                snprintf(buf, size, "%s/cpuacct%s", BENCH_CG_V1, cgroup_path);
}

/* This process's cgroup in the usage hierarchy, from /proc/self/cgroup. */
static void own_cgroup(char *buf, size_t size) {
        char line[1024];
        FILE *f = fopen("/proc/self/cgroup", "re");
        bool v2 = bench_cgroup_v2();

        assert_non_null(f);
        buf[0] = 0;
        while (fgets(line, sizeof line, f)) {
                char *p = strchr(line, ':'), *q;

                if (!p || !(q = strchr(p + 1, ':')))
                        continue;
                *q = 0;
                if (v2 ? streq(p + 1, "") && startswith(line, "0:") : !!strstr(p + 1, "cpuacct")) {
                        snprintf(buf, size, "%s", q + 1);
                        buf[strcspn(buf, "\n")] = 0;
                }
        }
        fclose(f);
        assert_true(buf[0] == '/');
}

/* Every thread /proc lists, by glob (not the daemon's readdir): their TIDs in *ret (malloc'd). */
static size_t machine_tids(pid_t **ret) {
        glob_t g;
        pid_t *v;

        assert_int_equal(glob("/proc/[0-9]*/task/[0-9]*", GLOB_NOSORT, NULL, &g), 0);
        v = calloc(MAX(g.gl_pathc, (size_t) 1), sizeof *v);
        assert_non_null(v);
        for (size_t i = 0; i < g.gl_pathc; i++)
                v[i] = (pid_t) atoi(strrchr(g.gl_pathv[i], '/') + 1);
        size_t n = g.gl_pathc;

        *ret = v;
        globfree(&g);
        return n;
}

static const ProcThreadSample *find_sample(const ProcThreadSample *v, size_t n, pid_t tid) {
        for (size_t i = 0; i < n; i++)
                if (v[i].tid == tid)
                        return &v[i];
        return NULL;
}

/* /proc/PID/task/TID/stat's fields 22 (starttime) and 39 (processor), and schedstat's run time. */
static void proc_stat_of(pid_t pid, pid_t tid, uint64_t *ret_start, uint64_t *ret_run) {
        char path[128], buf[2048], comm[16];
        int nice, cpu;
        unsigned long long run;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int) pid, (int) tid);
        assert_true(bench_read_text(path, buf, sizeof buf) > 0);
        assert_int_equal(proc_parse_stat(buf, comm, &nice, ret_start, &cpu), 0);
        snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int) pid, (int) tid);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_int_equal(fscanf(f, "%llu", &run), 1);
        fclose(f);
        *ret_run = run;
}

/* ---- records against /proc and the cgroup directories ------------------------------------------ */

static void test_records(_unused_ void **state) {
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_(bpf_sampler_freep) BpfSampler *b = NULL;
        _cleanup_free_ char *reason = NULL;
        const ProcThreadSample *v, *w, *me;
        char group[256], dir[512], own[512];
        pid_t pid;
        size_t n;
        uint64_t start, run;

        pid = worker("a", 3.1, 0.3, 5);
        usleep(100 * 1000);
        assert_int_equal(rootdir_open("/", &root), 0);
        if (bpf_sampler_new(root, bench_cgroup_v2() ? CGROUP_MODE_V2 : CGROUP_MODE_V1, &b, &reason) < 0)
                fail_msg("the BPF sampler does not load: %s", reason);
        assert_int_equal(bpf_sampler_read(b, &v, &n), 0);
        printf("# %zu threads in one read\n", n);

        w = find_sample(v, n, pid);
        assert_non_null(w);
        snprintf(group, sizeof group, "%s/a", top);
        usage_dir(group, dir, sizeof dir);
        printf("# worker %d: cgroup id %" PRIu64 ", %s has inode %" PRIu64 "\n", (int) pid, w->cgroup_id, dir, inode_of(dir));
        assert_int_equal(w->cgroup_id, inode_of(dir));
        assert_int_equal(w->pid, pid);
        assert_int_equal(w->nice, 5);
        assert_string_equal(w->comm, "bpf-worker");
        assert_true(w->cpu >= 0 && w->cpu < CPUMASK_MAX);
        proc_stat_of(pid, pid, &start, &run);
        /* stat's start time is boot time in clock ticks; the record has it in ns. */
        assert_int_equal(w->start_ns / (1000000000 / (uint64_t) sysconf(_SC_CLK_TCK)), start);
        /* Read before /proc was: no more run time than schedstat says now, and it had run. */
        assert_true(w->run_ns > 0 && w->run_ns <= run);
        assert_true(w->slices > 0);

        /* This thread: its own cgroup, whatever it is. */
        me = find_sample(v, n, getpid());
        assert_non_null(me);
        own_cgroup(own, sizeof own);
        usage_dir(own, dir, sizeof dir);
        assert_int_equal(me->cgroup_id, inode_of(dir));
        assert_int_equal(me->pid, getpid());

        /* Every thread read is one /proc knows, with the same process (a few may have exited since). */
        {
                size_t known = 0;

                for (size_t i = 0; i < n; i++) {
                        char path[96], buf[2048], comm[16];
                        int nice, cpu;
                        uint64_t st;

                        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int) v[i].pid, (int) v[i].tid);
                        if (bench_read_text(path, buf, sizeof buf) <= 0)
                                continue;
                        assert_int_equal(proc_parse_stat(buf, comm, &nice, &st, &cpu), 0);
                        known++;
                }
                printf("# %zu of %zu threads read are in /proc as the same process's\n", known, n);
                assert_true(known * 10 >= n * 9);
        }

        /*
         * And the other way: the threads /proc lists that the read left out, counted here by
         * another route (glob, one read between two listings) and by bpf_sampler_find_hidden().
         * The machine's own threads come and go meanwhile: a few either way.
         */
        {
                BpfHidden h;
                size_t listed, missing = 0;
                pid_t *before, *after;
                size_t n_before, n_after;

                n_before = machine_tids(&before);
                assert_int_equal(bpf_sampler_read(b, &v, &n), 0);
                n_after = machine_tids(&after);
                for (size_t i = 0; i < n_before; i++) {
                        bool later = false;

                        for (size_t j = 0; j < n_after && !later; j++)
                                later = after[j] == before[i];
                        if (later && !find_sample(v, n, before[i]))
                                missing++;
                }
                listed = n_before;
                free(before);
                free(after);
                assert_int_equal(bpf_sampler_find_hidden(b, root, &h), 0);
                printf("# /proc lists %zu threads; the read left out %zu; bpf_sampler_find_hidden: %zu of %zu, of %zu processes (first %d)\n",
                       listed, missing, h.n_threads, h.n_listed, h.n_processes, h.n_processes > 0 ? (int) h.pid[0] : 0);
                assert_true(h.n_listed + 5 >= listed && h.n_listed <= listed + 5);
                assert_true(h.n_threads + 3 >= missing && h.n_threads <= missing + 3);
                assert_true((h.n_threads == 0) == (h.n_processes == 0));
                assert_true(h.n_processes <= h.n_threads);
                /* Not this process, nor the worker: a hidden one is never one of these. */
                for (size_t i = 0; i < MIN(h.n_processes, (size_t) BPF_HIDDEN_EXAMPLES); i++)
                        assert_true(h.pid[i] != getpid() && h.pid[i] != pid);
        }
}

/* ---- peltd --once with each backend, side by side ---------------------------------------------- */

static json_object *find_task(json_object *tasks, int tid) {
        for (size_t j = 0; j < json_object_array_length(tasks); j++) {
                json_object *t = json_object_array_get_idx(tasks, j);

                if (json_object_get_int(get(t, "tid")) == tid)
                        return t;
        }
        return NULL;
}

static bool is_group_a(const char *path) {
        size_t l = strlen(path);

        return l >= 2 && streq(path + l - 2, "/a");
}

/*
 * The duty-cycle workload of the comparisons: three threads 20% of every 10 ms in a, two 10% of
 * every 7 ms at nice 4 in b (0.8 CPU in all on this 2-CPU machine, peltd beside them). Fills the
 * processes and their threads (main thread first among them or not: as /proc lists them).
 */
static void comparison_workload(pid_t procs[2], pid_t tids[2][8], size_t nt[2]) {
        procs[0] = duty_cycle("a", 3, 10000, 20, 0);
        procs[1] = duty_cycle("b", 2, 7000, 10, 4);
        for (int i = 0; i < 2; i++)
                for (int tries = 0; (nt[i] = process_threads(procs[i], true, tids[i], 8)) != (i == 0 ? 4u : 3u); tries++) {
                        assert_true(tries < 200);
                        usleep(10 * 1000);
                }
        usleep(300 * 1000);
}

/*
 * peltd --once --backend bpf and --backend proc side by side, three times. Their threads, paths,
 * comm, nice and the groups' thread counts must agree in every run; util and runnable are final
 * values (what the last ~100 ms held), taken by two processes sampling at their own moments: their
 * differences are compared as medians over the runs.
 */
static void test_once_bpf_vs_proc(_unused_ void **state) {
        pid_t procs[2], tids[2][8];
        size_t nt[2];
        char *conf;
        double du[2][8][ONCE_RUNS], dr[2][8][ONCE_RUNS], dg[2][ONCE_RUNS];

        comparison_workload(procs, tids, nt);
        conf = write_conf("[Daemon]\nCgroupRoot=%s\n", top);

        for (unsigned run = 0; run < ONCE_RUNS; run++) {
                Once o[2] = { { .backend = "bpf", .conf = conf }, { .backend = "proc", .conf = conf } };
                json_object *root[2], *tasks[2], *groups[2];
                pthread_t th[2];

                for (int i = 0; i < 2; i++)
                        assert_int_equal(pthread_create(&th[i], NULL, run_once, &o[i]), 0);
                for (int i = 0; i < 2; i++) {
                        pthread_join(th[i], NULL);
                        assert_int_equal(o[i].status, 0);
                        root[i] = json_tokener_parse(o[i].out);
                        assert_non_null(root[i]);
                        assert_int_equal(json_object_get_int(get(root[i], "rounds")), 20);
                        tasks[i] = get(root[i], "tasks");
                        groups[i] = get(root[i], "groups");
                }

                /* The workers' threads: in both, the same, in the same group, with the same names and nice. */
                for (int p = 0; p < 2; p++)
                        for (size_t k = 0; k < nt[p]; k++) {
                                json_object *b = find_task(tasks[0], tids[p][k]), *q = find_task(tasks[1], tids[p][k]);
                                char expect[128];
                                int ub, uq, rb, rq;

                                if (!b || !q)
                                        fail_msg("thread %d: %s", (int) tids[p][k],
                                                 !b ? "not in --backend bpf's output" : "not in --backend proc's output");
                                snprintf(expect, sizeof expect, "%s/%s", top, p == 0 ? "a" : "b");
                                assert_int_equal(json_object_get_int(get(b, "pid")), procs[p]);
                                assert_int_equal(json_object_get_int(get(q, "pid")), procs[p]);
                                assert_string_equal(json_object_get_string(get(b, "cgroup")), expect);
                                assert_string_equal(json_object_get_string(get(q, "cgroup")), expect);
                                assert_string_equal(json_object_get_string(get(b, "comm")), "duty-cycle");
                                assert_string_equal(json_object_get_string(get(q, "comm")), "duty-cycle");
                                assert_int_equal(json_object_get_int(get(b, "nice")), p == 0 ? 0 : 4);
                                assert_int_equal(json_object_get_int(get(q, "nice")), p == 0 ? 0 : 4);
                                ub = json_object_get_int(get(b, "util_avg"));
                                uq = json_object_get_int(get(q, "util_avg"));
                                rb = json_object_get_int(get(b, "runnable_avg"));
                                rq = json_object_get_int(get(q, "runnable_avg"));
                                printf("# run %u, %d (%s): util bpf %d proc %d, runnable bpf %d proc %d\n", run + 1, (int) tids[p][k],
                                       expect, ub, uq, rb, rq);
                                du[p][k][run] = fabs((double) (ub - uq));
                                dr[p][k][run] = fabs((double) (rb - rq));
                        }

                /* Threads in the subtree: the workers', no other, in both. */
                for (int i = 0; i < 2; i++) {
                        size_t in_top = 0;

                        for (size_t j = 0; j < json_object_array_length(tasks[i]); j++)
                                in_top += startswith(json_object_get_string(get(json_object_array_get_idx(tasks[i], j), "cgroup")), top) !=
                                          NULL;
                        assert_int_equal(in_top, nt[0] + nt[1]);
                }

                /* The groups: the same, with the same thread counts and shares, util from the same counters. */
                assert_int_equal(json_object_array_length(groups[0]), 2);
                assert_int_equal(json_object_array_length(groups[1]), 2);
                for (size_t i = 0; i < 2; i++) {
                        json_object *gb = json_object_array_get_idx(groups[0], i), *gq = NULL;
                        const char *path = json_object_get_string(get(gb, "path"));
                        int ub, uq, a = is_group_a(path);

                        for (size_t j = 0; j < 2; j++)
                                if (streq(json_object_get_string(get(json_object_array_get_idx(groups[1], j), "path")), path))
                                        gq = json_object_array_get_idx(groups[1], j);
                        assert_non_null(gq);
                        assert_int_equal(json_object_get_int(get(gb, "nr_tasks")), (int) nt[a ? 0 : 1]);
                        assert_int_equal(json_object_get_int(get(gq, "nr_tasks")), (int) nt[a ? 0 : 1]);
                        assert_int_equal(json_object_get_int(get(gb, "shares")), json_object_get_int(get(gq, "shares")));
                        ub = json_object_get_int(get(gb, "util_avg"));
                        uq = json_object_get_int(get(gq, "util_avg"));
                        printf("# run %u, group %s: util bpf %d proc %d\n", run + 1, path, ub, uq);
                        dg[a ? 0 : 1][run] = fabs((double) (ub - uq));
                }
                for (int i = 0; i < 2; i++) {
                        json_object_put(root[i]);
                        free(o[i].out);
                }
        }
        unlink(conf);
        free(conf);

        for (int p = 0; p < 2; p++) {
                for (size_t k = 0; k < nt[p]; k++) {
                        assert_true(median3(du[p][k]) <= UTIL_TOLERANCE);
                        assert_true(median3(dr[p][k]) <= RUNNABLE_TOLERANCE);
                }
                assert_true(median3(dg[p]) <= GROUP_TOLERANCE);
        }
}

/* A process of n threads (and its main thread) that only sleep, in group g. */
static pid_t sleeper(const char *g, unsigned n) {
        return bench_spawn_sleepers(in_top(g), "bpf-sleeper", n + 1);
}

/*
 * The two backends in this process, in lockstep: each round reads the threads with /proc, then
 * with the BPF iterator, within the same millisecond. Both hand tracking the same samples: a thread
 * that sleeps has exactly the same counters, nice, CPU and name from both; one that runs has, from
 * the later read, no less, and no more than the time between the reads (and the scheduler's tick,
 * by which a running thread's time is brought up to date) can add; every thread is in the same
 * cgroup in both. Their averages then agree within what a millisecond of a duty cycle makes.
 */
static void test_same_samples(_unused_ void **state) {
        _cleanup_config_ Config *config = top_config();
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_rootdir_ RootDir *proc = NULL, *root = NULL;
        _cleanup_sampling_ Sampling *sb = NULL, *sp = NULL;
        static const unsigned caps[2] = { 1024, 1024 };
        BpfSampler *bpf = NULL;
        pid_t procs[2], tids[3][8];
        size_t nt[3], nb, np, gb_n, gp_n, exact = 0, ordered = 0;
        SampledThread *tb, *tp;
        SampledGroup *gb, *gp;
        ProcSampler *pb, *pp;

        comparison_workload(procs, tids, nt);
        nt[2] = process_threads(sleeper("b", 4), true, tids[2], 8);
        assert_int_equal(nt[2], 5);
        assert_int_equal(cgroup_fs_open_system(&fs), 0);
        assert_int_equal(rootdir_open("/proc", &proc), 0);
        assert_int_equal(rootdir_open("/", &root), 0);
        assert_int_equal(sampling_open_backend(root, fs->mode, SAMPLING_BACKEND_BPF, "SamplingBackend=", &bpf), 0);
        assert_int_equal(sampling_new(proc, fs, config,
                                      &(SamplingOptions){ .task_tracking = true, .capacity = caps, .n_capacity = 2, .bpf = bpf }, &sb),
                         0);
        assert_int_equal(sampling_new(proc, fs, config,
                                      &(SamplingOptions){ .task_tracking = true, .netlink = true, .process_clocks = true, .capacity = caps,
                                                          .n_capacity = 2 },
                                      &sp),
                         0);
        assert_int_equal(sampling_backend(sb), SAMPLING_BACKEND_BPF);
        assert_int_equal(sampling_backend(sp), SAMPLING_BACKEND_PROC);
        pb = sampling_proc_sampler(sb);
        pp = sampling_proc_sampler(sp);

        for (int k = 0; k < 30; k++) {
                uint64_t now;

                usleep(50 * 1000);
                now = bench_now_ns();
                assert_int_equal(sampling_round(sp, now, true), 0);
                assert_int_equal(sampling_round(sb, now, true), 0);

                for (int p = 0; p < 3; p++)
                        for (size_t j = 0; j < nt[p]; j++) {
                                ssize_t ib = proc_sampler_find(pb, tids[p][j]), ip = proc_sampler_find(pp, tids[p][j]);
                                const ProcThread *b, *q;

                                assert_true(ib >= 0 && ip >= 0);
                                b = proc_sampler_slot(pb, (size_t) ib);
                                q = proc_sampler_slot(pp, (size_t) ip);
                                if (b->state != q->state || b->pid != q->pid || !streq(b->comm, q->comm) || b->nice != q->nice)
                                        fail_msg("round %d, thread %d: bpf state %d pid %d comm %s nice %d, proc state %d pid %d comm %s nice %d", k,
                                                 (int) tids[p][j], b->state, (int) b->pid, b->comm, b->nice, q->state, (int) q->pid, q->comm,
                                                 q->nice);
                                if (b->run_ns == q->run_ns && b->wait_ns == q->wait_ns && b->slices == q->slices) {
                                        /*
                                         * Unchanged between the two reads. Its CPU too, except where /proc's
                                         * was read when it last ran and a sleeping thread moved since.
                                         */
                                        if (b->cpu != q->cpu)
                                                printf("# round %d, thread %d: CPU %d by BPF, %d by /proc%s\n", k, (int) tids[p][j], b->cpu, q->cpu,
                                                       q->unread ? " (left unread)" : "");
                                        exact++;
                                        continue;
                                }
                                /* It ran, or waited, between the reads: the later read has more, within the time between them. */
                                assert_true(b->run_ns >= q->run_ns && b->wait_ns >= q->wait_ns && b->slices >= q->slices);
                                assert_true(b->sample_ns > q->sample_ns);
                                assert_true((b->run_ns - q->run_ns) + (b->wait_ns - q->wait_ns) <=
                                            2 * (b->sample_ns - q->sample_ns) + 2 * 10 * 1000 * 1000);
                                ordered++;
                        }
        }
        printf("# 30 rounds, %zu threads: %zu samples the same from both, %zu later and larger from the BPF read\n",
               nt[0] + nt[1] + nt[2], exact, ordered);
        /* The sleepers (and the duty-cycle processes' main threads) at least, every round. */
        assert_true(exact >= 30 * (nt[2] + 2));

        nb = sampling_threads(sb, &tb);
        np = sampling_threads(sp, &tp);
        for (int p = 0; p < 3; p++)
                for (size_t k = 0; k < nt[p]; k++) {
                        const SampledThread *b = NULL, *q = NULL;
                        char expect[128];

                        for (size_t i = 0; i < nb; i++)
                                if (tb[i].tid == tids[p][k])
                                        b = &tb[i];
                        for (size_t i = 0; i < np; i++)
                                if (tp[i].tid == tids[p][k])
                                        q = &tp[i];
                        assert_non_null(b);
                        assert_non_null(q);
                        snprintf(expect, sizeof expect, "%s/%s", top, p == 0 ? "a" : "b");
                        assert_string_equal(b->cgroup, expect);
                        assert_string_equal(q->cgroup, expect);
                        printf("# %d (%s): util bpf %d proc %d, runnable bpf %d proc %d\n", (int) tids[p][k], expect, (int) b->v.util_avg,
                               (int) q->v.util_avg, (int) b->v.runnable_avg, (int) q->v.runnable_avg);
                        assert_true(fabs((double) b->v.util_avg - (double) q->v.util_avg) <= UTIL_TOLERANCE);
                        assert_true(fabs((double) b->v.runnable_avg - (double) q->v.runnable_avg) <= RUNNABLE_TOLERANCE);
                }
        gb_n = sampling_groups(sb, &gb);
        gp_n = sampling_groups(sp, &gp);
        assert_int_equal(gb_n, 2);
        assert_int_equal(gp_n, 2);
        for (size_t i = 0; i < 2; i++) {
                /* Both sorted by path. */
                assert_string_equal(gb[i].path, gp[i].path);
                assert_int_equal(gb[i].nr_tasks, gp[i].nr_tasks);
                assert_int_equal(gb[i].nr_tasks, is_group_a(gb[i].path) ? nt[0] : nt[1] + nt[2]);
                printf("# group %s: util bpf %d proc %d\n", gb[i].path, (int) gb[i].v.util_avg, (int) gp[i].v.util_avg);
                assert_true(fabs((double) gb[i].v.util_avg - (double) gp[i].v.util_avg) <= GROUP_TOLERANCE);
        }
}

/* ---- libpeltd's sampling with the BPF sampler: threads start, move and exit --------------------- */

static void test_sampling_events(_unused_ void **state) {
        _cleanup_config_ Config *config = top_config();
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_rootdir_ RootDir *proc = NULL, *root = NULL;
        _cleanup_sampling_ Sampling *s = NULL;
        static const unsigned caps[2] = { 1024, 1024 };
        BpfSampler *bpf = NULL;
        SampledThread *t;
        size_t nt;
        bool leaver_seen = false;
        Events ev;

        events_start(&ev, "bpf-worker");
        assert_int_equal(cgroup_fs_open_system(&fs), 0);
        assert_int_equal(rootdir_open("/proc", &proc), 0);
        assert_int_equal(rootdir_open("/", &root), 0);
        assert_int_equal(sampling_open_backend(root, fs->mode, SAMPLING_BACKEND_BPF, "SamplingBackend=", &bpf), 0);
        assert_non_null(bpf);
        assert_int_equal(sampling_new(proc, fs, config,
                                      &(SamplingOptions){ .task_tracking = true, .netlink = true, .process_clocks = true, .capacity = caps,
                                                          .n_capacity = 2, .bpf = bpf },
                                      &s),
                         0);
        assert_int_equal(sampling_backend(s), SAMPLING_BACKEND_BPF);
        /* Every read sees every thread: no connector, no thread file. */
        assert_false(proc_sampler_netlink_active(sampling_proc_sampler(s)));

        for (int k = 0; k < 30; k++) {
                usleep(50 * 1000);
                assert_int_equal(sampling_round(s, bench_now_ns(), true), 0);
                assert_int_equal(proc_sampler_n_kept_fds(sampling_proc_sampler(s)), 0);
                events_round(&ev, s, k);
                /* Before it is killed, the leaver is seen in b. */
                if (k == 8) {
                        nt = sampling_threads(s, &t);
                        for (size_t i = 0; i < nt; i++)
                                leaver_seen |= t[i].tid == ev.leaver && streq(t[i].cgroup, ev.group_b);
                }
        }
        assert_true(leaver_seen);
        events_check(&ev, s);
}

/* ---- a PID namespace of its own: its ids, exits, a TID reused ---------------------------------- */

static char pidns_dir[] = "/tmp/peltd-test-proc-XXXXXX";

static int pidns_child(void) {
        _cleanup_rootdir_ RootDir *proc = NULL, *root = NULL;
        _cleanup_proc_sampler_ ProcSampler *ps = NULL;
        _cleanup_(bpf_sampler_freep) BpfSampler *b = NULL;
        const ProcThreadSample *v;
        char path[128];
        pthread_t t;
        pid_t tid = 0;
        ssize_t old_slot, new_slot;
        uint64_t old_start;
        size_t n;
        int p[2], fd;

        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount("proc", pidns_dir, "proc", 0, NULL) < 0)
                return 10;
        if (rootdir_open(pidns_dir, &proc) < 0 || rootdir_open("/", &root) < 0 || proc_sampler_new(proc, NULL, &ps) < 0)
                return 11;
        if (bpf_sampler_new(root, bench_cgroup_v2() ? CGROUP_MODE_V2 : CGROUP_MODE_V1, &b, NULL) < 0)
                return 12;
        if (pipe(p) < 0 || pthread_create(&t, NULL, waiting_thread, &p[0]) != 0)
                return 13;
        usleep(50 * 1000);

        /* Only this namespace's threads, by its numbers: PID 1 (this process) and its thread. */
        if (bpf_sampler_read(b, &v, &n) < 0 || n != 2 || proc_sampler_take_round(ps, v, n) < 0)
                return 14;
        for (size_t i = 0; i < n; i++) {
                if (v[i].pid != 1)
                        return 15;
                if (v[i].tid != 1)
                        tid = v[i].tid;
        }
        snprintf(path, sizeof path, "%s/1/task/%d", pidns_dir, (int) tid);
        if (tid <= 1 || access(path, F_OK) < 0)
                return 16;
        old_slot = proc_sampler_find(ps, tid);
        if (old_slot < 0 || proc_sampler_slot(ps, (size_t) old_slot)->state != PROC_THREAD_NEW)
                return 17;
        old_start = proc_sampler_slot(ps, (size_t) old_slot)->start_ns;

        /* It exits, and a new thread gets its TID before the next read: GONE, and a NEW thread. */
        (void) !write(p[1], "x", 1);
        pthread_join(t, NULL);
        /*
         * Joined is not yet reaped: /proc stops listing it first, its number is free a moment
         * later (the exiting thread releases it itself).
         */
        for (int tries = 0; access(path, F_OK) == 0; tries++) {
                if (tries > 200)
                        return 25;
                usleep(5 * 1000);
        }
        usleep(50 * 1000);
        snprintf(path, sizeof path, "%s/sys/kernel/ns_last_pid", pidns_dir);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || dprintf(fd, "%d", (int) tid - 1) < 0)
                return 18;
        close(fd);
        if (pthread_create(&t, NULL, waiting_thread, &p[0]) != 0)
                return 19;
        usleep(20 * 1000);
        snprintf(path, sizeof path, "%s/1/task/%d", pidns_dir, (int) tid);
        if (access(path, F_OK) < 0)
                return 20; /* the TID was not reused: this proves nothing */
        if (bpf_sampler_read(b, &v, &n) < 0 || n != 2 || proc_sampler_take_round(ps, v, n) < 0)
                return 21;
        new_slot = proc_sampler_find(ps, tid);
        if (proc_sampler_slot(ps, (size_t) old_slot)->state != PROC_THREAD_GONE || new_slot < 0 || new_slot == old_slot ||
            proc_sampler_slot(ps, (size_t) new_slot)->state != PROC_THREAD_NEW ||
            proc_sampler_slot(ps, (size_t) new_slot)->start_ns <= old_start)
                return 22;

        /* The new one exits: GONE (once released); PID 1 stays LIVE. */
        (void) !write(p[1], "x", 1);
        pthread_join(t, NULL);
        for (int tries = 0; access(path, F_OK) == 0; tries++) {
                if (tries > 200)
                        return 26;
                usleep(5 * 1000);
        }
        usleep(50 * 1000);
        if (bpf_sampler_read(b, &v, &n) < 0 || n != 1 || proc_sampler_take_round(ps, v, n) < 0)
                return 23;
        if (proc_sampler_slot(ps, (size_t) new_slot)->state != PROC_THREAD_GONE || proc_sampler_find(ps, tid) >= 0 ||
            proc_sampler_find(ps, 1) < 0 || proc_sampler_slot(ps, (size_t) proc_sampler_find(ps, 1))->state != PROC_THREAD_LIVE)
                return 24;
        umount(pidns_dir);
        return 0;
}

static void test_pid_namespace(_unused_ void **state) {
        assert_non_null(test_mkdtemp(pidns_dir));
        run_in_pid_namespace(pidns_child, pidns_dir, "PID namespace check");
}

/* ---- peltd where the BPF sampler cannot load ------------------------------------------------------ */

typedef enum Hobble {
        HIDE_BTF,                    /* /sys/kernel/btf covered by an empty tmpfs, in a mount namespace */
        NO_PRIVILEGES,               /* CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN out of the bounding set */
} Hobble;

/* Runs peltd (argv) hobbled; returns its exit status and, in *ret_err, its stderr. */
static int run_hobbled(Hobble h, char *const argv[], char **ret_err) {
        int p[2], status;
        char *err = calloc(1, 65536);
        size_t len = 0;
        pid_t pid;

        assert_non_null(err);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(p[1], STDERR_FILENO) < 0)
                        _exit(120);
                if (h == HIDE_BTF) {
                        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                            mount("tmpfs", "/sys/kernel/btf", "tmpfs", MS_RDONLY, NULL) < 0)
                                _exit(121);
                } else {
                        /* Dropped from the bounding set: root's exec of peltd does not get them back. */
                        if (prctl(PR_CAPBSET_DROP, CAP_BPF, 0, 0, 0) < 0 || prctl(PR_CAPBSET_DROP, CAP_PERFMON, 0, 0, 0) < 0 ||
                            prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) < 0)
                                _exit(122);
                }
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        for (;;) {
                ssize_t k = read(p[0], err + len, 65535 - len);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                len += (size_t) k;
        }
        close(p[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        *ret_err = err;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void assert_contains(const char *text, const char *needle) {
        if (!strstr(text, needle))
                fail_msg("\"%s\" not in \"%s\"", needle, text);
}

static void test_fallbacks(_unused_ void **state) {
        char *conf_auto, *conf_bpf, *conf_daemon, *err, state_dir[] = "/tmp/peltd-test-bpf-state-XXXXXX";
        static const struct {
                Hobble h;
                const char *why;
        } cases[] = {
                { HIDE_BTF, "the kernel's BTF is not there (/sys/kernel/btf/vmlinux: No such file or directory)" },
                { NO_PRIVILEGES, "not permitted to load BPF programs (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, are needed)" },
        };

        (void) worker("a", 3.1, 0.2, 0);
        conf_auto = write_conf("[Daemon]\nCgroupRoot=%s\nSamplingBackend=auto\n", top);
        conf_bpf = write_conf("[Daemon]\nCgroupRoot=%s\nSamplingBackend=bpf\n", top);
        /* The daemon itself, writing nothing, its state in a scratch directory. */
        assert_non_null(test_mkdtemp(state_dir));
        conf_daemon = write_conf("[Daemon]\nCgroupRoot=%s\nSamplingBackend=bpf\nDryRun=yes\nMetricsFile=\nStateFile=%s/originals\n", top,
                                 state_dir);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char expect[512];
                int status;

                /* --backend bpf: exit 1, the reason said. */
                status = run_hobbled(cases[i].h,
                                     (char *[]){ PELTD_BINARY, "--config", conf_auto, "--once", "0.3", "--backend", "bpf", "--json", NULL }, &err);
                printf("# --backend bpf, %s: exit %d: %s", cases[i].h == HIDE_BTF ? "no BTF" : "no privileges", status, err);
                assert_int_equal(status, 1);
                snprintf(expect, sizeof expect, "--backend bpf, but the BPF task iterator does not load: %s.", cases[i].why);
                assert_contains(err, expect);
                free(err);

                /* SamplingBackend=bpf: the same. */
                status = run_hobbled(cases[i].h, (char *[]){ PELTD_BINARY, "--config", conf_bpf, "--once", "0.3", "--json", NULL }, &err);
                assert_int_equal(status, 1);
                snprintf(expect, sizeof expect, "SamplingBackend=bpf, but the BPF task iterator does not load: %s.", cases[i].why);
                assert_contains(err, expect);
                free(err);

                /* The daemon with SamplingBackend=bpf: exit 1 at start, the reason said. */
                status = run_hobbled(cases[i].h, (char *[]){ PELTD_BINARY, "--config", conf_daemon, NULL }, &err);
                assert_int_equal(status, 1);
                assert_contains(err, expect);
                free(err);

                /* auto: /proc, and one line says why. */
                status = run_hobbled(cases[i].h, (char *[]){ PELTD_BINARY, "--config", conf_auto, "--once", "0.3", "--json", NULL }, &err);
                printf("# auto, %s: exit %d: %s", cases[i].h == HIDE_BTF ? "no BTF" : "no privileges", status, err);
                assert_int_equal(status, 0);
                snprintf(expect, sizeof expect, "Sampling threads from /proc; the BPF task iterator does not load: %s.", cases[i].why);
                assert_contains(err, expect);
                free(err);
        }

        /* Unhobbled, auto loads it and says so. */
        {
                struct rusage ru;
                char *out;
                int p[2], saved = dup(STDERR_FILENO), status;
                char buf[4096] = "";
                ssize_t k;

                assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
                assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
                status = bench_run((char *[]){ PELTD_BINARY, "--config", conf_auto, "--once", "0.3", "--json", NULL }, &out, &ru);
                assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
                close(saved);
                close(p[1]);
                k = read(p[0], buf, sizeof buf - 1);
                close(p[0]);
                assert_int_equal(status, 0);
                assert_true(k > 0);
                assert_contains(buf, "Sampling threads with the BPF task iterator (SamplingBackend=auto).");
                free(out);

                /* Threads the iterator hides, if this kernel hides any but PID 1's, are said once, at load. */
                {
                        _cleanup_rootdir_ RootDir *root = NULL;
                        _cleanup_(bpf_sampler_freep) BpfSampler *b = NULL;
                        _cleanup_free_ char *reason = NULL;
                        BpfHidden h;

                        assert_int_equal(rootdir_open("/", &root), 0);
                        assert_int_equal(bpf_sampler_new(root, bench_cgroup_v2() ? CGROUP_MODE_V2 : CGROUP_MODE_V1, &b, &reason), 0);
                        assert_int_equal(bpf_sampler_find_hidden(b, root, &h), 0);
                        printf("# unhobbled auto: %zu threads hidden from the iterator\n", h.n_threads);
                        /* PID 1's alone (the machine's init) are said at debug level only. */
                        if (h.n_threads > 0 && !(h.n_processes == 1 && h.pid[0] == 1)) {
                                char expect[128];

                                snprintf(expect, sizeof expect, "threads /proc lists, of %zu process", h.n_processes);
                                assert_contains(buf, "The BPF task iterator does not show ");
                                assert_contains(buf, expect);
                                assert_contains(buf, "their load is not tracked; SamplingBackend=proc reads them.");
                        } else
                                assert_null(strstr(buf, "does not show"));
                }
        }
        unlink(conf_auto);
        unlink(conf_bpf);
        unlink(conf_daemon);
        free(conf_auto);
        free(conf_bpf);
        free(conf_daemon);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_records, setup, teardown),
                cmocka_unit_test_setup_teardown(test_once_bpf_vs_proc, setup, teardown),
                cmocka_unit_test_setup_teardown(test_same_samples, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sampling_events, setup, teardown),
                cmocka_unit_test(test_pid_namespace),
                cmocka_unit_test_setup_teardown(test_fallbacks, setup, teardown),
        };
        int r;

        if (!bpf_sampler_built()) {
                printf("# this build has no BPF sampler (meson -Dbpf=disabled): nothing to test\n");
                return 77;
        }
        r = kernel_tests_start();
        if (r != 0)
                return r;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
