/* SPDX-License-Identifier: GPL-2.0-only */
/* kubelet's CPU manager checkpoint from its file (kubelet-state.h); its bytes are parsed in core. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peltd/fs-util.h"
#include "peltd/kubelet-state.h"
#include "peltd/log.h"
#include "peltd/macro.h"
#include "peltd/parse.h"
#include "peltd/rootdir.h"

static void stamp_from(const struct stat *st, KubeletStateStamp *ret) {
        *ret = (KubeletStateStamp){
                .exists = true,
                .dev = st->st_dev,
                .ino = st->st_ino,
                .size = st->st_size,
                .mtime = st->st_mtim,
                .ctime = st->st_ctim,
        };
}

int kubelet_state_stamp(const char *path, KubeletStateStamp *ret) {
        struct stat st;

        if (stat(path, &st) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return negative_errno();
                *ret = (KubeletStateStamp){ .exists = false };
                return 0;
        }
        stamp_from(&st, ret);
        return 0;
}

static bool timespec_equal(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

bool kubelet_state_stamp_equal(const KubeletStateStamp *a, const KubeletStateStamp *b) {
        if (a->exists != b->exists)
                return false;
        return !a->exists || (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
                              timespec_equal(&a->mtime, &b->mtime) && timespec_equal(&a->ctime, &b->ctime));
}

/* *ret_error = text, or -ENOMEM. Returns r. */
static int say(int r, char **ret_error, const char *text) {
        *ret_error = strdup(text);
        return *ret_error ? r : -ENOMEM;
}

/* The file's bytes, checked as a configuration file is (fs-util.h). */
static int read_trusted(const char *path, char **ret, size_t *ret_size, KubeletStateStamp *ret_stamp, char **ret_error) {
        _cleanup_close_ int fd = -1;
        const char *why = "is not trusted";
        struct stat st;
        int r;

        fd = open_trusted(path, false, INI_FILE_MAX, &why);
        if (fd == -ENOENT || fd == -ENOTDIR)
                return -ENOENT;
        if (fd == -EPERM) {
                _cleanup_free_ char *t = NULL;

                if (asprintf(&t, "refusing it: it %s (it must be a regular file of at most 1 MiB, root's, "
                                 "and not writable by group or others)", why) < 0)
                        return -ENOMEM;
                return say(fd, ret_error, t);
        }
        if (fd < 0)
                return say(fd, ret_error, strerror(-fd));
        if (fstat(fd, &st) < 0)
                return say(negative_errno(), ret_error, strerror(errno));
        /* At most 1 MiB and one byte more: grown since the check, it is still too large. */
        r = read_full_fd_max(fd, INI_FILE_MAX, ret, ret_size);
        if (r == -EFBIG)
                return say(-EPERM, ret_error, "refusing it: it is too large (at most 1 MiB)");
        if (r < 0)
                return r == -ENOMEM ? r : say(r, ret_error, strerror(-r));
        stamp_from(&st, ret_stamp);
        return 0;
}

int kubelet_state_load(const char *path, KubeletCheckpoint **ret, KubeletStateStamp *ret_stamp, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        KubeletStateStamp stamp;
        size_t size = 0;
        int r;

        *ret_error = NULL;
        r = read_trusted(path, &text, &size, &stamp, ret_error);
        if (r == -ENOENT)
                log_debug("%s is not there: no kubelet CPU manager on this node.", path);
        if (r < 0)
                return r;
        /* Read, whether it parses or not: the stamp is of these bytes. */
        *ret_stamp = stamp;
        return kubelet_checkpoint_parse(text, size, ret, ret_error);
}
