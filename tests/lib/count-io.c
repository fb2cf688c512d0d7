/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the daemon does to one file, counted for its tests, by LD_PRELOAD (built only with the tests):
 *
 *   PELTD_COUNT_PATH=PATH  the file watched (the state file)
 *   PELTD_COUNT_FILE=LOG   a line is appended to LOG for each rename() onto PATH ("rename") and each
 *                          unlink() of PATH ("unlink"), made or not
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *watched, *log_file;
static int (*real_rename)(const char *old, const char *new);
static int (*real_unlink)(const char *path);

__attribute__((constructor)) static void count_init(void) {
        watched = getenv("PELTD_COUNT_PATH");
        log_file = getenv("PELTD_COUNT_FILE");
        real_rename = (int (*)(const char *, const char *)) dlsym(RTLD_NEXT, "rename");
        real_unlink = (int (*)(const char *)) dlsym(RTLD_NEXT, "unlink");
}

static void note(const char *what, const char *path) {
        int saved = errno, fd;

        if (!watched || !log_file || strcmp(path, watched) != 0)
                return;
        fd = open(log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd >= 0) {
                (void) !write(fd, what, strlen(what));
                close(fd);
        }
        errno = saved;
}

int rename(const char *old, const char *new) {
        note("rename\n", new);
        return real_rename(old, new);
}

int unlink(const char *path) {
        note("unlink\n", path);
        return real_unlink(path);
}
