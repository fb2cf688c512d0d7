// SPDX-License-Identifier: GPL-2.0-only
/*
 * The BPF task iterator: one fixed-size record (peltd/task-record.h) per thread, written to the
 * iterator's seq_file; user space (sample-bpf.c) reads them to EOF once a task round. What it reads
 * is what /proc gives, without a file per thread:
 *
 *   schedstat        se.sum_exec_runtime, sched_info.run_delay, sched_info.pcount (as
 *                    proc_pid_schedstat() prints them)
 *   stat field 19    nice: static_prio - 120 (user space subtracts)
 *   stat field 39    the CPU it last ran on: task_cpu()
 *   stat field 2     comm
 *   its cgroup       v1: the cpuacct hierarchy's (the css of the cpuacct subsystem), v2: the
 *                    default hierarchy's; as the kernfs node id, which is the directory's inode
 *
 * CO-RE: the kernel types below declare only the fields read, with preserve_access_index; libbpf
 * finds each one in the running kernel's BTF at load, so this one build runs on any kernel with
 * BTF. Nothing here comes from the build machine's kernel headers.
 *
 * Thread ids are as peltd's PID namespace numbers them: the iterator visits the tasks of the
 * reader's namespace (and of those below it), whose global ids mean nothing there.
 */

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "peltd/task-record.h"

#define __pai __attribute__((preserve_access_index))

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load: which hierarchy's cgroup to give (peltd reads usage from it). */
const volatile int cgroup_v1 = 0;

struct seq_file;
struct pid_namespace;

struct bpf_iter_meta {
        struct seq_file *seq;
} __pai;

struct kernfs_node {
        __u64 id;
} __pai;

struct cgroup {
        struct kernfs_node *kn;
} __pai;

struct cgroup_subsys_state {
        struct cgroup *cgroup;
} __pai;

/* Its value differs between kernels (it depends on the subsystems built in): relocated at load. */
enum cgroup_subsys_id {
        cpuacct_cgrp_id,
};

struct css_set {
        struct cgroup_subsys_state *subsys[1];
        struct cgroup *dfl_cgrp;
} __pai;

struct upid {
        int nr;
        struct pid_namespace *ns;
} __pai;

struct pid {
        unsigned int level;
        struct upid numbers[1];
} __pai;

struct thread_info {
        __u32 cpu;
} __pai;

struct sched_entity {
        __u64 sum_exec_runtime;
} __pai;

struct sched_info {
        unsigned long pcount;
        unsigned long long run_delay;
} __pai;

struct task_struct {
        struct thread_info thread_info;
        unsigned int cpu;            /* before 5.16, task_cpu() read this */
        int static_prio;
        struct sched_entity se;
        struct sched_info sched_info;
        int pid;
        int tgid;
        struct task_struct *group_leader;
        struct pid *thread_pid;
        __u64 start_boottime;
        char comm[16];
        struct css_set *cgroups;
} __pai;

struct bpf_iter__task {
        struct bpf_iter_meta *meta;
        struct task_struct *task;
} __pai;

static __always_inline int task_cpu(const struct task_struct *task) {
        if (bpf_core_field_exists(task->thread_info.cpu))
                return (int) task->thread_info.cpu;
        if (bpf_core_field_exists(task->cpu))
                return (int) task->cpu;
        return -1;
}

/* The cgroup peltd reads usage from: 0 when there is none to give. */
static __always_inline __u64 usage_cgroup_id(const struct task_struct *task) {
        struct css_set *cset = task->cgroups;
        struct cgroup *cgrp;

        if (cgroup_v1) {
                if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuacct_cgrp_id))
                        return 0;
                cgrp = cset->subsys[bpf_core_enum_value(enum cgroup_subsys_id, cpuacct_cgrp_id)]->cgroup;
        } else
                cgrp = cset->dfl_cgrp;
        return cgrp->kn->id;
}

/* The number struct pid p has in the namespace at level (that ns), or 0 where it has none. */
static __always_inline int pid_nr_at(const struct pid *p, unsigned int level, const struct pid_namespace *ns) {
        struct upid u = {};

        if (!p || p->level < level)
                return 0;
        if (bpf_probe_read_kernel(&u, sizeof u, (const char *) &p->numbers[0] + level * bpf_core_type_size(struct upid)) < 0 ||
            u.ns != ns)
                return 0;
        return u.nr;
}

/*
 * The thread's and its process's ids as the reader (peltd, current during the read) sees them.
 * Returns 0, or -1 for a task with no number there.
 */
static __always_inline int task_ids(const struct task_struct *task, struct peltd_task_record *r) {
        const struct task_struct *me = bpf_get_current_task_btf();
        const struct pid *mine = me->thread_pid;
        unsigned int level = mine->level;
        struct upid u = {};

        /* The initial namespace (level 0) numbers every task as the kernel does. */
        if (level == 0) {
                r->tid = task->pid;
                r->pid = task->tgid;
                return 0;
        }
        if (bpf_probe_read_kernel(&u, sizeof u, (const char *) &mine->numbers[0] + level * bpf_core_type_size(struct upid)) < 0)
                return -1;
        r->tid = pid_nr_at(task->thread_pid, level, u.ns);
        r->pid = pid_nr_at(task->group_leader->thread_pid, level, u.ns);
        return r->tid > 0 && r->pid > 0 ? 0 : -1;
}

SEC("iter/task")
int peltd_task(struct bpf_iter__task *ctx) {
        struct task_struct *task = ctx->task;
        struct peltd_task_record r = {};

        /* Called once more at the end with no task. */
        if (!task)
                return 0;
        if (task_ids(task, &r) < 0)
                return 0;
        r.run_ns = task->se.sum_exec_runtime;
        r.wait_ns = task->sched_info.run_delay;
        r.slices = task->sched_info.pcount;
        r.start_ns = task->start_boottime;
        r.cpu = task_cpu(task);
        r.static_prio = task->static_prio;
        r.cgroup_id = usage_cgroup_id(task);
        bpf_probe_read_kernel(r.comm, sizeof r.comm, task->comm);
        r.time_ns = bpf_ktime_get_ns();
        bpf_seq_write(ctx->meta->seq, &r, sizeof r);
        return 0;
}
