/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What the libFuzzer targets share: the entry points, a check that aborts (so libFuzzer records
 * the input) whatever NDEBUG says, the input as a C string, and a private scratch directory for
 * the loaders that take a path. run-fuzzers.sh points TMPDIR at a directory it removes at the end;
 * the scratch directory is also removed at a normal exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peltd/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* stderr as it was at start: run-fuzzers.sh closes the targets' stderr (-close_fd_mask=2). */
static int fuzz_report_fd = STDERR_FILENO;

#define FUZZ_CHECK(expr)                                                                          \
        do {                                                                                      \
                if (!(expr)) {                                                                    \
                        dprintf(fuzz_report_fd, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                  \
                }                                                                                 \
        } while (0)

static inline void *fuzz_nonnull(void *p) {
        if (!p) {
                fprintf(stderr, "out of memory\n");
                abort();
        }
        return p;
}

/* The input as a NUL-terminated string (cut at its first NUL, as a reader of text would see it). */
static inline char *fuzz_string(const uint8_t *data, size_t size) {
        char *s = fuzz_nonnull(malloc(size + 1));

        /* Not strndup(): it may look at data[size] (ASan's strict_string_checks say so). */
        if (size > 0)
                memcpy(s, data, size);
        s[size] = 0;
        return s;
}

/*
 * Every message formatted (debug included), so the log lines of odd input are exercised too;
 * PELTD_LOG_LEVEL overrides.
 */
static inline void fuzz_log_setup(void) {
        const char *e = getenv("PELTD_LOG_LEVEL");

        /* LLVMFuzzerInitialize() runs before libFuzzer closes stderr. */
        fuzz_report_fd = dup(STDERR_FILENO);
        if (fuzz_report_fd < 0)
                fuzz_report_fd = STDERR_FILENO;
        log_set_max_level(LOG_DEBUG);
        if (e)
                log_parse_environment();
}

static inline int fuzz_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

/* Removes path and everything below it (not following symlinks). */
static inline void fuzz_rm_rf(const char *path) {
        (void) nftw(path, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char fuzz_dir_path[4096];

static inline void fuzz_dir_remove(void) {
        if (fuzz_dir_path[0])
                fuzz_rm_rf(fuzz_dir_path);
}

/* A directory of mode 0700 only this process uses (made once, removed at exit). */
static inline const char *fuzz_private_dir(void) {
        const char *tmp = getenv("TMPDIR");

        if (fuzz_dir_path[0])
                return fuzz_dir_path;
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/peltd-test-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        FUZZ_CHECK(mkdtemp(fuzz_dir_path));
        FUZZ_CHECK(chmod(fuzz_dir_path, 0700) == 0);
        atexit(fuzz_dir_remove);
        return fuzz_dir_path;
}

/* Writes data to path (created with mode, or truncated), making the directories above it below base. */
static inline void fuzz_write_file(const char *base, const char *path, const void *data, size_t size, mode_t mode) {
        char p[4096];
        int fd;

        FUZZ_CHECK((size_t) snprintf(p, sizeof p, "%s/%s", base, path) < sizeof p);
        for (char *slash = strchr(p + strlen(base) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                FUZZ_CHECK(mkdir(p, 0755) == 0 || errno == EEXIST);
                *slash = '/';
        }
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        FUZZ_CHECK(fd >= 0);
        FUZZ_CHECK(fchmod(fd, mode) == 0);
        FUZZ_CHECK(write(fd, data, size) == (ssize_t) size);
        FUZZ_CHECK(close(fd) == 0);
}

/*
 * Splits data at each sep byte into at most max pieces (the last takes the rest); returns how many.
 * The pieces point into data; they are not NUL-terminated.
 */
typedef struct FuzzPiece {
        const uint8_t *data;
        size_t size;
} FuzzPiece;

static inline size_t fuzz_split(const uint8_t *data, size_t size, uint8_t sep, FuzzPiece *ret, size_t max) {
        size_t n = 0;

        while (n + 1 < max) {
                const uint8_t *e = memchr(data, sep, size);

                if (!e)
                        break;
                ret[n++] = (FuzzPiece){ data, (size_t) (e - data) };
                size -= (size_t) (e - data) + 1;
                data = e + 1;
        }
        ret[n++] = (FuzzPiece){ data, size };
        return n;
}
