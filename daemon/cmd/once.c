/* SPDX-License-Identifier: GPL-2.0-only */
/* peltd --once SECONDS [--interval MSEC] [--backend bpf|proc] [--json]: sample, track, print the final values. */
#include <json-c/json.h>
#include <time.h>

#include "peltd/commands.h"
#include "peltd/config-file.h"
#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/sampling.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"
#include "peltd/utf8.h"

static double slice_us(uint64_t ns) {
        return (double) ns / 1000.0;
}

static json_object *num_u64(uint64_t v) {
        return json_object_new_int64((int64_t) MIN(v, (uint64_t) INT64_MAX));
}

/* One decimal is all a slice length needs; json-c would otherwise print every digit of the double. */
static json_object *num_tenths(double v) {
        char buf[32];

        snprintf(buf, sizeof buf, "%.1f", v);
        return json_object_new_double_s(v, buf);
}

static int add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        return json_object_object_add(o, key, v) < 0 ? -ENOMEM : 0;
}

static int thread_cmp_id(const void *a, const void *b) {
        const SampledThread *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return (x->tid > y->tid) - (x->tid < y->tid);
}

static int thread_cmp_util(const void *a, const void *b) {
        const SampledThread *x = a, *y = b;

        if (x->v.util_avg != y->v.util_avg)
                return x->v.util_avg > y->v.util_avg ? -1 : 1;
        return thread_cmp_id(a, b);
}

static int group_cmp_util(const void *a, const void *b) {
        const SampledGroup *x = a, *y = b;

        if (x->v.util_avg != y->v.util_avg)
                return x->v.util_avg > y->v.util_avg ? -1 : 1;
        return strcmp(x->path, y->path);
}

static int print_json(unsigned rounds, usec_t interval, SampledThread *t, size_t nt, SampledGroup *g, size_t ng) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *tasks, *groups;
        int r = 0;

        if (!root)
                return -ENOMEM;
        qsort(t, nt, sizeof *t, thread_cmp_id);

        tasks = json_object_new_array_ext((int) nt);
        groups = json_object_new_array_ext((int) ng);
        if ((r = add(root, "rounds", num_u64(rounds))) < 0 ||
            (r = add(root, "interval_ms", num_tenths((double) interval / USEC_PER_MSEC))) < 0 || (r = add(root, "tasks", tasks)) < 0 ||
            (r = add(root, "groups", groups)) < 0)
                return r;

        for (size_t i = 0; i < nt; i++) {
                json_object *o = json_object_new_object();

                if (!o || json_object_array_add(tasks, o) < 0)
                        return -ENOMEM;
                if ((r = add(o, "pid", json_object_new_int(t[i].pid))) < 0 || (r = add(o, "tid", json_object_new_int(t[i].tid))) < 0 ||
                    (r = add(o, "comm", json_object_new_text(t[i].comm))) < 0 ||
                    (r = add(o, "cgroup", json_object_new_text(t[i].cgroup))) < 0 ||
                    (r = add(o, "nice", json_object_new_int(t[i].nice))) < 0 ||
                    (r = add(o, "util_avg", num_u64(t[i].v.util_avg))) < 0 ||
                    (r = add(o, "runnable_avg", num_u64(t[i].v.runnable_avg))) < 0 ||
                    (r = add(o, "load_avg", num_u64(t[i].v.load_avg))) < 0 ||
                    (r = add(o, "avg_slice_us", num_tenths(slice_us(t[i].avg_slice_ns)))) < 0)
                        return r;
        }
        for (size_t i = 0; i < ng; i++) {
                json_object *o = json_object_new_object();

                if (!o || json_object_array_add(groups, o) < 0)
                        return -ENOMEM;
                if ((r = add(o, "path", json_object_new_text(g[i].path))) < 0 ||
                    (r = add(o, "util_avg", num_u64(g[i].v.util_avg))) < 0 ||
                    (r = add(o, "runnable_avg", num_u64(g[i].v.runnable_avg))) < 0 ||
                    (r = add(o, "load_avg", num_u64(g[i].v.load_avg))) < 0 || (r = add(o, "nr_tasks", num_u64(g[i].nr_tasks))) < 0 ||
                    (r = add(o, "shares", num_u64(g[i].shares))) < 0 ||
                    (r = add(o, "throttled_usec", num_u64(g[i].throttled_ns / 1000))) < 0)
                        return r;
        }

        if (fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE), stdout) < 0 ||
            fputc('\n', stdout) < 0)
                return -EIO;
        return 0;
}

/*
 * The text: fixed columns first, the path (of any length) last, so that a line fits 80 columns but
 * where a path is long; nothing is cut (--json gives the same values for programs).
 */
static void print_text(unsigned rounds, usec_t interval, SampledThread *t, size_t nt, SampledGroup *g, size_t ng) {
        qsort(t, nt, sizeof *t, thread_cmp_util);
        qsort(g, ng, sizeof *g, group_cmp_util);

        printf("%u rounds, every %.1f ms (util, runnable: 1/1024 of a CPU; load: weight units)\n\n", rounds,
               (double) interval / USEC_PER_MSEC);
        printf("%6s %8s %9s %6s %6s  %s\n", "UTIL", "RUNNABLE", "LOAD", "TASKS", "SHARES", "GROUP");
        for (size_t i = 0; i < ng; i++) {
                _cleanup_free_ char *a = NULL;
                const char *path = utf8_escape(g[i].path, &a);

                printf("%6" PRIu64 " %8" PRIu64 " %9" PRIu64 " %6zu %6" PRIu64 "  %s%s\n", g[i].v.util_avg, g[i].v.runnable_avg,
                       g[i].v.load_avg, g[i].nr_tasks, g[i].shares, strna(path), g[i].throttled_ns ? " (throttled)" : "");
        }
        printf("\n%7s %7s %-15s %4s %5s %8s %7s %8s  %s\n", "PID", "TID", "COMM", "NICE", "UTIL", "RUNNABLE", "LOAD", "SLICE_US",
               "CGROUP");
        for (size_t i = 0; i < nt; i++) {
                _cleanup_free_ char *a = NULL, *b = NULL;
                const char *comm = utf8_escape(t[i].comm, &a), *cgroup = utf8_escape(t[i].cgroup, &b);

                printf("%7d %7d %-15s %4d %5" PRIu64 " %8" PRIu64 " %7" PRIu64 " %8.1f  %s\n", t[i].pid, t[i].tid, strna(comm),
                       t[i].nice, t[i].v.util_avg, t[i].v.runnable_avg, t[i].v.load_avg, slice_us(t[i].avg_slice_ns),
                       strna(cgroup));
        }
}

static void sleep_until(nsec_t deadline) {
        struct timespec ts = { .tv_sec = (time_t) (deadline / NSEC_PER_SEC), .tv_nsec = (long) (deadline % NSEC_PER_SEC) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

/* Each CPU's capacity from the topology (util is capacity-invariant); 1024 where unknown. */
static int cpu_capacities(const Topology *topology, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ unsigned *capacity = NULL;
        size_t n_cpus;
        long nc;

        nc = sysconf(_SC_NPROCESSORS_CONF);
        n_cpus = nc > 0 ? (size_t) nc : 1;
        for (size_t i = 0; topology && i < topology->n_cpus; i++)
                n_cpus = MAX(n_cpus, (size_t) topology->cpus[i].cpu + 1);
        capacity = new0(unsigned, n_cpus);
        if (!capacity)
                return -ENOMEM;
        for (size_t i = 0; i < n_cpus; i++)
                capacity[i] = TRACK_CAPACITY_SCALE;
        for (size_t i = 0; topology && i < topology->n_cpus; i++)
                capacity[topology->cpus[i].cpu] = topology->cpus[i].capacity;
        *ret = TAKE_PTR(capacity);
        *ret_n = n_cpus;
        return 0;
}

/*
 * The sampler, on the backend --backend names (it wins over SamplingBackend=). --once samples every
 * thread, whatever TaskTracking= says. Returns 0 or -errno (logged).
 */
static int open_sampling(const Args *args, const Config *config, const RootDir *sysroot, const CgroupFs *fs, RootDir *proc,
                         const unsigned *capacity, size_t n_cpus, Sampling **ret) {
        BpfSampler *bpf = NULL;
        int r;

        if (args->backend)
                r = sampling_open_backend(sysroot, fs->mode, streq(args->backend, "bpf") ? SAMPLING_BACKEND_BPF : SAMPLING_BACKEND_PROC,
                                          "--backend ", &bpf);
        else
                r = sampling_open_backend(sysroot, fs->mode, config->sampling_backend, "SamplingBackend=", &bpf);
        if (r < 0)
                return r; /* logged */

        r = sampling_new(proc, fs, config,
                         &(SamplingOptions){ .task_tracking = true, .netlink = true, .process_clocks = true, .capacity = capacity,
                                             .n_capacity = n_cpus, .bpf = bpf },
                         ret);
        if (r < 0)
                return log_error_errno(r, "Failed to set up sampling: %m");
        if (!bpf)
                log_debug("cgroup %s; proc connector %s.", cgroup_mode_to_string(fs->mode),
                          proc_sampler_netlink_active(sampling_proc_sampler(*ret)) ? "active" : "unavailable, rescanning /proc every round");
        return 0;
}

/* A baseline round, then one every interval counted from it, whatever each round took. */
static int sample_rounds(Sampling *s, uint64_t rounds, usec_t interval) {
        nsec_t start = now_nsec(CLOCK_MONOTONIC);
        int r;

        for (uint64_t k = 0; k <= rounds; k++) {
                if (k > 0)
                        sleep_until(start + k * interval * NSEC_PER_USEC);
                r = sampling_round(s, now_nsec(CLOCK_MONOTONIC), true);
                if (r < 0)
                        return log_error_errno(r, "Failed to sample: %m");
        }
        return 0;
}

/* The final values, as JSON or as a table, on stdout. Returns 0 or -errno (logged). */
static int print_result(const Args *args, Sampling *s, usec_t interval) {
        SampledThread *threads;
        SampledGroup *groups;
        size_t nt, ng;
        int r;

        nt = sampling_threads(s, &threads);
        ng = sampling_groups(s, &groups);
        if ((nt && !threads) || (ng && !groups))
                return log_oom();

        if (args->json) {
                r = print_json(sampling_rounds(s), interval, threads, nt, groups, ng);
                if (r < 0)
                        return log_error_errno(r, "Failed to print the result: %m");
        } else
                print_text(sampling_rounds(s), interval, threads, nt, groups, ng);

        if (fflush(stdout) != 0)
                return log_error_errno(errno, "Failed to write the result: %m");
        return 0;
}

int cmd_once(const Args *args) {
        _cleanup_config_ Config *config = NULL;
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_rootdir_ RootDir *proc = NULL, *sysroot = NULL;
        _cleanup_topology_ Topology *topology = NULL;
        _cleanup_sampling_ Sampling *s = NULL;
        _cleanup_free_ unsigned *capacity = NULL;
        size_t n_cpus;
        usec_t interval;
        uint64_t rounds;
        int r;

        r = config_load_from(args->config_file, args->config_dir, &config);
        if (r < 0)
                return 1; /* config_load() logged it */

        interval = args->interval_usec ?: config->sample_interval_usec;
        rounds = MAX(args->once_usec / interval, (uint64_t) 1);

        r = cgroup_fs_open_system(&fs);
        if (r < 0) {
                log_error_errno(r, "Failed to find the cgroup hierarchies: %m");
                return 1;
        }
        r = rootdir_open("/proc", &proc);
        if (r < 0) {
                log_error_errno(r, "Failed to open /proc: %m");
                return 1;
        }

        r = rootdir_open("/", &sysroot);
        if (r >= 0)
                r = topology_load(sysroot, &topology);
        if (r < 0)
                log_debug_errno(r, "No CPU topology, every CPU counts 1024: %m");
        if (cpu_capacities(topology, &capacity, &n_cpus) < 0)
                return log_oom(), 1;

        r = open_sampling(args, config, sysroot, fs, proc, capacity, n_cpus, &s);
        if (r < 0)
                return 1;
        r = sample_rounds(s, rounds, interval);
        if (r < 0)
                return 1;
        return print_result(args, s, interval) < 0 ? 1 : 0;
}
