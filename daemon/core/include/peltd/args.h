/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>

#include "peltd/time-util.h"

/* What the command line asked for. main.c parses it; the Manager and each one-shot mode take it. */
typedef enum Mode {
        MODE_DAEMON,
        MODE_ONCE,
        MODE_PRINT_TOPOLOGY,
        MODE_PLAN,
        MODE_RESTORE,
} Mode;

typedef struct Args {
        Mode mode;
        const char *config_file;     /* --config: this file alone; NULL: the default files */
        const char *config_dir;      /* --config-dir: DIR/peltd.conf and DIR/peltd.conf.d instead of /etc/peltd */
        const char *policy;          /* --policy, validated; NULL: from the config */
        bool dry_run;
        bool json;
        usec_t once_usec;            /* --once SECONDS */
        usec_t interval_usec;        /* --interval MSEC; 0: SampleIntervalMSec */
        const char *backend;         /* --backend: "bpf" or "proc"; NULL: SamplingBackend= */
        const char *sysfs_root;      /* --sysfs-root DIR; "/" by default */
        const char *plan_file;       /* --plan GROUPS.ini */
} Args;
