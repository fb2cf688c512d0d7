/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <stdarg.h>

#include "build-config.h"
#include "peltd/alloc-util.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/sample-bpf.h"

#if HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "task-iter.skel.h"
#endif

/* What the kernel calls nice 0: static_prio = 120 + nice, nice in -20..19. */
#define NICE_0_PRIO 120
#define MIN_NICE (-20)
#define MAX_NICE 19

bool bpf_sampler_built(void) {
        return HAVE_BPF;
}

int bpf_record_to_sample(const struct peltd_task_record *rec, ProcThreadSample *ret) {
        int nice = rec->static_prio - NICE_0_PRIO;

        if (rec->pid <= 0 || rec->tid <= 0 || nice < MIN_NICE || nice > MAX_NICE || rec->cpu < -1)
                return -EINVAL;
        *ret = (ProcThreadSample){
                .pid = rec->pid,
                .tid = rec->tid,
                .start_ns = rec->start_ns,
                .run_ns = rec->run_ns,
                .wait_ns = rec->wait_ns,
                .slices = rec->slices,
                .sample_ns = rec->time_ns,
                .nice = nice,
                .cpu = rec->cpu,
                .cgroup_id = rec->cgroup_id,
        };
        /* The kernel keeps comm NUL-terminated; the copy is made so whatever the record holds. */
        memcpy(ret->comm, rec->comm, MIN(sizeof ret->comm, sizeof rec->comm) - 1);
        ret->comm[sizeof ret->comm - 1] = 0;
        return 0;
}

static int fail(char **ret_reason, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_reason, int r, const char *fmt, ...) {
        va_list ap;

        if (ret_reason) {
                errno = -r; /* for %m */
                va_start(ap, fmt);
                if (vasprintf(ret_reason, fmt, ap) < 0)
                        *ret_reason = NULL;
                va_end(ap);
        }
        return r;
}

#if !HAVE_BPF

int bpf_sampler_new(_unused_ const RootDir *sysroot, _unused_ CgroupMode mode, BpfSampler **ret, char **ret_reason) {
        *ret = NULL;
        return fail(ret_reason, -EOPNOTSUPP, "this peltd is built without it (meson -Dbpf=disabled)");
}

BpfSampler *bpf_sampler_free(_unused_ BpfSampler *b) {
        return NULL;
}

int bpf_sampler_read(_unused_ BpfSampler *b, const ProcThreadSample **ret, size_t *ret_n) {
        *ret = NULL;
        *ret_n = 0;
        return -EOPNOTSUPP;
}

int bpf_sampler_find_hidden(_unused_ BpfSampler *b, _unused_ const RootDir *sysroot, BpfHidden *ret) {
        *ret = (BpfHidden){};
        return -EOPNOTSUPP;
}

#else

/* The iterator hands out at most a seq_file buffer (8 pages) per read: ask for more, it is free. */
#define READ_CHUNK (64 * 1024)

struct BpfSampler {
        struct task_iter *skel;
        struct bpf_link *link;
        char *buf;                   /* the records of the last read */
        size_t allocated;
        ProcThreadSample *samples;
        size_t allocated_samples;
        size_t n_garbled;            /* records that were no thread's, last read */
};

/*
 * libbpf's messages go to the debug log. What a failed load said is kept for the reason a caller
 * is given: the last line of the verifier's log (what it did not like), else libbpf's first warning.
 */
static char first_warning[256], verifier_says[256];

static void keep_line(char *dst, size_t size, const char *line, size_t len) {
        const char *p = startswith(line, "libbpf: ");

        if (p) {
                len -= (size_t) (p - line);
                line = p;
        }
        len = MIN(len, size - 1);
        memcpy(dst, line, len);
        dst[len] = 0;
}

static void note_warning(const char *msg) {
        bool load_log = strstr(msg, "BEGIN PROG LOAD LOG");

        for (const char *line = msg; *line;) {
                const char *eol = strchrnul(line, '\n');
                size_t len = (size_t) (eol - line);

                if (len == 0 || strstr(line, "PROG LOAD LOG --") || startswith(line, "processed ") ||
                    startswith(line, "verification time") || startswith(line, "stack depth"))
                        ;
                else if (load_log)
                        keep_line(verifier_says, sizeof verifier_says, line, len);
                else if (!first_warning[0])
                        keep_line(first_warning, sizeof first_warning, line, len);
                line = *eol ? eol + 1 : eol;
        }
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) _printf_(2, 0);
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        char msg[4096];
        int n = vsnprintf(msg, sizeof msg, fmt, ap);

        if (n <= 0)
                return n;
        if (level == LIBBPF_WARN)
                note_warning(msg);
        log_debug("%s", strstrip_trailing(msg));
        return n;
}

/* libbpf's own error codes (4000 and up) are no errno: as errno, what they mean is "invalid". */
static int errno_of(int r) {
        return r <= -__LIBBPF_ERRNO__START ? -EINVAL : r;
}

BpfSampler *bpf_sampler_free(BpfSampler *b) {
        if (!b)
                return NULL;
        bpf_link__destroy(b->link);
        task_iter__destroy(b->skel);
        free(b->buf);
        free(b->samples);
        free(b);
        return NULL;
}

/* Reads the iterator to EOF into b->buf; returns the length or a negative errno. */
static ssize_t read_records(BpfSampler *b) {
        _cleanup_close_ int fd = bpf_iter_create(bpf_link__fd(b->link));
        size_t len = 0;

        if (fd < 0)
                return fd;
        for (;;) {
                ssize_t n;

                if (ARRAY_RESERVE(b->buf, b->allocated, len + READ_CHUNK, 4 * READ_CHUNK) < 0)
                        return -ENOMEM;
                n = read(fd, b->buf + len, b->allocated - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return (ssize_t) len;
                len += (size_t) n;
        }
}

int bpf_sampler_read(BpfSampler *b, const ProcThreadSample **ret, size_t *ret_n) {
        const size_t size = sizeof(struct peltd_task_record);
        ssize_t len = read_records(b);
        size_t n, k = 0;

        if (len < 0)
                return (int) len;
        /* Every record is written whole (or not at all): a length that is no multiple is not this program's. */
        if ((size_t) len % size != 0)
                return -EBADMSG;
        n = (size_t) len / size;
        if (ARRAY_RESERVE(b->samples, b->allocated_samples, n, 0) < 0)
                return -ENOMEM;
        b->n_garbled = 0;
        for (size_t i = 0; i < n; i++) {
                struct peltd_task_record rec;

                /* The buffer is only char-aligned: copied out. */
                memcpy(&rec, b->buf + i * size, size);
                if (bpf_record_to_sample(&rec, &b->samples[k]) < 0) {
                        b->n_garbled++;
                        continue;
                }
                k++;
        }
        if (b->n_garbled > 0)
                log_debug("BPF task iterator: %zu records were no thread's, skipped.", b->n_garbled);
        *ret = b->samples;
        *ret_n = k;
        return 0;
}

/* A thread as /proc lists it: by TID, with its process. */
typedef struct TidPid {
        pid_t tid;
        pid_t pid;
} TidPid;

static int cmp_tid(const void *a, const void *b) {
        const TidPid *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

static bool has_tid(const TidPid *v, size_t n, pid_t tid) {
        return bsearch(&(TidPid){ .tid = tid }, v, n, sizeof *v, cmp_tid);
}

typedef struct TidList {
        TidPid *v;
        size_t n, allocated;
} TidList;

static int add_thread(pid_t pid, pid_t tid, void *userdata) {
        TidList *l = userdata;

        if (ARRAY_RESERVE(l->v, l->allocated, l->n + 1, 256) < 0)
                return -ENOMEM;
        l->v[l->n++] = (TidPid){ .tid = tid, .pid = pid };
        return 0;
}

/* Every thread under sysroot's proc/, sorted by TID. */
static int list_proc_threads(const RootDir *sysroot, TidPid **ret, size_t *ret_n) {
        TidList l = {};
        int k;

        k = proc_for_each_thread(sysroot, "proc", add_thread, &l);
        if (k < 0) {
                free(l.v);
                return k;
        }
        if (l.n > 0)
                qsort(l.v, l.n, sizeof *l.v, cmp_tid);
        *ret = l.v;
        *ret_n = l.n;
        return 0;
}

int bpf_sampler_find_hidden(BpfSampler *b, const RootDir *sysroot, BpfHidden *ret) {
        _cleanup_free_ TidPid *before = NULL, *after = NULL, *read = NULL;
        size_t n_before, n_after, n_read;
        const ProcThreadSample *v;
        BpfHidden h = {};
        int k;

        *ret = h;
        k = list_proc_threads(sysroot, &before, &n_before);
        if (k < 0)
                return k;
        k = bpf_sampler_read(b, &v, &n_read);
        if (k < 0)
                return k;
        read = new0(TidPid, MAX(n_read, (size_t) 1));
        if (!read)
                return -ENOMEM;
        for (size_t i = 0; i < n_read; i++)
                read[i] = (TidPid){ .tid = v[i].tid, .pid = v[i].pid };
        qsort(read, n_read, sizeof *read, cmp_tid);
        k = list_proc_threads(sysroot, &after, &n_after);
        if (k < 0)
                return k;

        /* The hidden threads' processes, in hidden[0..h.n_threads) (reusing before[]: i >= j). */
        for (size_t i = 0; i < n_before; i++) {
                if (!has_tid(after, n_after, before[i].tid))
                        continue;
                h.n_listed++;
                if (!has_tid(read, n_read, before[i].tid))
                        before[h.n_threads++].tid = before[i].pid;
        }
        /* Sorted by PID (now in .tid), each process once. */
        qsort(before, h.n_threads, sizeof *before, cmp_tid);
        for (size_t i = 0; i < h.n_threads; i++) {
                if (i > 0 && before[i].tid == before[i - 1].tid)
                        continue;
                if (h.n_processes < BPF_HIDDEN_EXAMPLES)
                        h.pid[h.n_processes] = before[i].tid;
                h.n_processes++;
        }
        *ret = h;
        return 0;
}

/* Why a load failed, as a phrase. */
static int load_failed(char **ret_reason, int r) {
        char what[128];

        if (r == -EPERM)
                return fail(ret_reason, r, "not permitted to load BPF programs (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, are needed)");
        if (verifier_says[0])
                return fail(ret_reason, errno_of(r), "the verifier refused the program: %s", verifier_says);
        (void) libbpf_strerror(r, what, sizeof what);
        if (first_warning[0])
                return fail(ret_reason, errno_of(r), "the program did not load: %s (%s)", first_warning, what);
        return fail(ret_reason, errno_of(r), "the program did not load: %s", what);
}

int bpf_sampler_new(const RootDir *sysroot, CgroupMode mode, BpfSampler **ret, char **ret_reason) {
        _cleanup_(bpf_sampler_freep) BpfSampler *b = NULL;
        _cleanup_close_ int btf_fd = -1;
        _cleanup_free_ char *btf_path = NULL;
        const ProcThreadSample *v;
        size_t n;
        int r;

        *ret = NULL;
        if (ret_reason)
                *ret_reason = NULL;

        /*
         * CO-RE: the program's fields are found in the running kernel's BTF, the one under the root
         * (tests point it at a tree without one). libbpf reads it by name: named as under the root.
         */
        btf_fd = sysroot ? rootdir_open_file(sysroot, "sys/kernel/btf/vmlinux", O_RDONLY) : -ENOENT;
        if (btf_fd < 0)
                return fail(ret_reason, btf_fd, "the kernel's BTF is not there (%s/sys/kernel/btf/vmlinux: %m)",
                            sysroot && !streq(sysroot->path, "/") ? sysroot->path : "");
        if (asprintf(&btf_path, "%s/sys/kernel/btf/vmlinux", streq(sysroot->path, "/") ? "" : sysroot->path) < 0)
                return fail(ret_reason, -ENOMEM, "out of memory");

        b = new0(BpfSampler, 1);
        if (!b)
                return fail(ret_reason, -ENOMEM, "out of memory");

        (void) libbpf_set_print(libbpf_print);
        first_warning[0] = verifier_says[0] = 0;
        /*
         * Under "/" that is where libbpf looks anyway: it then parses the kernel's BTF once, for the
         * relocations and the iterator's attach point both (a custom path is parsed a second time,
         * and the BTF is several MiB).
         */
        b->skel = task_iter__open_opts(&(struct bpf_object_open_opts){ .sz = sizeof(struct bpf_object_open_opts),
                                                                        .btf_custom_path = streq(sysroot->path, "/") ? NULL : btf_path });
        if (!b->skel)
                return fail(ret_reason, negative_errno(), "the BPF program could not be opened: %m");
        b->skel->rodata->cgroup_v1 = mode == CGROUP_MODE_V1;

        r = task_iter__load(b->skel);
        if (r < 0)
                return load_failed(ret_reason, r);

        b->link = bpf_program__attach_iter(b->skel->progs.peltd_task, NULL);
        if (!b->link)
                return fail(ret_reason, negative_errno(), "the task iterator could not be attached: %m");

        /* The first read, here: an iterator that loads but cannot be read is not one to sample with. */
        r = bpf_sampler_read(b, &v, &n);
        if (r < 0)
                return fail(ret_reason, r, "the task iterator could not be read: %m");
        if (n == 0)
                return fail(ret_reason, -ENODATA, "the task iterator gave no thread");
        log_debug("BPF task iterator loaded: %zu threads.", n);

        *ret = TAKE_PTR(b);
        return 0;
}

#endif
