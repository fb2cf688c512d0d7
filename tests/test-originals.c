/* SPDX-License-Identifier: GPL-2.0-only */
/* The state file of original values: recorded before each write, reloaded after a crash, locked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/originals.h"

static char tmpdir[] = "/tmp/peltd-test-originals-XXXXXX";
static char path[300];

static void test_record_reload_forget(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        const Original *e;
        struct stat st;

        assert_int_equal(originals_load(path, &o), 0);
        assert_int_equal(o->n_entries, 0);

        assert_int_equal(originals_record(o, "cpuset", "/a", "cpuset.cpus", "0-1", "0"), 0);
        assert_int_equal(originals_record(o, "cpu", "/a", "cpu.shares", "1024", "2048"), 0);
        /* A second write keeps the first original and takes the new value. */
        assert_int_equal(originals_record(o, "cpuset", "/a", "cpuset.cpus", "0", "1"), 0);
        assert_int_equal(o->n_entries, 2);

        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);

        /* What a restarted daemon sees after a crash. */
        assert_int_equal(originals_load(path, &again), 0);
        assert_int_equal(again->n_entries, 2);
        e = originals_find(again, "cpuset", "/a", "cpuset.cpus");
        assert_non_null(e);
        assert_string_equal(e->original, "0-1");
        assert_string_equal(e->written, "1");
        assert_null(originals_find(again, "cpuset", "/b", "cpuset.cpus"));

        assert_int_equal(originals_forget(o, "cpuset", "/a", "cpuset.cpus"), 0);
        assert_int_equal(originals_forget(o, "cpuset", "/a", "cpuset.cpus"), 0);
        assert_int_equal(o->n_entries, 1);
        assert_int_equal(originals_forget(o, "cpu", "/a", "cpu.shares"), 0);
        /* Nothing left: the file is gone. */
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);
}

static void test_values_with_odd_characters(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;

        assert_int_equal(originals_load(path, &o), 0);
        assert_int_equal(originals_record(o, "systemd", "my \"odd\".service", "AllowedCPUs", "", "0-3\n"), 0);
        assert_int_equal(originals_load(path, &again), 0);
        assert_string_equal(again->entries[0].group, "my \"odd\".service");
        assert_string_equal(again->entries[0].original, "");
        assert_string_equal(again->entries[0].written, "0-3\n");
        assert_int_equal(originals_forget(o, "systemd", "my \"odd\".service", "AllowedCPUs"), 0);
}

static void test_bad_file(_unused_ void **state) {
        static const char *const bad[] = {
                "garbage", "{}", "{\"version\": 2, \"entries\": []}", "{\"version\": 1, \"entries\": [1]}",
                "{\"version\": 1, \"entries\": [{\"hierarchy\": \"cpu\"}]}", "{\"version\": 1, \"entries\": []} x",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Originals *o = NULL;
                FILE *f = fopen(path, "we");

                fputs(bad[i], f);
                fclose(f);
                assert_int_equal(originals_load(path, &o), -EBADMSG);
                assert_null(o);
        }
        unlink(path);
}

static void test_unwritable_records_nothing(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;

        /* /proc refuses new files: the record fails and leaves nothing behind in memory. */
        assert_int_equal(originals_load("/proc/peltd-test/originals", &o), 0);
        assert_true(originals_record(o, "cpu", "/a", "cpu.shares", "1024", "2048") < 0);
        assert_int_equal(o->n_entries, 0);
}

static void test_lock_is_exclusive(_unused_ void **state) {
        int fd = originals_lock(path);
        pid_t pid;
        int status;

        assert_true(fd >= 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* flock is per open file: a second process (or open) must be refused. */
                int k = originals_lock(path);
                _exit(k == -EBUSY ? 0 : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(fd);

        /* Released with its fd. */
        fd = originals_lock(path);
        assert_true(fd >= 0);
        close(fd);
}

static int setup(_unused_ void **state) {
        if (!mkdtemp(tmpdir))
                return -1;
        /* A directory that does not exist yet: the lock and the save create it. */
        snprintf(path, sizeof path, "%s/run/peltd/originals", tmpdir);
        return 0;
}

static int teardown(_unused_ void **state) {
        char cmd[400];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lock_is_exclusive),
                cmocka_unit_test(test_record_reload_forget),
                cmocka_unit_test(test_values_with_odd_characters),
                cmocka_unit_test(test_bad_file),
                cmocka_unit_test(test_unwritable_records_nothing),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
