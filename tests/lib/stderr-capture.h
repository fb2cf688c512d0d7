/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * What code under test logs, into a file while it runs: stderr_capture_begin() sends stderr there,
 * stderr_capture_end() puts it back. stderr_capture_teardown() is a cmocka teardown for tests that
 * may fail before their end: stderr back, and the file shown, each line after a prefix.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int capture_saved_stderr = -1;
static char capture_path[400];
static const char *capture_prefix = "";

/* stderr into path (truncated), until stderr_capture_end(); shown after prefix by the teardown. */
static inline int stderr_capture_begin(const char *path, const char *prefix) {
        int fd;

        fflush(stderr);
        snprintf(capture_path, sizeof capture_path, "%s", path);
        capture_prefix = prefix;
        if (capture_saved_stderr < 0)
                capture_saved_stderr = dup(STDERR_FILENO);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || capture_saved_stderr < 0 || dup2(fd, STDERR_FILENO) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        close(fd);
        return 0;
}

static inline int stderr_capture_end(void) {
        int r;

        if (capture_saved_stderr < 0)
                return 0;
        fflush(stderr);
        r = dup2(capture_saved_stderr, STDERR_FILENO) < 0 ? -1 : 0;
        close(capture_saved_stderr);
        capture_saved_stderr = -1;
        return r;
}

/* A teardown: where a test left stderr in its file, back, and what was said shown. */
static inline int stderr_capture_teardown(void **state) {
        char cmd[600];

        (void) state;
        if (capture_saved_stderr < 0)
                return 0;
        if (stderr_capture_end() < 0)
                return -1;
        snprintf(cmd, sizeof cmd, "sed 's/^/%s/' '%s' >&2", capture_prefix, capture_path);
        return system(cmd) == 0 ? 0 : -1;
}
