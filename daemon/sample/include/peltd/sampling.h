/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "peltd/cgroup-util.h"
#include "peltd/config.h"
#include "peltd/sample-bpf.h"
#include "peltd/sample-proc.h"
#include "peltd/sample-cgroup.h"
#include "peltd/track.h"

/*
 * sample -> track, one round at a time: the thread and cgroup samplers feed the tracking math.
 * This is the part of the pipeline --once and the daemon share. The caller owns the clock: every
 * round takes `now` (CLOCK_MONOTONIC nanoseconds) explicitly.
 *
 * A group round reads the managed groups' counters and advances their clocks and util; a task
 * round (a group round too) also reads every thread's schedstat, the groups' membership, finds
 * new groups and threads, and updates the threads' PELT.
 */

typedef struct SamplingOptions {
        bool task_tracking;          /* sample threads at all (TaskTracking=, 011) */
        bool netlink;                /* new threads from the proc connector */
        bool process_clocks;         /* threads whose process's CPU clock stood still are not read (live /proc) */
        unsigned rescan_rounds;      /* 0: the proc sampler's default */
        size_t max_fds;              /* 0: as RLIMIT_NOFILE allows */
        const unsigned *capacity;    /* per CPU; NULL: every CPU 1024 */
        size_t n_capacity;
        /* Stamps each counter read (shares are taken between reads); NULL: CLOCK_MONOTONIC. */
        uint64_t (*clock)(void *userdata);
        void *clock_userdata;
        /* Every group counter every round, none left out: a reference for tests (sample-cgroup.h). */
        bool read_everything;
        /*
         * Threads and their cgroups from the BPF task iterator (sampling_open_backend()) instead
         * of /proc and the tasks files; NULL: /proc. sampling_new() takes it over, also when it fails.
         */
        BpfSampler *bpf;
} SamplingOptions;

/* One tracked thread, for output. */
typedef struct SampledThread {
        pid_t pid;
        pid_t tid;
        const char *comm;
        const char *cgroup;          /* in the usage hierarchy; "" when not seen in any group */
        int nice;
        TrackValues v;
        uint64_t avg_slice_ns;
} SampledThread;

/* One managed group, for output. */
typedef struct SampledGroup {
        const char *path;
        uint64_t id;                 /* unique for the sampler's lifetime: a group made again gets a new one */
        TrackValues v;
        size_t nr_tasks;
        uint64_t shares;
        uint64_t throttled_ns;       /* growth of its throttled counter since it was found */
        uint64_t usage_ns;           /* its usage counter as last read (v1 cpuacct.usage); 0: unknown */
} SampledGroup;

typedef struct Sampling Sampling;

/*
 * SamplingBackend= (or --backend): auto loads the BPF task iterator where it can (the kernel's BTF
 * under sysroot, the privileges, the verifier's yes) and otherwise samples from /proc; bpf insists.
 * Logs once which it is and why (setting names the setting that chose, for the messages: "SamplingBackend=",
 * "--backend "). Returns 0 with *ret_bpf (NULL: /proc), or, where bpf was asked for and does not
 * load, a negative errno (logged).
 */
int sampling_open_backend(const RootDir *sysroot, CgroupMode mode, SamplingBackend want, const char *setting, BpfSampler **ret_bpf);

/* Does not take ownership of proc, fs or config; they must outlive it. */
int sampling_new(RootDir *proc, const CgroupFs *fs, const Config *config, const SamplingOptions *o, Sampling **ret);
Sampling *sampling_free(Sampling *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sampling *, sampling_free);
#define _cleanup_sampling_ _cleanup_(sampling_freep)

/*
 * A reloaded configuration (CgroupRoot=, Groups=) takes effect at the next task round; the
 * tracked averages are kept. config must outlive the sampler.
 */
void sampling_set_config(Sampling *s, const Config *config);
/* TaskTracking= switched: without it threads are not read and groups' runnable is their util. */
void sampling_set_task_tracking(Sampling *s, bool task_tracking);

/* peltd wrote a group's shares or cpuset: they are read again at the next round. */
void sampling_refresh_group(Sampling *s, const char *path);

/* A round at now. The first is the baseline. Returns 0 or a negative errno (a hierarchy or /proc unreadable). */
int sampling_round(Sampling *s, uint64_t now_ns, bool task_round);

/* Rounds taken after the baseline. */
unsigned sampling_rounds(const Sampling *s);

/* The tracked threads (found at least one task round ago), in no particular order. */
size_t sampling_threads(Sampling *s, SampledThread **ret);
/* The managed groups, sorted by path. */
size_t sampling_groups(Sampling *s, SampledGroup **ret);

ProcSampler *sampling_proc_sampler(Sampling *s);
/* Where threads come from: SAMPLING_BACKEND_BPF or SAMPLING_BACKEND_PROC. */
SamplingBackend sampling_backend(const Sampling *s);
const char *sampling_backend_to_string(SamplingBackend b);
