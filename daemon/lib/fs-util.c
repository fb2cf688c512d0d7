/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peltd/fs-util.h"
#include "peltd/macro.h"

static const char *type_name(mode_t m) {
        if (S_ISFIFO(m))
                return "is a FIFO";
        if (S_ISCHR(m) || S_ISBLK(m))
                return "is a device";
        if (S_ISSOCK(m))
                return "is a socket";
        if (S_ISDIR(m))
                return "is a directory";
        return "is not a regular file";
}

int fd_check_trusted(int fd, bool directory, uint64_t max_size, const char **ret_reason) {
        struct stat st;
        const char *why = NULL;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
                why = directory ? "is not a directory" : type_name(st.st_mode);
        else if (st.st_uid != 0 && st.st_uid != geteuid())
                why = "is owned by another user";
        else if (st.st_mode & (S_IWGRP | S_IWOTH))
                why = "is writable by group or others";
        else if (!directory && max_size > 0 && (uint64_t) st.st_size > max_size)
                why = "is too large";
        if (why) {
                if (ret_reason)
                        *ret_reason = why;
                return -EPERM;
        }
        return 0;
}

int open_trusted(const char *path, bool nofollow, uint64_t max_size, const char **ret_reason) {
        _cleanup_close_ int fd = -1;
        int r;

        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0));
        if (fd < 0) {
                if (errno == ELOOP && ret_reason)
                        *ret_reason = "is a symbolic link";
                return negative_errno();
        }
        r = fd_check_trusted(fd, false, max_size, ret_reason);
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}

int check_trusted_dir(const char *path, const char **ret_reason) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0) {
                if ((errno == ELOOP || errno == ENOTDIR) && ret_reason)
                        *ret_reason = errno == ELOOP ? "is a symbolic link" : "is not a directory";
                return negative_errno();
        }
        return fd_check_trusted(fd, true, 0, ret_reason);
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Whether anyone but root may change what the directory at dfd holds (a sticky bit does not help root). */
static bool writable_by_others(int dfd) {
        struct stat st;

        if (fstat(dfd, &st) < 0)
                return true;
        return (st.st_uid != 0 && (st.st_mode & S_IWUSR)) || (st.st_mode & (S_IWGRP | S_IWOTH));
}

/* One step of open_dir_safely(): dfd's entry name, a symlink followed only where root alone could have made it. */
static int open_component(int dfd, const char *name, unsigned *links, const char **ret_reason) {
        char target[PATH_MAX];
        ssize_t n;
        int fd;

        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 || (errno != ELOOP && errno != ENOTDIR))
                return fd >= 0 ? fd : negative_errno();
        n = readlinkat(dfd, name, target, sizeof target - 1);
        if (n < 0) {
                if (ret_reason)
                        *ret_reason = "is not a directory";
                return -ENOTDIR;
        }
        if (writable_by_others(dfd)) {
                if (ret_reason)
                        *ret_reason = "is reached through a symbolic link in a directory another user may write to";
                return -EPERM;
        }
        if (++*links > 40)
                return -ELOOP;
        target[n] = 0;
        return open_dir_walk(target[0] == '/' ? -1 : dfd, target, links, ret_reason);
}

int open_dir_walk(int dfd, const char *path, unsigned *links, const char **ret_reason) {
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int cur = -1;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        if (path[0] == '/' || dfd < 0)
                cur = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        else
                cur = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return negative_errno();
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int next;

                if (streq(c, "."))
                        continue;
                next = open_component(cur, c, links, ret_reason);
                if (next < 0)
                        return next;
                close(cur);
                cur = next;
        }
        return TAKE_FD(cur);
}

int open_dir_safely(const char *path, const char **ret_reason) {
        unsigned links = 0;

        return open_dir_walk(-1, path, &links, ret_reason);
}

int write_file_atomic_at(int dfd, const char *name, const char *text, size_t size, mode_t mode, bool durable) {
        _cleanup_free_ char *tmp = NULL;
        int fd, r;

        if (asprintf(&tmp, "%s.tmp", name) < 0)
                return -ENOMEM;
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        if (fd < 0 && errno == EEXIST) {
                if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
                        return negative_errno();
                fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        }
        if (fd < 0)
                return negative_errno();
        r = fchmod(fd, mode) < 0 ? negative_errno() : 0;
        if (r == 0)
                r = write_all(fd, text, size);
        if (r == 0 && durable && fsync(fd) < 0)
                r = negative_errno();
        if (close(fd) < 0 && r == 0)
                r = negative_errno();
        if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        /* The rename itself must reach the disk too. */
        if (durable)
                (void) fsync(dfd);
        return 0;
}

int write_file_atomic(const char *path, const char *text, size_t size, mode_t mode, bool durable) {
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int dfd = -1;
        const char *name;
        char *slash;

        if (!copy)
                return -ENOMEM;
        slash = strrchr(copy, '/');
        if (slash) {
                *slash = 0;
                name = slash + 1;
                dfd = open(copy[0] ? copy : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        } else {
                name = copy;
                dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        if (dfd < 0)
                return negative_errno();
        return write_file_atomic_at(dfd, name, text, size, mode, durable);
}
