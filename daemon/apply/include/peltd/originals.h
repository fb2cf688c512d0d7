/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>

#include "peltd/macro.h"

/*
 * The state file: for every cgroup file (or systemd unit property) peltd has changed, the value it
 * held before peltd's first change and the value peltd wrote last. Changes are made in memory
 * (originals_put(), originals_drop()) and saved together by originals_commit() (temporary file,
 * fsync, rename; mode 0600): once for all the writes of a round, BEFORE any of them, so a crash
 * at any point leaves a file that names every value that may have been changed. A lock file beside
 * it (STATE.lock) is held for the daemon's lifetime and by --restore, so two of them never race.
 *
 * The format is JSON: {"version": 1, "entries": [{"hierarchy", "group", "file", "original",
 * "written"}]}. "hierarchy" and "file" name a place of a value of the table of what peltd writes
 * (apply-values.h): "hierarchy" is where the group lives ("cpuset", "cpu" on v1, "unified" on v2,
 * "systemd" for unit properties, where "group" is the unit and "file" the property).
 */

/*
 * The state file's size limit, the writer's and the reader's: 16 MiB. An entry is about 150
 * bytes (more over deep chains of groups), so this holds some 100,000 recorded files, far more
 * than any machine's placed groups; a bigger file is not one peltd wrote.
 */
#define STATE_FILE_MAX ((size_t) 16 * 1024 * 1024)

typedef struct Original {
        char *hierarchy;
        char *group;
        char *file;
        char *original;
        char *written;
} Original;

typedef struct OriginalUndo OriginalUndo;

typedef struct Originals {
        char *path;
        Original *entries;
        size_t n_entries;
        /*
         * Entries of the file that broke a rule (not an object of five strings, a key given twice,
         * a NUL in a string, original_check()), described for the log ("entry N: why") and their
         * bytes as the file had them: never written to a cgroup, saved back with the file so that
         * nothing recorded is lost (an administrator removes them).
         */
        char **refused;
        char **refused_json;
        size_t n_refused;
        unsigned n_saves;            /* times the file was written or removed (the tests count them) */

        /* originals.c's own: the entries' capacity, an index by key, the changes since the last save. */
        size_t allocated;
        uint32_t *index;             /* open addressing, linear probing: entry number + 1, 0 for none */
        size_t index_size;           /* a power of two, at least twice n_entries */
        OriginalUndo *undo;
        size_t n_undo, allocated_undo;
} Originals;

/*
 * NULL when the entry names a file peltd places (a place of the table, apply-values.h):
 * "cpuset.cpus" (cpuset), "cpu.shares" (cpu), "cpuset.cpus", "cpu.weight" or
 * "cgroup.subtree_control" (unified) of a normalized group path (no ".", "..", empty or
 * control-character component), or AllowedCPUs / CPUWeight of a systemd unit
 * (NAME.service|slice|scope); else why not.
 */
const char *original_check(const Original *e);

/*
 * Takes the lock beside path (creating its directory, 0755, and the lock file, 0600). Returns the
 * locked fd, -EBUSY when another process holds it, or -errno. The directory and the lock must be
 * root's (or peltd's own user's) and writable by nobody else, and the lock is never opened through
 * a link: -EPERM or -ELOOP, with *ret_reason (ret_reason may be NULL).
 */
int originals_lock_checked(const char *path, const char **ret_reason);

/*
 * Loads path; a missing file is an empty set. -EBADMSG when the file does not parse. The state
 * file and its directory must pass fd_check_trusted() (a regular file, root's, not writable by
 * group or others, at most STATE_FILE_MAX bytes), and the file is never opened through a link (-ELOOP) or
 * blocking: else -EPERM or -ELOOP with *ret_reason (ret_reason may be NULL). -EBADMSG only for a
 * file that is not a state file as a whole (not JSON, no version 1, no entries array, a root key
 * given twice); an entry that breaks a rule is refused on its own (refused) and the rest are taken.
 */
int originals_load_checked(const char *path, Originals **ret, const char **ret_reason);
/* Parses a state file's bytes (n of them at text, not NUL-terminated); path is where it is saved. */
int originals_parse(const char *path, const char *text, size_t n, Originals **ret);
Originals *originals_free(Originals *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Originals *, originals_free);
#define _cleanup_originals_ _cleanup_(originals_freep)

/* The entry of a file, or NULL; a hash lookup (the set may hold many thousands). */
const Original *originals_find(const Originals *o, const char *hierarchy, const char *group, const char *file);

/*
 * In memory only, until originals_commit(): records that `written` is about to be written where
 * `original` was found. An existing entry keeps its original and takes the new written value.
 * Returns 0 or -ENOMEM (then nothing changed).
 */
int originals_put(Originals *o, const char *hierarchy, const char *group, const char *file, const char *original,
                  const char *written);
/* In memory only: the entry's original is now `original` (someone else's value), its written value stays. */
int originals_set_original(Originals *o, const char *hierarchy, const char *group, const char *file, const char *original);
/* In memory only: drops an entry (restored, or no longer ours); 0 also when there is none. */
int originals_drop(Originals *o, const char *hierarchy, const char *group, const char *file);

/* Whether anything changed in memory since the last save. */
bool originals_dirty(const Originals *o);

/*
 * Saves every change since the last save in one atomic write (nothing to do: 0, nothing written);
 * -EFBIG when the file would be over STATE_FILE_MAX. On failure memory keeps every change, still
 * unsaved (originals_dirty()): the next commit saves them again before anything else. So while
 * nothing is dirty, memory and disk agree, and a commit that returns 0 means every record in
 * memory is on disk. The caller must not make the writes a failed commit was for, and takes their
 * records back with originals_rollback_to().
 */
int originals_commit(Originals *o);

/* Takes back every change since the last save, in memory. */
void originals_rollback(Originals *o);

/*
 * Where the changes since the last save stand now: originals_rollback_to() takes back those made
 * after it (newest first), and keeps the older ones unsaved. A mark holds until the next save.
 */
size_t originals_mark(const Originals *o);
void originals_rollback_to(Originals *o, size_t mark);

/*
 * In memory only: a group renamed in one hierarchy (the same directory at a new path). Every entry
 * of `hierarchy` for `from` or a group below it is moved to the same place under `to`, keeping its
 * original and written values. Returns how many moved, -EEXIST (nothing moved) when an entry is at
 * one of the new keys already, or -ENOMEM (nothing moved).
 */
int originals_rename(Originals *o, const char *hierarchy, const char *from, const char *to);
