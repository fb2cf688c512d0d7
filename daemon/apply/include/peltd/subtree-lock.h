/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "peltd/cgroup-util.h"
#include "peltd/macro.h"

/*
 * One daemon per subtree (DESIGN.md, "cgroups"): two daemons never manage overlapping subtrees of
 * one machine, whatever their StateFile=. In each hierarchy peltd holds, for its lifetime, an
 * exclusive flock on the CgroupRoot directory and a shared one on each ancestor up to the mount:
 * a second daemon at the same root, below it or above it wants a lock that conflicts; daemons on
 * sibling subtrees share only the shared ones. Co-mounted hierarchies (one directory) are locked
 * once. A CgroupRoot that is not there yet is said (in those words), and only its existing
 * ancestors are locked, shared: a daemon on a sibling subtree starts, one above it does not;
 * subtree_lock_refresh() locks the directory once it is there (a second daemon waiting for the same
 * root then stops with -EBUSY), and a directory made again at that path.
 */
typedef struct SubtreeLock SubtreeLock;

/*
 * Takes the locks (never waits). -EBUSY when another process holds a conflicting one: logged, with
 * the hierarchy's directory and, where /proc/locks tells, the holder's pid. Other errors logged too.
 */
int subtree_lock(const CgroupFs *fs, const char *root, SubtreeLock **ret);

/*
 * Once a round: where the directory locked exclusively is no longer the one at CgroupRoot's path
 * (it appeared, or was removed and made again), locks the new one. Returns 0 when nothing moved, 1
 * when a lock moved (logged at debug), -EBUSY (logged) when another process holds the new
 * directory: the caller stops.
 */
int subtree_lock_refresh(SubtreeLock *l);

/*
 * At a reload that changes CgroupRoot=: the locks of the new root, every hierarchy or none (on
 * failure, -EBUSY logged, the old root's locks are kept).
 */
int subtree_lock_set_root(SubtreeLock *l, const char *root);

const char *subtree_lock_root(const SubtreeLock *l);

/* Releases every lock. */
SubtreeLock *subtree_lock_free(SubtreeLock *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(SubtreeLock *, subtree_lock_free);
#define _cleanup_subtree_lock_ _cleanup_(subtree_lock_freep)

/*
 * The pid holding a flock on the file (dev, ino), from /proc/locks text `s` (one of its lines); 0
 * when none is listed. Pure, for tests and the fuzzer.
 */
pid_t proc_locks_find_holder(const char *s, dev_t dev, ino_t ino);
