/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <systemd/sd-bus.h>

#include "peltd/peltctl-commands.h"

/*
 * "peltctl top": a live view of the daemon, refreshed every second from its properties and
 * ListGroupDetails (peltctl-table.h has the frame): the policy, backend, rounds and changes, then
 * the groups, busiest first. q quits (exit 0). With --once, or when stdout is not a terminal, one
 * frame is printed and top exits; with --json that frame is one JSON document ({"policy",
 * "backend", "rounds", "changes", "groups": [as "groups --json", busiest first]}). When the daemon
 * goes away, top exits 1 saying so.
 */
int cmd_top(sd_bus *bus, char **args, const CtlOptions *opt);
