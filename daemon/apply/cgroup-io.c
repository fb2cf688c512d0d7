/* SPDX-License-Identifier: GPL-2.0-only */
/* The real cgroupfs, as a CgroupIO (cgroup-io.h). */
#include <fcntl.h>

#include "peltd/cgroup-io.h"
#include "peltd/cgroup-path.h"
#include "peltd/cgroup-util.h"
#include "peltd/rootdir.h"

static RootDir *root_of(const CgroupAccess *a, const char *hierarchy) {
        if (streq(hierarchy, "cpuset"))
                return a->fs->cpuset;
        if (streq(hierarchy, "cpu"))
                return a->fs->cpu;
        if (streq(hierarchy, "cpuacct"))
                return a->fs->cpuacct;
        if (streq(hierarchy, "unified"))
                return a->fs->unified;
        return NULL;
}

static int io_read(void *userdata, const char *hierarchy, const char *group, const char *file, char **ret) {
        CgroupAccess *r = userdata;
        _cleanup_free_ char *path = NULL;
        RootDir *root = root_of(r, hierarchy);

        if (!root)
                return -ENOENT;
        path = cgroup_file_path(group, file);
        if (!path)
                return -ENOMEM;
        return rootdir_read_string(root, path, ret);
}

static int io_write(void *userdata, const char *hierarchy, const char *group, const char *file, const char *value) {
        CgroupAccess *r = userdata;
        _cleanup_free_ char *path = NULL;
        RootDir *root = root_of(r, hierarchy);

        if (!root)
                return -ENOENT;
        path = cgroup_file_path(group, file);
        if (!path)
                return -ENOMEM;
        return rootdir_write_string(root, path, value);
}

static int io_children(void *userdata, const char *hierarchy, const char *group, char ***ret) {
        CgroupAccess *r = userdata;
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *dir = NULL;
        RootDir *root = root_of(r, hierarchy);
        DIR *d;
        struct dirent *de;
        size_t n = 0;
        int k;

        if (!root)
                return -ENOENT;
        dir = cgroup_file_path(group, "");
        if (!dir)
                return -ENOMEM;
        k = rootdir_opendir(root, dir, &d);
        if (k < 0)
                return k;
        l = new0(char *, 1);
        if (!l) {
                closedir(d);
                return -ENOMEM;
        }
        while ((de = readdir(d))) {
                char **nl;

                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                nl = realloc(l, sizeof(char *) * (n + 2));
                if (!nl) {
                        closedir(d);
                        return -ENOMEM;
                }
                l = nl;
                if (asprintf(&l[n], "%s%s%s", group, streq(group, "/") ? "" : "/", de->d_name) < 0) {
                        l[n] = NULL;
                        closedir(d);
                        return -ENOMEM;
                }
                l[++n] = NULL;
        }
        closedir(d);
        *ret = TAKE_PTR(l);
        return 0;
}

CgroupIO cgroup_io_real(CgroupAccess *access) {
        return (CgroupIO){
                .read = io_read, .write = io_write, .children = io_children, .userdata = access, .bus = &access->bus,
        };
}
