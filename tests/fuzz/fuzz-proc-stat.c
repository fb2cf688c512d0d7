/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /proc/stat, as sample-proc.c reads steal time from it: the "cpu" line into entry 0, each
 * "cpuN" line into entry N + 1. Entry 0 comes from the "cpu " line only; the count returned is
 * within the array, and entries past it are left zero.
 */
#include "fuzz-util.h"
#include "peltd/sample-proc.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

static bool has_total_line(const char *s) {
        for (const char *p = s; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, "cpu ", 4) == 0)
                        return true;
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const size_t sizes[] = { 1, 2, 9, 130 };
        _cleanup_free_ char *s = fuzz_string(data, size);

        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                size_t max = sizes[i];
                /* Exactly max entries, so that ASan sees a write past them. */
                _cleanup_free_ ProcCpuTimes *t = fuzz_nonnull(calloc(max, sizeof *t));
                int r = proc_parse_cpu_times(s, t, max);

                FUZZ_CHECK(r == -EINVAL || (r > 0 && (size_t) r <= max));
                if (r < 0)
                        continue;
                if (!has_total_line(s))
                        FUZZ_CHECK(t[0].steal == 0 && t[0].total == 0);
                for (size_t k = (size_t) r; k < max; k++)
                        FUZZ_CHECK(t[k].steal == 0 && t[k].total == 0);
        }
        return 0;
}
