/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "peltd/energy.h"
#include "peltd/rootdir.h"

/*
 * Reads sys/kernel/debug/energy_model/pd* under root: each domain's cpus and its ps:* states
 * (frequency, power, cost; cost computed as the kernel does where the file is missing), and hands
 * them to energy_model_new(). Returns -ENOENT when there is no readable model (no debugfs, no
 * domains, or a domain without states): the caller then uses the built-in model. Other errors:
 * -ENOMEM, -EINVAL for files that do not parse. Never logs.
 */
int energy_model_load(const RootDir *root, EnergyModel **ret);
