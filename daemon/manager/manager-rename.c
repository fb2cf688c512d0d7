/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Renamed groups: a group is its directory, wherever a rename takes it. On cgroup v1 `mv` renames a
 * group within its parent, in one hierarchy at a time (cpuset, cpu and cpuacct are separate
 * mounts, each renamed on its own); v2 renames no group. Each managed group's directory inode is
 * noted in every hierarchy, with where its records of that hierarchy are; when that directory is
 * no longer at its path, its parent's children are looked through for the same inode (kernfs
 * never reuses an inode number while the machine runs), and the records follow it: the originals
 * entries of the group and its descendants are moved to the new path (saved with the next
 * round's commit), so that a stop and --restore put back what peltd changed there. When the
 * hierarchy the groups are found in (v1 cpuacct, v2 the unified one) shows the rename, the group
 * at the new path is the same managed group: its placement and history go with it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "peltd/cgroup-path.h"
#include "peltd/log.h"

#include "manager-internal.h"

/* The state file's names of the hierarchies (cpuacct has no records: it is where groups are found). */
static const char *const hierarchy_names[_GROUP_HIER_MAX] = {
        [GROUP_HIER_CPUSET] = "cpuset",
        [GROUP_HIER_CPU] = "cpu",
        [GROUP_HIER_CPUACCT] = "cpuacct",
        [GROUP_HIER_UNIFIED] = "unified",
};

static RootDir *hierarchy_root(const Manager *m, GroupHierarchy h) {
        switch (h) {
        case GROUP_HIER_CPUSET:
                return m->fs->mode == CGROUP_MODE_V1 ? m->fs->cpuset : NULL;
        case GROUP_HIER_CPU:
                return m->fs->mode == CGROUP_MODE_V1 ? m->fs->cpu : NULL;
        case GROUP_HIER_CPUACCT:
                return m->fs->mode == CGROUP_MODE_V1 ? m->fs->cpuacct : NULL;
        case GROUP_HIER_UNIFIED:
                return m->fs->mode == CGROUP_MODE_V2 ? m->fs->unified : NULL;
        default:
                return NULL;
        }
}

/* The hierarchy the sampler finds groups in (cgroup_fs_usage_root()). */
static GroupHierarchy usage_hierarchy(const Manager *m) {
        return m->fs->mode == CGROUP_MODE_V2 ? GROUP_HIER_UNIFIED : GROUP_HIER_CPUACCT;
}

/* The inode of a group's directory in r; -ENOENT when there is none (or not a directory). */
static int dir_inode(const RootDir *r, const char *group, uint64_t *ret) {
        const char *rel = group + strspn(group, "/");
        struct stat st;

        if (fstatat(r->fd, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOENT;
        *ret = (uint64_t) st.st_ino;
        return 0;
}

void group_dirs_done(ManagedGroup *g) {
        for (size_t h = 0; h < _GROUP_HIER_MAX; h++) {
                free(g->dirs[h].path);
                g->dirs[h] = (GroupDir){};
        }
        for (size_t i = 0; i < g->n_below; i++)
                free(g->below[i].path);
        free(g->below);
        g->below = NULL;
        g->n_below = 0;
}

/* Notes the group's directory in the hierarchies where it is not known yet (new, or not there before). */
void manager_note_dirs(Manager *m, ManagedGroup *g) {
        for (GroupHierarchy h = 0; h < _GROUP_HIER_MAX; h++) {
                RootDir *r = hierarchy_root(m, h);
                GroupDir *d = &g->dirs[h];
                uint64_t ino;
                char *p;

                if (!r || d->ino != 0 || dir_inode(r, g->path, &ino) < 0)
                        continue;
                p = strdup(g->path);
                if (!p)
                        continue; /* tried again at the next look */
                free(d->path);
                *d = (GroupDir){ .ino = ino, .path = p };
        }
}

/* Where in its parent the directory with this inode is now: its path in *ret, -ENOENT when nowhere. */
static int find_renamed(const RootDir *r, const char *old, uint64_t ino, char **ret) {
        _cleanup_free_ char *parent = cgroup_parent_path(old), *dir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int k;

        if (!parent)
                return -ENOMEM;
        dir = cgroup_file_path(parent, "");
        if (!dir)
                return -ENOMEM;
        k = rootdir_opendir(r, dir, &d);
        if (k < 0)
                return k;
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                uint64_t found;

                /* kernfs gives each entry's inode number: only a match is looked at again. */
                if (de->d_type != DT_DIR || (uint64_t) de->d_ino != ino || dot_or_dot_dot(de->d_name))
                        continue;
                if (asprintf(&path, "%s%s%s", parent, streq(parent, "/") ? "" : "/", de->d_name) < 0)
                        return -ENOMEM;
                if (dir_inode(r, path, &found) >= 0 && found == ino) {
                        *ret = TAKE_PTR(path);
                        return 0;
                }
        }
        return -ENOENT;
}

/* path with its leading `from` replaced by `to` when it is at or below from, else NULL (and on ENOMEM). */
static char *moved_path(const char *path, const char *from, const char *to) {
        size_t n = strlen(from);
        char *p;

        if (!strneq(path, from, n) || (path[n] && path[n] != '/'))
                return NULL;
        return asprintf(&p, "%s%s", to, path + n) < 0 ? NULL : p;
}

/* What g knows at or below from in hierarchy h, now under to (in memory): its placed files, its descendants' directories. */
static void move_known(ManagedGroup *g, GroupHierarchy h, const char *from, const char *to) {
        for (size_t i = 0; i < g->n_placed; i++) {
                PlacedFile *f = &g->placed[i];
                char *p;

                if (!streq(f->hierarchy, hierarchy_names[h]) || !(p = moved_path(f->group, from, to)))
                        continue; /* elsewhere; or out of memory: not checked for drift there, its record moved all the same */
                free(f->group);
                f->group = p;
        }
        for (size_t i = 0; i < g->n_below; i++) {
                GroupDir *b = &g->below[i];
                char *p;

                if (b->hierarchy != h || !b->path || !(p = moved_path(b->path, from, to)))
                        continue;
                free(b->path);
                b->path = p;
        }
}

/* The records in hierarchy h at or below from follow a rename to `to`; 0, or < 0 (logged) when they cannot. */
static int move_records(Manager *m, ManagedGroup *g, GroupHierarchy h, const char *from, const char *to) {
        const char *name = hierarchy_names[h];
        int r;

        r = originals_rename(m->originals, name, from, to);
        if (r < 0)
                return log_warning_errno(r, "%s was renamed to %s in the %s hierarchy, and its recorded originals cannot follow it: %m",
                                         from, to, name);
        if (r > 0)
                log_info("%s was renamed to %s in the %s hierarchy; its recorded originals follow it.", from, to, name);
        else
                log_debug("%s was renamed to %s in the %s hierarchy.", from, to, name);
        move_known(g, h, from, to);
        return 0;
}

/* The records of g's directory in hierarchy h follow it to `to`. */
static void follow(Manager *m, ManagedGroup *g, GroupHierarchy h, char *to) {
        GroupDir *d = &g->dirs[h];

        if (move_records(m, g, h, d->path, to) < 0) {
                free(to);
                d->ino = 0; /* not looked for again */
                return;
        }
        free(d->path);
        d->path = to;
}

/* Whether g's directory in h is still where its records say; if a rename took it, they follow. */
static void check_dir(Manager *m, ManagedGroup *g, GroupHierarchy h) {
        RootDir *r = hierarchy_root(m, h);
        GroupDir *d = &g->dirs[h];
        char *to = NULL;
        uint64_t ino;
        int k;

        if (!r || d->ino == 0 || !d->path)
                return;
        k = dir_inode(r, d->path, &ino);
        if (k >= 0 && ino == d->ino)
                return;
        if (k < 0 && k != -ENOENT)
                return; /* cannot tell now: looked at again next time */
        k = find_renamed(r, d->path, d->ino, &to);
        if (k < 0) {
                /* Gone (or, unlikely, moved where it cannot be found): what a vanished group is. */
                log_debug("%s is no longer in the %s hierarchy.", d->path, hierarchy_names[h]);
                d->ino = 0;
                return;
        }
        follow(m, g, h, to);
}

/* The hierarchy of a state file's name ("cpuset", "cpu", "unified"), or _GROUP_HIER_MAX. */
static GroupHierarchy hierarchy_of(const char *name) {
        for (GroupHierarchy h = 0; h < _GROUP_HIER_MAX; h++)
                if (streq(hierarchy_names[h], name))
                        return h;
        return _GROUP_HIER_MAX;
}

static bool below_known(const ManagedGroup *g, GroupHierarchy h, const char *path) {
        for (size_t i = 0; i < g->n_below; i++)
                if (g->below[i].hierarchy == h && g->below[i].path && streq(g->below[i].path, path))
                        return true;
        return false;
}

/* Notes the directory of each descendant g placed a file of (its own cpuset, narrowed with g's), once. */
static void note_below(Manager *m, ManagedGroup *g) {
        for (size_t i = 0; i < g->n_placed; i++) {
                const PlacedFile *f = &g->placed[i];
                GroupHierarchy h = hierarchy_of(f->hierarchy);
                RootDir *r = h < _GROUP_HIER_MAX ? hierarchy_root(m, h) : NULL;
                GroupDir *b;
                uint64_t ino;
                char *p;

                if (!r || streq(f->group, g->dirs[h].path ?: g->path) || below_known(g, h, f->group) ||
                    dir_inode(r, f->group, &ino) < 0)
                        continue;
                b = realloc(g->below, (g->n_below + 1) * sizeof *b);
                if (!b)
                        return; /* noted at the next look */
                g->below = b;
                p = strdup(f->group);
                if (p)
                        g->below[g->n_below++] = (GroupDir){ .ino = ino, .path = p, .hierarchy = h };
        }
}

/*
 * The descendants' directories looked for where their records are: one a rename took elsewhere in
 * its parent takes its records along; one gone is forgotten (its records go as a vanished group's do).
 */
static void check_below(Manager *m, ManagedGroup *g) {
        size_t j = 0;

        for (size_t i = 0; i < g->n_below; i++) {
                GroupDir *b = &g->below[i];
                RootDir *r = hierarchy_root(m, b->hierarchy);
                _cleanup_free_ char *from = NULL, *to = NULL;
                uint64_t ino;
                int k;

                if (!b->path)
                        continue;
                k = r ? dir_inode(r, b->path, &ino) : -ENOENT;
                if ((k >= 0 && ino == b->ino) || (k < 0 && k != -ENOENT))
                        continue; /* there; or cannot tell now */
                /* A copy: moving the records moves b->path too. */
                from = strdup(b->path);
                if (r && from && find_renamed(r, from, b->ino, &to) >= 0 && move_records(m, g, b->hierarchy, from, to) >= 0)
                        continue;
                free(b->path);
                b->path = NULL;
        }
        /* Only now: a rename above moves the paths of the entries after it too. */
        for (size_t i = 0; i < g->n_below; i++)
                if (g->below[i].path)
                        g->below[j++] = g->below[i];
        g->n_below = j;
}

/* Every directory of g whose records peltd holds, looked for and followed. */
static void check_group(Manager *m, ManagedGroup *g) {
        for (GroupHierarchy h = 0; h < _GROUP_HIER_MAX; h++)
                check_dir(m, g, h);
        check_below(m, g);
        manager_note_dirs(m, g);
        note_below(m, g);
}

void manager_follow_renames(Manager *m) {
        for (size_t i = 0; i < m->n_groups; i++)
                check_group(m, &m->groups[i]);
}

bool manager_take_renamed(Manager *m, ManagedGroup *gone, PolicyHistory *gone_history, ManagedGroup *fresh,
                          PolicyHistory *fresh_history) {
        GroupHierarchy u = usage_hierarchy(m);
        RootDir *r = hierarchy_root(m, u);
        ManagedGroup taken;
        uint64_t ino;

        /*
         * At the same path it is made again, not renamed: a directory removed and made again may get
         * its old inode number back (the soak's churn shows it).
         */
        if (streq(gone->path, fresh->path))
                return false;
        if (!r || gone->dirs[u].ino == 0 || dir_inode(r, fresh->path, &ino) < 0 || ino != gone->dirs[u].ino)
                return false;
        log_info("%s was renamed to %s: the same group, its placement and history kept.", gone->path, fresh->path);
        /* Everything of the old entry but its path and the sampler's id, which are the new one's. */
        taken = *gone;
        taken.path = fresh->path;
        taken.id = fresh->id;
        taken.info_valid = false; /* its cpusets read again, at the new path */
        free(gone->path);
        group_dirs_done(fresh);
        *fresh = taken;
        *gone = (ManagedGroup){};
        *fresh_history = *gone_history;
        check_group(m, fresh);
        return true;
}
