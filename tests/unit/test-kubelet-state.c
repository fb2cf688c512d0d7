/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kubelet's checkpoint from its file (config/kubelet-state.c): trusted as a configuration file is,
 * a missing file is no kubelet, and the stamp changes with a rename or an edit in place.
 */
#include <errno.h>
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

#include "peltd/kubelet-state.h"
#include "peltd/macro.h"

#define STATIC_CHECKPOINT "{\"policyName\":\"static\",\"defaultCpuSet\":\"0\",\"entries\":{\"p\":{\"c\":\"1\"}},\"checksum\":1}"

static char dir[] = "/tmp/peltd-test-kubelet-state-XXXXXX";
static char path[128];

static int setup(_unused_ void **state) {
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/cpu_manager_state", dir);
        return 0;
}

static int teardown(_unused_ void **state) {
        char cmd[128];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* path replaced (a new file renamed over it, as kubelet does) by text with mode. */
static void put(const char *text, mode_t mode) {
        char tmp[160];
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.new", path);
        f = fopen(tmp, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(tmp, mode), 0);
        assert_int_equal(rename(tmp, path), 0);
}

static void test_missing(_unused_ void **state) {
        KubeletCheckpoint *c = NULL;
        KubeletStateStamp s;
        char *error = NULL;

        (void) unlink(path);
        assert_int_equal(kubelet_state_load(path, &c, &s, &error), -ENOENT);
        assert_null(c);
        assert_null(error);
        assert_int_equal(kubelet_state_stamp(path, &s), 0);
        assert_false(s.exists);
}

static void test_load(_unused_ void **state) {
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c = NULL;
        KubeletStateStamp read, now;
        char *error = NULL;

        put(STATIC_CHECKPOINT, 0644);
        assert_int_equal(kubelet_state_load(path, &c, &read, &error), 0);
        assert_null(error);
        assert_true(c->is_static);
        assert_true(cpumask_test(&c->exclusive, 1));
        assert_true(read.exists);
        assert_int_equal(kubelet_state_stamp(path, &now), 0);
        assert_true(kubelet_state_stamp_equal(&read, &now));

        /* Replaced by rename: another inode, another stamp, even with the same bytes. */
        put(STATIC_CHECKPOINT, 0644);
        assert_int_equal(kubelet_state_stamp(path, &now), 0);
        assert_false(kubelet_state_stamp_equal(&read, &now));
}

/* A symlink is followed, and the file it reaches is what is checked. */
static void test_symlink(_unused_ void **state) {
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c = NULL;
        char link[160], *error = NULL;
        KubeletStateStamp s;

        put(STATIC_CHECKPOINT, 0644);
        snprintf(link, sizeof link, "%s/link", dir);
        assert_int_equal(symlink(path, link), 0);
        assert_int_equal(kubelet_state_load(link, &c, &s, &error), 0);
        assert_null(error);
        assert_int_equal(unlink(link), 0);
}

static void assert_refused(int want, const char *why) {
        KubeletCheckpoint *c = NULL;
        KubeletStateStamp s;
        _cleanup_free_ char *error = NULL;

        assert_int_equal(kubelet_state_load(path, &c, &s, &error), want);
        assert_null(c);
        assert_non_null(error);
        if (!strstr(error, why))
                fail_msg("\"%s\" does not say \"%s\"", error, why);
}

static void test_untrusted(_unused_ void **state) {
        _cleanup_free_ char *big = malloc(1024 * 1024 + 2);

        put(STATIC_CHECKPOINT, 0664);
        assert_refused(-EPERM, "refusing it: it is writable by group or others");
        put(STATIC_CHECKPOINT, 0646);
        assert_refused(-EPERM, "writable by group or others");

        assert_non_null(big);
        memset(big, ' ', 1024 * 1024 + 1);
        big[1024 * 1024 + 1] = '\0';
        put(big, 0644);
        assert_refused(-EPERM, "is too large");

        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkfifo(path, 0644), 0);
        assert_refused(-EPERM, "is a FIFO");
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_refused(-EPERM, "is a directory");
        assert_int_equal(rmdir(path), 0);
}

static void test_broken(_unused_ void **state) {
        put("{\"policyName\":\"static\",\"entries\":{\"p\":{\"c\":\"1-\"}}}", 0644);
        assert_refused(-EINVAL, "entries.p.c: \"1-\" is not a CPU list");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_missing),
                cmocka_unit_test(test_load),
                cmocka_unit_test(test_symlink),
                cmocka_unit_test(test_untrusted),
                cmocka_unit_test(test_broken),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
