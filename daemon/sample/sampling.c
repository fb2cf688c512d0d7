/* SPDX-License-Identifier: GPL-2.0-only */
#include "peltd/alloc-util.h"
#include "peltd/log.h"
#include "peltd/sampling.h"
#include "peltd/utf8.h"

/*
 * /proc/stat counts steal in ticks (10 ms): over one 100 ms round that is a 10% step on a CPU.
 * Steal shares are taken over the last second instead (the host's contention changes more slowly),
 * from a ring of earlier readings.
 */
#define STEAL_WINDOW_NS (1000ULL * 1000 * 1000)
#define STEAL_HISTORY 32

/* What tracking keeps for a managed group. */
typedef struct GroupData {
        TrackGroup tg;
        uint64_t *last_percpu_ns;    /* usage_percpu as of the last round, when n_last_percpu > 0 */
        size_t n_last_percpu, n_last_percpu_allocated;
        bool have_last_usage;
        uint64_t last_usage_ns;      /* the usage counter as of the last round */
        uint64_t usage_eff_ns;       /* capacity-invariant, steal-free usage, accumulated */
        uint64_t last_throttled_ns;
        uint64_t throttled_growth_ns;
        bool have_throttled;
        bool gone;
        uint64_t id;                 /* unique for the sampler's lifetime */
} GroupData;

/* What tracking keeps for a thread, parallel to the proc sampler's slots. */
typedef struct ThreadData {
        TrackThread tt;
        bool tracked;
        uint32_t member_gen;         /* the walk that last listed it */
        uint32_t path_index;
        CgroupGroup *member;         /* its managed group in that walk, NULL: none */
        /*
         * Its managed group when its schedstat was last read (0: none) and that group's usage as
         * read just before: while both stay the same, the thread has not run since.
         */
        uint64_t read_group_id;
        uint64_t read_usage_ns;
} ThreadData;

/* A cgroup of the last walk, by the inode of its directory (the BPF sampler's cgroup id). */
typedef struct CgroupId {
        uint64_t ino;
        uint32_t path_index;
        CgroupGroup *group;          /* its managed group (it or an ancestor), NULL: none */
} CgroupId;

/* A thread listed by the walk before the thread scan found it. */
typedef struct PendingMember {
        pid_t tid;
        uint32_t path_index;
        CgroupGroup *group;
} PendingMember;

struct Sampling {
        const Config *config;
        const CgroupFs *fs;
        SamplingOptions opts;
        ProcSampler *procs;
        BpfSampler *bpf;             /* threads from the BPF task iterator; NULL: from /proc */
        CgroupSampler *groups;
        CgroupId *ids;               /* the last walk's cgroups, sorted by inode (BPF only) */
        size_t n_ids, allocated_ids;
        bool ids_failed;             /* a walk could not keep them all (out of memory) */

        ThreadData *threads;
        size_t n_threads_allocated;
        TrackGroup catchall;         /* threads outside every managed group */

        uint64_t last_now_ns;
        ProcCpuTimes *times;                /* [0]: the machine, [1 + N]: CPU N */
        size_t n_times;
        ProcCpuTimes *history;              /* STEAL_HISTORY snapshots of times, a ring */
        uint64_t history_ns[STEAL_HISTORY];
        size_t history_head, history_count;
        bool have_cpu_times;
        bool steal_seen;                    /* steal in some window: per-CPU usage read from then on */
        uint64_t steal_frac;                /* the machine's, last round */
        uint64_t *cpu_steal_frac;           /* per CPU, last round */
        uint64_t last_steal_ns;             /* when /proc/stat was last read */
        size_t n_cpus;
        bool started;
        unsigned rounds;
        uint32_t walk_gen;
        uint64_t next_group_id;
        PendingMember *pending;
        size_t n_pending, allocated_pending;

        SampledThread *out_threads;
        SampledGroup *out_groups;
};

static void group_data_free(GroupData *d) {
        if (!d)
                return;
        free(d->last_percpu_ns);
        free(d);
}

int sampling_new(RootDir *proc, const CgroupFs *fs, const Config *config, const SamplingOptions *o, Sampling **ret) {
        _cleanup_sampling_ Sampling *s = NULL;
        GroupFilter filter;
        int r;

        s = new0(Sampling, 1);
        if (!s) {
                bpf_sampler_free(o->bpf);
                return -ENOMEM;
        }
        s->bpf = o->bpf;
        s->config = config;
        s->fs = fs;
        s->opts = *o;
        track_group_init(&s->catchall, 0);

        /*
         * /proc/stat (steal) is read either way; threads only with task tracking, and only when the
         * BPF sampler does not give them (it needs no connector: each read sees every thread).
         */
        {
                ProcSamplerOptions po = {
                        .netlink = o->task_tracking && o->netlink && !o->bpf,
                        .process_clocks = o->process_clocks,
                        .rescan_rounds = o->rescan_rounds,
                        .max_fds = o->max_fds,
                        .clock = o->clock,
                        .clock_userdata = o->clock_userdata,
                };

                r = proc_sampler_new(proc, &po, &s->procs);
                if (r < 0)
                        return r;
        }
        s->n_cpus = MAX(o->n_capacity, (size_t) 1);
        s->n_times = s->n_cpus + 1;
        s->times = new0(ProcCpuTimes, s->n_times);
        s->history = new0(ProcCpuTimes, s->n_times * STEAL_HISTORY);
        s->cpu_steal_frac = new0(uint64_t, s->n_cpus);
        if (!s->times || !s->history || !s->cpu_steal_frac)
                return -ENOMEM;
        filter = config_group_filter(config);
        r = cgroup_sampler_new(fs, &filter, &s->groups);
        if (r < 0)
                return r;
        cgroup_sampler_set_capacities(s->groups, o->capacity, o->n_capacity);
        cgroup_sampler_set_clock(s->groups, o->clock, o->clock_userdata);
        cgroup_sampler_set_read_all(s->groups, o->read_everything);

        *ret = TAKE_PTR(s);
        return 0;
}

Sampling *sampling_free(Sampling *s) {
        if (!s)
                return NULL;
        if (s->groups)
                for (size_t i = 0; i < cgroup_sampler_n_groups(s->groups); i++)
                        group_data_free(cgroup_sampler_group(s->groups, i)->userdata);
        free(s->times);
        free(s->history);
        free(s->cpu_steal_frac);
        cgroup_sampler_free(s->groups);
        proc_sampler_free(s->procs);
        bpf_sampler_free(s->bpf);
        free(s->ids);
        free(s->threads);
        free(s->pending);
        free(s->out_threads);
        free(s->out_groups);
        free(s);
        return NULL;
}

ProcSampler *sampling_proc_sampler(Sampling *s) {
        return s->procs;
}

SamplingBackend sampling_backend(const Sampling *s) {
        return s->bpf ? SAMPLING_BACKEND_BPF : SAMPLING_BACKEND_PROC;
}

const char *sampling_backend_to_string(SamplingBackend b) {
        switch (b) {
        case SAMPLING_BACKEND_AUTO:
                return "auto";
        case SAMPLING_BACKEND_BPF:
                return "bpf";
        case SAMPLING_BACKEND_PROC:
                return "proc";
        }
        return NULL;
}

/* Says once, at load, which threads /proc lists that the iterator does not show. */
static void say_hidden(BpfSampler *b, const RootDir *sysroot, const char *setting) {
        char examples[BPF_HIDDEN_EXAMPLES * 48 + 8] = "";
        size_t len = 0;
        BpfHidden h;
        int r;

        r = bpf_sampler_find_hidden(b, sysroot, &h);
        if (r < 0) {
                log_debug_errno(r, "Could not compare the BPF task iterator with /proc: %m");
                return;
        }
        if (h.n_threads == 0) {
                log_debug("The BPF task iterator shows every one of the %zu threads /proc lists.", h.n_listed);
                return;
        }
        for (size_t i = 0; i < MIN(h.n_processes, (size_t) BPF_HIDDEN_EXAMPLES); i++) {
                _cleanup_free_ char *comm = NULL;
                char path[32], name[40] = "?";

                snprintf(path, sizeof path, "proc/%d/comm", (int) h.pid[i]);
                /* Any process names itself: escaped, and cut to what comm holds. */
                if (rootdir_read_string(sysroot, path, &comm) >= 0)
                        (void) utf8_escape_to(comm, name, sizeof name);
                len += (size_t) snprintf(examples + len, sizeof examples - len, "%s%d \"%s\"", i > 0 ? ", " : "", (int) h.pid[i],
                                         name);
        }
        /* Only PID 1's (the machine's init, hidden by some sandboxes): its load matters to no placement. */
        log_full(h.n_processes == 1 && h.pid[0] == 1 ? LOG_DEBUG : LOG_NOTICE,
                 "The BPF task iterator does not show %zu of the %zu threads /proc lists, of %zu process%s (%s%s): "
                 "their load is not tracked; %sproc reads them.",
                 h.n_threads, h.n_listed, h.n_processes, h.n_processes == 1 ? "" : "es", examples,
                 h.n_processes > BPF_HIDDEN_EXAMPLES ? ", ..." : "", setting);
}

int sampling_open_backend(const RootDir *sysroot, CgroupMode mode, SamplingBackend want, const char *setting, BpfSampler **ret_bpf) {
        _cleanup_free_ char *reason = NULL;
        int r;

        *ret_bpf = NULL;
        if (want == SAMPLING_BACKEND_PROC) {
                log_info("Sampling threads from /proc (%sproc).", setting);
                return 0;
        }
        r = bpf_sampler_new(sysroot, mode, ret_bpf, &reason);
        if (r >= 0) {
                log_info("Sampling threads with the BPF task iterator (%s%s).", setting, sampling_backend_to_string(want));
                say_hidden(*ret_bpf, sysroot, setting);
                return 0;
        }
        if (want == SAMPLING_BACKEND_BPF)
                return log_error_errno(r, "%sbpf, but the BPF task iterator does not load: %s.", setting, strna(reason));
        log_info("Sampling threads from /proc; the BPF task iterator does not load: %s.", strna(reason));
        return 0;
}

void sampling_set_config(Sampling *s, const Config *config) {
        GroupFilter filter = config_group_filter(config);

        s->config = config;
        cgroup_sampler_set_filter(s->groups, &filter);
}

void sampling_set_task_tracking(Sampling *s, bool task_tracking) {
        /*
         * Tracking stops: every thread leaves as if it exited (004), and its fds are closed; were
         * they kept, a thread that ends while nobody looks would hold two fds until tracking
         * resumed. When it does, threads are found again by a scan and start afresh.
         */
        if (s->opts.task_tracking && !task_tracking) {
                for (size_t i = 0; i < proc_sampler_n_slots(s->procs) && i < s->n_threads_allocated; i++)
                        if (s->threads[i].tracked) {
                                track_thread_exit(&s->threads[i].tt);
                                s->threads[i].tracked = false;
                        }
                proc_sampler_forget_threads(s->procs);
        }
        s->opts.task_tracking = task_tracking;
}

void sampling_refresh_group(Sampling *s, const char *path) {
        cgroup_sampler_refresh(s->groups, path);
}

unsigned sampling_rounds(const Sampling *s) {
        return s->rounds;
}

static unsigned capacity_of(const Sampling *s, int cpu) {
        if (cpu >= 0 && s->opts.capacity && (size_t) cpu < s->opts.n_capacity && s->opts.capacity[cpu])
                return s->opts.capacity[cpu];
        return TRACK_CAPACITY_SCALE;
}

static uint64_t steal_of(const Sampling *s, int cpu) {
        return cpu >= 0 && (size_t) cpu < s->n_cpus && s->have_cpu_times ? s->cpu_steal_frac[cpu] : s->steal_frac;
}

/*
 * Adds this round's usage to the group's capacity-invariant, steal-free usage. Where the per-CPU
 * split is known this round and last, each CPU's time counts capacity/1024 and is a share of the
 * time that CPU was not stolen. Where it is not read (the CPUs alike and no steal: it would say the
 * same as the total), or its baseline is new, the total's growth counts, at the capacity of the
 * group's CPUs and as a share of the machine's time not stolen. Returns false when there is no
 * usage this round or a counter went backwards (a recreated group: skip the round).
 */
static bool accumulate_usage(const Sampling *s, GroupData *d, const CgroupGroup *g) {
        bool ok = g->have_usage;

        if (!g->have_usage) {
                d->have_last_usage = false;
                d->n_last_percpu = 0;
                return false;
        }
        if (g->percpu_current && d->n_last_percpu == g->n_percpu && d->n_last_percpu > 0) {
                for (size_t cpu = 0; cpu < g->n_percpu; cpu++) {
                        uint64_t delta, steal = steal_of(s, (int) cpu);

                        if (g->percpu_ns[cpu] < d->last_percpu_ns[cpu]) {
                                ok = false;
                                continue;
                        }
                        delta = g->percpu_ns[cpu] - d->last_percpu_ns[cpu];
                        delta = (uint64_t) ((unsigned __int128) delta * capacity_of(s, (int) cpu) / TRACK_CAPACITY_SCALE);
                        if (steal < PELT_FRAC_ONE)
                                delta = (uint64_t) (((unsigned __int128) delta << PELT_FRAC_SHIFT) / (PELT_FRAC_ONE - steal));
                        d->usage_eff_ns += delta;
                }
        } else if (d->have_last_usage && g->usage_ns >= d->last_usage_ns) {
                uint64_t delta = g->usage_ns - d->last_usage_ns;
                unsigned capacity = g->capacity ?: TRACK_CAPACITY_SCALE;

                delta = (uint64_t) ((unsigned __int128) delta * capacity / TRACK_CAPACITY_SCALE);
                if (s->steal_frac < PELT_FRAC_ONE)
                        delta = (uint64_t) (((unsigned __int128) delta << PELT_FRAC_SHIFT) / (PELT_FRAC_ONE - s->steal_frac));
                d->usage_eff_ns += delta;
        } else if (d->have_last_usage)
                ok = false;

        d->have_last_usage = true;
        d->last_usage_ns = g->usage_ns;
        d->n_last_percpu = 0;
        if (g->percpu_current && g->n_percpu > 0) {
                uint64_t *v = d->last_percpu_ns;

                if (!v || d->n_last_percpu_allocated < g->n_percpu) {
                        v = realloc(d->last_percpu_ns, g->n_percpu * sizeof *v);
                        if (!v)
                                return ok; /* the total counts next round */
                        d->last_percpu_ns = v;
                        d->n_last_percpu_allocated = g->n_percpu;
                }
                memcpy(v, g->percpu_ns, g->n_percpu * sizeof *v);
                d->n_last_percpu = g->n_percpu;
        }
        return ok;
}

/*
 * v1 groups (where cpuacct.usage_percpu is there to be read) are tracked on their accumulated
 * capacity-invariant, steal-free usage; v2 groups on the usage counter, with the capacity of
 * their CPUs and the machine's steal applied by the tracker.
 */
static TrackGroupSample group_sample(const Sampling *s, GroupData *d, const CgroupGroup *g) {
        bool split = g->percpu_fd >= 0, scaled = split && accumulate_usage(s, d, g);

        return (TrackGroupSample){
                .have_usage = g->have_usage && (scaled || !split),
                .usage_ns = g->usage_ns,
                .have_usage_scaled = scaled,
                .usage_scaled_ns = d->usage_eff_ns,
                .capacity = g->capacity,
                .have_throttled = g->have_throttled,
                .throttled_ns = g->throttled_ns,
                .nr_cpus = g->nr_cpus,
                .have_shares = g->have_shares,
                .shares = g->shares,
                .time_ns = g->sample_ns,
        };
}

static void note_throttled(GroupData *d, const CgroupGroup *g) {
        if (!g->have_throttled) {
                d->have_throttled = false;
                return;
        }
        /* A counter that went backwards (a recreated group) starts a new baseline. */
        if (d->have_throttled && g->throttled_ns >= d->last_throttled_ns)
                d->throttled_growth_ns += g->throttled_ns - d->last_throttled_ns;
        d->last_throttled_ns = g->throttled_ns;
        d->have_throttled = true;
}

static int thread_slots(Sampling *s) {
        size_t n = proc_sampler_n_slots(s->procs), old = s->n_threads_allocated;

        if (ARRAY_RESERVE(s->threads, s->n_threads_allocated, n, 0) < 0)
                return -ENOMEM;
        memset(s->threads + old, 0, (s->n_threads_allocated - old) * sizeof *s->threads);
        return 0;
}

static void member_set(Sampling *s, size_t i, size_t path_index, CgroupGroup *group) {
        s->threads[i].member_gen = s->walk_gen;
        s->threads[i].path_index = (uint32_t) path_index;
        s->threads[i].member = group;
}

static void member_cb(pid_t tid, size_t path_index, CgroupGroup *group, void *userdata) {
        Sampling *s = userdata;
        ssize_t i = proc_sampler_find(s->procs, tid);

        if (i >= 0 && (size_t) i < s->n_threads_allocated) {
                member_set(s, (size_t) i, path_index, group);
                return;
        }
        /* Not known yet: the thread scan that follows the walk may find it. */
        if (ARRAY_RESERVE(s->pending, s->allocated_pending, s->n_pending + 1, 64) < 0)
                return; /* it gets its group next round */
        s->pending[s->n_pending++] = (PendingMember){ .tid = tid, .path_index = (uint32_t) path_index, .group = group };
}

/* After the thread scan: new threads the walk listed get their group; the others have none yet. */
static void members_resolve(Sampling *s) {
        for (size_t i = 0; i < proc_sampler_n_slots(s->procs) && i < s->n_threads_allocated; i++)
                if (proc_sampler_slot(s->procs, i)->state == PROC_THREAD_NEW)
                        member_set(s, i, 0, NULL);
        for (size_t k = 0; k < s->n_pending; k++) {
                ssize_t i = proc_sampler_find(s->procs, s->pending[k].tid);

                if (i >= 0 && (size_t) i < s->n_threads_allocated &&
                    proc_sampler_slot(s->procs, (size_t) i)->state == PROC_THREAD_NEW)
                        member_set(s, (size_t) i, s->pending[k].path_index, s->pending[k].group);
        }
        s->n_pending = 0;
}

/* The managed group a thread is in as of this walk, when its usage was read this round; else NULL. */
static CgroupGroup *member_counted(const Sampling *s, const ThreadData *d) {
        CgroupGroup *g = d->member;

        if (d->member_gen != s->walk_gen || !g || g->state != CGROUP_GROUP_LIVE || !g->userdata || !g->have_usage)
                return NULL;
        return g;
}

/*
 * A thread whose group's usage counter has not moved since the thread was last read has not run
 * since (the counter charges every nanosecond any thread in the group or below runs): its
 * schedstat would read the same, so the proc sampler leaves it unread. A thread that moved groups,
 * or whose group was not counted, is read.
 */
static void threads_mark_quiet(Sampling *s) {
        for (size_t i = 0; i < proc_sampler_n_slots(s->procs) && i < s->n_threads_allocated; i++) {
                ProcThread *p = proc_sampler_slot(s->procs, i);
                ThreadData *d = &s->threads[i];
                CgroupGroup *g;

                if (p->state != PROC_THREAD_LIVE || !d->tracked || !d->read_group_id)
                        continue;
                g = member_counted(s, d);
                if (g && ((GroupData *) g->userdata)->id == d->read_group_id && g->usage_ns == d->read_usage_ns)
                        p->quiet_ns = g->sample_ns;
        }
}

/* A thread read (or known unchanged) this round remembers its group's usage as read before it. */
static void note_read(const Sampling *s, ThreadData *d) {
        CgroupGroup *g = member_counted(s, d);

        d->read_group_id = g ? ((GroupData *) g->userdata)->id : 0;
        d->read_usage_ns = g ? g->usage_ns : 0;
}

static TrackGroup *target_group(Sampling *s, const ThreadData *d) {
        GroupData *gd;

        /* Not listed by this walk (its group vanished mid-walk): it stays where it was. */
        if (d->member_gen != s->walk_gen)
                return d->tt.group ?: &s->catchall;
        if (!d->member || d->member->state == CGROUP_GROUP_GONE || !d->member->userdata)
                return &s->catchall;
        gd = d->member->userdata;
        return &gd->tg;
}

/* New managed groups get their tracking; their counters as read when found are the baseline. */
static int groups_found(Sampling *s) {
        for (size_t i = 0; i < cgroup_sampler_n_groups(s->groups); i++) {
                CgroupGroup *g = cgroup_sampler_group(s->groups, i);
                TrackGroupSample gs;
                GroupData *d;

                if (g->state != CGROUP_GROUP_NEW || g->userdata)
                        continue;
                d = new0(GroupData, 1);
                if (!d)
                        return -ENOMEM;
                track_group_init(&d->tg, s->catchall.clock_ns);
                d->id = ++s->next_group_id;
                gs = group_sample(s, d, g);
                (void) track_group_advance(&d->tg, 0, 0, &gs);
                note_throttled(d, g);
                g->userdata = d;
        }
        return 0;
}

/* Groups that vanished: threads still counted there leave (carrying their load), then the group goes. */
static void groups_lost(Sampling *s) {
        bool any = false;

        for (size_t i = 0; i < cgroup_sampler_n_groups(s->groups); i++) {
                CgroupGroup *g = cgroup_sampler_group(s->groups, i);

                if (g->state == CGROUP_GROUP_GONE && g->userdata) {
                        ((GroupData *) g->userdata)->gone = true;
                        any = true;
                }
        }
        if (!any)
                return;

        if (s->opts.task_tracking)
                for (size_t i = 0; i < proc_sampler_n_slots(s->procs) && i < s->n_threads_allocated; i++) {
                        ThreadData *d = &s->threads[i];

                        if (d->tracked && d->tt.group && d->tt.group != &s->catchall &&
                            ((GroupData *) ((char *) d->tt.group - offsetof(GroupData, tg)))->gone)
                                track_thread_move(&d->tt, &s->catchall);
                }

        for (size_t i = 0; i < cgroup_sampler_n_groups(s->groups); i++) {
                CgroupGroup *g = cgroup_sampler_group(s->groups, i);

                if (g->state == CGROUP_GROUP_GONE && g->userdata) {
                        group_data_free(g->userdata);
                        g->userdata = NULL;
                }
        }
}

static void threads_update(Sampling *s) {
        for (size_t i = 0; i < proc_sampler_n_slots(s->procs); i++) {
                ProcThread *p = proc_sampler_slot(s->procs, i);
                ThreadData *d = &s->threads[i];
                TrackThreadSample ts;
                TrackGroup *to;

                switch (p->state) {
                case PROC_THREAD_FREE:
                        continue;
                case PROC_THREAD_GONE:
                        if (d->tracked)
                                track_thread_exit(&d->tt); /* 004: its load leaves with it */
                        d->tracked = false;
                        continue;
                case PROC_THREAD_NEW:
                case PROC_THREAD_LIVE:
                        break;
                }
                note_read(s, d);

                ts = (TrackThreadSample){
                        .run_ns = p->run_ns,
                        .wait_ns = p->wait_ns,
                        .slices = p->slices,
                        .nice = p->nice,
                        .capacity = capacity_of(s, p->cpu),
                        .steal_frac = steal_of(s, p->cpu),
                        .time_ns = p->sample_ns,
                };
                to = target_group(s, d);

                if (p->state == PROC_THREAD_NEW || !d->tracked) {
                        /* A slot may be reused within a round: whatever was there has exited. */
                        if (d->tracked)
                                track_thread_exit(&d->tt);
                        track_thread_init(&d->tt, to, &ts);
                        d->tracked = true;
                        continue;
                }
                if (d->tt.group != to)
                        track_thread_move(&d->tt, to);
                if (track_thread_update(&d->tt, &ts) > 0)
                        log_debug("Thread %d: counters went backwards, new baseline.", (int) p->tid);
        }
}

static void id_cb(uint64_t ino, size_t path_index, CgroupGroup *group, void *userdata) {
        Sampling *s = userdata;

        if (ARRAY_RESERVE(s->ids, s->allocated_ids, s->n_ids + 1, 64) < 0) {
                s->ids_failed = true; /* its threads stay where they were this round */
                return;
        }
        s->ids[s->n_ids++] = (CgroupId){ .ino = ino, .path_index = (uint32_t) path_index, .group = group };
}

static int id_cmp(const void *a, const void *b) {
        const CgroupId *x = a, *y = b;

        return (x->ino > y->ino) - (x->ino < y->ino);
}

/*
 * With the BPF sampler: each thread's cgroup and managed group from its cgroup id (the inode of
 * the group's directory, as the walk found it), and the groups' thread counts. A thread whose
 * cgroup the walk did not see (made since, or removed) stays where it was, as one that no tasks
 * file listed would.
 */
static void members_from_ids(Sampling *s) {
        qsort(s->ids, s->n_ids, sizeof *s->ids, id_cmp);
        for (size_t i = 0; i < proc_sampler_n_slots(s->procs) && i < s->n_threads_allocated; i++) {
                ProcThread *p = proc_sampler_slot(s->procs, i);
                CgroupId key = { .ino = p->cgroup_id }, *c;

                if (p->state != PROC_THREAD_NEW && p->state != PROC_THREAD_LIVE)
                        continue;
                c = bsearch(&key, s->ids, s->n_ids, sizeof *s->ids, id_cmp);
                if (!c)
                        continue;
                member_set(s, i, c->path_index, c->group);
                if (c->group)
                        c->group->nr_tasks++;
        }
}

/*
 * A task round with the BPF sampler: one read gives every thread and its cgroup; the walk reads
 * no tasks file, only the directories (their inodes are the cgroup ids). The threads first: a
 * cgroup a thread was seen in existed before the walk began (a populated cgroup cannot be
 * removed), so the walk finds it.
 */
static int task_round_bpf(Sampling *s) {
        const ProcThreadSample *v;
        size_t n;
        int r, k;

        r = bpf_sampler_read(s->bpf, &v, &n);
        if (r < 0)
                return r;
        r = proc_sampler_take_round(s->procs, v, n);
        if (r < 0)
                return r;
        s->n_ids = 0;
        s->ids_failed = false;
        r = cgroup_sampler_walk_ids(s->groups, id_cb, s);
        if (r >= 0)
                r = groups_found(s);
        if (s->ids_failed)
                log_debug("Out of memory for the cgroups' ids: threads stay in their groups this round.");
        /* The threads are read: those that exited leave now, whatever became of the walk. */
        k = thread_slots(s);
        if (k < 0)
                return k;
        if (r >= 0)
                members_from_ids(s);
        threads_update(s);
        return r;
}

/* The steal shares over the last STEAL_WINDOW_NS (or as far back as the ring goes). */
static void steal_update(Sampling *s, uint64_t now_ns) {
        const ProcCpuTimes *base = NULL;

        if (proc_sampler_cpu_times(s->procs, s->times, s->n_times) < 0) {
                s->steal_frac = 0;
                memset(s->cpu_steal_frac, 0, s->n_cpus * sizeof *s->cpu_steal_frac);
                return;
        }

        /* The newest reading at least a window old, else the oldest there is. */
        for (size_t k = 0; k < s->history_count; k++) {
                size_t i = (s->history_head + STEAL_HISTORY - 1 - k) % STEAL_HISTORY;

                base = &s->history[i * s->n_times];
                if (now_ns - s->history_ns[i] >= STEAL_WINDOW_NS)
                        break;
        }
        if (base)
                for (size_t i = 0; i < s->n_times; i++) {
                        const ProcCpuTimes *a = &base[i], *b = &s->times[i];
                        uint64_t f = 0;

                        if (b->steal >= a->steal && b->total >= a->total)
                                f = track_steal_frac(b->steal - a->steal, b->total - a->total);
                        if (i == 0)
                                s->steal_frac = f;
                        else
                                s->cpu_steal_frac[i - 1] = f;
                }

        /* Steal is taken per CPU from the per-CPU usage: read from the first steal on. */
        if (!s->steal_seen && s->steal_frac > 0) {
                s->steal_seen = true;
                cgroup_sampler_set_percpu(s->groups, true);
        }
        for (size_t i = 0; !s->steal_seen && i < s->n_cpus; i++)
                if (s->cpu_steal_frac[i] > 0) {
                        s->steal_seen = true;
                        cgroup_sampler_set_percpu(s->groups, true);
                }

        memcpy(&s->history[s->history_head * s->n_times], s->times, s->n_times * sizeof *s->times);
        s->history_ns[s->history_head] = now_ns;
        s->history_head = (s->history_head + 1) % STEAL_HISTORY;
        s->history_count = MIN(s->history_count + 1, (size_t) STEAL_HISTORY);
        s->have_cpu_times = true;
}

int sampling_round(Sampling *s, uint64_t now_ns, bool task_round) {
        uint64_t interval = 0;
        TrackGroupSample none = {};
        int r;

        if (s->started) {
                if (now_ns > s->last_now_ns)
                        interval = now_ns - s->last_now_ns;
                s->rounds++;
        }
        s->last_now_ns = now_ns;

        /*
         * Steal shares, the machine's and each CPU's: invisible to the kernel's PELT clock. They
         * are taken over a second anyway, and /proc/stat costs about as much as a group round's
         * other reads together: read it in task rounds (and at least once a second); group rounds
         * in between use the last shares.
         */
        if (!s->started || task_round || now_ns - s->last_steal_ns >= STEAL_WINDOW_NS) {
                steal_update(s, now_ns);
                s->last_steal_ns = now_ns;
        }

        /* Group round; a task round reads the groups' shares and cpusets too. */
        cgroup_sampler_settle(s->groups);
        if (task_round)
                cgroup_sampler_refresh(s->groups, NULL);
        cgroup_sampler_read_counters(s->groups);
        (void) track_group_advance(&s->catchall, interval, s->steal_frac, &none);
        for (size_t i = 0; i < cgroup_sampler_n_groups(s->groups); i++) {
                CgroupGroup *g = cgroup_sampler_group(s->groups, i);
                GroupData *d = g->userdata;
                TrackGroupSample gs;

                if (g->state != CGROUP_GROUP_LIVE || !d)
                        continue;
                gs = group_sample(s, d, g);
                if (track_group_advance(&d->tg, interval, s->steal_frac, &gs) > 0)
                        log_debug("%s: counters went backwards (recreated?), new baseline.", g->path);
                note_throttled(d, g);
        }

        /*
         * Task round: membership first (a thread's group as of now decides whether it can have
         * run), then the threads, then their PELT.
         */
        if ((!s->started || task_round) && s->bpf && s->opts.task_tracking) {
                s->walk_gen++;
                r = task_round_bpf(s);
                if (r < 0)
                        return r;
        } else if (!s->started || task_round) {
                s->walk_gen++;
                s->n_pending = 0;
                r = cgroup_sampler_walk(s->groups, s->opts.task_tracking ? member_cb : NULL, s);
                if (r < 0)
                        return r;
                r = groups_found(s);
                if (r < 0)
                        return r;
                if (s->opts.task_tracking) {
                        threads_mark_quiet(s);
                        proc_sampler_reserve_fds(s->procs, cgroup_sampler_fds_wanted(s->groups));
                        r = proc_sampler_round(s->procs);
                        if (r < 0)
                                return r;
                        r = thread_slots(s);
                        if (r < 0)
                                return r;
                        members_resolve(s);
                        threads_update(s);
                }
        }
        groups_lost(s);

        s->started = true;
        return 0;
}

size_t sampling_threads(Sampling *s, SampledThread **ret) {
        size_t n = 0;

        *ret = NULL;
        if (!s->opts.task_tracking)
                return 0;
        free(s->out_threads);
        s->out_threads = new0(SampledThread, MAX(proc_sampler_n_slots(s->procs), (size_t) 1));
        if (!s->out_threads)
                return 0;

        for (size_t i = 0; i < proc_sampler_n_slots(s->procs) && i < s->n_threads_allocated; i++) {
                ProcThread *p = proc_sampler_slot(s->procs, i);
                ThreadData *d = &s->threads[i];
                const char *cg;

                /* Tracked from the round after it appeared. */
                if (p->state != PROC_THREAD_LIVE || !d->tracked)
                        continue;
                cg = d->member_gen == s->walk_gen ? cgroup_sampler_path(s->groups, d->path_index) : NULL;
                s->out_threads[n++] = (SampledThread){
                        .pid = p->pid,
                        .tid = p->tid,
                        .comm = p->comm,
                        .cgroup = cg ?: "",
                        .nice = p->nice,
                        .v = track_thread_values(&d->tt),
                        .avg_slice_ns = d->tt.avg_slice_ns,
                };
        }
        *ret = s->out_threads;
        return n;
}

size_t sampling_groups(Sampling *s, SampledGroup **ret) {
        size_t n = 0;

        *ret = NULL;
        free(s->out_groups);
        s->out_groups = new0(SampledGroup, MAX(cgroup_sampler_n_groups(s->groups), (size_t) 1));
        if (!s->out_groups)
                return 0;

        for (size_t i = 0; i < cgroup_sampler_n_groups(s->groups); i++) {
                CgroupGroup *g = cgroup_sampler_group(s->groups, i);
                GroupData *d = g->userdata;

                if (g->state == CGROUP_GROUP_GONE || !d)
                        continue;
                s->out_groups[n++] = (SampledGroup){
                        .path = g->path,
                        .id = d->id,
                        .v = track_group_values(&d->tg, s->opts.task_tracking),
                        .nr_tasks = g->nr_tasks,
                        .shares = d->tg.shares,
                        .throttled_ns = d->throttled_growth_ns,
                        .usage_ns = g->have_usage ? g->usage_ns : 0,
                };
        }
        *ret = s->out_groups;
        return n;
}
