/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include "peltd/config.h"

struct IniPos;
struct IniKey;

/*
 * The INI parser of AllowedCPUs= (an IniKey's parse function): data points at a GroupConfig's
 * allowed_cpus; has_allowed_cpus is set when the list parses.
 */
int config_parse_allowed_cpus(const struct IniPos *pos, const char *value, const struct IniKey *key, void *data);

/*
 * Loads the configuration: with path, that file alone (it must exist); without, /etc/peltd/peltd.conf
 * (missing: all defaults) then /etc/peltd/peltd.conf.d/ *.conf in name order, a later file overriding
 * key by key. Errors are logged naming FILE:LINE, the key and the value; returns -EINVAL for bad
 * content, -errno when a file cannot be read.
 */
int config_load(const char *path, Config **ret);
/*
 * What the command line chose: --config FILE (that file alone), else --config-dir DIR
 * (DIR/peltd.conf, which may be missing, then DIR/peltd.conf.d/ *.conf), else the default files.
 */
int config_load_from(const char *path, const char *dir, Config **ret);
/* The same with other locations (tests): main_file may be missing; dropin_dir may be NULL. */
int config_load_files(const char *main_file, const char *dropin_dir, Config **ret);
