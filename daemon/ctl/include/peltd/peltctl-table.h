/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The groups as peltctl shows them in a terminal: the table of "status" and "groups", and the
 * frame of "top". Text is sanitized (peltctl-text.h); a path too long keeps its end, CPUs and a
 * reason their start, each with "…" (--json has every value whole).
 *
 * Pure: no I/O but the FILE given, no logging. Functions return 0 or -ENOMEM.
 */

/* One group as ListGroupDetails (or, from an older daemon, ListGroups) gives it; the strings live in the reply. */
typedef struct Row {
        const char *path;
        double util, runnable, load;  /* util and runnable in 1/1024 of a CPU */
        uint64_t shares;
        const char *cpus, *policy, *reason;

        /* ListGroupDetails only: details is false for a row of ListGroups. */
        bool details;
        const char *owner;           /* "" when peltd places the group, else who does ("kubelet", ...) */
        uint64_t pressure_usec;      /* the group's pressure total (v2 "some"; v1 its threads' run_delay) */
        uint64_t changes;            /* placement changes peltd applied to it */
        uint64_t last_change_usec;   /* CLOCK_MONOTONIC of the last one; 0: none */
} Row;

/*
 * The groups as a table of width columns (at least 80): path, util and runnable in CPUs, shares,
 * CPUs, policy, owner ("-" when peltd places the group or the daemon does not say); each group's
 * reason on a line of its own below it. "No managed groups." when there are none.
 */
int table_print(FILE *f, const Row *rows, size_t n, size_t width);

/* What "top" shows above its table. */
typedef struct TopHeader {
        const char *policy, *backend;
        uint64_t rounds, changes;
} TopHeader;

/*
 * One frame of "top" in width columns and at most height lines (0: no limit): a header line,
 * then the groups sorted by util, busiest first (rows is sorted in place): path, util and runnable
 * ("RUN") in CPUs, CPUs, shares, owner, changes and reason, one line each; the path takes what it
 * needs of half the room left (12 columns at least), the reason the rest. Lines that do not fit are
 * left out, and the last line says how many.
 */
int top_print(FILE *f, const TopHeader *h, Row *rows, size_t n, size_t width, size_t height);
