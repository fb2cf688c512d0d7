/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>

#include "peltd/kubelet-checkpoint.h"

/*
 * kubelet's CPU manager checkpoint read from its file (KubeletCpuManagerState=), trusted as a
 * configuration file is: opened O_NONBLOCK, a symlink followed, then the file reached must be a
 * regular file of at most 1 MiB, root's (or peltd's user's) and not writable by group or others.
 */

/* Which version of the file was read: kubelet replaces it by rename, an editor may write in place. */
typedef struct KubeletStateStamp {
        bool exists;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime; /* ctime: a chmod or chown counts too (trust may change) */
} KubeletStateStamp;

/* The stamp of path now (following a symlink); exists false when it is not there. 0 or -errno. */
int kubelet_state_stamp(const char *path, KubeletStateStamp *ret);
bool kubelet_state_stamp_equal(const KubeletStateStamp *a, const KubeletStateStamp *b);

/*
 * Reads and parses the checkpoint at path. Returns 0 with *ret; -ENOENT when there is no such
 * file (no kubelet on this node); -ENOMEM; any other error (-EPERM: not trusted, -EINVAL: does
 * not parse, -EIO, ...) with *ret_error a sentence saying why, without the path (the caller names
 * it). *ret_stamp is that of the bytes read, set with 0 and -EINVAL. Never logs above debug.
 */
int kubelet_state_load(const char *path, KubeletCheckpoint **ret, KubeletStateStamp *ret_stamp, char **ret_error);
