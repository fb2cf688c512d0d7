/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A workload for the tests and the demo: THREADS threads, each running (busy) for DUTY of every
 * PERIOD and sleeping the rest, until killed. Periods are absolute (no drift); the busy part spins
 * on CLOCK_THREAD_CPUTIME_ID, so it is CPU time really used, whatever the contention.
 *
 *   duty-cycle THREADS PERIOD_USEC DUTY_PERCENT
 *
 * Prints its PID and exits 0 on SIGTERM/SIGINT.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "peltd/parse.h"

static unsigned period_usec, duty_pct;

static uint64_t ns(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void *worker(void *arg) {
        uint64_t period = (uint64_t) period_usec * 1000, busy = period * duty_pct / 100;
        struct timespec next;

        (void) arg;
        clock_gettime(CLOCK_MONOTONIC, &next);
        for (;;) {
                uint64_t start = ns(CLOCK_THREAD_CPUTIME_ID);

                while (ns(CLOCK_THREAD_CPUTIME_ID) - start < busy)
                        ;
                next.tv_nsec += (long) (period % 1000000000ULL);
                next.tv_sec += (time_t) (period / 1000000000ULL) + next.tv_nsec / 1000000000L;
                next.tv_nsec %= 1000000000L;
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        unsigned threads;
        sigset_t set;
        int sig;

        if (argc != 4 || safe_atou(argv[1], &threads) < 0 || safe_atou(argv[2], &period_usec) < 0 ||
            safe_atou(argv[3], &duty_pct) < 0 || threads < 1 || threads > 1000 || period_usec < 100 || duty_pct > 100) {
                fprintf(stderr, "usage: duty-cycle THREADS PERIOD_USEC DUTY_PERCENT\n");
                return 2;
        }
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);

        for (unsigned i = 0; i < threads; i++) {
                pthread_t t;

                if (pthread_create(&t, NULL, worker, NULL) != 0) {
                        perror("pthread_create");
                        return 1;
                }
        }
        printf("%d\n", (int) getpid());
        fflush(stdout);
        sigwait(&set, &sig);
        return 0;
}
