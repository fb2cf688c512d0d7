/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
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
