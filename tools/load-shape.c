/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A load whose demand follows a shape over time (tools/load-shape.h: const, square, walk, steps),
 * for bench/loop and for trying the loads of one's own services under peltd:
 *
 *   load-shape [--threads N] [--period-ms MS] SHAPE
 *
 * N threads (default: the shape's largest demand rounded up, at least 2) share the demand evenly:
 * at the start of each of its periods (MS, default 10 ms; the threads' periods are staggered by
 * MS / N) a thread reads the shape and runs demand / N of the period, counted in its own CPU time
 * (so a thread that waits for a CPU still does its work), then sleeps to the next period. A thread
 * more than a period late drops the debt instead of catching up. At demand N or more the threads
 * never sleep.
 *
 * Prints "PID START_NS" (START_NS: the shape's time 0 on CLOCK_MONOTONIC) once every thread runs,
 * and exits 0 on SIGTERM/SIGINT. Exits 2 on bad usage.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "load-shape.h"

static Shape shape;
static unsigned n_threads;
static uint64_t period_ns, start_ns;

static uint64_t now_ns(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
        struct timespec ts = { .tv_sec = (time_t) (t / 1000000000ULL), .tv_nsec = (long) (t % 1000000000ULL) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static void *worker(void *arg) {
        uint64_t next = start_ns + (uint64_t) (uintptr_t) arg * period_ns / n_threads;

        prctl(PR_SET_TIMERSLACK, 1UL);
        for (;;) {
                double share, t;
                uint64_t busy, cpu0, now;

                sleep_until(next);
                t = (double) (next - start_ns) / 1e9;
                share = fmin(shape_at(&shape, t) / n_threads, 1.0);
                busy = (uint64_t) (share * (double) period_ns);
                cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
                while (now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 < busy)
                        ;
                next += period_ns;
                now = now_ns(CLOCK_MONOTONIC);
                if (now > next + period_ns)
                        next = now;
        }
        return NULL;
}

static _Noreturn void usage(void) {
        fprintf(stderr, "usage: load-shape [--threads N] [--period-ms MS] SHAPE\n"
                        "  SHAPE: const:C | square:LOW:HIGH:PERIOD | walk:LOW:HIGH[:STEP[:SEED]] | steps:V0[,T=V]...\n");
        exit(2);
}

static unsigned parse_uint(const char *s, unsigned max) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v < 1 || v > max)
                usage();
        return (unsigned) v;
}

int main(int argc, char *argv[]) {
        unsigned period_ms = 10;
        const char *text = NULL;
        sigset_t set;
        int sig;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
                        n_threads = parse_uint(argv[++i], 1024);
                else if (strcmp(argv[i], "--period-ms") == 0 && i + 1 < argc)
                        period_ms = parse_uint(argv[++i], 10000);
                else if (argv[i][0] != '-' && !text)
                        text = argv[i];
                else
                        usage();
        }
        if (!text || shape_parse(text, &shape) < 0)
                usage();
        if (n_threads == 0)
                n_threads = (unsigned) fmax(ceil(shape_max(&shape)), 2);
        period_ns = (uint64_t) period_ms * 1000000ULL;

        /* Taken synchronously: no handler runs in a busy thread. */
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);

        /* A period from now: every thread exists before the first one runs. */
        start_ns = now_ns(CLOCK_MONOTONIC) + period_ns;
        for (unsigned i = 0; i < n_threads; i++) {
                pthread_t t;

                if (pthread_create(&t, NULL, worker, (void *) (uintptr_t) i) != 0) {
                        perror("pthread_create");
                        return 1;
                }
        }
        printf("%d %llu\n", (int) getpid(), (unsigned long long) start_ns);
        fflush(stdout);
        sigwait(&set, &sig);
        return 0;
}
