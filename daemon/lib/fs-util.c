/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
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

int write_file_atomic(const char *path, const char *text, size_t size, mode_t mode, bool durable) {
        _cleanup_free_ char *tmp = NULL, *dir = NULL;
        int fd, r;

        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        if (fd < 0 && errno == EEXIST) {
                if (unlink(tmp) < 0 && errno != ENOENT)
                        return negative_errno();
                fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
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
        if (r == 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        /* The rename itself must reach the disk too. */
        dir = durable ? strdup(path) : NULL;
        if (dir) {
                int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                if (dfd >= 0) {
                        (void) fsync(dfd);
                        close(dfd);
                }
        }
        return 0;
}
