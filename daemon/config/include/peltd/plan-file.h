/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peltd/config.h"
#include "peltd/macro.h"
#include "peltd/time-util.h"

/*
 * The what-if file of peltd --plan (peltd(8), --plan): [Group PATH] sections with
 *
 *   Util=          required; util_avg, 1/1024 of a CPU (may exceed 1024)
 *   Tasks=         threads (default 1)
 *   MaxTaskUtil=   the biggest thread's util (default Util / Tasks); at most Util
 *   AvgSliceUSec=  mean run per timeslice in µs (default: long-running)
 *   Shares=        cpu.shares (default 1024)
 *   AllowedCPUs=, MinCPUs=, Policy=, Manage=   as in peltd.conf's [Group PATH]
 *
 * Parsed strictly by the INI layer: unknown keys and sections, values that do not parse, a path
 * given twice and a section without Util= are errors naming FILE:LINE.
 */

typedef struct PlanGroup {
        char *path;                  /* normalised */
        unsigned line;               /* of its section header */
        double util;                 /* NAN until Util= */
        unsigned tasks;              /* 0: unset (1) */
        double max_task_util;        /* < 0: unset (Util / Tasks) */
        unsigned max_task_util_line;
        usec_t avg_slice_usec;       /* 0: unset (long-running) */
        GroupConfig config;          /* Shares=, AllowedCPUs=, MinCPUs=, Policy=, Manage= (unset: as config.h) */
} PlanGroup;

typedef struct PlanFile {
        PlanGroup *groups;           /* in file order */
        size_t n_groups;
} PlanFile;

/* Returns 0, -ENOENT/-errno when the file cannot be read (logged), -EINVAL after logging every error. */
int plan_file_load(const char *path, PlanFile **ret);
PlanFile *plan_file_free(PlanFile *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(PlanFile *, plan_file_free);
#define _cleanup_plan_file_ _cleanup_(plan_file_freep)

/*
 * A group's settings with the daemon configuration's [Group PATH] under them (config may be NULL):
 * the plan file's keys win, key by key. ret->path points into the plan group; ret->source_file is
 * NULL and ret->source_line the line of its section header.
 */
void plan_group_merge(const PlanGroup *g, const GroupConfig *config, GroupConfig *ret);
