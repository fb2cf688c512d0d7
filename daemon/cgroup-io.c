/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <systemd/sd-bus.h>

#include "peltd/apply-cgroup.h"
#include "peltd/apply-systemd.h"
#include "peltd/rootdir.h"

static RootDir *root_of(CgroupRoots *r, const char *hierarchy) {
        if (streq(hierarchy, "cpuset"))
                return r->cpuset;
        if (streq(hierarchy, "cpu"))
                return r->cpu;
        if (streq(hierarchy, "cpuacct"))
                return r->cpuacct;
        if (streq(hierarchy, "unified"))
                return r->unified;
        return NULL;
}

/* "/a/b" + "cpuset.cpus" -> "a/b/cpuset.cpus" (relative to the hierarchy's root). */
static char *file_path(const char *group, const char *file) {
        char *p;

        while (*group == '/')
                group++;
        if (asprintf(&p, "%s%s%s", group, *group ? "/" : "", file) < 0)
                return NULL;
        return p;
}

static int io_read(void *userdata, const char *hierarchy, const char *group, const char *file, char **ret) {
        CgroupRoots *r = userdata;
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
        path = file_path(group, file);
        if (!path)
                return -ENOMEM;
        return rootdir_read_string(root, path, ret);
}

static int io_write(void *userdata, const char *hierarchy, const char *group, const char *file, const char *value) {
        CgroupRoots *r = userdata;
        _cleanup_free_ char *path = NULL;
        RootDir *root;

        if (streq(hierarchy, "systemd")) {
                CpuMask m;
                uint64_t w;
                int k;

                if (!r->bus)
                        return -ENOTCONN;
                if (streq(file, "AllowedCPUs")) {
                        k = systemd_allowed_from_string(value, &m);
                        return k < 0 ? k : systemd_unit_set_cpu(r->bus, group, &m, false, 0);
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
        path = file_path(group, file);
        if (!path)
                return -ENOMEM;
        return rootdir_write_string(root, path, value);
}

CgroupIO cgroup_io_real(CgroupRoots *roots) {
        return (CgroupIO){ .read = io_read, .write = io_write, .userdata = roots };
}
