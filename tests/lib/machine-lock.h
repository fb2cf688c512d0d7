/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * Tests and benchmarks that touch the real machine (cgroups, CPU hotplug, timing) hold this lock
 * for their whole run, so that two of them never disturb each other, even from different build
 * trees. Blocks until the lock is free; the lock goes with the process. They need root: without it
 * the process exits 77, meson's skip.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#define MACHINE_LOCK_PATH "/run/lock/peltd-tests.lock"

static inline void machine_lock(void) {
        int fd;

        if (geteuid() != 0) {
                printf("SKIP: the real machine (cgroups, CPUs, the machine lock) needs root\n");
                exit(77);
        }
        fd = open(MACHINE_LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) < 0) {
                perror("machine_lock: " MACHINE_LOCK_PATH);
                exit(1);
        }
        /* Kept open (and locked) until the process exits. */
}
