/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF sampler without the kernel: a record as the program writes it into a sample
 * (bpf_record_to_sample(), on struct literals); the /proc sampler's slots fed with such samples
 * round after round (threads found, exited, TIDs reused); and the choice of backend on a root
 * without the kernel's BTF, or with a file there that is none: auto samples from /proc and says
 * why, bpf fails with the reason.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "proc-fixture.h"
#include "peltd/log.h"
#include "peltd/sample-bpf.h"
#include "peltd/sampling.h"

/* ---- records into samples ---------------------------------------------------------------------- */

static const struct peltd_task_record worker_record = {
        .run_ns = 241538145,
        .wait_ns = 45934692,
        .slices = 416,
        .start_ns = 749342247083,
        .cgroup_id = 2772,
        .time_ns = 5000000000,
        .pid = 20388,
        .tid = 20390,
        .cpu = 1,
        .static_prio = 125,
        .comm = "duty-cycle",
};

static void test_record_to_sample(_unused_ void **state) {
        ProcThreadSample v;
        struct peltd_task_record r = worker_record;

        assert_int_equal(bpf_record_to_sample(&r, &v), 0);
        assert_int_equal(v.pid, 20388);
        assert_int_equal(v.tid, 20390);
        assert_int_equal(v.run_ns, 241538145);
        assert_int_equal(v.wait_ns, 45934692);
        assert_int_equal(v.slices, 416);
        assert_int_equal(v.start_ns, 749342247083);
        assert_int_equal(v.sample_ns, 5000000000);
        assert_int_equal(v.cgroup_id, 2772);
        assert_int_equal(v.cpu, 1);
        assert_int_equal(v.nice, 5);
        assert_string_equal(v.comm, "duty-cycle");

        /* nice is static_prio - 120, -20..19; anything else is no thread's. */
        r.static_prio = 100;
        assert_int_equal(bpf_record_to_sample(&r, &v), 0);
        assert_int_equal(v.nice, -20);
        r.static_prio = 139;
        assert_int_equal(bpf_record_to_sample(&r, &v), 0);
        assert_int_equal(v.nice, 19);
        r.static_prio = 99;
        assert_int_equal(bpf_record_to_sample(&r, &v), -EINVAL);
        r.static_prio = 140;
        assert_int_equal(bpf_record_to_sample(&r, &v), -EINVAL);

        /* A CPU the program could not tell is -1, as /proc never says; below that is garbage. */
        r = worker_record;
        r.cpu = -1;
        assert_int_equal(bpf_record_to_sample(&r, &v), 0);
        assert_int_equal(v.cpu, -1);
        r.cpu = -2;
        assert_int_equal(bpf_record_to_sample(&r, &v), -EINVAL);

        /* Ids: a thread of no process of peltd's namespace is not written; 0 or less is garbage. */
        r = worker_record;
        r.pid = 0;
        assert_int_equal(bpf_record_to_sample(&r, &v), -EINVAL);
        r = worker_record;
        r.tid = -5;
        assert_int_equal(bpf_record_to_sample(&r, &v), -EINVAL);

        /* comm: 15 bytes and a NUL, whatever the record holds (here 16 bytes, none of them NUL). */
        r = worker_record;
        memcpy(r.comm, "0123456789abcdef", 16);
        assert_int_equal(bpf_record_to_sample(&r, &v), 0);
        assert_string_equal(v.comm, "0123456789abcde");
        /* Bytes that are not UTF-8 are kept as they are (the output escapes them). */
        memcpy(r.comm, "a\xff\xfe" "b\0\0\0\0\0\0\0\0\0\0\0\0", 16);
        assert_int_equal(bpf_record_to_sample(&r, &v), 0);
        assert_memory_equal(v.comm, "a\xff\xfe" "b", 5);
}

/* ---- rounds of samples through the /proc sampler's slots ------------------------------------ */

static void fx_open(Fx *f) {
        char tmpl[] = "/tmp/peltd-fixture-XXXXXX";

        f->dir = strdup(test_mkdtemp(tmpl));
        assert_non_null(f->dir);
        assert_int_equal(rootdir_open(f->dir, &f->root), 0);
        assert_int_equal(proc_sampler_new(f->root, &(ProcSamplerOptions){ .process_clocks = true }, &f->s), 0);
}

static ProcThreadSample sample(pid_t pid, pid_t tid, uint64_t start, uint64_t run, uint64_t cgroup) {
        ProcThreadSample v = {
                .pid = pid,
                .tid = tid,
                .start_ns = start,
                .run_ns = run,
                .wait_ns = run / 10,
                .slices = run / 1000,
                .sample_ns = 1000 + run,
                .nice = -3,
                .cpu = 1,
                .cgroup_id = cgroup,
        };

        snprintf(v.comm, sizeof v.comm, "t%d", (int) tid);
        return v;
}

static void test_take_round(_unused_ void **state) {
        Fx f = {};
        ProcThread *t;
        ssize_t slot_b;

        fx_open(&f);

        /* The first round: every thread NEW, its numbers its baseline; no file opened. */
        {
                ProcThreadSample v[] = { sample(100, 100, 10000000000, 5000, 7), sample(100, 101, 10020000000, 6000, 7),
                                         sample(200, 200, 3000000000, 9000, 9) };

                assert_int_equal(proc_sampler_take_round(f.s, v, ELEMENTSOF(v)), 0);
        }
        assert_int_equal(proc_sampler_n_threads(f.s), 3);
        assert_int_equal(proc_sampler_n_kept_fds(f.s), 0);
        t = thread(&f, 101);
        assert_non_null(t);
        assert_int_equal(t->state, PROC_THREAD_NEW);
        assert_int_equal(t->pid, 100);
        assert_int_equal(t->run_ns, 6000);
        assert_int_equal(t->wait_ns, 600);
        assert_int_equal(t->slices, 6);
        assert_int_equal(t->sample_ns, 7000);
        assert_int_equal(t->nice, -3);
        assert_int_equal(t->cpu, 1);
        assert_int_equal(t->cgroup_id, 7);
        assert_int_equal(t->start_ns, 10020000000);
        /* As /proc's stat gives it: clock ticks since boot. */
        assert_int_equal(t->starttime, 10020000000 / (1000000000 / sysconf(_SC_CLK_TCK)));
        assert_string_equal(t->comm, "t101");
        assert_int_equal(t->schedstat_fd, -1);
        assert_int_equal(t->stat_fd, -1);
        slot_b = proc_sampler_find(f.s, 101);

        /* 100 ran, 101 did not, 200 exited: LIVE and moved, LIVE and not, GONE. */
        {
                ProcThreadSample v[] = { sample(100, 100, 10000000000, 8000, 7), sample(100, 101, 10020000000, 6000, 8) };

                assert_int_equal(proc_sampler_take_round(f.s, v, ELEMENTSOF(v)), 0);
        }
        t = thread(&f, 100);
        assert_int_equal(t->state, PROC_THREAD_LIVE);
        assert_true(t->moved);
        assert_int_equal(t->run_ns, 8000);
        t = thread(&f, 101);
        assert_int_equal(t->state, PROC_THREAD_LIVE);
        assert_false(t->moved);
        assert_int_equal(t->cgroup_id, 8); /* it moved to another cgroup */
        assert_null(thread(&f, 200));
        assert_int_equal(proc_sampler_n_threads(f.s), 2);
        {
                size_t gone = 0;

                for (size_t i = 0; i < proc_sampler_n_slots(f.s); i++)
                        gone += proc_sampler_slot(f.s, i)->state == PROC_THREAD_GONE && proc_sampler_slot(f.s, i)->tid == 200;
                assert_int_equal(gone, 1);
        }

        /*
         * 101's TID now names a thread that started later (it exited and its TID was reused
         * between two rounds): the old one is GONE, the new one NEW in another slot, with its own
         * baseline. 200's TID, freed last round, names a thread of another process: NEW.
         */
        {
                ProcThreadSample v[] = { sample(100, 100, 10000000000, 9000, 7), sample(100, 101, 15000000000, 100, 7),
                                         sample(300, 200, 16000000000, 50, 9) };

                assert_int_equal(proc_sampler_take_round(f.s, v, ELEMENTSOF(v)), 0);
        }
        assert_int_equal(proc_sampler_slot(f.s, (size_t) slot_b)->state, PROC_THREAD_GONE);
        t = thread(&f, 101);
        assert_non_null(t);
        assert_true(proc_sampler_find(f.s, 101) != slot_b);
        assert_int_equal(t->state, PROC_THREAD_NEW);
        assert_int_equal(t->run_ns, 100);
        assert_int_equal(t->start_ns, 15000000000);
        t = thread(&f, 200);
        assert_non_null(t);
        assert_int_equal(t->state, PROC_THREAD_NEW);
        assert_int_equal(t->pid, 300);
        assert_int_equal(proc_sampler_n_threads(f.s), 3);

        /* A TID reused by another process with the same start time (a fork in the same ns): new too. */
        {
                ProcThreadSample v[] = { sample(100, 100, 10000000000, 9000, 7), sample(400, 101, 15000000000, 100, 7),
                                         sample(300, 200, 16000000000, 60, 9) };

                assert_int_equal(proc_sampler_take_round(f.s, v, ELEMENTSOF(v)), 0);
        }
        t = thread(&f, 101);
        assert_int_equal(t->state, PROC_THREAD_NEW);
        assert_int_equal(t->pid, 400);
        assert_int_equal(thread(&f, 200)->state, PROC_THREAD_LIVE);

        /* Nothing at all: every thread exited. */
        assert_int_equal(proc_sampler_take_round(f.s, NULL, 0), 0);
        assert_int_equal(proc_sampler_n_threads(f.s), 0);
        for (size_t i = 0; i < proc_sampler_n_slots(f.s); i++)
                assert_true(proc_sampler_slot(f.s, i)->state == PROC_THREAD_GONE || proc_sampler_slot(f.s, i)->state == PROC_THREAD_FREE);
        fx_close(&f);
}

/* ---- the choice of backend ---------------------------------------------------------------------- */

/* Runs open_backend with stderr into a file; returns what it wrote there (free it). */
static char *captured_open(const RootDir *root, SamplingBackend want, int *ret_r, BpfSampler **ret_bpf) {
        char path[] = "/tmp/peltd-test-stderr-XXXXXX";
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        char *text = calloc(1, 4096);
        ssize_t n;

        assert_true(fd >= 0 && saved >= 0 && text);
        test_cleanup_path(path);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        *ret_r = sampling_open_backend(root, CGROUP_MODE_V1, want, "SamplingBackend=", ret_bpf);
        fflush(stderr);
        assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        close(saved);
        n = pread(fd, text, 4095, 0);
        assert_true(n >= 0);
        close(fd);
        unlink(path);
        return text;
}

static void assert_contains(const char *text, const char *needle) {
        if (!strstr(text, needle))
                fail_msg("\"%s\" not in \"%s\"", needle, text);
}

static void test_backend_without_btf(_unused_ void **state) {
        char tmpl[] = "/tmp/peltd-fixture-XXXXXX";
        char *dir = test_mkdtemp(tmpl), expect[256];
        _cleanup_rootdir_ RootDir *root = NULL;
        BpfSampler *bpf = NULL;
        _cleanup_free_ char *reason = NULL, *out = NULL;
        int r;

        /* A root with a /sys/kernel but no BTF in it. */
        assert_non_null(dir);
        fx_write(dir, "sys/kernel/mm/README", "not BTF\n");
        assert_int_equal(rootdir_open(dir, &root), 0);

        r = bpf_sampler_new(root, CGROUP_MODE_V1, &bpf, &reason);
        assert_null(bpf);
        assert_non_null(reason);
        if (bpf_sampler_built()) {
                assert_int_equal(r, -ENOENT);
                snprintf(expect, sizeof expect, "the kernel's BTF is not there (%s/sys/kernel/btf/vmlinux: No such file or directory)", dir);
        } else {
                assert_int_equal(r, -EOPNOTSUPP);
                snprintf(expect, sizeof expect, "this peltd is built without it");
        }
        assert_contains(reason, expect);

        /* auto: /proc, and the one line says why. */
        out = captured_open(root, SAMPLING_BACKEND_AUTO, &r, &bpf);
        assert_int_equal(r, 0);
        assert_null(bpf);
        assert_contains(out, "Sampling threads from /proc; the BPF task iterator does not load: ");
        assert_contains(out, expect);
        free(out);

        /* bpf: an error, with the reason. */
        out = captured_open(root, SAMPLING_BACKEND_BPF, &r, &bpf);
        assert_true(r < 0);
        assert_null(bpf);
        assert_contains(out, "SamplingBackend=bpf, but the BPF task iterator does not load: ");
        assert_contains(out, expect);
        free(out);

        /* proc: nothing loaded, and it says so. */
        out = captured_open(root, SAMPLING_BACKEND_PROC, &r, &bpf);
        assert_int_equal(r, 0);
        assert_null(bpf);
        assert_contains(out, "Sampling threads from /proc (SamplingBackend=proc).");

        /* No root at all: as without BTF. */
        assert_true(bpf_sampler_new(NULL, CGROUP_MODE_V2, &bpf, NULL) < 0);
        assert_null(bpf);
        fx_sh("rm -rf '%s'", dir);
}

/*
 * A file at sys/kernel/btf/vmlinux under the root that is no BTF: it is the one read (through
 * the root layer), not the machine's, and the program does not load.
 */
static void test_backend_garbled_btf(_unused_ void **state) {
        char tmpl[] = "/tmp/peltd-fixture-XXXXXX";
        char *dir = test_mkdtemp(tmpl);
        _cleanup_rootdir_ RootDir *root = NULL;
        BpfSampler *bpf = NULL;
        _cleanup_free_ char *reason = NULL, *out = NULL;
        int r;

        if (!bpf_sampler_built())
                skip();
        assert_non_null(dir);
        fx_write(dir, "sys/kernel/btf/vmlinux", "this is not BTF\n");
        assert_int_equal(rootdir_open(dir, &root), 0);

        r = bpf_sampler_new(root, CGROUP_MODE_V2, &bpf, &reason);
        assert_true(r < 0);
        assert_null(bpf);
        assert_non_null(reason);
        /* libbpf read the file under the root, and said what it thought of it. */
        assert_true(startswith(reason, "the program did not load: "));
        assert_contains(reason, dir);

        out = captured_open(root, SAMPLING_BACKEND_AUTO, &r, &bpf);
        assert_int_equal(r, 0);
        assert_null(bpf);
        assert_contains(out, "Sampling threads from /proc; the BPF task iterator does not load: ");
        fx_sh("rm -rf '%s'", dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_record_to_sample),
                cmocka_unit_test(test_take_round),
                cmocka_unit_test(test_backend_without_btf),
                cmocka_unit_test(test_backend_garbled_btf),
        };

        log_set_max_level(LOG_INFO);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
