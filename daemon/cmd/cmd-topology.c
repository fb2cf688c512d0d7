/* SPDX-License-Identifier: GPL-2.0-only */
/* --print-topology: reads the topology and prints it as JSON or as text. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>

#include "peltd/commands.h"
#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/rootdir.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"

int cmd_print_topology(const Args *args) {
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_free_ char *text = NULL;
        int r;

        r = rootdir_open(args->sysfs_root, &root);
        if (r < 0) {
                log_error_errno(r, "Cannot open %s: %m", args->sysfs_root);
                return 1;
        }
        r = topology_load(root, &t);
        if (r == -ENODEV) {
                log_error("No online CPU found under %s.", args->sysfs_root);
                return 1;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to read the CPU topology under %s: %m", args->sysfs_root);
                return 1;
        }

        if (args->json) {
                _cleanup_json_ json_object *o = NULL;
                const char *s;

                r = topology_to_json(t, &o);
                if (r < 0) {
                        log_oom();
                        return 1;
                }
                s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
                if (!s) {
                        log_oom();
                        return 1;
                }
                fputs(s, stdout);
                fputc('\n', stdout);
        } else {
                r = topology_format_text(t, &text);
                if (r < 0) {
                        log_oom();
                        return 1;
                }
                fputs(text, stdout);
        }

        if (fflush(stdout) != 0 || ferror(stdout)) {
                log_error_errno(errno > 0 ? errno : EIO, "Failed to write the topology: %m");
                return 1;
        }
        return 0;
}
