/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the pressure guard reads (sample-pressure.c): schedstat's run_delay, PSI's "some" total,
 * a group's threads' run_delay growth on a made-up tree, and the trigger it writes.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/sample-pressure.h"

static void test_schedstat_run_delay(void **state) {
        _unused_ void *s = state;
        uint64_t v = 0;

        assert_int_equal(schedstat_parse_run_delay("7020433 7369125 6\n", &v), 0);
        assert_int_equal(v, 7369125);
        assert_int_equal(schedstat_parse_run_delay("0 0 0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(schedstat_parse_run_delay("7020433\n", &v), -EINVAL);
        assert_int_equal(schedstat_parse_run_delay("7020433 x 6\n", &v), -EINVAL);
        assert_int_equal(schedstat_parse_run_delay("", &v), -EINVAL);
}

static void test_psi_some_total(void **state) {
        _unused_ void *s = state;
        uint64_t v = 0;

        assert_int_equal(psi_parse_some_total("some avg10=0.00 avg60=0.12 avg300=0.50 total=12345\n"
                                              "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n", &v), 0);
        assert_int_equal(v, 12345);
        /* The full line first (v1's /proc/pressure/cpu has both on newer kernels). */
        assert_int_equal(psi_parse_some_total("full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n"
                                              "some avg10=1.00 avg60=0.00 avg300=0.00 total=18446744073709551615", &v), 0);
        assert_int_equal(v, UINT64_MAX);
        assert_int_equal(psi_parse_some_total("some avg10=0.00 avg60=0.00 avg300=0.00\nfull total=5\n", &v), -EINVAL);
        assert_int_equal(psi_parse_some_total("some avg10=0.00 total=12x\n", &v), -EINVAL);
        assert_int_equal(psi_parse_some_total("full avg10=0.00 total=1\n", &v), -EINVAL);
        assert_int_equal(psi_parse_some_total("", &v), -EINVAL);
}

static void write_file(const char *dir, const char *path, const char *content) {
        char full[512];
        FILE *f;

        snprintf(full, sizeof full, "%s/%s", dir, path);
        f = fopen(full, "we");
        assert_non_null(f);
        fputs(content, f);
        assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *dir, const char *path) {
        char full[512];

        snprintf(full, sizeof full, "%s/%s", dir, path);
        assert_int_equal(mkdir(full, 0755), 0);
}

static void schedstat(const char *dir, int tid, const char *content) {
        char path[128];

        snprintf(path, sizeof path, "proc/%d/task/%d/schedstat", tid, tid);
        write_file(dir, path, content);
}

static void test_run_delays_on_a_tree(void **state) {
        _unused_ void *s = state;
        char dir[] = "/tmp/peltd-test-pressure-XXXXXX", sub[600];
        RootDir *cg = NULL, *proc = NULL;
        RunDelays d = {};
        uint64_t growth = 1, sum = 0;

        assert_non_null(mkdtemp(dir));
        make_dir(dir, "cg");
        make_dir(dir, "cg/web");
        make_dir(dir, "proc");
        for (int tid = 10; tid <= 12; tid++) {
                char p[64];

                snprintf(p, sizeof p, "proc/%d", tid);
                make_dir(dir, p);
                snprintf(p, sizeof p, "proc/%d/task", tid);
                make_dir(dir, p);
                snprintf(p, sizeof p, "proc/%d/task/%d", tid, tid);
                make_dir(dir, p);
        }
        write_file(dir, "cg/web/tasks", "10\n11\n");
        schedstat(dir, 10, "100 5000 3\n");
        schedstat(dir, 11, "100 7000 3\n");
        snprintf(sub, sizeof sub, "%s/cg", dir);
        assert_int_equal(rootdir_open(sub, &cg), 0);
        snprintf(sub, sizeof sub, "%s/proc", dir);
        assert_int_equal(rootdir_open(sub, &proc), 0);

        /* The first read: no growth yet. */
        assert_int_equal(run_delays_read(cg, "tasks", "/web", proc, &d, &growth, &sum), 0);
        assert_int_equal(growth, 0);
        assert_int_equal(sum, 12000);

        /* 11 waited 3000 more, 10 left (and its run_delay must not count), 12 came with 90000 of its own. */
        write_file(dir, "cg/web/tasks", "12\n11\n");
        schedstat(dir, 11, "100 10000 4\n");
        schedstat(dir, 12, "100 90000 4\n");
        assert_int_equal(run_delays_read(cg, "tasks", "/web", proc, &d, &growth, &sum), 0);
        assert_int_equal(growth, 3000);
        assert_int_equal(sum, 100000);

        /* A thread gone between the tasks file and its schedstat is skipped. */
        write_file(dir, "cg/web/tasks", "12\n13\n");
        schedstat(dir, 12, "100 95000 5\n");
        assert_int_equal(run_delays_read(cg, "tasks", "/web", proc, &d, &growth, &sum), 0);
        assert_int_equal(growth, 5000);
        assert_int_equal(sum, 95000);
        assert_int_equal(d.n, 1);

        /* The group gone. */
        assert_int_equal(run_delays_read(cg, "tasks", "/gone", proc, &d, &growth, &sum), -ENOENT);

        run_delays_done(&d);
        rootdir_free(cg);
        rootdir_free(proc);
        snprintf(sub, sizeof sub, "rm -rf '%s'", dir);
        assert_int_equal(system(sub), 0);
}

static void test_trigger_written(void **state) {
        _unused_ void *s = state;
        char dir[] = "/tmp/peltd-test-pressure-XXXXXX", sub[600], buf[64] = {};
        RootDir *cg = NULL;
        ssize_t n;
        int fd;

        assert_non_null(mkdtemp(dir));
        make_dir(dir, "web");
        assert_int_equal(rootdir_open(dir, &cg), 0);
        assert_int_equal(psi_trigger_open(cg, "/web", 100000, 1000000), -ENOENT);
        write_file(dir, "web/cpu.pressure", "");
        fd = psi_trigger_open(cg, "/web", 100000, 1000000);
        assert_true(fd >= 0);
        close(fd);
        snprintf(sub, sizeof sub, "%s/web/cpu.pressure", dir);
        fd = open(sub, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        n = read(fd, buf, sizeof buf);
        close(fd);
        /* With its terminating NUL, as the kernel takes it. */
        assert_int_equal(n, (ssize_t) sizeof "some 100000 1000000");
        assert_string_equal(buf, "some 100000 1000000");

        rootdir_free(cg);
        snprintf(sub, sizeof sub, "rm -rf '%s'", dir);
        assert_int_equal(system(sub), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_schedstat_run_delay),
                cmocka_unit_test(test_psi_some_total),
                cmocka_unit_test(test_run_delays_on_a_tree),
                cmocka_unit_test(test_trigger_written),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
