/* SPDX-License-Identifier: GPL-2.0-only */
#include <dirent.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "peltd/alloc-util.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/sample-proc.h"
#include "peltd/time-util.h"

/* Re-read every thread's stat once in this many rounds: renice and comm changes happen. */
#define STAT_EVERY_ROUNDS 10
/* With the proc connector, a rescan catches what it missed; one a minute at the default interval. */
#define RESCAN_ROUNDS_DEFAULT 60
/* Descriptors left for everything else (cgroup files, the connector, logging, libraries). */
#define FD_RESERVE 256
/* Enough for a burst of forks between two rounds; the kernel doubles it. */
#define NETLINK_RCVBUF (4 * 1024 * 1024)

/* ---- tid -> slot: open addressing, linear probing, backward-shift deletion ------------------- */

typedef struct TidMap {
        pid_t *keys;                 /* 0: empty */
        uint32_t *values;
        size_t mask;                 /* capacity - 1 (a power of two) */
        size_t n;
} TidMap;

static size_t tid_hash(pid_t tid, size_t mask) {
        return ((uint32_t) tid * UINT32_C(2654435761)) & mask;
}

static int tidmap_resize(TidMap *m, size_t capacity) {
        pid_t *keys = new0(pid_t, capacity), *old_keys = m->keys;
        uint32_t *values = new0(uint32_t, capacity), *old_values = m->values;
        size_t old_cap = m->keys ? m->mask + 1 : 0;

        if (!keys || !values) {
                free(keys);
                free(values);
                return -ENOMEM;
        }
        m->keys = keys;
        m->values = values;
        m->mask = capacity - 1;
        for (size_t i = 0; i < old_cap; i++) {
                size_t h;

                if (!old_keys[i])
                        continue;
                for (h = tid_hash(old_keys[i], m->mask); m->keys[h]; h = (h + 1) & m->mask)
                        ;
                m->keys[h] = old_keys[i];
                m->values[h] = old_values[i];
        }
        free(old_keys);
        free(old_values);
        return 0;
}

static ssize_t tidmap_get(const TidMap *m, pid_t tid) {
        if (!m->keys)
                return -1;
        for (size_t h = tid_hash(tid, m->mask); m->keys[h]; h = (h + 1) & m->mask)
                if (m->keys[h] == tid)
                        return (ssize_t) m->values[h];
        return -1;
}

static int tidmap_put(TidMap *m, pid_t tid, uint32_t value) {
        size_t h;

        if (!m->keys || (m->n + 1) * 2 > m->mask + 1) {
                int r = tidmap_resize(m, m->keys ? (m->mask + 1) * 2 : 1024);
                if (r < 0)
                        return r;
        }
        for (h = tid_hash(tid, m->mask); m->keys[h]; h = (h + 1) & m->mask)
                if (m->keys[h] == tid) {
                        m->values[h] = value;
                        return 0;
                }
        m->keys[h] = tid;
        m->values[h] = value;
        m->n++;
        return 0;
}

static void tidmap_clear(TidMap *m) {
        if (m->keys)
                memset(m->keys, 0, (m->mask + 1) * sizeof *m->keys);
        m->n = 0;
}

static void tidmap_remove(TidMap *m, pid_t tid) {
        size_t h, j;

        if (!m->keys)
                return;
        for (h = tid_hash(tid, m->mask); m->keys[h] != tid; h = (h + 1) & m->mask)
                if (!m->keys[h])
                        return;
        /* Shift back the entries of the probe run that follow, so that no lookup stops early. */
        for (j = (h + 1) & m->mask; m->keys[j]; j = (j + 1) & m->mask) {
                size_t home = tid_hash(m->keys[j], m->mask);

                if (((j - home) & m->mask) >= ((j - h) & m->mask)) {
                        m->keys[h] = m->keys[j];
                        m->values[h] = m->values[j];
                        h = j;
                }
        }
        m->keys[h] = 0;
        m->n--;
}

/* ---- the sampler ------------------------------------------------------------------------------ */

typedef struct ProcessClock {
        uint64_t ns;                 /* the process's CPU time: all its threads, living and exited */
        uint64_t at_ns;              /* when it was read (the sampler's clock, just before) */
        bool ok;
} ProcessClock;

struct ProcSampler {
        RootDir *proc;
        ProcThread *slots;
        size_t n_slots, allocated;
        uint32_t *free_slots;
        size_t n_free;
        TidMap map;
        size_t n_threads;

        uint64_t round;
        unsigned rescan_rounds;
        uint64_t last_rescan_round;
        uint64_t rescan_gen;
        uint8_t *seen;               /* per slot: rescan_gen when last seen by a rescan (low byte) */
        bool need_rescan;

        int netlink_fd;
        bool netlink_active;

        size_t max_fds, kept_fds, n_fallback;
        size_t reserved_fds;         /* what the rest of the process keeps open, by the caller */
        bool warned_emfile, emfile_seen; /* said once an episode; seen this round */
        size_t n_read, n_quiet;      /* last round */
        bool warned_fds;

        int stat_fd;                 /* /proc/stat */
        ReadBuf stat_buf;            /* its text: a line per CPU and the IRQ counts, grown once, kept */

        /* Process CPU clocks, each read once a round: pid -> index in clocks[]. */
        bool process_clocks;
        TidMap clock_map;
        ProcessClock *clocks;
        size_t n_clocks, allocated_clocks;
        uint64_t (*clock)(void *userdata);
        void *clock_userdata;
};

static uint64_t monotonic_ns(_unused_ void *userdata) {
        return now_nsec(CLOCK_MONOTONIC);
}

/* How many descriptors thread files may keep open. */
static size_t fd_allowance(const ProcSampler *s) {
        return s->max_fds > s->reserved_fds ? s->max_fds - s->reserved_fds : 0;
}

static bool out_of_fds(int k) {
        return k == -EMFILE || k == -ENFILE;
}

static void warn_out_of_fds(ProcSampler *s) {
        s->emfile_seen = true;
        if (s->warned_emfile)
                return;
        log_warning("Out of file descriptors: some threads are not read (or not found) until some are free again.");
        s->warned_emfile = true;
}

/*
 * Raises RLIMIT_NOFILE's soft limit to the hard one, and as root the hard one as far as
 * fs.nr_open allows: a kept-open schedstat and stat per thread.
 */
static size_t raise_nofile(void) {
        struct rlimit rl;
        _cleanup_free_ char *s = NULL;
        uint64_t nr_open = 0;
        _cleanup_close_ int fd = -1;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 1024;

        fd = open("/proc/sys/fs/nr_open", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && read_full_fd(fd, &s, NULL) >= 0)
                (void) safe_atou64(s, &nr_open);
        if (nr_open > rl.rlim_max) {
                struct rlimit want = { .rlim_cur = nr_open, .rlim_max = nr_open };

                if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                        rl = want;
        }
        if (rl.rlim_cur < rl.rlim_max) {
                struct rlimit want = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };

                if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                        rl = want;
        }
        return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : (size_t) rl.rlim_cur;
}

static int netlink_open(void) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0 };
        struct {
                struct nlmsghdr nl;
                struct cn_msg cn;
                enum proc_cn_mcast_op op;
        } __attribute__((packed)) msg = {
                .nl = { .nlmsg_len = sizeof msg, .nlmsg_type = NLMSG_DONE, .nlmsg_pid = 0 },
                .cn = { .id = { .idx = CN_IDX_PROC, .val = CN_VAL_PROC }, .len = sizeof(enum proc_cn_mcast_op) },
                .op = PROC_CN_MCAST_LISTEN,
        };
        int size = NETLINK_RCVBUF;

        fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
        if (fd < 0)
                return negative_errno();
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return negative_errno();
        if (send(fd, &msg, sizeof msg, 0) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

/*
 * Whether the PIDs under proc are this process's own (its PID namespace): a process CPU clock is
 * named by a PID as this process sees it. /proc/self there names this process by getpid().
 */
static bool proc_is_ours(RootDir *proc) {
        _cleanup_free_ char *stat = NULL;
        char *end;
        long pid;

        if (rootdir_read_string(proc, "self/stat", &stat) < 0)
                return false;
        errno = 0;
        pid = strtol(stat, &end, 10);
        if (errno != 0 || end == stat || pid != (long) getpid()) {
                log_debug("The /proc given is not of this process's PID namespace: no process clocks, every thread is read.");
                return false;
        }
        return true;
}

int proc_sampler_new(RootDir *proc, const ProcSamplerOptions *o, ProcSampler **ret) {
        _cleanup_proc_sampler_ ProcSampler *s = NULL;
        size_t limit;
        int fd;

        s = new0(ProcSampler, 1);
        if (!s)
                return -ENOMEM;
        s->proc = proc;
        s->netlink_fd = -1;
        s->stat_fd = -1;
        s->rescan_rounds = o && o->rescan_rounds ? o->rescan_rounds : RESCAN_ROUNDS_DEFAULT;
        s->need_rescan = true;
        s->clock = o && o->clock ? o->clock : monotonic_ns;
        s->clock_userdata = o ? o->clock_userdata : NULL;
        s->process_clocks = o && o->process_clocks && proc_is_ours(proc);

        limit = raise_nofile();
        s->max_fds = limit > FD_RESERVE ? limit - FD_RESERVE : 0;
        if (o && o->max_fds)
                s->max_fds = MIN(s->max_fds, o->max_fds);
        if (o && o->max_fds == SIZE_MAX)
                s->max_fds = 0;

        if (o && o->netlink) {
                fd = netlink_open();
                if (fd < 0)
                        log_debug_errno(fd, "Proc connector unavailable, rescanning /proc every round instead: %m");
                else {
                        s->netlink_fd = fd;
                        s->netlink_active = true;
                }
        }

        fd = rootdir_open_file(proc, "stat", O_RDONLY);
        s->stat_fd = fd < 0 ? -1 : fd;

        *ret = TAKE_PTR(s);
        return 0;
}

static void thread_close(ProcSampler *s, ProcThread *t) {
        if (t->schedstat_fd >= 0) {
                close(t->schedstat_fd);
                s->kept_fds--;
        }
        if (t->stat_fd >= 0) {
                close(t->stat_fd);
                s->kept_fds--;
        }
        t->schedstat_fd = t->stat_fd = -1;
}

ProcSampler *proc_sampler_free(ProcSampler *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_slots; i++)
                if (s->slots[i].state != PROC_THREAD_FREE)
                        thread_close(s, &s->slots[i]);
        free(s->slots);
        free(s->free_slots);
        free(s->seen);
        free(s->map.keys);
        free(s->map.values);
        free(s->clock_map.keys);
        free(s->clock_map.values);
        free(s->clocks);
        if (s->netlink_fd >= 0)
                close(s->netlink_fd);
        if (s->stat_fd >= 0)
                close(s->stat_fd);
        readbuf_done(&s->stat_buf);
        free(s);
        return NULL;
}

/* ---- parsers ---------------------------------------------------------------------------------- */

static const char *parse_u64_token(const char *p, uint64_t *ret) {
        uint64_t v = 0;

        if (*p < '0' || *p > '9')
                return NULL;
        for (; *p >= '0' && *p <= '9'; p++) {
                uint64_t d = (uint64_t) (*p - '0');

                if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
                        return NULL;
                v = v * 10 + d;
        }
        *ret = v;
        return p;
}

int proc_parse_schedstat(const char *s, uint64_t *ret_run, uint64_t *ret_wait, uint64_t *ret_slices) {
        uint64_t v[3];
        const char *p = s;

        for (int i = 0; i < 3; i++) {
                p = parse_u64_token(p, &v[i]);
                if (!p || (i < 2 && *p++ != ' '))
                        return -EINVAL;
        }
        if (*p != '\n' && *p != 0)
                return -EINVAL;
        *ret_run = v[0];
        *ret_wait = v[1];
        *ret_slices = v[2];
        return 0;
}

int proc_parse_stat(const char *s, char comm[static 16], int *ret_nice, uint64_t *ret_starttime, int *ret_cpu) {
        const char *open = strchr(s, '('), *close = strrchr(s, ')'), *p;
        int64_t nice = 0;
        uint64_t starttime = 0, cpu = 0;
        size_t len;

        if (!open || !close || close < open)
                return -EINVAL;
        /* comm may hold anything, ')' included: it ends at the last ')'. */
        len = MIN((size_t) (close - open - 1), (size_t) 15);
        p = close + 1;

        /* Fields from 3 (state) on, separated by single spaces. */
        for (int field = 3; field <= 39; field++) {
                if (*p++ != ' ')
                        return -EINVAL;
                if (field == 3) {
                        if (!*p || *p == ' ')
                                return -EINVAL;
                        p++;
                        continue;
                }
                if (field == 19) {
                        bool neg = *p == '-';
                        uint64_t v;

                        p = parse_u64_token(p + neg, &v);
                        if (!p || v > 20)
                                return -EINVAL;
                        nice = neg ? -(int64_t) v : (int64_t) v;
                        continue;
                }
                {
                        uint64_t v;

                        /* Some fields are signed (priority, exit codes); only their shape matters here. */
                        p = parse_u64_token(p + (*p == '-'), &v);
                        if (!p)
                                return -EINVAL;
                        if (field == 22)
                                starttime = v;
                        else if (field == 39)
                                cpu = v;
                }
        }
        if (*p != ' ' && *p != '\n' && *p != 0)
                return -EINVAL;
        if (cpu > INT32_MAX)
                return -EINVAL;

        memcpy(comm, open + 1, len);
        comm[len] = 0;
        *ret_nice = (int) nice;
        *ret_starttime = starttime;
        *ret_cpu = (int) cpu;
        return 0;
}

/* One "cpu..." line's values: user nice system idle iowait irq softirq steal (guest is inside user). */
static int parse_cpu_line(const char *p, ProcCpuTimes *ret) {
        uint64_t total = 0, v, steal = 0;
        int n = 0;

        for (; n < 10; n++) {
                while (*p == ' ')
                        p++;
                if (*p == '\n' || !*p)
                        break;
                p = parse_u64_token(p, &v);
                if (!p)
                        return -EINVAL;
                if (n < 8)
                        total += v;
                if (n == 7)
                        steal = v;
        }
        if (n < 4)
                return -EINVAL;
        *ret = (ProcCpuTimes){ .steal = steal, .total = total };
        return 0;
}

int proc_parse_cpu_times(const char *s, ProcCpuTimes *ret, size_t max) {
        size_t filled = 0;

        if (max == 0)
                return -EINVAL;
        memset(ret, 0, max * sizeof *ret);
        while (*s) {
                const char *eol = strchrnul(s, '\n'), *p;

                if ((p = startswith(s, "cpu "))) {
                        if (parse_cpu_line(p, &ret[0]) < 0)
                                return -EINVAL;
                        filled = MAX(filled, (size_t) 1);
                } else if ((p = startswith(s, "cpu"))) {
                        uint64_t cpu;

                        p = parse_u64_token(p, &cpu);
                        if (!p || *p != ' ')
                                return -EINVAL;
                        /* Not cpu + 1 < max: that wraps for a CPU number of 2^64 - 1. */
                        if (cpu < max - 1) {
                                if (parse_cpu_line(p, &ret[cpu + 1]) < 0)
                                        return -EINVAL;
                                filled = MAX(filled, (size_t) cpu + 2);
                        }
                }
                s = *eol ? eol + 1 : eol;
        }
        return filled ? (int) filled : -EINVAL;
}

/* ---- reading ---------------------------------------------------------------------------------- */

static int open_task_file(ProcSampler *s, const ProcThread *t, const char *file) {
        char path[96];

        snprintf(path, sizeof path, "%d/task/%d/%s", (int) t->pid, (int) t->tid, file);
        return rootdir_open_file(s->proc, path, O_RDONLY);
}

/*
 * Reads a task file through its kept fd, or with open/read/close; ESRCH/ENOENT: the thread is gone.
 * One pread: procfs generates these small files whole at offset 0, and a second call to see EOF
 * would cost as much again. A file that fills the buffer is not what it should be (-EINVAL).
 */
static ssize_t read_task_file(ProcSampler *s, const ProcThread *t, int fd, const char *file, char *buf, size_t size) {
        _cleanup_close_ int own = -1;
        ssize_t n;

        if (fd < 0) {
                own = open_task_file(s, t, file);
                if (own < 0)
                        return own;
                fd = own;
        }
        do
                n = pread(fd, buf, size - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        if ((size_t) n >= size - 1)
                return -EINVAL;
        buf[n] = 0;
        return n;
}

static int read_schedstat(ProcSampler *s, ProcThread *t, uint64_t *run, uint64_t *wait, uint64_t *slices) {
        /* Three u64 (at most 20 digits each), two spaces and a newline: 63 bytes at most. */
        char buf[96];
        ssize_t n = read_task_file(s, t, t->schedstat_fd, "schedstat", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        return proc_parse_schedstat(buf, run, wait, slices);
}

static int read_stat(ProcSampler *s, ProcThread *t, char comm[static 16], int *nice, uint64_t *starttime, int *cpu) {
        /*
         * 52 fields: the comm in parentheses (15 bytes for user threads, under 64 for kernel
         * threads' long names) and 51 numbers of at most 20 digits and a sign, each with its
         * separator: under 1,200 bytes. Fields a later kernel appends fit in the rest; a line that
         * fills the buffer is refused (the thread is not read), never parsed cut.
         */
        char buf[2048];
        ssize_t n = read_task_file(s, t, t->stat_fd, "stat", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        return proc_parse_stat(buf, comm, nice, starttime, cpu);
}

static void mark_gone(ProcSampler *s, ProcThread *t) {
        if (t->state != PROC_THREAD_NEW && t->state != PROC_THREAD_LIVE)
                return;
        thread_close(s, t);
        tidmap_remove(&s->map, t->tid);
        t->state = PROC_THREAD_GONE;
        s->n_threads--;
}

static int alloc_slot(ProcSampler *s, uint32_t *ret) {
        if (s->n_free > 0) {
                *ret = s->free_slots[--s->n_free];
                return 0;
        }
        if (s->n_slots == s->allocated) {
                size_t na = s->allocated ? s->allocated * 2 : 256;
                ProcThread *ns = realloc(s->slots, na * sizeof *ns);
                uint8_t *seen;
                uint32_t *fs;

                if (!ns)
                        return -ENOMEM;
                s->slots = ns;
                seen = realloc(s->seen, na);
                if (!seen)
                        return -ENOMEM;
                s->seen = seen;
                fs = realloc(s->free_slots, na * sizeof *fs);
                if (!fs)
                        return -ENOMEM;
                s->free_slots = fs;
                s->allocated = na;
        }
        *ret = (uint32_t) s->n_slots++;
        return 0;
}

/*
 * Opens a file to keep. schedstat is read every round, stat one round in ten: stat files are kept
 * only while half the budget is left, so that on a busy machine the descriptors go to schedstat.
 */
static int keep_open(ProcSampler *s, ProcThread *t, const char *file, int *fd) {
        size_t allowance = fd_allowance(s);
        int k;

        *fd = -1;
        if (s->kept_fds >= allowance || (streq(file, "stat") && s->kept_fds >= allowance / 2))
                return 0;
        k = open_task_file(s, t, file);
        if (out_of_fds(k)) {
                /* Whatever the limit said, the process or the system is out: stop keeping more. */
                s->max_fds = s->kept_fds + s->reserved_fds;
                return 0;
        }
        if (k < 0)
                return k;
        *fd = k;
        s->kept_fds++;
        return 0;
}

/*
 * A thread seen for the first time: open its files and read its baseline. Returns 0 (added, or it
 * was gone before it could be read) or -ENOMEM.
 */
static int discover(ProcSampler *s, pid_t pid, pid_t tid) {
        ProcThread *t;
        ssize_t existing = tidmap_get(&s->map, tid);
        uint32_t slot;
        int k;

        if (existing >= 0) {
                ProcThread *o = &s->slots[existing];

                if (o->pid == pid) {
                        s->seen[existing] = (uint8_t) s->rescan_gen;
                        return 0;
                }
                /* The TID names a thread of another process now: the old one is gone. */
                mark_gone(s, o);
        }

        k = alloc_slot(s, &slot);
        if (k < 0)
                return k;
        t = &s->slots[slot];
        *t = (ProcThread){
                .pid = pid,
                .tid = tid,
                .state = PROC_THREAD_NEW,
                .schedstat_fd = -1,
                .stat_fd = -1,
                .stat_slot = (uint8_t) ((uint32_t) tid % STAT_EVERY_ROUNDS),
        };

        if ((k = keep_open(s, t, "schedstat", &t->schedstat_fd)) < 0 || (k = keep_open(s, t, "stat", &t->stat_fd)) < 0 ||
            (k = read_schedstat(s, t, &t->run_ns, &t->wait_ns, &t->slices)) < 0 || !(t->sample_ns = s->clock(s->clock_userdata)) ||
            (k = read_stat(s, t, t->comm, &t->nice, &t->starttime, &t->cpu)) < 0) {
                /* Gone between readdir and open (or unreadable): it never was. Out of fds: a later scan finds it. */
                if (out_of_fds(k))
                        warn_out_of_fds(s);
                else
                        log_debug_errno(k, "Thread %d of %d vanished before its first sample, ignoring: %m", (int) tid, (int) pid);
                thread_close(s, t);
                t->state = PROC_THREAD_FREE;
                s->free_slots[s->n_free++] = slot;
                return 0;
        }

        if (t->schedstat_fd < 0) {
                s->n_fallback++;
                if (!s->warned_fds) {
                        log_warning("Out of file descriptors after %zu: reading the threads found from now on with open/read/close.",
                                    s->kept_fds);
                        s->warned_fds = true;
                }
        }

        k = tidmap_put(&s->map, tid, slot);
        if (k < 0) {
                thread_close(s, t);
                t->state = PROC_THREAD_FREE;
                s->free_slots[s->n_free++] = slot;
                return k;
        }
        s->seen[slot] = (uint8_t) s->rescan_gen;
        s->n_threads++;
        return 0;
}

static int parse_pid(const char *name, pid_t *ret) {
        int v;

        if (name[0] < '1' || name[0] > '9' || safe_atoi(name, &v) < 0 || v <= 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int proc_for_each_thread(const RootDir *r, const char *dir, int (*cb)(pid_t pid, pid_t tid, void *userdata), void *userdata) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int k;

        k = rootdir_opendir(r, dir, &d);
        if (k < 0)
                return k;
        while ((de = readdir(d))) {
                _cleanup_closedir_ DIR *td = NULL;
                struct dirent *te;
                char path[PATH_MAX];
                pid_t pid, tid;

                if (parse_pid(de->d_name, &pid) < 0)
                        continue;
                snprintf(path, sizeof path, "%s/%d/task", dir, (int) pid);
                if (rootdir_opendir(r, path, &td) < 0)
                        continue; /* exited since */
                while ((te = readdir(td))) {
                        if (parse_pid(te->d_name, &tid) < 0)
                                continue;
                        k = cb(pid, tid, userdata);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

static int discover_cb(pid_t pid, pid_t tid, void *userdata) {
        return discover(userdata, pid, tid);
}

static int rescan(ProcSampler *s) {
        int k;

        s->rescan_gen++;
        k = proc_for_each_thread(s->proc, ".", discover_cb, s);
        if (out_of_fds(k)) {
                warn_out_of_fds(s); /* still needed: tried again next round */
                return 0;
        }
        if (k < 0)
                return k;

        /*
         * Threads the scan did not see: gone, unless they appeared after their directory was read
         * (found through the connector meanwhile). A kept fd would say ESRCH next round anyway;
         * this settles it for threads read with open/read/close and for fixture trees.
         */
        for (size_t i = 0; i < s->n_slots; i++) {
                ProcThread *t = &s->slots[i];
                char path[64];

                if ((t->state != PROC_THREAD_NEW && t->state != PROC_THREAD_LIVE) || s->seen[i] == (uint8_t) s->rescan_gen)
                        continue;
                snprintf(path, sizeof path, "%d/task/%d", (int) t->pid, (int) t->tid);
                if (!rootdir_exists(s->proc, path))
                        mark_gone(s, t);
        }

        s->last_rescan_round = s->round;
        s->need_rescan = false;
        return 0;
}

/* Drains the proc connector. Returns 0, or -ENOBUFS when events were lost (rescan). */
static int netlink_drain(ProcSampler *s) {
        char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
        int r = 0;

        for (;;) {
                ssize_t n = recv(s->netlink_fd, buf, sizeof buf, 0);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return r;
                        if (errno == ENOBUFS) {
                                r = -ENOBUFS;
                                continue;
                        }
                        return negative_errno();
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *) buf; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
                        struct cn_msg *cn = NLMSG_DATA(h);
                        struct proc_event event = {}, *ev = &event;

                        if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
                                continue;
                        if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC || cn->len < sizeof(*ev) - sizeof(ev->event_data))
                                continue;
                        /* The event sits 4 bytes past an 8-byte boundary in the message: copy it out. */
                        memcpy(&event, cn->data, MIN((size_t) cn->len, sizeof event));
                        switch (ev->what) {
                        case PROC_EVENT_FORK: {
                                int k = discover(s, ev->event_data.fork.child_tgid, ev->event_data.fork.child_pid);
                                if (k < 0)
                                        return k;
                                break;
                        }
                        case PROC_EVENT_EXIT: {
                                ssize_t i = tidmap_get(&s->map, ev->event_data.exit.process_pid);
                                if (i >= 0)
                                        mark_gone(s, &s->slots[i]);
                                break;
                        }
                        case PROC_EVENT_EXEC:
                        case PROC_EVENT_COMM: {
                                /* comm changed: read stat again. */
                                ssize_t i = tidmap_get(&s->map, ev->event_data.exec.process_pid);
                                if (i >= 0) {
                                        ProcThread *t = &s->slots[i];
                                        uint64_t st;

                                        if (read_stat(s, t, t->comm, &t->nice, &st, &t->cpu) < 0)
                                                mark_gone(s, t);
                                }
                                break;
                        }
                        default:
                                break;
                        }
                }
        }
}

clockid_t proc_process_clockid(pid_t pid) {
        /* The kernel's encoding of a process CPU clock (what clock_getcpuclockid(3) returns for another process). */
        return (clockid_t) ((~(unsigned) pid) << 3) | 2 /* CPUCLOCK_SCHED */;
}

/*
 * A process's CPU time, read once a round for all its threads: the kernel sums every thread's
 * sum_exec_runtime (the run time schedstat shows) and that of its exited threads, so while it
 * stays the same, none of its threads has run. Any process's clock may be read. NULL: it could not
 * be read (gone) or no memory; its threads are then read.
 */
static const ProcessClock *process_clock(ProcSampler *s, pid_t pid) {
        ssize_t i = tidmap_get(&s->clock_map, pid);
        ProcessClock *c;
        struct timespec ts;

        if (i >= 0)
                return s->clocks[i].ok ? &s->clocks[i] : NULL;
        if (ARRAY_RESERVE(s->clocks, s->allocated_clocks, s->n_clocks + 1, 256) < 0)
                return NULL;
        if (tidmap_put(&s->clock_map, pid, (uint32_t) s->n_clocks) < 0)
                return NULL;
        c = &s->clocks[s->n_clocks++];
        c->at_ns = s->clock(s->clock_userdata);
        c->ok = clock_gettime(proc_process_clockid(pid), &ts) == 0;
        c->ns = c->ok ? (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec : 0;
        return c->ok ? c : NULL;
}

/*
 * Whether a thread known not to have run can stay unread. Outside its stat round, yes. In it, what
 * stat would tell about a thread that did not run is its nice (renice happens while it sleeps) and
 * its comm; with the proc connector delivering comm changes, getpriority() answers the rest for a
 * fraction of a stat read. Without the connector, stat is read as for any thread.
 */
static bool quiet_unchanged(ProcSampler *s, const ProcThread *t) {
        int prio;

        if (s->round % STAT_EVERY_ROUNDS != t->stat_slot)
                return true;
        if (!s->netlink_active)
                return false;
        errno = 0;
        prio = getpriority(PRIO_PROCESS, (id_t) t->tid);
        return !(prio == -1 && errno != 0) && prio == t->nice;
}

static void sample_thread(ProcSampler *s, ProcThread *t) {
        uint64_t run, wait, slices, starttime, sample_ns, quiet_ns = t->quiet_ns;
        const ProcessClock *pc = NULL;
        char comm[16];
        int nice, cpu, k;

        /* Quiet by its caller's word (its cgroup did not run), or by its process's CPU clock. */
        t->quiet_ns = 0;
        if (!quiet_ns && s->process_clocks) {
                pc = process_clock(s, t->pid);
                if (pc && t->have_proc_clock && pc->ns == t->proc_clock_ns)
                        quiet_ns = pc->at_ns;
        }
        t->unread = quiet_ns && quiet_unchanged(s, t);
        if (t->unread) {
                /* Known not to have run: its counters are as they were, as of quiet_ns. */
                t->moved = false;
                t->sample_ns = MAX(t->sample_ns, quiet_ns);
                s->n_quiet++;
                return;
        }
        if (!pc && s->process_clocks)
                pc = process_clock(s, t->pid);
        s->n_read++;
        k = read_schedstat(s, t, &run, &wait, &slices);
        sample_ns = s->clock(s->clock_userdata);
        if (k < 0) {
                /* ESRCH: exited (a kept fd never follows a reused TID); ENOENT: gone; garbled: skip it. */
                if (k == -EINVAL)
                        log_debug("Thread %d: schedstat does not parse, skipping this round.", (int) t->tid);
                else if (out_of_fds(k))
                        warn_out_of_fds(s);
                else
                        mark_gone(s, t);
                t->moved = false;
                return;
        }
        if (t->schedstat_fd < 0 && (run < t->run_ns || slices < t->slices)) {
                /* Read by path: counters going backwards mean the TID names a new thread. */
                mark_gone(s, t);
                return;
        }

        t->moved = run != t->run_ns || wait != t->wait_ns || slices != t->slices;
        t->sample_ns = sample_ns;
        /* Its process's clock as read before this read: while it stays, the thread has not run. */
        t->have_proc_clock = pc != NULL;
        t->proc_clock_ns = pc ? pc->ns : 0;
        t->run_ns = run;
        t->wait_ns = wait;
        t->slices = slices;

        if (!t->moved && s->round % STAT_EVERY_ROUNDS != t->stat_slot)
                return;
        k = read_stat(s, t, comm, &nice, &starttime, &cpu);
        if (k == -EINVAL) {
                log_debug("Thread %d: stat does not parse, keeping its last values.", (int) t->tid);
                return;
        }
        if (out_of_fds(k)) {
                warn_out_of_fds(s);
                return;
        }
        if (k < 0 || starttime != t->starttime) {
                mark_gone(s, t);
                return;
        }
        memcpy(t->comm, comm, sizeof comm);
        t->nice = nice;
        t->cpu = cpu;
}

/*
 * The rest of the process now needs more descriptors than thread files leave it (more groups):
 * kept files are given back, stat ones first, then schedstat ones (those threads are read by path).
 */
static void shed_fds(ProcSampler *s) {
        size_t allowance = fd_allowance(s);

        for (size_t i = s->n_slots; i-- > 0 && s->kept_fds > allowance;)
                if (s->slots[i].stat_fd >= 0) {
                        close(s->slots[i].stat_fd);
                        s->slots[i].stat_fd = -1;
                        s->kept_fds--;
                }
        for (size_t i = s->n_slots; i-- > 0 && s->kept_fds > allowance;)
                if (s->slots[i].schedstat_fd >= 0) {
                        close(s->slots[i].schedstat_fd);
                        s->slots[i].schedstat_fd = -1;
                        s->kept_fds--;
                        s->n_fallback++;
                }
}

void proc_sampler_reserve_fds(ProcSampler *s, size_t n) {
        s->reserved_fds = n;
}

void proc_sampler_forget_threads(ProcSampler *s) {
        for (size_t i = 0; i < s->n_slots; i++)
                mark_gone(s, &s->slots[i]);
        s->need_rescan = true; /* what is there when tracking resumes */
}

/* Last round's outcome is settled: NEW becomes LIVE, GONE slots are freed. */
static void settle(ProcSampler *s) {
        for (size_t i = 0; i < s->n_slots; i++) {
                ProcThread *t = &s->slots[i];

                if (t->state == PROC_THREAD_NEW)
                        t->state = PROC_THREAD_LIVE;
                else if (t->state == PROC_THREAD_GONE) {
                        t->state = PROC_THREAD_FREE;
                        s->free_slots[s->n_free++] = (uint32_t) i;
                }
        }
}

int proc_sampler_round(ProcSampler *s) {
        int k;

        settle(s);
        s->round++;
        s->n_read = s->n_quiet = 0;
        tidmap_clear(&s->clock_map);
        s->n_clocks = 0;
        if (!s->emfile_seen)
                s->warned_emfile = false; /* the last episode is over */
        s->emfile_seen = false;
        shed_fds(s);

        for (size_t i = 0; i < s->n_slots; i++)
                if (s->slots[i].state == PROC_THREAD_LIVE)
                        sample_thread(s, &s->slots[i]);

        if (s->netlink_active) {
                k = netlink_drain(s);
                if (k == -ENOBUFS) {
                        log_debug("Proc connector overflowed, rescanning /proc.");
                        s->need_rescan = true;
                } else if (k < 0) {
                        log_debug_errno(k, "Proc connector failed, rescanning /proc every round from now on: %m");
                        close(s->netlink_fd);
                        s->netlink_fd = -1;
                        s->netlink_active = false;
                }
        }

        if (s->need_rescan || !s->netlink_active || s->round - s->last_rescan_round >= s->rescan_rounds) {
                k = rescan(s);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* A thread the reader found that is not known yet: NEW, in a slot of its own. */
static int take_new(ProcSampler *s, const ProcThreadSample *v, uint64_t starttime) {
        uint32_t slot;
        int k;

        k = alloc_slot(s, &slot);
        if (k < 0)
                return k;
        k = tidmap_put(&s->map, v->tid, slot);
        if (k < 0) {
                s->slots[slot].state = PROC_THREAD_FREE;
                s->free_slots[s->n_free++] = slot;
                return k;
        }
        s->slots[slot] = (ProcThread){
                .pid = v->pid,
                .tid = v->tid,
                .state = PROC_THREAD_NEW,
                .schedstat_fd = -1,
                .stat_fd = -1,
                .run_ns = v->run_ns,
                .wait_ns = v->wait_ns,
                .slices = v->slices,
                .sample_ns = v->sample_ns,
                .starttime = starttime,
                .nice = v->nice,
                .cpu = v->cpu,
                .stat_slot = (uint8_t) ((uint32_t) v->tid % STAT_EVERY_ROUNDS),
                .start_ns = v->start_ns,
                .cgroup_id = v->cgroup_id,
        };
        memcpy(s->slots[slot].comm, v->comm, sizeof v->comm);
        s->slots[slot].comm[sizeof v->comm - 1] = 0;
        s->seen[slot] = (uint8_t) s->rescan_gen;
        s->n_threads++;
        return 0;
}

int proc_sampler_take_round(ProcSampler *s, const ProcThreadSample *v, size_t n) {
        long tck = sysconf(_SC_CLK_TCK);
        uint64_t ns_per_tick = tck > 0 ? 1000000000ULL / (uint64_t) tck : 10000000ULL;
        int r = 0;

        settle(s);
        s->round++;
        s->n_read = n;
        s->n_quiet = 0;
        /* seen[] marks this round's threads: one left unmarked has exited. */
        s->rescan_gen++;

        for (size_t k = 0; k < n; k++) {
                ssize_t i = tidmap_get(&s->map, v[k].tid);
                ProcThread *t;

                if (i >= 0) {
                        t = &s->slots[i];
                        if (t->pid == v[k].pid && t->start_ns == v[k].start_ns) {
                                t->moved = v[k].run_ns != t->run_ns || v[k].wait_ns != t->wait_ns || v[k].slices != t->slices;
                                t->run_ns = v[k].run_ns;
                                t->wait_ns = v[k].wait_ns;
                                t->slices = v[k].slices;
                                t->sample_ns = v[k].sample_ns;
                                t->nice = v[k].nice;
                                t->cpu = v[k].cpu;
                                t->cgroup_id = v[k].cgroup_id;
                                memcpy(t->comm, v[k].comm, sizeof t->comm);
                                t->comm[sizeof t->comm - 1] = 0;
                                t->quiet_ns = 0;
                                t->unread = false;
                                s->seen[i] = (uint8_t) s->rescan_gen;
                                continue;
                        }
                        /* The TID names another thread now: the old one exited. */
                        mark_gone(s, t);
                }
                if (r >= 0)
                        r = take_new(s, &v[k], v[k].start_ns / ns_per_tick);
        }

        for (size_t i = 0; i < s->n_slots; i++) {
                ProcThread *t = &s->slots[i];

                if ((t->state == PROC_THREAD_NEW || t->state == PROC_THREAD_LIVE) && s->seen[i] != (uint8_t) s->rescan_gen)
                        mark_gone(s, t);
        }
        /* Were /proc read again (this reader gone), it would start from a scan. */
        s->need_rescan = true;
        return r;
}

size_t proc_sampler_n_slots(const ProcSampler *s) {
        return s->n_slots;
}

ProcThread *proc_sampler_slot(ProcSampler *s, size_t i) {
        return i < s->n_slots ? &s->slots[i] : NULL;
}

ssize_t proc_sampler_find(const ProcSampler *s, pid_t tid) {
        return tidmap_get(&s->map, tid);
}

size_t proc_sampler_n_threads(const ProcSampler *s) {
        return s->n_threads;
}

bool proc_sampler_netlink_active(const ProcSampler *s) {
        return s->netlink_active;
}

size_t proc_sampler_n_kept_fds(const ProcSampler *s) {
        return s->kept_fds;
}

size_t proc_sampler_n_fallback(const ProcSampler *s) {
        return s->n_fallback;
}

bool proc_sampler_process_clocks(const ProcSampler *s) {
        return s->process_clocks;
}

size_t proc_sampler_n_read(const ProcSampler *s) {
        return s->n_read;
}

size_t proc_sampler_n_quiet(const ProcSampler *s) {
        return s->n_quiet;
}

int proc_sampler_cpu_times(ProcSampler *s, ProcCpuTimes *ret, size_t max) {
        ssize_t n;

        if (s->stat_fd < 0)
                return -ENOENT;
        /* Whole: its length grows with CPUs and IRQs (the "intr" line), and a cut line must not parse. */
        n = pread_full(s->stat_fd, &s->stat_buf);
        if (n < 0)
                return (int) n;
        return proc_parse_cpu_times(s->stat_buf.data, ret, max);
}
