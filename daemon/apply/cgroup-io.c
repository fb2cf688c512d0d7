/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <systemd/sd-bus.h>

#include "peltd/apply-cgroup.h"
#include "peltd/apply-systemd.h"
#include "peltd/cgroup-util.h"
#include "peltd/log.h"
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
        RootDir *root;

        if (streq(hierarchy, "systemd")) {
                SystemdUnitCpu v;
                int k;

                if (!r->bus)
                        return -ENOTCONN;
                k = systemd_unit_get_cpu(r->bus, group, &v);
                if (k < 0)
                        return k;
                if (streq(file, "AllowedCPUs"))
                        *ret = systemd_allowed_to_string(&v.allowed);
                else if (streq(file, "CPUWeight"))
                        *ret = systemd_weight_to_string(v.weight);
                else
                        return -EINVAL;
                return *ret ? 0 : -ENOMEM;
        }

        root = root_of(r, hierarchy);
        if (!root)
                return -ENOENT;
        path = cgroup_file_path(group, file);
        if (!path)
                return -ENOMEM;
        return rootdir_read_string(root, path, ret);
}

/*
 * Writes a file of a group. An empty v2 cpuset.cpus is "every CPU of the parent"; Linux (6.1)
 * refuses to empty the cpuset of a group that has tasks (ENOSPC), and the closest it takes is the
 * CPUs the parent has now, as a list.
 */
static int write_group_file(RootDir *root, bool unified, const char *group, const char *file, const char *value) {
        _cleanup_free_ char *path = cgroup_file_path(group, file), *parent = NULL, *ppath = NULL, *cpus = NULL;
        int r;

        if (!path)
                return -ENOMEM;
        r = rootdir_write_string(root, path, value);
        if (r != -ENOSPC || !unified || !streq(file, "cpuset.cpus") || !isempty(value))
                return r;
        if (!strchr(group, '/') || streq(group, "/"))
                return r;
        parent = cgroup_parent_path(group);
        if (!parent || !(ppath = cgroup_file_path(parent, "cpuset.cpus.effective")))
                return -ENOMEM;
        r = rootdir_read_string(root, ppath, &cpus);
        if (r < 0)
                return r;
        log_debug("%s has tasks and its cpuset cannot be emptied: writing its parent's CPUs %s.", group, cpus);
        return rootdir_write_string(root, path, cpus);
}

/*
 * After AllowedCPUs= is reset, systemd (252) no longer writes the unit's cpuset.cpus and leaves the
 * CPUs it last had there: the unit would stay where peltd put it. Empty is what the file held before
 * AllowedCPUs= was set (every CPU of the parent), and systemd does not write it again until
 * AllowedCPUs= is set again. No cgroup yet (the unit is not running) or no cpuset controller for it:
 * it has every CPU of its parent already.
 */
static int clear_unit_cpuset(const CgroupAccess *a, const char *unit) {
        _cleanup_free_ char *cg = NULL;
        int r;

        if (!a->fs->unified)
                return 0;
        r = systemd_unit_control_group(a->bus, unit, &cg);
        if (r < 0)
                return r;
        if (isempty(cg))
                return 0;
        r = write_group_file(a->fs->unified, true, cg, "cpuset.cpus", "");
        return r == -ENOENT ? 0 : r;
}

static int io_write(void *userdata, const char *hierarchy, const char *group, const char *file, const char *value) {
        CgroupAccess *r = userdata;
        RootDir *root;

        if (streq(hierarchy, "systemd")) {
                CpuMask m;
                uint64_t w;
                int k;

                if (!r->bus)
                        return -ENOTCONN;
                if (streq(file, "AllowedCPUs")) {
                        k = systemd_allowed_from_string(value, &m);
                        if (k >= 0)
                                k = systemd_unit_set_cpu(r->bus, group, &m, false, 0);
                        if (k >= 0 && cpumask_empty(&m))
                                k = clear_unit_cpuset(r, group);
                        return k;
                }
                if (streq(file, "CPUWeight")) {
                        k = systemd_weight_from_string(value, &w);
                        return k < 0 ? k : systemd_unit_set_cpu(r->bus, group, NULL, true, w);
                }
                return -EINVAL;
        }

        root = root_of(r, hierarchy);
        if (!root)
                return -ENOENT;
        return write_group_file(root, streq(hierarchy, "unified"), group, file, value);
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
        return (CgroupIO){ .read = io_read, .write = io_write, .children = io_children, .userdata = access };
}
