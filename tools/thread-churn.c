/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A workload for the soak: threads coming and going. Every 10 ms it starts RATE/100 threads, each
 * busy for BUSY_USEC of CPU time and then gone, until killed; at most 64 live at once (a start
 * that would pass that waits for the next tick). Prints its PID, and on SIGTERM/SIGINT how many
 * threads it started, and exits 0.
 *
 *   thread-churn RATE_PER_SECOND BUSY_USEC
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned busy_usec;
static atomic_uint live;

static uint64_t thread_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void *worker(void *arg) {
        uint64_t start = thread_ns();

        (void) arg;
        while (thread_ns() - start < (uint64_t) busy_usec * 1000)
                ;
        atomic_fetch_sub(&live, 1);
        return NULL;
}

int main(int argc, char **argv) {
        unsigned long started = 0, per_tick;
        struct timespec next;
        pthread_attr_t attr;
        sigset_t ss;
        int sig;

        if (argc != 3 || atoi(argv[1]) < 100 || atoi(argv[2]) < 0) {
                fprintf(stderr, "usage: thread-churn RATE_PER_SECOND(>=100) BUSY_USEC\n");
                return 2;
        }
        per_tick = (unsigned long) atoi(argv[1]) / 100;
        busy_usec = (unsigned) atoi(argv[2]);

        /* The signals are taken synchronously at each tick: no handler races the threads. */
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        pthread_sigmask(SIG_BLOCK, &ss, NULL);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        printf("%d\n", (int) getpid());
        fflush(stdout);

        clock_gettime(CLOCK_MONOTONIC, &next);
        for (;;) {
                struct timespec zero = { 0, 0 };
                pthread_t t;

                for (unsigned long i = 0; i < per_tick && atomic_load(&live) < 64; i++) {
                        atomic_fetch_add(&live, 1);
                        if (pthread_create(&t, &attr, worker, NULL) != 0) {
                                atomic_fetch_sub(&live, 1);
                                break;
                        }
                        started++;
                }
                next.tv_nsec += 10 * 1000000L;
                if (next.tv_nsec >= 1000000000L) {
                        next.tv_nsec -= 1000000000L;
                        next.tv_sec++;
                }
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
                        ;
                sig = sigtimedwait(&ss, NULL, &zero);
                if (sig == SIGTERM || sig == SIGINT) {
                        fprintf(stderr, "thread-churn: %lu threads started\n", started);
                        return 0;
                }
        }
}
