/* SPDX-License-Identifier: GPL-2.0-only */
/* The configuration as data: its defaults and the questions the pipeline asks of it (reading it: config-file.c). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "peltd/alloc-util.h"
#include "peltd/cgroup-path.h"
#include "peltd/config.h"

int config_new_default(Config **ret) {
        _cleanup_config_ Config *c = NULL;

        c = new0(Config, 1);
        if (!c)
                return -ENOMEM;
        *c = (Config){
                .policy = POLICY_BALANCED,
                /* 100 ms: ten PELT periods, fine enough to follow a group's demand within a second. */
                .sample_interval_usec = 100 * USEC_PER_MSEC,
                /* 1 s: per-thread reads cost ~2 µs each; once a second keeps 2,000 threads under 0.1% of a CPU. */
                .task_sample_interval_usec = 1000 * USEC_PER_MSEC,
                .task_tracking = TASK_TRACKING_AUTO,
                .backend = BACKEND_AUTO,
                /* A packed group that waits 10% of the time for CPU is widened (the guard on packing). */
                .pressure_stall_usec = 100 * USEC_PER_MSEC,
                .pressure_window_usec = 1000 * USEC_PER_MSEC,
        };
        c->cgroup_root = strdup("/");
        /* /run is a tmpfs: originals recorded there survive a crash, not a reboot (which resets cgroups anyway). */
        c->state_file = strdup("/run/peltd/originals");
        /* Beside the state file, where node_exporter's textfile collector can be pointed. */
        c->metrics_file = strdup("/run/peltd/metrics.prom");
        /* Where kubelet keeps its CPU manager's checkpoint. */
        c->kubelet_state = strdup("/var/lib/kubelet/cpu_manager_state");
        /* Where the kernel's powercap class lists the RAPL zones. */
        c->powercap_dir = strdup("/sys/class/powercap");
        if (!c->cgroup_root || !c->state_file || !c->metrics_file || !c->kubelet_state || !c->powercap_dir)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        free(c->cgroup_root);
        strv_free(c->groups);
        free(c->state_file);
        free(c->metrics_file);
        free(c->kubelet_state);
        free(c->powercap_dir);
        for (size_t i = 0; i < c->n_group_configs; i++) {
                free(c->group_configs[i].path);
                free(c->group_configs[i].source_file);
        }
        free(c->group_configs);
        free(c->groups_file);
        free(c->groups_lines);
        free(c);
        return NULL;
}

const GroupConfig *config_find_group(const Config *c, const char *path) {
        for (size_t i = 0; i < c->n_group_configs; i++)
                if (streq(c->group_configs[i].path, path))
                        return &c->group_configs[i];
        return NULL;
}

bool config_selects_group(const Config *c, const char *path) {
        const char *slash;

        if (streq(path, c->cgroup_root) || !cgroup_path_under(path, c->cgroup_root))
                return false;

        if (c->groups) {
                for (char **g = c->groups; *g; g++)
                        if (fnmatch(*g, path, FNM_PATHNAME | FNM_NOESCAPE) == 0)
                                return true;
                return false;
        }

        /* The direct children of CgroupRoot. */
        slash = strrchr(path, '/');
        if (slash == path)
                return streq(c->cgroup_root, "/");
        return strlen(c->cgroup_root) == (size_t) (slash - path) && strneq(path, c->cgroup_root, (size_t) (slash - path));
}

static bool selects_group(const char *path, void *userdata) {
        return config_selects_group(userdata, path);
}

GroupFilter config_group_filter(const Config *c) {
        return (GroupFilter) { .root = c->cgroup_root, .selects = selects_group, .userdata = (void *) c };
}
