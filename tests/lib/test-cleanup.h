/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What a test makes is removed when it exits, also when it fails or is killed: meson's timeout
 * sends SIGTERM (to the whole process group, then SIGKILL half a second later, which nothing can
 * catch). Directories made with test_mkdtemp() are removed recursively, without crossing into
 * other file systems (a mount left inside keeps its mount point and its parents); cgroups
 * registered with test_cleanup_cgroup() are only ever rmdir'ed. The last registered goes first,
 * so register parents before their children.
 *
 * Only the process that registered removes: a forked child that exits (or is killed) leaves its
 * parent's directories alone. Removing what is already gone is harmless, so a test can keep its
 * own teardown.
 *
 * The signal handlers use nftw() and so malloc(): not async-signal-safe, but a test stopped by a
 * timeout is waiting, not allocating, and a lost cleanup is only a leftover.
 */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TEST_CLEANUP_MAX 256

typedef struct TestCleanup {
        char *path;
        bool cgroup; /* rmdir only */
        pid_t pid;   /* the process that registered it */
} TestCleanup;

static TestCleanup test_cleanup_list[TEST_CLEANUP_MAX];
static volatile sig_atomic_t test_cleanup_n;
static const int test_cleanup_signals[] = { SIGTERM, SIGINT, SIGABRT, SIGHUP };

/* The handled signals blocked: the list is changed by one hand at a time. */
static inline void test_cleanup_block(sigset_t *ret_old) {
        sigset_t s;

        sigemptyset(&s);
        for (size_t i = 0; i < sizeof test_cleanup_signals / sizeof test_cleanup_signals[0]; i++)
                sigaddset(&s, test_cleanup_signals[i]);
        sigprocmask(SIG_BLOCK, &s, ret_old);
}

static inline int test_cleanup_rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        if ((type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT)
                fprintf(stderr, "test-cleanup: cannot remove %s: %s\n", path, strerror(errno));
        return 0; /* go on: remove as much as can be removed */
}

static inline void test_cleanup_rmdir_cgroup(const char *path) {
        /* A group is removable once its last task has finished exiting (the same SIGTERM reached
         * the test's children): try for a quarter of a second, inside meson's half a second. */
        for (int i = 0; i < 25; i++) {
                if (rmdir(path) == 0 || errno == ENOENT)
                        return;
                if (errno != EBUSY)
                        break;
                nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        fprintf(stderr, "test-cleanup: cannot remove cgroup %s: %s\n", path, strerror(errno));
}

/* Runs this process's registrations, last first, and forgets them all. */
static inline void test_cleanup_now(void) {
        int saved_errno = errno;
        pid_t self = getpid();
        sigset_t old;

        test_cleanup_block(&old);
        while (test_cleanup_n > 0) {
                TestCleanup *c = &test_cleanup_list[test_cleanup_n - 1];

                if (c->pid == self) {
                        if (c->cgroup)
                                test_cleanup_rmdir_cgroup(c->path);
                        else if (nftw(c->path, test_cleanup_rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 &&
                                 errno != ENOENT)
                                fprintf(stderr, "test-cleanup: cannot walk %s: %s\n", c->path, strerror(errno));
                }
                test_cleanup_n--;
                free(c->path);
                c->path = NULL;
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        errno = saved_errno;
}

static inline void test_cleanup_atexit(void) {
        test_cleanup_now();
}

static inline void test_cleanup_signal(int sig) {
        test_cleanup_now();
        /* SA_RESETHAND put the default action back; sig is blocked until we return, then it ends us. */
        raise(sig);
}

static inline void test_cleanup_install(void) {
        static bool installed = false;
        struct sigaction sa = { .sa_handler = test_cleanup_signal, .sa_flags = SA_RESETHAND };

        if (installed)
                return;
        installed = true;
        if (atexit(test_cleanup_atexit) != 0)
                abort();
        /* Every handled signal is blocked while one of them cleans up. */
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < sizeof test_cleanup_signals / sizeof test_cleanup_signals[0]; i++)
                sigaddset(&sa.sa_mask, test_cleanup_signals[i]);
        for (size_t i = 0; i < sizeof test_cleanup_signals / sizeof test_cleanup_signals[0]; i++)
                if (sigaction(test_cleanup_signals[i], &sa, NULL) < 0)
                        abort();
}

static inline void test_cleanup_register(const char *path, bool cgroup) {
        pid_t self = getpid();
        sigset_t old;
        char *p;

        test_cleanup_install();
        p = strdup(path);
        if (!p)
                abort();
        test_cleanup_block(&old);
        /* The same group made again by the next test case: once is enough. */
        for (sig_atomic_t i = 0; i < test_cleanup_n; i++)
                if (test_cleanup_list[i].pid == self && test_cleanup_list[i].cgroup == cgroup &&
                    strcmp(test_cleanup_list[i].path, path) == 0) {
                        free(p);
                        p = NULL;
                        break;
                }
        if (p) {
                if (test_cleanup_n >= TEST_CLEANUP_MAX) {
                        fprintf(stderr, "test-cleanup: more than %d registrations\n", TEST_CLEANUP_MAX);
                        abort();
                }
                test_cleanup_list[test_cleanup_n] = (TestCleanup){ .path = p, .cgroup = cgroup, .pid = self };
                test_cleanup_n++;
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
}

/* A file, or a directory with everything in it (not made by test_mkdtemp()), to remove. */
static inline void test_cleanup_path(const char *absolute_path) {
        test_cleanup_register(absolute_path, false);
}

/* A cgroup directory (its absolute path under /sys/fs/cgroup) to rmdir. */
static inline void test_cleanup_cgroup(const char *absolute_dir) {
        test_cleanup_register(absolute_dir, true);
}

/* mkdtemp(), and the directory removed at exit. */
static inline char *test_mkdtemp(char *template) {
        if (!mkdtemp(template))
                return NULL;
        test_cleanup_path(template);
        return template;
}
