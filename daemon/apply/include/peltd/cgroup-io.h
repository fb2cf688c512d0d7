/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <systemd/sd-bus.h>

/*
 * What applying reaches, below the backends (apply-backend.h): the files of cgroupfs groups, by
 * hierarchy ("cpuset", "cpu", "cpuacct", "unified"), and the bus that systemd's unit properties are
 * set through. The daemon's is the real cgroupfs (through RootDirs, so that integration tests can
 * use a private subtree); unit tests put a simulation with the kernel's v1 cpuset rules in its
 * place.
 */
typedef struct CgroupIO {
        /* Reads a file of a group (value with trailing whitespace stripped). */
        int (*read)(void *userdata, const char *hierarchy, const char *group, const char *file, char **ret);
        int (*write)(void *userdata, const char *hierarchy, const char *group, const char *file, const char *value);
        /* The full paths of a group's child groups, NULL-terminated. */
        int (*children)(void *userdata, const char *hierarchy, const char *group, char ***ret);
        void *userdata;
        /* Where the system bus is kept for systemd's units (NULL there until connected); NULL: no bus. */
        sd_bus **bus;
} CgroupIO;

typedef struct CgroupFs CgroupFs;

typedef struct CgroupAccess {
        const CgroupFs *fs;
        sd_bus *bus;                 /* NULL where unused, or until needed */
} CgroupAccess;

/*
 * The real cgroupfs, fs's hierarchies (one that is not mounted reads as missing), and access's bus
 * as it is connected.
 */
CgroupIO cgroup_io_real(CgroupAccess *access);
