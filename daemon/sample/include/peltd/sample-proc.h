/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "peltd/macro.h"
#include "peltd/rootdir.h"

/*
 * Sampling every thread's scheduler counters from /proc (DESIGN.md, "Data flow", item 1).
 *
 *   - /proc/PID/task/TID/schedstat (run ns, wait ns, timeslices) is opened once and read again with
 *     pread each round; a read fails with ESRCH once the thread is gone, so a reused TID is never
 *     mistaken for the old thread;
 *   - /proc/PID/task/TID/stat (comm, nice, last CPU, start time) costs over twice as much: it is
 *     read at discovery, for threads whose schedstat moved (they may have changed CPU), and for
 *     every thread once every ten rounds (renice happens), a tenth of the threads each round;
 *   - a thread known to be idle is not read that round: its counters stay, stamped as of when that
 *     was known. Its caller may know (it sets quiet_ns: the thread's cgroup's usage counter has
 *     not moved since the thread was last read, so nothing in that cgroup ran); with
 *     process_clocks, so does its process's CPU clock (read once a round a process: the sum of
 *     its threads' run time) when it has not moved since the thread was last read. In its stat round only its nice is checked, with
 *     getpriority() (comm changes come from the connector); without the connector, or when the
 *     nice changed, it is read in full;
 *   - new threads come from the netlink proc connector (fork, exec, exit, comm); on ENOBUFS, and
 *     every `rescan_rounds` rounds as a fallback, /proc is scanned again;
 *   - a thread found in a round is NEW: its counters are its baseline, it is tracked from the
 *     next round;
 *   - RLIMIT_NOFILE is raised as far as allowed; stat files are kept open only while half of it is
 *     left; when descriptors run short anyway, the threads found after that are read with
 *     open/read/close (logged once). On that path a reused TID is told apart by its start time
 *     and by counters that go backwards.
 *
 * Threads live in slots whose index stays the same for the thread's lifetime, so a caller can keep
 * its own per-thread data in a parallel array.
 */

typedef enum ProcThreadState {
        PROC_THREAD_FREE,            /* unused slot */
        PROC_THREAD_NEW,             /* found this round: baseline only */
        PROC_THREAD_LIVE,
        PROC_THREAD_GONE,            /* exited (or its TID now names another thread): drop it */
} ProcThreadState;

typedef struct ProcThread {
        pid_t pid;
        pid_t tid;
        ProcThreadState state;
        int schedstat_fd;            /* -1: open/read/close each time */
        int stat_fd;                 /* -1: open/read/close each time */
        uint64_t run_ns;
        uint64_t wait_ns;
        uint64_t slices;
        uint64_t sample_ns;          /* CLOCK_MONOTONIC when schedstat was last read */
        uint64_t starttime;          /* clock ticks since boot */
        int nice;
        int cpu;                     /* the CPU it last ran on */
        bool moved;                  /* schedstat changed in this round */
        /*
         * Set by the caller before a round, 0 otherwise: the thread cannot have run since its last
         * read, as of this CLOCK_MONOTONIC time. Cleared by the round.
         */
        uint64_t quiet_ns;
        bool unread;                 /* left unread in the last round: known not to have run */
        bool have_proc_clock;
        uint64_t proc_clock_ns;      /* its process's CPU clock, read before its last read */
        uint8_t stat_slot;           /* stat is re-read in rounds where round % 10 == stat_slot */
        char comm[16];
        /* Given by proc_sampler_take_round() (0 otherwise): */
        uint64_t start_ns;           /* when it started, in ns of boot time: with tid, who it is */
        uint64_t cgroup_id;          /* its cgroup in the usage hierarchy: the directory's inode; 0: unknown */
} ProcThread;

typedef struct ProcSamplerOptions {
        bool netlink;                /* listen to the proc connector (needs CAP_NET_ADMIN) */
        /*
         * Threads whose process's CPU clock has not moved since they were last read are left
         * unread. The live /proc only: the clocks are those of this system's processes.
         */
        bool process_clocks;
        unsigned rescan_rounds;      /* with the connector, rescan every this many rounds (0: 60) */
        size_t max_fds;              /* descriptors it may keep open; 0: as RLIMIT_NOFILE allows */
        /* The time each read is stamped with; NULL: CLOCK_MONOTONIC. Tests on fixtures set their own. */
        uint64_t (*clock)(void *userdata);
        void *clock_userdata;
} ProcSamplerOptions;

typedef struct ProcSampler ProcSampler;

/* proc is the /proc root (a fixture tree in tests). Does not take ownership of it. */
int proc_sampler_new(RootDir *proc, const ProcSamplerOptions *o, ProcSampler **ret);
ProcSampler *proc_sampler_free(ProcSampler *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcSampler *, proc_sampler_free);
#define _cleanup_proc_sampler_ _cleanup_(proc_sampler_freep)

/*
 * One round: turns last round's NEW threads LIVE and frees GONE slots, reads every LIVE thread's
 * counters (GONE when it has exited), then takes in new threads (NEW). The first call scans /proc
 * and finds every thread NEW. Returns 0 or a negative errno (out of memory, /proc unreadable).
 */
int proc_sampler_round(ProcSampler *s);

/*
 * A thread as a reader of every thread at once gives it (the BPF task iterator, sample-bpf.h):
 * what a round of /proc reads gives, and its cgroup.
 */
typedef struct ProcThreadSample {
        pid_t pid;
        pid_t tid;
        uint64_t start_ns;           /* when it started, in ns of boot time */
        uint64_t run_ns;             /* schedstat's three numbers */
        uint64_t wait_ns;
        uint64_t slices;
        uint64_t sample_ns;          /* CLOCK_MONOTONIC when it was read */
        int nice;
        int cpu;                     /* the CPU it last ran on; -1: unknown */
        uint64_t cgroup_id;          /* its cgroup in the usage hierarchy: the directory's inode; 0: unknown */
        char comm[16];
} ProcThreadSample;

/*
 * A round from samples of every thread read elsewhere, instead of /proc (no file is opened, no
 * connector read): last round settles as in proc_sampler_round(); a thread sampled before (the same
 * TID, process and start time) is LIVE with the new numbers, one not known yet is NEW, one known
 * but not among them has exited (GONE), and so has one whose TID names another thread now (its
 * successor is NEW, in another slot). Returns 0 or -ENOMEM (the threads not taken in are found
 * by the next round).
 */
int proc_sampler_take_round(ProcSampler *s, const ProcThreadSample *v, size_t n);

size_t proc_sampler_n_slots(const ProcSampler *s);
ProcThread *proc_sampler_slot(ProcSampler *s, size_t i);
/* The slot of a thread that is NEW or LIVE, or -1. */
ssize_t proc_sampler_find(const ProcSampler *s, pid_t tid);
size_t proc_sampler_n_threads(const ProcSampler *s);
/*
 * Descriptors the rest of the process keeps open (cgroup counter files) or needs: kept thread
 * files leave them free, and give some back at the next round when this grows.
 */
void proc_sampler_reserve_fds(ProcSampler *s, size_t n);

/*
 * Every thread known is taken as gone (GONE this round, its fds closed), and the next round scans
 * /proc afresh: for a caller that stops tracking threads, whose fds would else stay open for
 * threads long ended.
 */
void proc_sampler_forget_threads(ProcSampler *s);
/* Whether the proc connector is delivering events. */
bool proc_sampler_netlink_active(const ProcSampler *s);
/* Descriptors kept open, and threads whose schedstat is read with open/read/close for want of them. */
size_t proc_sampler_n_kept_fds(const ProcSampler *s);
size_t proc_sampler_n_fallback(const ProcSampler *s);
/* Whether process clocks are in use (asked for, and the /proc given is of this PID namespace). */
bool proc_sampler_process_clocks(const ProcSampler *s);
/* The CPU-time clock of process pid (as clock_getcpuclockid(3) gives it), for clock_gettime(2). */
clockid_t proc_process_clockid(pid_t pid);
/* Threads whose schedstat was read, and those left unread as quiet, in the last round. */
size_t proc_sampler_n_read(const ProcSampler *s);
size_t proc_sampler_n_quiet(const ProcSampler *s);

/* Cumulative jiffies from /proc/stat. */
typedef struct ProcCpuTimes {
        uint64_t steal;
        uint64_t total;
} ProcCpuTimes;

/*
 * /proc/stat's "cpu" line into ret[0] and each "cpuN" line into ret[N + 1] (N < max - 1; CPUs
 * not listed, e.g. offline, are left zero). Returns the number of entries filled (index of the
 * highest CPU + 2) or a negative errno.
 */
int proc_sampler_cpu_times(ProcSampler *s, ProcCpuTimes *ret, size_t max);

/*
 * Calls cb for every thread under dir (a /proc, relative to r): each process directory's task/
 * entries, as readdir gives them; a process that exits meanwhile is passed over. Stops at the first
 * negative cb returns and returns it; else 0, or the error opening dir.
 */
int proc_for_each_thread(const RootDir *r, const char *dir, int (*cb)(pid_t pid, pid_t tid, void *userdata), void *userdata);

/* Parsers, exposed for tests. Return 0 or -EINVAL. */
int proc_parse_schedstat(const char *s, uint64_t *ret_run, uint64_t *ret_wait, uint64_t *ret_slices);
/* comm (up to 15 bytes), nice (field 19), starttime (field 22), processor (field 39). */
int proc_parse_stat(const char *s, char comm[static 16], int *ret_nice, uint64_t *ret_starttime, int *ret_cpu);
int proc_parse_cpu_times(const char *s, ProcCpuTimes *ret, size_t max);
