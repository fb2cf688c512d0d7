/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/cgroup-util.h"
#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "peltd/sample-proc.h"
#include "peltd/task-record.h"

/*
 * Sampling every thread with a BPF task iterator (SamplingBackend=bpf; DESIGN.md, "Data flow",
 * item 1): daemon/sample/bpf/task-iter.bpf.c writes one fixed-size record a thread; one read of the
 * iterator to EOF gives, for every thread, what the /proc sampler reads from its schedstat and stat
 * files (the three schedstat numbers, nice, the CPU it last ran on, comm) and its cgroup in the
 * usage hierarchy (v1 cpuacct, v2 the unified one) as the inode of the group's directory — so no
 * tasks file is read either. About 0.4 of what a schedstat pread alone costs a thread (0.66 µs
 * against 1.6-1.7 µs here; bench/sample measures both in the same run).
 *
 * Thread ids are as peltd's PID namespace numbers them, and only its threads (and those of the
 * namespaces below it) are visited: what its /proc shows.
 *
 * Loading needs the kernel's BTF (sys/kernel/btf/vmlinux under the root given; the program is
 * relocated to it, CO-RE), the privileges (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN), and the
 * verifier's yes; on kernels since 5.11 (bpf_get_current_task_btf in an iterator).
 */

typedef struct BpfSampler BpfSampler;

/* Whether this build has the BPF sampler (meson -Dbpf). */
bool bpf_sampler_built(void);

/*
 * Loads the program, attaches the iterator and reads it once. sysroot is where the kernel's BTF is
 * read (sys/kernel/btf/vmlinux); mode says which hierarchy's cgroup to give. On failure returns a
 * negative errno and, in *ret_reason, why (a phrase: "the kernel has no BTF (...)"); never logs
 * above debug (libbpf's own messages go to the debug log).
 */
int bpf_sampler_new(const RootDir *sysroot, CgroupMode mode, BpfSampler **ret, char **ret_reason);
BpfSampler *bpf_sampler_free(BpfSampler *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(BpfSampler *, bpf_sampler_free);
#define _cleanup_bpf_sampler_ _cleanup_(bpf_sampler_freep)

/*
 * One read of every thread. *ret (n entries) stays valid until the next read or the free. Records
 * that are not a thread's (bpf_record_to_sample() says so) are left out. Returns 0 or a negative
 * errno.
 */
int bpf_sampler_read(BpfSampler *b, const ProcThreadSample **ret, size_t *ret_n);

/*
 * Threads /proc lists that the iterator does not show. A kernel may hide tasks from BPF iterators
 * (an LSM, or a sandbox's patch; some hide PID 1): their load is then not tracked. Those are the
 * threads listed under sysroot's proc/ both before and after one read of the iterator (alive
 * throughout) yet absent from it; threads that start or exit meanwhile count for nothing.
 */
#define BPF_HIDDEN_EXAMPLES 3
typedef struct BpfHidden {
        size_t n_threads;
        size_t n_processes;
        size_t n_listed;                               /* threads /proc listed both times */
        pid_t pid[BPF_HIDDEN_EXAMPLES];                /* the first processes, by PID */
} BpfHidden;
int bpf_sampler_find_hidden(BpfSampler *b, const RootDir *sysroot, BpfHidden *ret);

/*
 * A record as the program writes it, as the /proc sampler's reads would give it: nice from
 * static_prio, comm NUL-terminated. Pure. -EINVAL for a record that cannot be a thread's.
 */
int bpf_record_to_sample(const struct peltd_task_record *rec, ProcThreadSample *ret);
