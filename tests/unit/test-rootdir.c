/* SPDX-License-Identifier: GPL-2.0-only */
/* The root layer's writes: beneath the root, and never through a symlink. */
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "test-cleanup.h"

static char tmpdir[] = "/tmp/peltd-test-rootdir-XXXXXX";
/* Root in a private mount namespace (setup()): the bind mount checks run. */
static bool can_mount;

static void put(const char *rel, const char *text) {
        char p[512];
        FILE *f;

        assert_true((size_t) snprintf(p, sizeof p, "%s/%s", tmpdir, rel) < sizeof p);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static char *get(const char *rel) {
        char p[512], *s = NULL;
        size_t n = 0;
        FILE *f;

        assert_true((size_t) snprintf(p, sizeof p, "%s/%s", tmpdir, rel) < sizeof p);
        f = fopen(p, "re");
        assert_non_null(f);
        assert_true(getdelim(&s, &n, 0, f) >= 0);
        fclose(f);
        return s;
}

/* The checks, in tmpdir/BASE: BASE/root is the "hierarchy", BASE/outside what a forged path or a link aims at. */
static void check_writes_stay_beneath(const char *base) {
        _cleanup_rootdir_ RootDir *root = NULL;
        char p[512], q[512];

        snprintf(p, sizeof p, "%s/%s", tmpdir, base);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/%s/root", tmpdir, base);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/%s/root/g", tmpdir, base);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/%s/outside", tmpdir, base);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/root/g/cpuset.cpus", base);
        put(p, "0-1\n");
        snprintf(p, sizeof p, "%s/outside/cpuset.cpus", base);
        put(p, "untouched\n");
        snprintf(p, sizeof p, "%s/outside/file", base);
        put(p, "untouched\n");

        snprintf(p, sizeof p, "%s/%s/root", tmpdir, base);
        assert_int_equal(rootdir_open(p, &root), 0);

        /* An ordinary write. */
        assert_int_equal(rootdir_write_string(root, "/g/cpuset.cpus", "0"), 0);
        {
                _cleanup_free_ char *x = NULL;

                snprintf(p, sizeof p, "%s/root/g/cpuset.cpus", base);
                x = get(p);

                assert_string_equal(x, "0");
        }

        /* ".." out of the root. */
        assert_true(rootdir_write_string(root, "/../outside/cpuset.cpus", "0") < 0);
        /* A symlinked group directory, and a symlinked file. */
        snprintf(p, sizeof p, "%s/%s/outside", tmpdir, base);
        snprintf(q, sizeof q, "%s/%s/root/linked", tmpdir, base);
        assert_int_equal(symlink(p, q), 0);
        assert_int_equal(rootdir_write_string(root, "/linked/cpuset.cpus", "0"), -ELOOP);
        snprintf(p, sizeof p, "%s/%s/outside/file", tmpdir, base);
        snprintf(q, sizeof q, "%s/%s/root/g/cpu.shares", tmpdir, base);
        assert_int_equal(symlink(p, q), 0);
        assert_int_equal(rootdir_write_string(root, "/g/cpu.shares", "2"), -ELOOP);
        /* A bind mount inside the root, of a directory and of a file: never crossed, never truncated. */
        if (can_mount) {
                snprintf(p, sizeof p, "%s/%s/outside", tmpdir, base);
                snprintf(q, sizeof q, "%s/%s/root/bm", tmpdir, base);
                assert_int_equal(mkdir(q, 0755), 0);
                assert_int_equal(mount(p, q, NULL, MS_BIND, NULL), 0);
                assert_int_equal(rootdir_write_string(root, "/bm/cpuset.cpus", "0"), -EXDEV);
                snprintf(p, sizeof p, "%s/%s/outside/file", tmpdir, base);
                snprintf(q, sizeof q, "%s/%s/root/g/cpu.weight", tmpdir, base);
                put(q + strlen(tmpdir) + 1, "100\n");
                assert_int_equal(mount(p, q, NULL, MS_BIND, NULL), 0);
                assert_int_equal(rootdir_write_string(root, "/g/cpu.weight", "2"), -EXDEV);
                assert_int_equal(umount(q), 0);
                snprintf(q, sizeof q, "%s/%s/root/bm", tmpdir, base);
                assert_int_equal(umount(q), 0);
        } else
                print_message("Not root in a mount namespace of its own: the bind mount checks do not run.\n");
        /* An absolute link (a "magic" one under /proc behaves the same). */
        snprintf(q, sizeof q, "%s/%s/root/abs", tmpdir, base);
        assert_int_equal(symlink("/tmp", q), 0);
        assert_true(rootdir_write_string(root, "/abs/x", "0") < 0);

        {
                _cleanup_free_ char *a = NULL, *b = NULL;

                snprintf(p, sizeof p, "%s/outside/cpuset.cpus", base);
                a = get(p);
                snprintf(p, sizeof p, "%s/outside/file", base);
                b = get(p);

                assert_string_equal(a, "untouched\n");
                assert_string_equal(b, "untouched\n");
        }
}

static void test_writes_stay_beneath(_unused_ void **state) {
        check_writes_stay_beneath("openat2");
}

/*
 * Where openat2() is refused (a kernel before 5.6, a seccomp filter that does not know it): the
 * walk one component at a time, O_NOFOLLOW, holds to the same rules. A child with a filter that
 * answers openat2 with ENOSYS runs the same checks; its exit status says whether they held.
 */
static void test_writes_stay_beneath_without_openat2(_unused_ void **state) {
        int status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                struct sock_filter filter[] = {
                        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                };
                struct sock_fprog prog = { .len = ELEMENTSOF(filter), .filter = filter };
                struct open_how how = { .flags = O_RDONLY };

                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                        _exit(2);
                /* The filter is there: openat2 itself is refused now. */
                if (syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how) >= 0 || errno != ENOSYS)
                        _exit(3);
                /* A failed check longjmps to cmocka's handler, which is the parent's: exit 1 then. */
                check_writes_stay_beneath("walk");
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static int setup(_unused_ void **state) {
        if (!test_mkdtemp(tmpdir))
                return -1;
        /* This process's own mount namespace, mounts not shared: the bind mounts go with it. */
        can_mount = geteuid() == 0 && unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
        return 0;
}

static int teardown(_unused_ void **state) {
        char cmd[600];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_writes_stay_beneath),
                cmocka_unit_test(test_writes_stay_beneath_without_openat2),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
