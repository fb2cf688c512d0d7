/* SPDX-License-Identifier: GPL-2.0-only */
/* The backends placed values are written through (apply-backend.h): cgroupfs and systemd. */
#include "peltd/apply-backend.h"
#include "peltd/apply-systemd.h"
#include "peltd/cgroup-path.h"
#include "peltd/log.h"

/* ---- cgroupfs: a group's files, v1 or v2 ------------------------------------------------------ */

static int cgroupfs_probe(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group) {
        _cleanup_strv_free_ char **kids = NULL;

        /* The group is there when its directory can be listed. */
        return io->children(io->userdata, pv->place[t].hierarchy, group, &kids);
}

static int cgroupfs_read(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group, char **ret) {
        return io->read(io->userdata, pv->place[t].hierarchy, group, pv->place[t].file, ret);
}

static int cgroupfs_write(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group,
                          const char *value) {
        return io->write(io->userdata, pv->place[t].hierarchy, group, pv->place[t].file, value);
}

/*
 * An empty v2 cpuset.cpus is "every CPU of the parent"; Linux (6.1) refuses to empty the cpuset of
 * a group that has tasks (ENOSPC), and the closest it takes is the CPUs the parent has now, as a
 * list (the place's parent_effective file).
 */
static int cgroupfs_restore(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *group,
                            const char *value) {
        const PlacedPlace *p = &pv->place[t];
        _cleanup_free_ char *parent = NULL, *cpus = NULL;
        int r;

        r = cgroupfs_write(io, pv, t, group, value);
        if (r != -ENOSPC || !p->parent_effective || !isempty(value))
                return r;
        if (!strchr(group, '/') || streq(group, "/"))
                return r;
        parent = cgroup_parent_path(group);
        if (!parent)
                return -ENOMEM;
        r = io->read(io->userdata, p->hierarchy, parent, p->parent_effective, &cpus);
        if (r < 0)
                return r;
        log_debug("%s has tasks and its cpuset cannot be emptied: writing its parent's CPUs %s.", group, cpus);
        return cgroupfs_write(io, pv, t, group, cpus);
}

/* ---- systemd: the properties of a unit, through the bus --------------------------------------- */

static sd_bus *bus_of(const CgroupIO *io) {
        return io->bus ? *io->bus : NULL;
}

/* A unit is there while systemd names its cgroup. */
static int systemd_probe(const CgroupIO *io, _unused_ const PlacedValue *pv, _unused_ ApplyTarget t, const char *unit) {
        _cleanup_free_ char *cg = NULL;

        if (!bus_of(io))
                return -ENOTCONN;
        return systemd_unit_control_group(bus_of(io), unit, &cg);
}

static int systemd_read(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *unit, char **ret) {
        if (!bus_of(io))
                return -ENOTCONN;
        return systemd_unit_get_property(bus_of(io), unit, pv->place[t].file, ret);
}

static int systemd_write(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *unit,
                         const char *value) {
        if (!bus_of(io))
                return -ENOTCONN;
        return systemd_unit_set_property(bus_of(io), unit, pv->place[t].file, value);
}

/*
 * After AllowedCPUs= is reset, systemd (252) no longer writes the unit's cpuset.cpus and leaves the
 * CPUs it last had there: the unit would stay where peltd put it. Empty is what the file held before
 * AllowedCPUs= was set (every CPU of the parent), and systemd does not write it again until
 * AllowedCPUs= is set again. No cgroup yet (the unit is not running) or no cpuset controller for it:
 * it has every CPU of its parent already.
 */
static int clear_unit_file(const CgroupIO *io, const PlacedValue *pv, const char *unit) {
        _cleanup_free_ char *cg = NULL;
        int r;

        r = systemd_unit_control_group(bus_of(io), unit, &cg);
        if (r < 0)
                return r;
        if (isempty(cg))
                return 0;
        r = cgroupfs_restore(io, pv, APPLY_V2, cg, pv->v2_created);
        return r == -ENOENT ? 0 : r;
}

static int systemd_restore(const CgroupIO *io, const PlacedValue *pv, ApplyTarget t, const char *unit,
                           const char *value) {
        int r;

        r = systemd_write(io, pv, t, unit, value);
        if (r < 0 || !isempty(value) || !pv->place[t].reset_leaves_file)
                return r;
        return clear_unit_file(io, pv, unit);
}

/* ---- The table -------------------------------------------------------------------------------- */

static const ApplyBackend backend_cgroupfs = {
        .name = "cgroupfs",
        .probe = cgroupfs_probe,
        .read = cgroupfs_read,
        .write = cgroupfs_write,
        .restore = cgroupfs_restore,
};

static const ApplyBackend backend_systemd = {
        .name = "systemd",
        .probe = systemd_probe,
        .read = systemd_read,
        .write = systemd_write,
        .restore = systemd_restore,
};

static const ApplyBackend *const backends[_APPLY_TARGET_MAX] = {
        [APPLY_V1] = &backend_cgroupfs,
        [APPLY_V2] = &backend_cgroupfs,
        [APPLY_SYSTEMD] = &backend_systemd,
};

const ApplyBackend *apply_backend(ApplyTarget t) {
        return backends[t];
}

int apply_backend_read_at(const CgroupIO *io, const char *hierarchy, const char *group, const char *file, char **ret) {
        ApplyTarget t;
        const PlacedValue *pv = placed_value_at(hierarchy, file, &t);

        if (!pv)
                return -EINVAL; /* not a place of the table: never read, never written */
        return apply_backend(t)->read(io, pv, t, group, ret);
}
