/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * How many times longer than on an idle machine what a test waits for may take here: the rule of
 * test_time_scale in cgroup-lib.sh, for the C tests. The 1-minute load average per online CPU,
 * rounded up, at least 1 and at most 8; at least PELTD_TEST_TIME_SCALE where that is set (a guest
 * whose CPUs stall). It bounds waits for evidence (a process's end, a file, a value); what a test
 * checks once the evidence is there does not change with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "peltd/parse.h"

#define TEST_TIME_SCALE_MAX 8U

static inline unsigned test_time_scale(void) {
        const char *e = getenv("PELTD_TEST_TIME_SCALE");
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned whole = 0, hundredths = 0, scale, floor = 1;
        FILE *f = fopen("/proc/loadavg", "re");

        if (f) {
                /* "5.32 4.10 3.00 ...": the first, in hundredths. */
                if (fscanf(f, "%u.%2u", &whole, &hundredths) != 2)
                        whole = hundredths = 0;
                fclose(f);
        }
        if (cpus < 1)
                cpus = 1;
        scale = (unsigned) ((whole * 100 + hundredths + (unsigned long) cpus * 100 - 1) / ((unsigned long) cpus * 100));
        if (scale < 1)
                scale = 1;
        if (scale > TEST_TIME_SCALE_MAX)
                scale = TEST_TIME_SCALE_MAX;
        if (e && safe_atou(e, &floor) == 0 && scale < floor)
                scale = floor;
        return scale;
}
