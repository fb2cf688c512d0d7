/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"

/*
 * Every read of /proc, /sys and cgroupfs goes through a RootDir: a directory fd that paths are
 * resolved under. Production uses "/"; tests point it at a fixture tree or a private cgroup subtree.
 * Paths are relative to the root; a leading '/' is ignored ("sys/devices/..." == "/sys/devices/...").
 *
 * Errors are negative errno values; these helpers never log.
 */
typedef struct RootDir {
        int fd;
        char *path;
        /*
         * Tests count the I/O that goes through a root: when set, called for every file opened to be
         * read ("open"), directory opened to be listed ("opendir") and file written ("write"), with
         * the path as given. NULL in the daemon.
         */
        void (*trace)(void *userdata, const char *op, const char *path);
        void *trace_userdata;
} RootDir;

int rootdir_open(const char *path, RootDir **ret);
RootDir *rootdir_free(RootDir *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(RootDir *, rootdir_free);
#define _cleanup_rootdir_ _cleanup_(rootdir_freep)

/* Opens a file under the root (O_CLOEXEC added); returns the fd or -errno. */
int rootdir_open_file(const RootDir *r, const char *path, int flags);
int rootdir_opendir(const RootDir *r, const char *path, DIR **ret);
static inline void rootdir_closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(rootdir_closedirp)
bool rootdir_exists(const RootDir *r, const char *path);
bool rootdir_is_dir(const RootDir *r, const char *path);

/*
 * Reads a whole (small) file, strips trailing whitespace and NUL bytes (sysfs list files may end
 * in NUL), and returns a NUL-terminated string. Files over 4 MiB are refused with -EFBIG.
 */
int rootdir_read_string(const RootDir *r, const char *path, char **ret);
int rootdir_read_u64(const RootDir *r, const char *path, uint64_t *ret);
int rootdir_read_int(const RootDir *r, const char *path, int *ret);
/* A CPU list file ("0-3,8"); -EINVAL when it does not parse. */
int rootdir_read_cpulist(const RootDir *r, const char *path, CpuMask *ret);
/* A CPU hex map file ("ff,ffffffff"). */
int rootdir_read_cpumap(const RootDir *r, const char *path, CpuMask *ret);

/*
 * Opens a file under the root without leaving it, without following any symlink and without
 * crossing a mount on the way (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV; where the kernel has no openat2, O_NOFOLLOW one
 * component at a time, each checked to be on the root's mount). -ELOOP for a symlink, -EXDEV for
 * a path that would leave the root or cross a mount (a bind mount inside the hierarchy).
 */
int rootdir_open_beneath(const RootDir *r, const char *path, int flags);

/*
 * Writes value with one write() (as cgroupfs wants) to an existing file, truncating it as the
 * shell's ">" does; an empty value is written as "\n" (a zero-length write reaches no kernfs handler).
 * The file is opened with rootdir_open_beneath(): peltd's writes never follow a link.
 */
int rootdir_write_string(const RootDir *r, const char *path, const char *value);

/*
 * Reads all of fd from offset 0 with pread into buf (size includes room for the NUL), for files
 * whose length has a known bound (a single number). A file that fills the buffer is -EFBIG, never
 * cut silently: buf must be longer than the bound by at least one byte beyond the NUL.
 */
ssize_t pread_string(int fd, char *buf, size_t size);

/*
 * A buffer for whole-file reads of kept-open files: it grows to the longest file read through it
 * and stays, so a steady round allocates nothing. Zero-initialized is empty.
 */
typedef struct ReadBuf {
        char *data;
        size_t allocated;
} ReadBuf;

void readbuf_done(ReadBuf *b);

/*
 * Reads all of fd from offset 0 with pread, to EOF, into b, growing it as needed (files over 4 MiB:
 * -EFBIG), and NUL-terminates it. Returns the length or -errno; b->data stays valid until the next
 * read through b.
 */
ssize_t pread_full(int fd, ReadBuf *b);
/* Reads all of fd from its current position into a new string (may be large, e.g. tasks files); over 4 MiB: -EFBIG. */
int read_full_fd(int fd, char **ret, size_t *ret_size);
/* The same with a bound of max bytes: a file of max bytes is read, one of max + 1 is -EFBIG. */
int read_full_fd_max(int fd, size_t max, char **ret, size_t *ret_size);
