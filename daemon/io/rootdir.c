/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "peltd/parse.h"
#include "peltd/rootdir.h"

#define READ_FULL_MAX (4U * 1024 * 1024)

static const char *relative(const char *path) {
        while (*path == '/')
                path++;
        return *path ? path : ".";
}

int rootdir_open(const char *path, RootDir **ret) {
        _cleanup_free_ RootDir *r = NULL;
        int fd;

        r = new0(RootDir, 1);
        if (!r)
                return -ENOMEM;
        r->path = strdup(path);
        if (!r->path)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                int e = negative_errno();
                free(r->path);
                return e;
        }
        r->fd = fd;
        *ret = TAKE_PTR(r);
        return 0;
}

RootDir *rootdir_free(RootDir *r) {
        if (!r)
                return NULL;
        if (r->fd >= 0)
                close(r->fd);
        free(r->path);
        free(r);
        return NULL;
}

static void trace(const RootDir *r, const char *op, const char *path) {
        if (r->trace)
                r->trace(r->trace_userdata, op, path);
}

int rootdir_open_file(const RootDir *r, const char *path, int flags) {
        int fd;

        trace(r, flags & O_DIRECTORY ? "opendir" : "open", path);
        fd = openat(r->fd, relative(path), flags | O_CLOEXEC);

        return fd < 0 ? negative_errno() : fd;
}

/*
 * What tells one mount from another: the mount id (statx STATX_MNT_ID, 5.8), else the device
 * (older kernels: a bind mount of the same filesystem goes unseen there, one of another is seen).
 */
static int mount_key(int fd, uint64_t *ret) {
        struct statx sx;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) < 0)
                return negative_errno();
        if (sx.stx_mask & STATX_MNT_ID)
                *ret = sx.stx_mnt_id;
        else
                *ret = makedev(sx.stx_dev_major, sx.stx_dev_minor);
        return 0;
}

/* 0 when fd lies on the mount `root` does, -EXDEV when on another (RESOLVE_NO_XDEV's answer). */
static int same_mount(int fd, uint64_t root) {
        uint64_t k;
        int r = mount_key(fd, &k);

        if (r < 0)
                return r;
        return k == root ? 0 : -EXDEV;
}

/* The last component: looked at (O_PATH) before it is opened, so a mount on it is never opened, let alone truncated. */
static int open_last(int at, const char *part, int flags, uint64_t root) {
        _cleanup_close_ int path_fd = -1, fd = -1;
        struct stat a, b;
        int r;

        path_fd = openat(at, part, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (path_fd < 0)
                return negative_errno();
        r = same_mount(path_fd, root);
        if (r < 0)
                return r;
        fd = openat(at, part, flags | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        /* The same file as the one looked at: nothing was mounted on it in between. */
        if (fstat(path_fd, &a) < 0 || fstat(fd, &b) < 0)
                return negative_errno();
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return -EXDEV;
        return TAKE_FD(fd);
}

/*
 * Without openat2() (before 5.6, or a filter that refuses it): one component at a time, each
 * opened O_NOFOLLOW relative to the last, so no symlink is followed, and each on the root's own
 * mount, so no mount is crossed (as RESOLVE_NO_XDEV); ".." never gets here (paths are checked
 * before they are written) but is refused as well.
 */
static int open_beneath_walk(int dirfd, const char *path, int flags) {
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int cur = -1;
        char *save = NULL, *part, *next;
        int at = dirfd, r;
        uint64_t root;

        if (!copy)
                return -ENOMEM;
        r = mount_key(dirfd, &root);
        if (r < 0)
                return r;
        part = strtok_r(copy, "/", &save);
        if (!part)
                return -EINVAL;
        for (;;) {
                int fd;

                if (streq(part, ".."))
                        return -EXDEV;
                next = strtok_r(NULL, "/", &save);
                if (!next)
                        return open_last(at, part, flags, root);
                fd = openat(at, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        struct stat st;

                        /* O_DIRECTORY|O_NOFOLLOW says ENOTDIR for a link: -ELOOP, as openat2 says. */
                        if (errno == ENOTDIR && fstatat(at, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                                return -ELOOP;
                        return negative_errno();
                }
                if (cur >= 0)
                        close(cur);
                at = cur = fd;
                r = same_mount(cur, root);
                if (r < 0)
                        return r;
                part = next;
        }
}

int rootdir_open_beneath(const RootDir *r, const char *path, int flags) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        long fd = syscall(SYS_openat2, r->fd, relative(path), &how, sizeof how);

        if (fd >= 0)
                return (int) fd;
        if (errno != ENOSYS && errno != EPERM)
                return negative_errno();
        /* EPERM: a seccomp filter that does not know openat2 (or a real EPERM, which the walk meets again). */
        return open_beneath_walk(r->fd, relative(path), flags);
}

int rootdir_opendir(const RootDir *r, const char *path, DIR **ret) {
        int fd = rootdir_open_file(r, path, O_RDONLY | O_DIRECTORY);
        DIR *d;

        if (fd < 0)
                return fd;
        d = fdopendir(fd);
        if (!d) {
                int e = negative_errno();
                close(fd);
                return e;
        }
        *ret = d;
        return 0;
}

bool rootdir_exists(const RootDir *r, const char *path) {
        return faccessat(r->fd, relative(path), F_OK, 0) == 0;
}

bool rootdir_is_dir(const RootDir *r, const char *path) {
        struct stat st;

        return fstatat(r->fd, relative(path), &st, 0) == 0 && S_ISDIR(st.st_mode);
}

int read_full_fd(int fd, char **ret, size_t *ret_size) {
        return read_full_fd_max(fd, READ_FULL_MAX, ret, ret_size);
}

int read_full_fd_max(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        /* Room for one byte more than max, to see that there is one, and the NUL. */
        size_t size = 0, allocated = 0, cap = max + 2;

        for (;;) {
                ssize_t n;

                if (allocated - size < 4096 && allocated < cap) {
                        size_t na = MIN(MAX(allocated * 2, (size_t) 4096), cap);
                        char *nb = realloc(buf, na);

                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        allocated = na;
                }
                n = read(fd, buf + size, allocated - size - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > max)
                        return -EFBIG;
        }
        buf[size] = 0;
        if (ret_size)
                *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

ssize_t pread_string(int fd, char *buf, size_t size) {
        size_t n = 0;

        if (size < 2)
                return -EINVAL;
        while (n < size - 1) {
                ssize_t k = pread(fd, buf + n, size - 1 - n, (off_t) n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        /* Full: whether more follows is unknown, and a prefix must never pass for the file. */
        if (n >= size - 1)
                return -EFBIG;
        buf[n] = 0;
        return (ssize_t) n;
}

void readbuf_done(ReadBuf *b) {
        free(b->data);
        *b = (ReadBuf) {};
}

ssize_t pread_full(int fd, ReadBuf *b) {
        size_t n = 0;

        for (;;) {
                ssize_t k;

                /* Room for one more byte and the NUL; a file as long as the buffer costs one growth. */
                if (b->allocated - n < 2) {
                        size_t na = b->allocated ? b->allocated * 2 : 256;
                        char *nd;

                        if (na > READ_FULL_MAX + 1)
                                return -EFBIG;
                        nd = realloc(b->data, na);
                        if (!nd)
                                return -ENOMEM;
                        b->data = nd;
                        b->allocated = na;
                }
                k = pread(fd, b->data + n, b->allocated - 1 - n, (off_t) n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        b->data[n] = 0;
        return (ssize_t) n;
}

int rootdir_read_string(const RootDir *r, const char *path, char **ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *s = NULL;
        size_t n;
        int k;

        fd = rootdir_open_file(r, path, O_RDONLY);
        if (fd < 0)
                return fd;
        k = read_full_fd(fd, &s, &n);
        if (k < 0)
                return k;
        /* Cut at an embedded NUL (some sysfs list files are NUL-terminated), then trailing space. */
        strstrip_trailing(s);
        *ret = TAKE_PTR(s);
        return 0;
}

int rootdir_read_u64(const RootDir *r, const char *path, uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        int k = rootdir_read_string(r, path, &s);

        return k < 0 ? k : safe_atou64(s, ret);
}

int rootdir_read_int(const RootDir *r, const char *path, int *ret) {
        _cleanup_free_ char *s = NULL;
        int k = rootdir_read_string(r, path, &s);

        return k < 0 ? k : safe_atoi(s, ret);
}

int rootdir_read_cpulist(const RootDir *r, const char *path, CpuMask *ret) {
        _cleanup_free_ char *s = NULL;
        int k = rootdir_read_string(r, path, &s);

        return k < 0 ? k : cpumask_parse_list(s, ret);
}

int rootdir_read_cpumap(const RootDir *r, const char *path, CpuMask *ret) {
        _cleanup_free_ char *s = NULL;
        int k = rootdir_read_string(r, path, &s);

        return k < 0 ? k : cpumask_parse_hex(s, ret);
}

int rootdir_write_string(const RootDir *r, const char *path, const char *value) {
        _cleanup_close_ int fd = -1;
        size_t len = strlen(value);
        ssize_t n;

        trace(r, "write", path);
        /* O_TRUNC as the shell's ">" does: kernfs ignores it, a fixture's regular file needs it. */
        fd = rootdir_open_beneath(r, path, O_WRONLY | O_TRUNC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return fd;
        /* An empty write reaches no kernfs handler: empty values go as a newline ("" to cpuset.cpus on v2). */
        if (len == 0) {
                value = "\n";
                len = 1;
        }
        n = write(fd, value, len);
        if (n < 0)
                return negative_errno();
        if ((size_t) n != len)
                return -EIO;
        return 0;
}
