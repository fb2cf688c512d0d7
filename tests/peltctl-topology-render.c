/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * For tests/test-peltctl-topology.sh: peltctl's rendering of a GetTopology document read from a
 * file, as "peltctl topology" prints it (or, with --summary, the line of "peltctl status").
 *
 *   peltctl-topology-render [--summary] FILE
 */
#include <stdio.h>

#include "peltd/json-util.h"
#include "peltd/macro.h"
#include "peltd/peltctl-topology.h"

int main(int argc, char *argv[]) {
        _cleanup_json_ json_object *doc = NULL;
        _cleanup_free_ char *text = NULL;
        bool summary = argc == 3 && streq(argv[1], "--summary");
        int r;

        if (argc != 2 && !summary) {
                fprintf(stderr, "usage: %s [--summary] FILE\n", argv[0]);
                return 2;
        }
        doc = json_object_from_file(argv[argc - 1]);
        if (!doc) {
                fprintf(stderr, "%s: %s\n", argv[argc - 1], json_util_get_last_err());
                return 1;
        }
        r = summary ? topology_json_summary(doc, &text) : topology_json_to_text(doc, &text);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", argv[argc - 1], strerror(-r));
                return 1;
        }
        fputs(text, stdout);
        if (summary)
                fputc('\n', stdout);
        return 0;
}
