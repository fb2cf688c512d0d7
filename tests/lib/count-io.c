/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the daemon does to one file, counted for its tests, by LD_PRELOAD (built only with the tests):
 *
 *   PELTD_COUNT_PATH=PATH  the file watched (the state file)
 *   PELTD_COUNT_FILE=LOG   a line is appended to LOG for each rename() or renameat() onto PATH
 *                          ("rename") and each unlink() or unlinkat() of PATH ("unlink"), made or not
 *                          (a name relative to a directory's fd is that directory's path, then the name)
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
static int (*real_renameat)(int olddirfd, const char *old, int newdirfd, const char *new);
static int (*real_unlinkat)(int dirfd, const char *path, int flags);

__attribute__((constructor)) static void count_init(void) {
        watched = getenv("PELTD_COUNT_PATH");
        log_file = getenv("PELTD_COUNT_FILE");
        real_rename = (int (*)(const char *, const char *)) dlsym(RTLD_NEXT, "rename");
        real_unlink = (int (*)(const char *)) dlsym(RTLD_NEXT, "unlink");
        real_renameat = (int (*)(int, const char *, int, const char *)) dlsym(RTLD_NEXT, "renameat");
        real_unlinkat = (int (*)(int, const char *, int)) dlsym(RTLD_NEXT, "unlinkat");
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

/* name relative to dirfd, as a path: the directory's (from /proc/self/fd) then the name. */
static void note_at(const char *what, int dirfd, const char *name) {
        char link[64], dir[4096], path[8192];
        ssize_t n;

        if (name[0] == '/' || dirfd == AT_FDCWD) {
                note(what, name);
                return;
        }
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        n = readlink(link, dir, sizeof dir - 1);
        if (n < 0)
                return;
        dir[n] = 0;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        note(what, path);
}

int renameat(int olddirfd, const char *old, int newdirfd, const char *new) {
        note_at("rename\n", newdirfd, new);
        return real_renameat(olddirfd, old, newdirfd, new);
}

int unlinkat(int dirfd, const char *path, int flags) {
        note_at("unlink\n", dirfd, path);
        return real_unlinkat(dirfd, path, flags);
}
