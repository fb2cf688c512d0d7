/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Files peltd obeys (the configuration, the state file, its directory and lock) must be what root
 * wrote (peltd.conf(5); SECURITY.md). A regular file (a directory where one is
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

/* The same, into the directory at dfd: name is a file name in it. */
int write_file_atomic_at(int dfd, const char *name, const char *text, size_t size, mode_t mode, bool durable);

/*
 * Opens the directory at path (absolute, or relative to the working directory) one component at a
 * time, never following a symlink that someone other than root could have made: a symlink is
 * followed only where the directory holding it is root's and writable by nobody else (/var/run ->
 * /run is fine; a link planted in /tmp or in a user's directory is refused with -EPERM and
 * *ret_reason). Returns the directory's fd, or -errno.
 */
int open_dir_safely(const char *path, const char **ret_reason);
/* open_dir_safely() from dfd (-1: the root or the working directory), counting links followed. */
int open_dir_walk(int dfd, const char *path, unsigned *links, const char **ret_reason);
