/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One daemon per subtree: the flocks on CgroupRoot and its ancestors, on plain directories (flock
 * works the same there as on cgroupfs). Two SubtreeLocks of one process hold separate open file
 * descriptions, so they conflict as two daemons do.
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
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "peltd/cgroup-util.h"
#include "peltd/macro.h"
#include "peltd/subtree-lock.h"
#include "test-cleanup.h"

static char tmpdir[] = "/tmp/peltd-test-subtree-lock-XXXXXX";
static char cpu[256], cpuset[256];
static CgroupFs *fs;

static void mk(const char *rel) {
        char p[512];

        snprintf(p, sizeof p, "%s/cpu%s", tmpdir, rel);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/cpuset%s", tmpdir, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void rm(const char *rel) {
        char p[512];

        snprintf(p, sizeof p, "%s/cpu%s", tmpdir, rel);
        assert_int_equal(rmdir(p), 0);
        snprintf(p, sizeof p, "%s/cpuset%s", tmpdir, rel);
        assert_int_equal(rmdir(p), 0);
}

static int lock_at(const char *root, SubtreeLock **ret) {
        SubtreeLock *l = NULL;
        int r = subtree_lock(fs, root, &l);

        if (r >= 0)
                *ret = l;
        return r;
}

/* 0 when root can be locked now (and is let go at once), else the error. */
static int try_lock(const char *root) {
        _cleanup_subtree_lock_ SubtreeLock *l = NULL;

        return lock_at(root, &l);
}

static int setup(void **state) {
        (void) state;
        if (!test_mkdtemp(tmpdir))
                return -1;
        snprintf(cpu, sizeof cpu, "%s/cpu", tmpdir);
        snprintf(cpuset, sizeof cpuset, "%s/cpuset", tmpdir);
        if (mkdir(cpu, 0755) < 0 || mkdir(cpuset, 0755) < 0)
                return -1;
        /* cpu and cpuacct co-mounted (one directory): locked once, never against itself. */
        return cgroup_fs_open_v1(cpu, cpu, cpuset, &fs);
}

static int teardown(void **state) {
        char cmd[600];

        (void) state;
        cgroup_fs_free(fs);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

static void test_overlapping_roots_refused(void **state) {
        _cleanup_subtree_lock_ SubtreeLock *a = NULL;

        (void) state;
        mk("/s");
        mk("/s/a");
        mk("/s/a/below");
        mk("/s/b");
        assert_int_equal(lock_at("/s/a", &a), 0);
        assert_string_equal(subtree_lock_root(a), "/s/a");

        assert_int_equal(try_lock("/s/a"), -EBUSY);       /* the same root, whatever the StateFile */
        assert_int_equal(try_lock("/s/a/below"), -EBUSY); /* inside it */
        assert_int_equal(try_lock("/s"), -EBUSY);         /* above it */
        assert_int_equal(try_lock("/"), -EBUSY);          /* the whole hierarchy */
        assert_int_equal(try_lock("/s/b"), 0);            /* a sibling shares only the ancestors */

        subtree_lock_free(TAKE_PTR(a));
        assert_int_equal(try_lock("/s/a"), 0); /* let go when freed */
        assert_int_equal(try_lock("/"), 0);
}

static void test_root_not_there_yet(void **state) {
        _cleanup_subtree_lock_ SubtreeLock *a = NULL, *sibling = NULL;

        (void) state;
        mk("/m");
        /* Only its ancestors are held, shared: a sibling starts; nobody starts above it. */
        assert_int_equal(lock_at("/m/later", &a), 0);
        assert_int_equal(subtree_lock_refresh(a), 0);
        assert_int_equal(lock_at("/m/other", &sibling), 0);
        assert_int_equal(try_lock("/m"), -EBUSY);
        assert_int_equal(try_lock("/"), -EBUSY);

        mk("/m/later");
        mk("/m/other");
        assert_int_equal(subtree_lock_refresh(a), 1); /* now it holds the directory */
        assert_int_equal(subtree_lock_refresh(a), 0);
        assert_int_equal(try_lock("/m/later"), -EBUSY);
        assert_int_equal(try_lock("/m/later/below"), -EBUSY);
        assert_int_equal(try_lock("/m"), -EBUSY);
        assert_int_equal(subtree_lock_refresh(sibling), 1); /* the sibling's too */
        assert_int_equal(try_lock("/m/other"), -EBUSY);
}

/* Two daemons waiting for the same root: the first to lock it when it is made keeps it, the other stops. */
static void test_root_not_there_two_waiting(void **state) {
        _cleanup_subtree_lock_ SubtreeLock *a = NULL, *b = NULL;

        (void) state;
        mk("/w");
        assert_int_equal(lock_at("/w/r", &a), 0);
        assert_int_equal(lock_at("/w/r", &b), 0);
        mk("/w/r");
        assert_int_equal(subtree_lock_refresh(a), 1);
        assert_int_equal(subtree_lock_refresh(b), -EBUSY);
        assert_int_equal(try_lock("/w/r"), -EBUSY);
}

static void test_root_made_again(void **state) {
        _cleanup_subtree_lock_ SubtreeLock *a = NULL, *b = NULL;

        (void) state;
        mk("/r");
        mk("/r/x");
        assert_int_equal(lock_at("/r/x", &a), 0);
        rm("/r/x");
        mk("/r/x");
        /* a's lock is on the old directory until its next refresh: a daemon starting now gets in... */
        assert_int_equal(lock_at("/r/x", &b), 0);
        /* ...and a sees it at its refresh: it must stop. */
        assert_int_equal(subtree_lock_refresh(a), -EBUSY);
        subtree_lock_free(TAKE_PTR(b));
        assert_int_equal(subtree_lock_refresh(a), 1);
        assert_int_equal(try_lock("/r/x"), -EBUSY);
}

static void test_reload_moves_the_root(void **state) {
        _cleanup_subtree_lock_ SubtreeLock *a = NULL, *b = NULL;

        (void) state;
        mk("/p");
        mk("/p/q");
        mk("/p/z");
        mk("/t");
        assert_int_equal(lock_at("/p/q", &a), 0);

        /* Up: its own shared lock on /p becomes the exclusive one. */
        assert_int_equal(subtree_lock_set_root(a, "/p"), 0);
        assert_string_equal(subtree_lock_root(a), "/p");
        assert_int_equal(try_lock("/p/z"), -EBUSY);
        assert_int_equal(try_lock("/p/q"), -EBUSY);

        /* Down again. */
        assert_int_equal(subtree_lock_set_root(a, "/p/q"), 0);
        assert_int_equal(try_lock("/p/z"), 0);
        assert_int_equal(try_lock("/p"), -EBUSY);

        /* Onto a root another daemon holds: refused, the old root kept in every hierarchy. */
        assert_int_equal(lock_at("/t", &b), 0);
        assert_int_equal(subtree_lock_set_root(a, "/t"), -EBUSY);
        assert_string_equal(subtree_lock_root(a), "/p/q");
        assert_int_equal(try_lock("/p/q"), -EBUSY);
        assert_int_equal(try_lock("/p"), -EBUSY);
        assert_int_equal(try_lock("/p/z"), 0);
}

static void test_proc_locks_holder(void **state) {
        dev_t dev = makedev(0, 0x1c);
        const char *s = "1: POSIX  ADVISORY  WRITE 111 00:1c:4242 0 EOF\n"
                        "2: FLOCK  ADVISORY  WRITE 222 00:1d:4242 0 EOF\n"
                        "3: FLOCK  ADVISORY  READ 333 00:1c:4242 0 EOF\n"
                        "3: -> FLOCK  ADVISORY  WRITE 444 00:1c:4242 0 EOF\n";

        (void) state;
        assert_int_equal(proc_locks_find_holder(s, dev, 4242), 333);
        assert_int_equal(proc_locks_find_holder(s, dev, 4243), 0);
        assert_int_equal(proc_locks_find_holder(s, makedev(0, 0x1d), 4242), 222);
        assert_int_equal(proc_locks_find_holder("", dev, 4242), 0);
        assert_int_equal(proc_locks_find_holder("garbage\n\n1: FLOCK", dev, 4242), 0);
        assert_int_equal(proc_locks_find_holder("1: FLOCK  ADVISORY  WRITE -5 00:1c:4242 0 EOF", dev, 4242), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_overlapping_roots_refused),
                cmocka_unit_test(test_root_not_there_yet),
                cmocka_unit_test(test_root_not_there_two_waiting),
                cmocka_unit_test(test_root_made_again),
                cmocka_unit_test(test_reload_moves_the_root),
                cmocka_unit_test(test_proc_locks_holder),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
