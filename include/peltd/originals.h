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
        /* Entries of the file that broke a rule (original_check()), described for the log; never written. */
        char **refused;
        size_t n_refused;
} Originals;

/*
 * NULL when the entry names a file peltd places: "cpuset.cpus" (cpuset), "cpu.shares" (cpu),
 * "cpuset.cpus", "cpu.weight" or "cgroup.subtree_control" (unified) of a normalized group path
 * (no ".", "..", empty or control-character component), or AllowedCPUs / CPUWeight of a systemd
 * unit (NAME.service|slice|scope); else why not.
 */
const char *original_check(const Original *e);

/*
 * Takes the lock beside path (creating its directory, 0755, and the lock file, 0600). Returns the
 * locked fd, -EBUSY when another process holds it, or -errno.
 */
int originals_lock(const char *path);
/*
 * The same; the directory and the lock must be root's (or peltd's own user's) and writable by
 * nobody else, and the lock is never opened through a link: -EPERM or -ELOOP, with *ret_reason.
 */
int originals_lock_checked(const char *path, const char **ret_reason);

/* Loads path; a missing file is an empty set. -EBADMSG when the file does not parse. */
int originals_load(const char *path, Originals **ret);
/*
 * The same, with the reason of a refusal: the state file and its directory must pass
 * fd_check_trusted() (a regular file, root's, not writable by group or others, at most 16 MiB),
 * and the file is never opened through a link (-ELOOP) or blocking. Entries that break
 * original_check() are left out and described in refused.
 */
int originals_load_checked(const char *path, Originals **ret, const char **ret_reason);
/* Parses a state file's bytes (n of them at text, not NUL-terminated); path is where it is saved. */
int originals_parse(const char *path, const char *text, size_t n, Originals **ret);
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
