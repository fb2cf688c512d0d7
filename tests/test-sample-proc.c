/* SPDX-License-Identifier: GPL-2.0-only */
/* sample-proc.c: the parsers, and the sampler on a fixture /proc with its races. */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <stddef.h>
#include <cmocka.h>

#include "proc-fixture.h"
#include "peltd/log.h"
#include "peltd/macro.h"
#include "peltd/sample-proc.h"

/* ---- parsers ------------------------------------------------------------------------------------ */

static void test_parse_schedstat(_unused_ void **state) {
        uint64_t r, w, s;

        assert_int_equal(proc_parse_schedstat("241538145 45934692 416\n", &r, &w, &s), 0);
        assert_int_equal(r, 241538145);
        assert_int_equal(w, 45934692);
        assert_int_equal(s, 416);
        assert_int_equal(proc_parse_schedstat("1 2 3", &r, &w, &s), 0);
        assert_int_equal(proc_parse_schedstat("1 2\n", &r, &w, &s), -EINVAL);
        assert_int_equal(proc_parse_schedstat("1 2 3 4\n", &r, &w, &s), -EINVAL);
        assert_int_equal(proc_parse_schedstat("-1 2 3\n", &r, &w, &s), -EINVAL);
        assert_int_equal(proc_parse_schedstat("", &r, &w, &s), -EINVAL);
        assert_int_equal(proc_parse_schedstat("18446744073709551616 0 0\n", &r, &w, &s), -EINVAL);
        assert_int_equal(proc_parse_schedstat("18446744073709551615 0 0\n", &r, &w, &s), 0);
}

static void test_parse_stat(_unused_ void **state) {
        const char *kernel = "1 (process_api) S 0 0 0 0 -1 4194560 467 377187 0 248 0 23 1341 1122 10 -10 17 0 31 47833088 2728 "
                             "18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        char comm[16];
        int nice, cpu;
        uint64_t start;

        assert_int_equal(proc_parse_stat(kernel, comm, &nice, &start, &cpu), 0);
        assert_string_equal(comm, "process_api");
        assert_int_equal(nice, -10);
        assert_int_equal(start, 31);
        assert_int_equal(cpu, 1);

        /* comm may hold spaces and parentheses: it ends at the last ')'. */
        assert_int_equal(proc_parse_stat("7 (a) (b c) R 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 3 0\n",
                                         comm, &nice, &start, &cpu),
                         0);
        assert_string_equal(comm, "a) (b c");
        assert_int_equal(cpu, 3);
        assert_int_equal(start, 5);

        /* Truncated, garbled. */
        assert_int_equal(proc_parse_stat("400 (trunc) S 1 400 400\n", comm, &nice, &start, &cpu), -EINVAL);
        assert_int_equal(proc_parse_stat("400 trunc S 1\n", comm, &nice, &start, &cpu), -EINVAL);
        assert_int_equal(proc_parse_stat("", comm, &nice, &start, &cpu), -EINVAL);
        assert_int_equal(proc_parse_stat("7 (x) R 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 nice 1 0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 3 0\n",
                                         comm, &nice, &start, &cpu),
                         -EINVAL);
}

static void test_parse_cpu_times(_unused_ void **state) {
        ProcCpuTimes t[4];

        assert_int_equal(proc_parse_cpu_times("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 0 0 1 0 0 0 2 0 0\ncpu2 1 1 1 1 1 1 1 1\nintr 5\n", t, 4), 4);
        assert_int_equal(t[0].total, 36);
        assert_int_equal(t[0].steal, 8);
        assert_int_equal(t[1].total, 4);
        assert_int_equal(t[1].steal, 2);
        assert_int_equal(t[2].total, 0); /* cpu1 offline: not listed */
        assert_int_equal(t[3].steal, 1);
        /* Old kernels print four columns; no steal then. */
        assert_int_equal(proc_parse_cpu_times("cpu 1 2 3 4\n", t, 4), 1);
        assert_int_equal(t[0].steal, 0);
        assert_int_equal(proc_parse_cpu_times("cpu x\n", t, 4), -EINVAL);
        assert_int_equal(proc_parse_cpu_times("intr 5\n", t, 4), -EINVAL);
        /* A CPU number whose + 1 wraps to 0 must not fill the "cpu" entry (seed of fuzz-proc-stat too). */
        assert_int_equal(proc_parse_cpu_times("cpu  1 1 1 1\ncpu18446744073709551615 9 9 9 9\n", t, 4), 1);
        assert_int_equal(t[0].total, 4);
}

/* ---- the sampler on a fixture tree ------------------------------------------------------------ */

static void fx_open(Fx *f, size_t max_fds) {
        f->dir = fx_copy("proc");
        assert_int_equal(rootdir_open(f->dir, &f->root), 0);
        /* No connector on a fixture: rescans every round. */
        assert_int_equal(proc_sampler_new(f->root, &(ProcSamplerOptions){ .max_fds = max_fds, .process_clocks = true }, &f->s), 0);
        assert_false(proc_sampler_netlink_active(f->s));
        /* A fixture /proc is not this process's: no process clocks, whatever was asked. */
        assert_false(proc_sampler_process_clocks(f->s));
}

static void test_discovery(_unused_ void **state) {
        Fx f = {};
        ProcThread *t;
        ProcCpuTimes ct[3];

        fx_open(&f, 0);
        assert_int_equal(proc_sampler_round(f.s), 0);
        /*
         * 100, 101, 200 are there; 102 vanished between readdir and open (no files), 300's schedstat
         * and 400's stat do not parse: not taken in (a later scan tries again).
         */
        assert_int_equal(proc_sampler_n_threads(f.s), 3);
        assert_null(thread(&f, 102));
        assert_null(thread(&f, 300));
        assert_null(thread(&f, 400));

        t = thread(&f, 101);
        assert_non_null(t);
        assert_int_equal(t->state, PROC_THREAD_NEW);
        assert_int_equal(t->pid, 100);
        assert_string_equal(t->comm, "web) (worker");
        assert_int_equal(t->nice, -5);
        assert_int_equal(t->cpu, 1);
        assert_int_equal(t->run_ns, 5000000);
        assert_int_equal(t->wait_ns, 100000);
        assert_int_equal(t->slices, 50);
        assert_true(t->schedstat_fd >= 0 && t->stat_fd >= 0);
        assert_int_equal(proc_sampler_n_kept_fds(f.s), 6);

        /* Tracked from the next round: then LIVE, with the counters of that round. */
        fx_write(f.dir, "100/task/101/schedstat", "6000000 100000 51\n");
        assert_int_equal(proc_sampler_round(f.s), 0);
        t = thread(&f, 101);
        assert_int_equal(t->state, PROC_THREAD_LIVE);
        assert_true(t->moved);
        assert_int_equal(t->run_ns, 6000000);
        assert_false(thread(&f, 100)->moved);

        assert_int_equal(proc_sampler_cpu_times(f.s, ct, 3), 3);
        assert_int_equal(ct[0].steal, 500);
        assert_int_equal(ct[1].steal, 400);
        assert_int_equal(ct[2].steal, 100);
        fx_close(&f);
}

/* /proc/stat of a 4,096-CPU machine with long counters and many IRQs: megabytes, read whole. */
static void test_big_proc_stat(_unused_ void **state) {
        enum { CPUS = 4096 };
        Fx f = {};
        ProcCpuTimes *ct = calloc(CPUS + 1, sizeof *ct);
        size_t size = (size_t) (CPUS + 1) * 256 + 40 * 4096 + 64, n = 0;
        char *text = malloc(size);
        uint64_t big = UINT64_C(100000000000000000); /* 18 digits, ten of them still fit a u64 */

        assert_non_null(ct);
        assert_non_null(text);
        fx_open(&f, 0);
        n += (size_t) snprintf(text + n, size - n, "cpu  1 0 0 1 0 0 0 1 0 0\n");
        for (unsigned cpu = 0; cpu < CPUS; cpu++) {
                n += (size_t) snprintf(text + n, size - n, "cpu%u", cpu);
                for (unsigned k = 0; k < 10; k++)
                        n += (size_t) snprintf(text + n, size - n, " %" PRIu64, big + cpu * 10 + k);
                n += (size_t) snprintf(text + n, size - n, "\n");
        }
        n += (size_t) snprintf(text + n, size - n, "intr 1");
        for (unsigned irq = 0; irq < 4096; irq++)
                n += (size_t) snprintf(text + n, size - n, " %u", 1000000000u + irq);
        n += (size_t) snprintf(text + n, size - n, "\nctxt 100\n");
        assert_true(n < size);
        fx_write(f.dir, "stat", "%s", text);

        assert_int_equal(proc_sampler_cpu_times(f.s, ct, CPUS + 1), CPUS + 1);
        for (unsigned cpu = 0; cpu < CPUS; cpu++) {
                uint64_t total = 0;

                for (unsigned k = 0; k < 8; k++)
                        total += big + cpu * 10 + k;
                assert_int_equal(ct[cpu + 1].steal, big + cpu * 10 + 7);
                assert_int_equal(ct[cpu + 1].total, total);
        }
        /* And again through the kept fd, with the buffer it grew to. */
        memset(ct, 0, (CPUS + 1) * sizeof *ct);
        assert_int_equal(proc_sampler_cpu_times(f.s, ct, CPUS + 1), CPUS + 1);
        assert_int_equal(ct[CPUS].steal, big + (CPUS - 1) * 10 + 7);

        free(text);
        free(ct);
        fx_close(&f);
}

static void test_exit_and_garbled(_unused_ void **state) {
        Fx f = {};
        ProcThread *t;
        size_t slots;

        fx_open(&f, 0);
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_int_equal(proc_sampler_round(f.s), 0);

        /* A garbled or truncated schedstat: that round is skipped for the thread, which stays. */
        fx_write(f.dir, "100/task/100/schedstat", "1000000 20");
        assert_int_equal(proc_sampler_round(f.s), 0);
        t = thread(&f, 100);
        assert_non_null(t);
        assert_int_equal(t->state, PROC_THREAD_LIVE);
        assert_int_equal(t->run_ns, 1000000);
        assert_int_equal(t->wait_ns, 2000);

        /* A garbled stat keeps the last comm and nice. */
        fx_write(f.dir, "100/task/100/schedstat", "2000000 2000 11\n");
        fx_write(f.dir, "100/task/100/stat", "100 (web) S 1\n");
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_string_equal(thread(&f, 100)->comm, "web");
        assert_int_equal(thread(&f, 100)->run_ns, 2000000);

        /* The thread exits: its directory goes; the scan finds it gone. */
        fx_sh("rm -rf '%s/200'", f.dir);
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_null(thread(&f, 200));
        {
                bool seen_gone = false;

                for (size_t i = 0; i < proc_sampler_n_slots(f.s); i++)
                        if (proc_sampler_slot(f.s, i)->state == PROC_THREAD_GONE && proc_sampler_slot(f.s, i)->tid == 200)
                                seen_gone = true;
                assert_true(seen_gone);
        }
        assert_int_equal(proc_sampler_n_threads(f.s), 2);
        assert_int_equal(proc_sampler_n_kept_fds(f.s), 4);

        /* A thread that appears: NEW in the round it is found, in a freed slot. */
        slots = proc_sampler_n_slots(f.s);
        fx_sh("mkdir -p '%s/500/task/500'", f.dir);
        fx_write(f.dir, "500/task/500/schedstat", "1 0 1\n");
        fx_write(f.dir, "500/task/500/stat",
                 "500 (new) S 1 500 500 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_int_equal(thread(&f, 500)->state, PROC_THREAD_NEW);
        assert_int_equal(proc_sampler_n_slots(f.s), slots);
        fx_close(&f);
}

/* Out of descriptors: the threads found after that are read with open/read/close; a reused TID is told apart. */
static void test_fd_shortage_and_pid_reuse(_unused_ void **state) {
        Fx f = {};
        ProcThread *t;
        int fallback = 0;

        /* Two descriptors: schedstat of the first two threads found; stat files only while half is left. */
        fx_open(&f, 2);
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_int_equal(proc_sampler_n_threads(f.s), 3);
        assert_int_equal(proc_sampler_n_kept_fds(f.s), 2);
        assert_int_equal(proc_sampler_n_fallback(f.s), 1);
        assert_true(thread(&f, 100)->schedstat_fd >= 0);
        assert_int_equal(thread(&f, 100)->stat_fd, -1);
        for (size_t i = 0; i < proc_sampler_n_slots(f.s); i++)
                if (proc_sampler_slot(f.s, i)->schedstat_fd < 0)
                        fallback++;
        assert_true(fallback >= 1);

        /* Counters still move on the fallback path. */
        fx_write(f.dir, "200/task/200/schedstat", "300000500 0 4\n");
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_int_equal(thread(&f, 200)->run_ns, 300000500);

        /*
         * 200 exits and the TID is reused between two rounds: with counters lower than before, the
         * fallback path sees a new thread.
         */
        t = thread(&f, 200);
        assert_int_equal(t->schedstat_fd, -1);
        fx_write(f.dir, "200/task/200/schedstat", "10 0 1\n");
        fx_write(f.dir, "200/task/200/stat",
                 "200 (reused) S 1 200 200 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9999 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
        assert_int_equal(proc_sampler_round(f.s), 0);
        t = thread(&f, 200);
        assert_non_null(t);
        assert_int_equal(t->state, PROC_THREAD_NEW);
        assert_string_equal(t->comm, "reused");
        assert_int_equal(t->starttime, 9999);

        /* Reused with larger counters: the start time in stat (read when it moved) tells. */
        fx_write(f.dir, "200/task/200/schedstat", "999999999 0 9\n");
        fx_write(f.dir, "200/task/200/stat",
                 "200 (again) S 1 200 200 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
        assert_int_equal(proc_sampler_round(f.s), 0);
        t = thread(&f, 200);
        assert_non_null(t);
        assert_int_equal(t->state, PROC_THREAD_NEW);
        assert_string_equal(t->comm, "again");
        fx_close(&f);
}

/*
 * Descriptors the caller reserves are left to it (and given back when the reserve grows); when the
 * process is out of descriptors, threads are not read that round but are not taken for gone.
 */
static int emfile_child(Fx *f) {
        int fd, spare[64], n_spare = 0, r = 0;

        /* No fds to keep (the limit is below the sampler's reserve): every read opens its file. */
        if (proc_sampler_round(f->s) < 0 || proc_sampler_n_threads(f->s) != 3 || proc_sampler_n_kept_fds(f->s) != 0)
                return 10;
        /* Use up every descriptor the limit leaves. */
        while (n_spare < 64 && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
                spare[n_spare++] = fd;
        if (n_spare == 64 || errno != EMFILE || n_spare < 2)
                r = 12;
        for (int k = 0; !r && k < 3; k++)
                if (proc_sampler_round(f->s) < 0 || proc_sampler_n_threads(f->s) != 3)
                        r = 13;
        if (!r && proc_sampler_n_read(f->s) != 3)
                r = 14;
        /* Descriptors again: the next round reads them. */
        while (n_spare > 0)
                close(spare[--n_spare]);
        fx_write(f->dir, "100/task/101/schedstat", "7000000 100000 52\n");
        if (!r && (proc_sampler_round(f->s) < 0 || proc_sampler_n_threads(f->s) != 3))
                r = 15;
        if (!r && (thread(f, 101)->run_ns != 7000000 || thread(f, 101)->state != PROC_THREAD_LIVE))
                r = 16;
        return r;
}

static void test_fd_reserve_and_emfile(_unused_ void **state) {
        Fx f = {};
        pid_t pid;
        int status;

        /* Six it may keep, four reserved: two left (schedstat of two threads; stat only below half). */
        fx_open(&f, 6);
        proc_sampler_reserve_fds(f.s, 4);
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_int_equal(proc_sampler_n_threads(f.s), 3);
        assert_int_equal(proc_sampler_n_kept_fds(f.s), 2);
        /* The reserve grows: one is given back at the next round, the thread read by path. */
        proc_sampler_reserve_fds(f.s, 5);
        fx_write(f.dir, "100/task/101/schedstat", "6000000 100000 51\n");
        assert_int_equal(proc_sampler_round(f.s), 0);
        assert_int_equal(proc_sampler_n_kept_fds(f.s), 1);
        assert_int_equal(proc_sampler_n_threads(f.s), 3);
        assert_int_equal(thread(&f, 101)->run_ns, 6000000);
        fx_close(&f);

        /* In a child with a small RLIMIT_NOFILE. */
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit rl = { 64, 64 };
                int r;

                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(2);
                fx_open(&f, 0);
                r = emfile_child(&f);
                fx_close(&f);
                _exit(r);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("out-of-descriptors check failed: status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* Every thread's stat is read again once in ten rounds (renice), a tenth of them each round. */
static void test_stat_every_tenth(_unused_ void **state) {
        Fx f = {};
        bool reniced = false;

        fx_open(&f, 0);
        assert_int_equal(proc_sampler_round(f.s), 0);
        fx_write(f.dir, "100/task/100/stat",
                 "100 (web) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 25 5 1 0 1000 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 0\n");
        for (int i = 0; i < 10; i++) {
                assert_int_equal(proc_sampler_round(f.s), 0);
                assert_false(thread(&f, 100)->moved);
                if (thread(&f, 100)->nice == 5) {
                        reniced = true;
                        assert_int_equal(thread(&f, 100)->cpu, 1);
                }
        }
        assert_true(reniced);
        fx_close(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_schedstat),
                cmocka_unit_test(test_parse_stat),
                cmocka_unit_test(test_parse_cpu_times),
                cmocka_unit_test(test_big_proc_stat),
                cmocka_unit_test(test_discovery),
                cmocka_unit_test(test_exit_and_garbled),
                cmocka_unit_test(test_fd_shortage_and_pid_reuse),
                cmocka_unit_test(test_fd_reserve_and_emfile),
                cmocka_unit_test(test_stat_every_tenth),
        };

        log_set_max_level(LOG_ERR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
