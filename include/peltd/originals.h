/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>

#include "peltd/macro.h"

/*
 * The state file: for every cgroup file (or systemd unit property) peltd has changed, the value it
 * held before peltd's first change and the value peltd wrote last. It is rewritten (temporary
 * file, fsync, rename; mode 0600) BEFORE each write, so a crash at any point leaves a file that
 * names every value that may have been changed. A lock file beside it (STATE.lock) is held for the
 * daemon's lifetime and by --restore, so two of them never race.
 *
 * The format is JSON: {"version": 1, "entries": [{"hierarchy", "group", "file", "original",
 * "written"}]}. "hierarchy" names where the group lives ("cpuset", "cpu" on v1, "unified" on v2,
 * "systemd" for unit properties, where "group" is the unit and "file" the property).
 */

typedef struct Original {
        char *hierarchy;
        char *group;
        char *file;
        char *original;
        char *written;
} Original;

typedef struct Originals {
        char *path;
        Original *entries;
        size_t n_entries;
} Originals;

/*
 * Takes the lock beside path (creating its directory, 0755, and the lock file, 0600). Returns the
 * locked fd, -EBUSY when another process holds it, or -errno.
 */
int originals_lock(const char *path);

/* Loads path; a missing file is an empty set. -EBADMSG when the file does not parse. */
int originals_load(const char *path, Originals **ret);
Originals *originals_free(Originals *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Originals *, originals_free);
#define _cleanup_originals_ _cleanup_(originals_freep)

const Original *originals_find(const Originals *o, const char *hierarchy, const char *group, const char *file);

/*
 * Records that `written` is about to be written where `original` was found, and saves the file.
 * An existing entry keeps its original and takes the new written value (the file is not saved
 * again when the entry holds that value already). On failure nothing is
 * recorded (in memory or on disk) and the caller must not write.
 */
int originals_record(Originals *o, const char *hierarchy, const char *group, const char *file, const char *original,
                     const char *written);

/* Drops an entry (restored, or no longer ours) and saves. */
int originals_forget(Originals *o, const char *hierarchy, const char *group, const char *file);

/* Writes the set to disk (atomically); with no entries, removes the file. */
int originals_save(const Originals *o);
