/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Files peltd obeys (the configuration, the state file, its directory and lock) must be what root
 * wrote: DESIGN.md, "Configuration" and "cgroups". A regular file (a directory where one is
 * expected), owned by root or by peltd's own user, writable by nobody else (no group or other
 * write bit), and no bigger than a limit. Otherwise -EPERM, with *ret_reason a short phrase for
 * the message ("is writable by group or others", "is a FIFO", ...).
 */
int fd_check_trusted(int fd, bool directory, uint64_t max_size, const char **ret_reason);

/*
 * Opens path for reading, O_NONBLOCK (a FIFO never blocks the open; it is refused by the check
 * before anything is read) and, with nofollow, O_NOFOLLOW (-ELOOP for a symlink, with reason "is a
 * symbolic link"); then fd_check_trusted(). Returns the fd, or -errno (-ENOENT when path is not
 * there; *ret_reason is set for -EPERM and -ELOOP).
 */
int open_trusted(const char *path, bool nofollow, uint64_t max_size, const char **ret_reason);

/* The same check for a directory (lstat-free: opened O_DIRECTORY|O_NOFOLLOW). */
int check_trusted_dir(const char *path, const char **ret_reason);

/*
 * Replaces path by size bytes of text, atomically: written into "PATH.tmp", made O_EXCL|O_NOFOLLOW
 * (a file a crash left there, or a link planted there, is removed first: unlink removes a link,
 * not its target), given mode whatever the umask, fsynced with durable, renamed over path, and
 * with durable the directory fsynced too. On failure the temporary file is gone and path is as it
 * was. Returns 0 or -errno.
 */
int write_file_atomic(const char *path, const char *text, size_t size, mode_t mode, bool durable);
