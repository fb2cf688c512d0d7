/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /proc/PID/task/TID/stat lines, as sample-proc.c parses them: comm (which any user sets, ')' and
 * spaces included), nice, start time and last CPU. What parses is in range, and a line rebuilt
 * from it parses to the same values.
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
        _cleanup_free_ char *s = fuzz_string(data, size), *line = NULL;
        char comm[16], comm2[16];
        int nice, cpu, nice2, cpu2;
        uint64_t start, start2;
        int r;

        memset(comm, 0x5a, sizeof comm);
        r = proc_parse_stat(s, comm, &nice, &start, &cpu);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0)
                return 0;
        FUZZ_CHECK(memchr(comm, 0, sizeof comm));
        FUZZ_CHECK(nice >= -20 && nice <= 20);
        FUZZ_CHECK(cpu >= 0);

        /* Fields 3..39 in the kernel's layout: state, then 36 numbers. */
        FUZZ_CHECK(asprintf(&line,
                            "1234 (%s) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 %d 1 0 %" PRIu64
                            " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0\n",
                            comm, nice, start, cpu) > 0);
        FUZZ_CHECK(proc_parse_stat(line, comm2, &nice2, &start2, &cpu2) == 0);
        /* comm ends at the last ')' of the line, so one holding '(' or ')' comes back whole too. */
        FUZZ_CHECK(streq(comm, comm2));
        FUZZ_CHECK(nice == nice2 && start == start2 && cpu == cpu2);
        return 0;
}
