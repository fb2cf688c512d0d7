/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's command entry points: running it, and --restore without it. */
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "peltd/apply-cgroup.h"
#include "peltd/apply-values.h"
#include "peltd/cgroup-util.h"
#include "peltd/commands.h"
#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/log.h"
#include "peltd/manager-bus.h"
#include "peltd/manager-metrics.h"
#include "peltd/manager.h"
#include "peltd/originals.h"
#include "peltd/rootdir.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"

int cmd_daemon(const Args *args) {
        /* Freed in the reverse order: the bus and the metrics file before the Manager they hook into. */
        _cleanup_manager_ Manager *m = NULL;
        _cleanup_manager_metrics_ ManagerMetrics *metrics = NULL;
        _cleanup_manager_bus_ ManagerBus *bus = NULL;

        /* Said before anything is opened: as another user, the first failure would be a lock file's
         * "Permission denied", which names the symptom, not the cause. */
        if (geteuid() != 0) {
                log_error("peltd needs root: it writes cgroup files and records their original values. "
                          "Run it as root.");
                return 1;
        }
        if (manager_new(args, &m) < 0)
                return 1;
        if (manager_metrics_start(m, &metrics) < 0)
                return 1;
        /* org.peltd1 is owned (or given up on, said) before READY=1. */
        if (manager_bus_start(m, &bus) < 0)
                return 1;
        return manager_run(m);
}

int cmd_restore(const Args *args) {
        _cleanup_config_ Config *c = NULL;
        _cleanup_originals_ Originals *o = NULL;
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_close_ int lock = -1;
        CgroupAccess access;
        CgroupIO io;
        int r;

        r = config_load_from(args->config_file, args->config_dir, &c);
        if (r < 0)
                return 1;
        if (state_open(c->state_file, false, &lock, &o) < 0)
                return 1;
        if (o->n_entries == 0) {
                log_info("Nothing to restore: %s holds no original values.", c->state_file);
                return o->n_refused > 0 ? 1 : 0;
        }
        r = rootdir_open("/", &root);
        if (r >= 0)
                r = topology_load(root, &t);
        if (r < 0) {
                log_error_errno(r, "Failed to read the CPU topology: %m");
                return 1;
        }
        r = cgroup_fs_open_system(&fs);
        if (r < 0) {
                log_error_errno(r, "Failed to find the cgroup hierarchies: %m");
                return 1;
        }
        access = (CgroupAccess){ .fs = fs };
        /* One try, for the first systemd entry: the others would only fail (and say so) again. */
        for (size_t i = 0; i < o->n_entries; i++) {
                ApplyTarget target;

                if (placed_target_of(o->entries[i].hierarchy, &target) >= 0 && target == APPLY_SYSTEMD) {
                        r = sd_bus_open_system(&access.bus);
                        if (r < 0)
                                log_warning_errno(r, "Failed to connect to the system bus for systemd units: %m");
                        break;
                }
        }
        io = cgroup_io_real(&access);
        r = cg_restore_beneath(&io, o, c->cgroup_root, &t->online, false);
        sd_bus_flush_close_unref(access.bus);
        if (r < 0) {
                log_error_errno(r, "Failed to restore: %m");
                return 1;
        }
        if (r > 0) {
                log_error("%d original values could not be restored; they stay recorded in %s.", r, c->state_file);
                return 1;
        }
        if (o->n_refused > 0) {
                log_error("Every valid original value is restored; %zu refused entries were not written.", o->n_refused);
                return 1;
        }
        log_info("Every recorded original value is restored.");
        return 0;
}
