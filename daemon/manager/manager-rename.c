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

/* The files peltd placed for g in hierarchy name, at or below from, now under to (in memory). */
static void move_placed(ManagedGroup *g, const char *name, const char *from, const char *to) {
        size_t n = strlen(from);

        for (size_t i = 0; i < g->n_placed; i++) {
                PlacedFile *f = &g->placed[i];
                char *p;

                if (!streq(f->hierarchy, name) || !strneq(f->group, from, n) || (f->group[n] && f->group[n] != '/'))
                        continue;
                if (asprintf(&p, "%s%s", to, f->group + n) < 0)
                        continue; /* not checked for drift there; its record moved all the same */
                free(f->group);
                f->group = p;
        }
}

/* The records of g's directory in hierarchy h follow it to `to`. */
static void follow(Manager *m, ManagedGroup *g, GroupHierarchy h, char *to) {
        GroupDir *d = &g->dirs[h];
        const char *name = hierarchy_names[h];
        int r;

        r = originals_rename(m->originals, name, d->path, to);
        if (r < 0) {
                log_warning_errno(r, "%s was renamed to %s in the %s hierarchy, and its recorded originals cannot follow it: %m",
                                  d->path, to, name);
                free(to);
                d->ino = 0; /* not looked for again */
                return;
        }
        if (r > 0)
                log_info("%s was renamed to %s in the %s hierarchy; its recorded originals follow it.", d->path, to, name);
        else
                log_debug("%s was renamed to %s in the %s hierarchy.", d->path, to, name);
        move_placed(g, name, d->path, to);
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

void manager_follow_renames(Manager *m) {
        for (size_t i = 0; i < m->n_groups; i++) {
                ManagedGroup *g = &m->groups[i];

                for (GroupHierarchy h = 0; h < _GROUP_HIER_MAX; h++)
                        check_dir(m, g, h);
                manager_note_dirs(m, g);
        }
}

bool manager_take_renamed(Manager *m, ManagedGroup *gone, PolicyHistory *gone_history, ManagedGroup *fresh,
                          PolicyHistory *fresh_history) {
        GroupHierarchy u = usage_hierarchy(m);
        RootDir *r = hierarchy_root(m, u);
        ManagedGroup taken;
        uint64_t ino;

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
        for (GroupHierarchy h = 0; h < _GROUP_HIER_MAX; h++)
                check_dir(m, fresh, h);
        manager_note_dirs(m, fresh);
        return true;
}
