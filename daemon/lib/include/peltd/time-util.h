/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdint.h>
#include <time.h>

/* The one time type outside the PELT core: microseconds of CLOCK_MONOTONIC unless said otherwise. */
typedef uint64_t usec_t;
typedef uint64_t nsec_t;

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define USEC_INFINITY UINT64_MAX

static inline nsec_t now_nsec(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (nsec_t) ts.tv_sec * NSEC_PER_SEC + (nsec_t) ts.tv_nsec;
}

static inline usec_t now_usec(clockid_t clock) {
        return now_nsec(clock) / NSEC_PER_USEC;
}
