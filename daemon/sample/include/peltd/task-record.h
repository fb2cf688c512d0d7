/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What the BPF task iterator (daemon/sample/bpf/task-iter.bpf.c) writes for each thread, and
 * sample-bpf.c reads: fixed-size records, one after the other, read to EOF each task round.
 * Shared by the BPF program and user space, so only fixed-width types; the layout is checked on
 * both sides.
 */
#ifndef __bpf__
#include <linux/types.h>
#endif

#define PELTD_TASK_COMM_LEN 16

struct peltd_task_record {
        __u64 run_ns;                /* se.sum_exec_runtime: schedstat's first number */
        __u64 wait_ns;               /* sched_info.run_delay: its second */
        __u64 slices;                /* sched_info.pcount: its third */
        __u64 start_ns;              /* start_boottime: with tid, who the thread is */
        __u64 cgroup_id;             /* its cgroup in the usage hierarchy (the directory's inode); 0: unknown */
        __u64 time_ns;               /* CLOCK_MONOTONIC when it was read */
        __s32 pid;                   /* tgid, as peltd's PID namespace numbers it */
        __s32 tid;
        __s32 cpu;                   /* the CPU it last ran on; -1: unknown */
        __s32 static_prio;           /* 100..139: nice + 120 */
        char comm[PELTD_TASK_COMM_LEN]; /* NUL-padded, not always NUL-terminated */
};

_Static_assert(sizeof(struct peltd_task_record) == 80, "the record's layout is the BPF program's");
