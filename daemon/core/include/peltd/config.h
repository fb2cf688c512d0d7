/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "peltd/cgroup-path.h"
#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/policy-name.h"
#include "peltd/time-util.h"

/* The daemon's configuration (peltd.conf(5)), as data; config-file.h reads it. */

typedef enum TaskTracking {
        TASK_TRACKING_AUTO,          /* only where a policy needs per-thread figures */
        TASK_TRACKING_YES,
        TASK_TRACKING_NO,
} TaskTracking;

typedef enum SamplingBackend {
        SAMPLING_BACKEND_AUTO,       /* the BPF task iterator where it loads, else /proc */
        SAMPLING_BACKEND_BPF,
        SAMPLING_BACKEND_PROC,
} SamplingBackend;

typedef enum EnergyMeterSetting {
        ENERGY_METER_SETTING_AUTO,   /* the powercap tree where it is readable, else none */
        ENERGY_METER_SETTING_POWERCAP,
        ENERGY_METER_SETTING_NONE,
} EnergyMeterSetting;

typedef enum Backend {
        BACKEND_AUTO,
        BACKEND_CGROUPFS,
        BACKEND_SYSTEMD,
} Backend;

/* A [Group PATH] section; fields not set in any file keep their "unset" value. */
typedef struct GroupConfig {
        char *path;                  /* full path in the hierarchy, normalised ("/a/b") */
        uint64_t shares;             /* Shares=; 0: unset */
        Policy policy;               /* Policy=; POLICY_INVALID: unset (the daemon's policy) */
        CpuMask allowed_cpus;        /* AllowedCPUs= */
        bool has_allowed_cpus;
        unsigned min_cpus;           /* MinCPUs=; 0: unset */
        int manage;                  /* Manage=; -1: unset, 0: no, 1: yes */
        int take_over;               /* TakeOver=; -1: unset, 0: no, 1: yes (place it though set by someone else before peltd) */
        char *source_file;           /* where the section first appeared, for messages */
        unsigned source_line;
} GroupConfig;

/* A GroupConfig with every setting unset: (GroupConfig) GROUP_CONFIG_UNSET. */
#define GROUP_CONFIG_UNSET { .policy = POLICY_INVALID, .manage = -1, .take_over = -1 }

typedef struct Config {
        Policy policy;
        usec_t sample_interval_usec;
        usec_t task_sample_interval_usec;
        TaskTracking task_tracking;
        char *cgroup_root;           /* normalised, "/" by default */
        char **groups;               /* Groups= globs; NULL: the direct children of cgroup_root */
        char *state_file;
        bool dry_run;
        Backend backend;
        char *metrics_file;          /* MetricsFile=; NULL: none */
        SamplingBackend sampling_backend;
        char *kubelet_state;         /* KubeletCpuManagerState=; NULL: none */
        usec_t pressure_stall_usec;  /* PressureStallMSec=; 0: no pressure guard */
        usec_t pressure_window_usec; /* PressureWindowMSec= */
        EnergyMeterSetting energy_meter; /* EnergyMeter= */
        char *powercap_dir;          /* PowercapDir=: the powercap class directory */
        GroupConfig *group_configs;
        size_t n_group_configs;

        char *groups_file;           /* while loading: the file the current Groups= list comes from */
        unsigned *groups_lines;      /* while loading: the line of each of groups, for messages */
} Config;

/* A Config with every default (peltd.conf(5)); -ENOMEM only. */
int config_new_default(Config **ret);

Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);
#define _cleanup_config_ _cleanup_(config_freep)

/* The [Group PATH] settings for path, or NULL. */
const GroupConfig *config_find_group(const Config *c, const char *path);

/*
 * Whether the cgroup at path (normalised, under CgroupRoot) is selected by Groups= (or, without
 * Groups=, is a direct child of CgroupRoot). Nesting is the caller's: of nested matches only the
 * topmost is placed.
 */
bool config_selects_group(const Config *c, const char *path);
/* The filter of CgroupRoot= and Groups=, for the samplers and walks; c must outlive it. */
GroupFilter config_group_filter(const Config *c);
