/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <systemd/sd-bus.h>

#include "peltd/peltctl-commands.h"

/*
 * "peltctl monitor": every PlacementChanged until SIGINT or SIGTERM (exit 0), a line each (with
 * --json, a JSON object a line). The daemon must be there at the start, and when it stops (its
 * name loses its owner) or the bus goes away, monitor exits 1 saying so.
 */
int cmd_monitor(sd_bus *bus, char **args, const CtlOptions *opt);
