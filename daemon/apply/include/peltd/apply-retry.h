/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>

/*
 * What a failed placement means for the next rounds (apply-retry.c): the class of its error, and a
 * group's retry state. Pure: no I/O, no clock (rounds are counted by the caller's calls).
 */

typedef enum CgErrorClass {
        CG_ERROR_TRANSIENT,          /* may work on its own: retried, with a growing wait */
        CG_ERROR_PERMANENT,          /* the kernel refuses this value: not retried until something changes */
        CG_ERROR_GONE,               /* the group went away: nothing to say, the group walk drops it */
} CgErrorClass;

CgErrorClass cg_error_class(int err);

/*
 * A group's retry state: what was refused (the key: the planned value and what it depends on), how,
 * and when to try again. Rounds are counted by cg_retry_due(); a transient failure waits 1, 2, 4 ...
 * rounds (at most CG_RETRY_MAX_ROUNDS), a permanent one waits until the key changes.
 */
#define CG_RETRY_MAX_ROUNDS 64u

typedef struct CgRetry {
        int error;                   /* the failure of this episode, 0: none */
        CgErrorClass class;
        char *key;
        unsigned wait;               /* rounds of the current wait */
        unsigned skip;               /* rounds left before the next try */
        unsigned failures;           /* failed tries in this episode */
} CgRetry;

void cg_retry_done(CgRetry *s);

/* Whether to try placing key this round (a new key ends the episode: something changed). */
bool cg_retry_due(CgRetry *s, const char *key);

/*
 * Notes a failed try of key with err, of class c (cg_error_class(err) for a cgroup write). Returns
 * true when this starts an episode (or changes its error), which is what the caller logs; repeats
 * of the same failure return false.
 */
bool cg_retry_failed(CgRetry *s, const char *key, int err, CgErrorClass c);

/* Notes a try that worked; returns the failures of the episode it ends (0: there was none). */
unsigned cg_retry_succeeded(CgRetry *s);
