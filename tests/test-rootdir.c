/* SPDX-License-Identifier: GPL-2.0-only */
/* The root layer's writes: beneath the root, and never through a symlink. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "test-cleanup.h"

static char tmpdir[] = "/tmp/peltd-test-rootdir-XXXXXX";

static void put(const char *rel, const char *text) {
        char p[512];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static char *get(const char *rel) {
        char p[512], *s = NULL;
        size_t n = 0;
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
        f = fopen(p, "re");
        assert_non_null(f);
        assert_true(getdelim(&s, &n, 0, f) >= 0);
        fclose(f);
        return s;
}

static void test_writes_stay_beneath(_unused_ void **state) {
        _cleanup_rootdir_ RootDir *root = NULL;
        char p[512], q[512];

        /* root/ is the "hierarchy"; outside/ is what a forged path or a planted link aims at. */
        snprintf(p, sizeof p, "%s/root/g", tmpdir);
        assert_int_equal(mkdir(p, 0755) == 0 || errno == EEXIST, 1);
        snprintf(p, sizeof p, "%s/outside", tmpdir);
        assert_int_equal(mkdir(p, 0755), 0);
        put("root/g/cpuset.cpus", "0-1\n");
        put("outside/cpuset.cpus", "untouched\n");
        put("outside/file", "untouched\n");

        snprintf(p, sizeof p, "%s/root", tmpdir);
        assert_int_equal(rootdir_open(p, &root), 0);

        /* An ordinary write. */
        assert_int_equal(rootdir_write_string(root, "/g/cpuset.cpus", "0"), 0);
        {
                _cleanup_free_ char *x = get("root/g/cpuset.cpus");

                assert_string_equal(x, "0");
        }

        /* ".." out of the root. */
        assert_true(rootdir_write_string(root, "/../outside/cpuset.cpus", "0") < 0);
        /* A symlinked group directory, and a symlinked file. */
        snprintf(p, sizeof p, "%s/outside", tmpdir);
        snprintf(q, sizeof q, "%s/root/linked", tmpdir);
        assert_int_equal(symlink(p, q), 0);
        assert_int_equal(rootdir_write_string(root, "/linked/cpuset.cpus", "0"), -ELOOP);
        snprintf(p, sizeof p, "%s/outside/file", tmpdir);
        snprintf(q, sizeof q, "%s/root/g/cpu.shares", tmpdir);
        assert_int_equal(symlink(p, q), 0);
        assert_int_equal(rootdir_write_string(root, "/g/cpu.shares", "2"), -ELOOP);
        /* An absolute link (a "magic" one under /proc behaves the same). */
        snprintf(q, sizeof q, "%s/root/abs", tmpdir);
        assert_int_equal(symlink("/tmp", q), 0);
        assert_true(rootdir_write_string(root, "/abs/x", "0") < 0);

        {
                _cleanup_free_ char *a = get("outside/cpuset.cpus"), *b = get("outside/file");

                assert_string_equal(a, "untouched\n");
                assert_string_equal(b, "untouched\n");
        }
}

static int setup(_unused_ void **state) {
        char p[512];

        if (!test_mkdtemp(tmpdir))
                return -1;
        snprintf(p, sizeof p, "%s/root", tmpdir);
        return mkdir(p, 0755);
}

static int teardown(_unused_ void **state) {
        char cmd[600];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_writes_stay_beneath),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
