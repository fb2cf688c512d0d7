/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /proc/PID/task/TID/schedstat lines ("run_ns wait_ns slices\n"), as sample-proc.c parses them.
 * What parses formats back to a line that parses to the same counters.
 */
#include <inttypes.h>

#include "fuzz-util.h"
#include "peltd/sample-proc.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size);
        uint64_t run, wait, slices, run2, wait2, slices2;
        char line[96];
        int r;

        r = proc_parse_schedstat(s, &run, &wait, &slices);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0)
                return 0;
        snprintf(line, sizeof line, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", run, wait, slices);
        FUZZ_CHECK(proc_parse_schedstat(line, &run2, &wait2, &slices2) == 0);
        FUZZ_CHECK(run == run2 && wait == wait2 && slices == slices2);
        return 0;
}
