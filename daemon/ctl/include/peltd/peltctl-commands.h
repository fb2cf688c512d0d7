/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

/* What the command line chose (peltctl.c), for the commands. */
typedef struct CtlOptions {
        bool json;                   /* --json */
        bool runtime;                /* --runtime: change the running daemon only */
        bool once;                   /* --once: top prints one frame */
        const char *config_dir;      /* --config-dir: where to persist */
        uint64_t shares;             /* set-shares PATH N: N, parsed with the command line */
} CtlOptions;

/*
 * peltctl's commands (peltctl(1)) but monitor (peltctl-monitor.h). args are the command's own
 * arguments, as many as peltctl.c let through. Each returns the exit status: 0, or 1 after
 * logging why not.
 */
int cmd_status(sd_bus *bus, char **args, const CtlOptions *opt);
int cmd_policy(sd_bus *bus, char **args, const CtlOptions *opt);
int cmd_groups(sd_bus *bus, char **args, const CtlOptions *opt);
int cmd_group(sd_bus *bus, char **args, const CtlOptions *opt);
int cmd_topology(sd_bus *bus, char **args, const CtlOptions *opt);
int cmd_set_shares(sd_bus *bus, char **args, const CtlOptions *opt);
int cmd_reload(sd_bus *bus, char **args, const CtlOptions *opt);
