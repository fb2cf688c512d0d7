/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Faults for the daemon's tests, by LD_PRELOAD (built only with the tests):
 *
 *   PELTD_FAULT_MALLOC_FILE=PATH    while PATH exists, malloc, calloc and realloc fail (ENOMEM)
 *   PELTD_FAULT_SET_TIME_FILE=PATH  when PATH exists, the next sd_event_source_set_time() of a
 *                                   round timer (its description ends in "-round") fails
 *                                   (-ENOMEM) and PATH is removed: one failure a file. The other
 *                                   timers (the bus's reconnect, the metrics file's) are left
 *                                   alone: the test checks what a round timer's failure does.
 *
 * The files are looked at no more than every 5 ms (CLOCK_MONOTONIC_COARSE), so the daemon runs at
 * about its normal speed otherwise.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

static const char *malloc_file, *set_time_file;
static int (*real_set_time)(sd_event_source *s, uint64_t usec);

__attribute__((constructor)) static void fault_init(void) {
        malloc_file = getenv("PELTD_FAULT_MALLOC_FILE");
        set_time_file = getenv("PELTD_FAULT_SET_TIME_FILE");
        real_set_time = (int (*)(sd_event_source *, uint64_t)) dlsym(RTLD_NEXT, "sd_event_source_set_time");
}

static bool malloc_fails(void) {
        static int64_t checked_ms = -1000;
        static bool failing;
        struct timespec ts;
        int64_t ms;
        int saved;

        if (!malloc_file)
                return false;
        saved = errno;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        ms = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        if (ms - checked_ms >= 5) {
                failing = access(malloc_file, F_OK) == 0;
                checked_ms = ms;
        }
        errno = saved;
        return failing;
}

void *malloc(size_t size) {
        if (malloc_fails()) {
                errno = ENOMEM;
                return NULL;
        }
        return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
        if (malloc_fails()) {
                errno = ENOMEM;
                return NULL;
        }
        return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
        if (size > 0 && malloc_fails()) {
                errno = ENOMEM;
                return NULL;
        }
        return __libc_realloc(p, size);
}

static bool is_round_timer(sd_event_source *s) {
        const char *d = NULL;
        size_t n;

        if (sd_event_source_get_description(s, &d) < 0 || !d)
                return false;
        n = strlen(d);
        return n >= 6 && strcmp(d + n - 6, "-round") == 0;
}

int sd_event_source_set_time(sd_event_source *s, uint64_t usec) {
        if (set_time_file && is_round_timer(s) && unlink(set_time_file) == 0)
                return -ENOMEM;
        return real_set_time(s, usec);
}
