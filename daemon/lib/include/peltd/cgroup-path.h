/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>

/* cgroup paths as peltd writes them: "/" or "/a/b", relative to a hierarchy's root. Pure: no I/O. */

/*
 * Normalises a cgroup path: absolute, '/'-separated, no empty, "." or ".." components (a name may
 * hold any other byte, control characters included); duplicate and trailing slashes dropped ("/a//b/" -> "/a/b"; "/" stays "/").
 * Returns -EINVAL for anything else.
 */
int cgroup_path_normalize(const char *in, char **ret);
/* True when path is root or lies below it (both normalised). */
bool cgroup_path_under(const char *path, const char *root);

/*
 * Which groups a walk selects: those under root (normalised) for which selects() says so (the
 * configuration's Groups=: config_group_filter()). Nesting is the walker's: of nested matches only
 * the topmost is taken. root and userdata are not owned.
 */
typedef struct GroupFilter {
        const char *root;
        bool (*selects)(const char *path, void *userdata);
        void *userdata;
} GroupFilter;

/* "/a/b" + "file" -> "a/b/file" relative to a hierarchy's root ("/" + "file" -> "file"). */
char *cgroup_file_path(const char *group, const char *file);
/* "/a" + "b" -> "/a/b"; "/" + "b" -> "/b". */
char *cgroup_child_path(const char *group, const char *name);
/* "/a/b" -> "/a"; "/a" -> "/"; "/" (and a path without '/') -> "/". */
char *cgroup_parent_path(const char *group);
