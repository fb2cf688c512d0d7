/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * log.c as the journal sees it, with a stand-in journal: in a mount namespace of its own, a tmpfs
 * on /run (this process's view only) holds a datagram socket at /run/systemd/journal/socket, and
 * stderr is a memfd named by JOURNAL_STREAM. Messages and fields with bytes that are not UTF-8
 * arrive as valid UTF-8 with "\xNN"; valid ones arrive unchanged. Needs root (the mount
 * namespace and the tmpfs): exit 77 without it.
 */
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <cmocka.h>

#include "peltd/log.h"
#include "peltd/utf8.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static int journal = -1;
static int err_fd = -1, saved_stderr = -1;

/* stderr into the memfd while peltd logs, and back for cmocka's own messages. */
static void capture(bool on) {
        fflush(stderr);
        assert_true(dup2(on ? err_fd : saved_stderr, STDERR_FILENO) >= 0);
}

static int setup(_unused_ void **state) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET };
        char env[64];
        struct stat st;

        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0 || mkdir("/run/systemd", 0755) < 0 ||
            mkdir("/run/systemd/journal", 0755) < 0) {
                perror("a private /run");
                return -1;
        }
        journal = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (journal < 0 || bind(journal, (struct sockaddr *) &sa, sizeof sa) < 0) {
                perror(JOURNAL_SOCKET);
                return -1;
        }

        /* stderr into a memfd the test reads back; JOURNAL_STREAM says it is the journal's. */
        err_fd = memfd_create("stderr", MFD_CLOEXEC);
        saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        if (err_fd < 0 || saved_stderr < 0 || fstat(err_fd, &st) < 0)
                return -1;
        snprintf(env, sizeof env, "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
        setenv("JOURNAL_STREAM", env, 1);
        return 0;
}

/* The next datagram the journal got, NUL-terminated. */
static char *next_datagram(char *buf, size_t size) {
        ssize_t n = recv(journal, buf, size - 1, MSG_DONTWAIT);

        assert_true(n > 0);
        buf[n] = 0;
        return buf;
}

/* What stderr got since the last call. */
static char *stderr_text(char *buf, size_t size) {
        static off_t done = 0;
        ssize_t n = pread(err_fd, buf, size - 1, done);

        assert_true(n >= 0);
        done += n;
        buf[n] = 0;
        return buf;
}

static void test_struct_fields(_unused_ void **state) {
        const char *fields[] = { "PELTD_GROUP=/a\xff", "PELTD_COMM=t\xc3", "PELTD_POLICY=power", "PELTD_UNIT=caf\xc3\xa9", NULL };
        char buf[4096];
        const char *d;

        capture(true);
        log_struct(LOG_INFO, fields, "%s: CPUs %s", "/a\xff", "0-1");
        capture(false);
        d = next_datagram(buf, sizeof buf);
        assert_true(utf8_is_valid(d));
        assert_non_null(strstr(d, "MESSAGE=/a\\xff: CPUs 0-1\n"));
        assert_non_null(strstr(d, "PRIORITY=6\n"));
        assert_non_null(strstr(d, "PELTD_GROUP=/a\\xff\n"));
        assert_non_null(strstr(d, "PELTD_COMM=t\\xc3\n"));
        assert_non_null(strstr(d, "PELTD_POLICY=power\n"));
        assert_non_null(strstr(d, "PELTD_UNIT=caf\xc3\xa9\n"));
}

static void test_plain_line(_unused_ void **state) {
        char buf[4096];

        capture(true);
        log_info("Managing %s.", "/x\xe0\x80\xaf");
        log_info("Managing %s.", "/caf\xc3\xa9");
        capture(false);
        assert_string_equal(stderr_text(buf, sizeof buf), "<6>Managing /x\\xe0\\x80\\xaf.\n<6>Managing /caf\xc3\xa9.\n");
}

/* A message of 2047 bytes, all invalid: every one of them is there, escaped. */
static void test_long_line(_unused_ void **state) {
        char msg[2048], want[2048 * 4 + 16], buf[16384];
        size_t n;

        memset(msg, 0xff, sizeof msg - 1);
        msg[sizeof msg - 1] = 0;
        n = (size_t) snprintf(want, sizeof want, "<3>");
        n += utf8_escape_to(msg, want + n, sizeof want - n);
        snprintf(want + n, sizeof want - n, "\n");
        capture(true);
        log_error("%s", msg);
        capture(false);
        assert_string_equal(stderr_text(buf, sizeof buf), want);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_struct_fields),
                cmocka_unit_test(test_plain_line),
                cmocka_unit_test(test_long_line),
        };

        if (geteuid() != 0) {
                printf("SKIP: a mount namespace and a tmpfs on /run need root\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, setup, NULL);
}
