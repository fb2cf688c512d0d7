/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>

#include "peltd/args.h"

/*
 * Each returns the process exit status: 0 on success, 1 on bad input or a failure to read (after
 * logging it). Results go to stdout, logs to stderr.
 */
int cmd_once(const Args *args);
int cmd_print_topology(const Args *args);
int cmd_plan(const Args *args);
int cmd_restore(const Args *args);
int cmd_daemon(const Args *args);
