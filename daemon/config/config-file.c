/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <unistd.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <dirent.h>
#include <stddef.h>
#include <sys/stat.h>

#include "peltd/cgroup-path.h"
#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/fs-util.h"
#include "peltd/ini.h"
#include "peltd/log.h"
#include "peltd/parse.h"

#define CONFIG_FILE "/etc/peltd/peltd.conf"
#define CONFIG_DROPIN_DIR "/etc/peltd/peltd.conf.d"

/* ---- The schema ------------------------------------------------------------------------------- */

static int parse_task_tracking(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        if (streq(value, "auto"))
                *(TaskTracking *) data = TASK_TRACKING_AUTO;
        else {
                int b = parse_boolean(value);

                if (b < 0)
                        return ini_error(pos, value, "Expected auto, yes or no.");
                *(TaskTracking *) data = b ? TASK_TRACKING_YES : TASK_TRACKING_NO;
        }
        return 0;
}

static int parse_backend(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        if (streq(value, "auto"))
                *(Backend *) data = BACKEND_AUTO;
        else if (streq(value, "cgroupfs"))
                *(Backend *) data = BACKEND_CGROUPFS;
        else if (streq(value, "systemd"))
                *(Backend *) data = BACKEND_SYSTEMD;
        else
                return ini_error(pos, value, "Expected auto, cgroupfs or systemd.");
        return 0;
}

static int parse_sampling_backend(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        if (streq(value, "auto"))
                *(SamplingBackend *) data = SAMPLING_BACKEND_AUTO;
        else if (streq(value, "bpf"))
                *(SamplingBackend *) data = SAMPLING_BACKEND_BPF;
        else if (streq(value, "proc"))
                *(SamplingBackend *) data = SAMPLING_BACKEND_PROC;
        else
                return ini_error(pos, value, "Expected auto, bpf or proc.");
        return 0;
}

static int parse_energy_meter(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        if (streq(value, "auto"))
                *(EnergyMeterSetting *) data = ENERGY_METER_SETTING_AUTO;
        else if (streq(value, "powercap"))
                *(EnergyMeterSetting *) data = ENERGY_METER_SETTING_POWERCAP;
        else if (streq(value, "none"))
                *(EnergyMeterSetting *) data = ENERGY_METER_SETTING_NONE;
        else
                return ini_error(pos, value, "Expected auto, powercap or none.");
        return 0;
}

/* MetricsFile=, KubeletCpuManagerState=: an absolute path, or empty for none. */
static int parse_optional_path(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        if (isempty(value)) {
                free(*(char **) data);
                *(char **) data = NULL;
                return 0;
        }
        return ini_parse_abs_path(pos, value, key, data);
}

/*
 * Groups= appends within one file (repeated keys, continuation lines); a later file replaces it. An
 * empty Groups= means the default: the direct children of CgroupRoot.
 */
static int parse_groups(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        Config *c = (Config *) ((uint8_t *) data - offsetof(Config, groups));
        size_t before, after;
        unsigned *lines;
        int r;

        if (!c->groups_file || !streq(c->groups_file, pos->file) || isempty(value)) {
                free(c->groups_file);
                c->groups_file = strdup(pos->file);
                if (!c->groups_file)
                        return log_oom();
                strv_free(c->groups);
                c->groups = NULL;
                if (isempty(value))
                        return 0;
        }
        before = strv_length(c->groups);
        r = ini_parse_globs(pos, value, key, data);
        if (r < 0)
                return r;
        after = strv_length(c->groups);
        lines = reallocarray(c->groups_lines, MAX(after, 1u), sizeof(unsigned));
        if (!lines)
                return log_oom();
        c->groups_lines = lines;
        for (size_t i = before; i < after; i++)
                lines[i] = pos->line;
        return 0;
}

/* CgroupRoot=: a cgroup path as /proc/PID/cgroup shows it, not where a hierarchy is mounted. */
static int parse_cgroup_root(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        _cleanup_free_ char *norm = NULL;
        const char *rest;

        if (cgroup_path_normalize(value, &norm) >= 0 && (rest = startswith(norm, "/sys/fs/cgroup")) &&
            (*rest == '\0' || *rest == '/'))
                return ini_error(pos, value,
                                 "CgroupRoot= is a cgroup path as in /proc/PID/cgroup (for /sys/fs/cgroup/cpuset/batch, "
                                 "write /batch), not a file system path.");
        return ini_parse_cgroup_path(pos, value, key, data);
}

int config_parse_allowed_cpus(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        GroupConfig *g = (GroupConfig *) ((uint8_t *) data - offsetof(GroupConfig, allowed_cpus));
        int r = ini_parse_cpulist(pos, value, key, data);

        if (r >= 0)
                g->has_allowed_cpus = true;
        return r;
}

static int open_daemon(void *userdata, _unused_ const IniPos *pos, _unused_ const char *arg, void **ret) {
        *ret = userdata;
        return 0;
}

static int open_group(void *userdata, const IniPos *pos, const char *arg, void **ret) {
        Config *c = userdata;
        _cleanup_free_ char *path = NULL;
        GroupConfig *g, *n;
        int r;

        r = ini_group_section_path(pos, arg, &path);
        if (r < 0)
                return r;

        g = (GroupConfig *) config_find_group(c, path);
        if (g) {
                *ret = g;
                return 0;
        }
        n = realloc(c->group_configs, sizeof(GroupConfig) * (c->n_group_configs + 1));
        if (!n)
                return log_oom();
        c->group_configs = n;
        g = &c->group_configs[c->n_group_configs];
        *g = (GroupConfig) GROUP_CONFIG_UNSET;
        g->source_line = pos->line;
        g->source_file = strdup(pos->file);
        if (!g->source_file)
                return log_oom();
        g->path = TAKE_PTR(path);
        c->n_group_configs++;
        *ret = g;
        return 0;
}

static const IniSection config_sections[] = {
        { "Daemon", false, open_daemon },
        { "Group", true, open_group },
        {},
};

static const IniKey config_keys[] = {
        { "Daemon", "Policy", ini_parse_policy, offsetof(Config, policy) },
        { "Daemon", "SampleIntervalMSec", ini_parse_msec, offsetof(Config, sample_interval_usec), 10, 60000 },
        { "Daemon", "TaskSampleIntervalMSec", ini_parse_msec, offsetof(Config, task_sample_interval_usec), 10, 600000 },
        { "Daemon", "TaskTracking", parse_task_tracking, offsetof(Config, task_tracking) },
        { "Daemon", "CgroupRoot", parse_cgroup_root, offsetof(Config, cgroup_root) },
        { "Daemon", "Groups", parse_groups, offsetof(Config, groups), .multiline = true, .empty_ok = true },
        { "Daemon", "StateFile", ini_parse_abs_path, offsetof(Config, state_file) },
        { "Daemon", "DryRun", ini_parse_bool, offsetof(Config, dry_run) },
        { "Daemon", "Backend", parse_backend, offsetof(Config, backend) },
        { "Daemon", "MetricsFile", parse_optional_path, offsetof(Config, metrics_file), .empty_ok = true },
        { "Daemon", "SamplingBackend", parse_sampling_backend, offsetof(Config, sampling_backend) },
        { "Daemon", "KubeletCpuManagerState", parse_optional_path, offsetof(Config, kubelet_state), .empty_ok = true },
        /* The kernel takes PSI windows of 500 ms to 10 s, and a stall of at most the window. */
        { "Daemon", "PressureStallMSec", ini_parse_msec, offsetof(Config, pressure_stall_usec), 0, 10000 },
        { "Daemon", "PressureWindowMSec", ini_parse_msec, offsetof(Config, pressure_window_usec), 500, 10000 },
        { "Daemon", "EnergyMeter", parse_energy_meter, offsetof(Config, energy_meter) },
        { "Daemon", "PowercapDir", ini_parse_abs_path, offsetof(Config, powercap_dir) },
        { "Group", "Shares", ini_parse_u64, offsetof(GroupConfig, shares), 2, 262144 },
        { "Group", "Policy", ini_parse_policy, offsetof(GroupConfig, policy) },
        { "Group", "AllowedCPUs", config_parse_allowed_cpus, offsetof(GroupConfig, allowed_cpus) },
        { "Group", "MinCPUs", ini_parse_unsigned, offsetof(GroupConfig, min_cpus), 1, CPUMASK_MAX },
        { "Group", "Manage", ini_parse_tristate, offsetof(GroupConfig, manage) },
        { "Group", "TakeOver", ini_parse_tristate, offsetof(GroupConfig, take_over) },
        {},
};

static const IniSchema config_schema = { config_sections, config_keys };

/* Two paths name the same file: the same text once normalised, or, where both exist, the same inode. */
static bool same_file(const char *a, const char *b) {
        _cleanup_free_ char *na = NULL, *nb = NULL;
        struct stat sa, sb;

        if (cgroup_path_normalize(a, &na) >= 0 && cgroup_path_normalize(b, &nb) >= 0 && streq(na, nb))
                return true;
        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * The metrics file is replaced every round, and the state file and its lock are what keeps a
 * second daemon off the same records: none may be another.
 */
static int verify_files(const Config *c) {
        _cleanup_free_ char *lock = NULL;

        if (!c->metrics_file)
                return 0;
        if (same_file(c->metrics_file, c->state_file))
                return log_error_errno(EINVAL, "MetricsFile=%s and StateFile=%s name the same file; give each its own.",
                                       c->metrics_file, c->state_file);
        if (asprintf(&lock, "%s.lock", c->state_file) < 0)
                return log_oom();
        if (same_file(c->metrics_file, lock))
                return log_error_errno(EINVAL, "MetricsFile=%s is the lock of StateFile=%s (%s); give it a file of its own.",
                                       c->metrics_file, c->state_file, lock);
        return 0;
}

/* Checks what only the whole configuration can tell. */
static int config_verify(const Config *c) {
        int r = 0;

        for (size_t i = 0; i < c->n_group_configs; i++) {
                const GroupConfig *g = &c->group_configs[i];

                if (!cgroup_path_under(g->path, c->cgroup_root) || streq(g->path, c->cgroup_root))
                        r = log_error_errno(EINVAL, "%s:%u: [Group %s] is not below CgroupRoot=%s.", g->source_file,
                                            g->source_line, g->path, c->cgroup_root);
        }
        for (size_t i = 0; c->groups && c->groups[i]; i++)
                if (!cgroup_path_under(c->groups[i], c->cgroup_root) || streq(c->groups[i], c->cgroup_root))
                        r = log_error_errno(EINVAL, "%s:%u: Groups=%s does not lie below CgroupRoot=%s.",
                                            strna(c->groups_file), c->groups_lines ? c->groups_lines[i] : 0,
                                            c->groups[i], c->cgroup_root);
        if (c->pressure_stall_usec > c->pressure_window_usec)
                r = log_error_errno(EINVAL, "PressureStallMSec=%" PRIu64 " is longer than PressureWindowMSec=%" PRIu64
                                    "; the stall is measured within the window.",
                                    c->pressure_stall_usec / USEC_PER_MSEC, c->pressure_window_usec / USEC_PER_MSEC);
        if (r >= 0)
                r = verify_files(c);
        return r;
}

static int is_conf_name(const struct dirent *d) {
        size_t n = strlen(d->d_name);

        return d->d_name[0] != '.' && n > strlen(".conf") && streq(d->d_name + n - strlen(".conf"), ".conf");
}

/*
 * The drop-ins, dir/ *.conf in name order (a later file overrides key by key). The directory's
 * name is taken literally: "conf[1]" is a name, not a pattern. A missing directory has none.
 */
static int load_dropins(const char *dir, Config *c) {
        _cleanup_close_ int fd = -1;
        struct dirent **names = NULL;
        const char *why = NULL;
        int n, r = 0;

        /* Trusted as the files in it are: root's, and nobody else may add a file there. */
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : log_error_errno(errno, "Failed to read the drop-in directory %s: %m", dir);
        if (fd_check_trusted(fd, true, 0, &why) < 0)
                return log_error_errno(EPERM, "Refusing the drop-in directory %s: it %s (it must be root's, and not writable by group or others).",
                                       dir, why);
        n = scandirat(fd, ".", &names, is_conf_name, alphasort);
        if (n < 0)
                return log_error_errno(errno, "Failed to read the drop-in directory %s: %m", dir);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;

                if (r >= 0) {
                        if (asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0)
                                r = log_oom();
                        else {
                                int k = ini_load_trusted(path, &config_schema, c);
                                if (k < 0 && k != -ENOENT)
                                        r = k;
                        }
                }
                free(names[i]);
        }
        free(names);
        return r;
}

int config_load_files(const char *main_file, const char *dropin_dir, Config **ret) {
        _cleanup_config_ Config *c = NULL;
        int r;

        r = config_new_default(&c);
        if (r < 0)
                return log_oom();

        r = ini_load_trusted(main_file, &config_schema, c);
        if (r < 0 && r != -ENOENT)
                return r;

        if (dropin_dir) {
                r = load_dropins(dropin_dir, c);
                if (r < 0)
                        return r;
        }

        r = config_verify(c);
        if (r < 0)
                return r;
        free(c->groups_file);
        c->groups_file = NULL;
        free(c->groups_lines);
        c->groups_lines = NULL;
        *ret = TAKE_PTR(c);
        return 0;
}

int config_load_from(const char *path, const char *dir, Config **ret) {
        if (!path && dir) {
                _cleanup_free_ char *main_file = NULL, *dropins = NULL;
                struct stat st;

                if (stat(dir, &st) < 0)
                        return log_error_errno(errno, "Failed to read the configuration directory %s: %m", dir);
                if (!S_ISDIR(st.st_mode))
                        {
                        log_error("The configuration directory %s is not a directory.", dir);
                        return -ENOTDIR;
                }
                if (asprintf(&main_file, "%s/peltd.conf", dir) < 0 || asprintf(&dropins, "%s/peltd.conf.d", dir) < 0)
                        return log_oom();
                return config_load_files(main_file, dropins, ret);
        }
        return config_load(path, ret);
}

int config_load(const char *path, Config **ret) {
        if (!path)
                return config_load_files(CONFIG_FILE, CONFIG_DROPIN_DIR, ret);

        if (access(path, F_OK) < 0)
                return log_error_errno(errno, "Failed to read configuration %s: %m", path);
        return config_load_files(path, NULL, ret);
}
