/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Real CPU hotplug: takes CPU 1 offline and back through sysfs, and checks that the uevent socket
 * reports both events and that topology_refresh() follows each time. Holds the machine lock for
 * the whole run (other tests measure timing or use CPU 1) and always puts CPU 1 back online: at
 * exit, and from a signal handler when killed (meson's timeout sends SIGTERM; a failed assertion
 * aborts).
 *
 * Exit: 0 pass, 1 fail, 77 skip (not root, or no hot-pluggable CPU 1).
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#include "machine-lock.h"
#include "peltd/hotplug.h"
#include "peltd/macro.h"
#include "peltd/time-util.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"

#define CPU1_ONLINE "/sys/devices/system/cpu/cpu1/online"
#define EXIT_SKIP 77
/* The kernel sends the uevent while the write is in progress; this is only a safety net. */
#define EVENT_TIMEOUT_USEC (10 * USEC_PER_SEC)

static volatile sig_atomic_t restore_needed;

/* Async-signal-safe: open, write, close. */
static void put_cpu1_online(void) {
        int fd;

        if (!restore_needed)
                return;
        fd = open(CPU1_ONLINE, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                if (write(fd, "1", 1) == 1)
                        restore_needed = 0;
                close(fd);
        }
}

static void restore_at_exit(void) {
        put_cpu1_online();
        if (restore_needed)
                fprintf(stderr, "test-hotplug: could not put CPU 1 back online!\n");
}

static void restore_on_signal(int sig) {
        put_cpu1_online();
        signal(sig, SIG_DFL);
        raise(sig);
}

#define check(expr)                                                                       \
        do {                                                                              \
                if (!(expr)) {                                                            \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
                        exit(1);                                                          \
                }                                                                         \
        } while (0)

static int write_cpu1(const char *value) {
        int fd = open(CPU1_ONLINE, O_WRONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return negative_errno();
        n = write(fd, value, strlen(value));
        close(fd);
        return n == (ssize_t) strlen(value) ? 0 : negative_errno();
}

/* Waits for the next hotplug event of CPU 1 (events of other CPUs are reported and skipped). */
static int wait_event(int fd, HotplugEvent *ret) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + EVENT_TIMEOUT_USEC;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                usec_t now = now_usec(CLOCK_MONOTONIC);
                HotplugEvent e;
                int r;

                r = hotplug_receive(fd, &e);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (e.cpu == 1) {
                                *ret = e;
                                return 0;
                        }
                        fprintf(stderr, "(an event of CPU %d, ignored)\n", e.cpu);
                        continue;
                }
                if (now >= deadline)
                        return -ETIMEDOUT;
                r = poll(&p, 1, (int) ((deadline - now) / USEC_PER_MSEC) + 1);
                if (r < 0 && errno != EINTR)
                        return negative_errno();
        }
}

int main(void) {
        static const int signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGALRM };
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_close_ int fd = -1;
        HotplugEvent e;
        int r, v;

        if (geteuid() != 0) {
                printf("SKIP: CPU hotplug needs root\n");
                return EXIT_SKIP;
        }
        if (access(CPU1_ONLINE, W_OK) < 0) {
                printf("SKIP: CPU 1 cannot be taken offline here (%s: %m)\n", CPU1_ONLINE);
                return EXIT_SKIP;
        }

        machine_lock();

        check(rootdir_open("/", &root) == 0);
        check(rootdir_read_int(root, CPU1_ONLINE, &v) == 0);
        if (v != 1) {
                /* Left offline by someone else's crash: bring it back first, it is the normal state. */
                fprintf(stderr, "CPU 1 was offline; putting it online first\n");
                check(write_cpu1("1") == 0);
        }

        for (size_t i = 0; i < ELEMENTSOF(signals); i++)
                signal(signals[i], restore_on_signal);
        check(atexit(restore_at_exit) == 0);

        fd = hotplug_open();
        check(fd >= 0);
        check(hotplug_drain(fd) >= 0);

        check(topology_load(root, &t) == 0);
        check(cpumask_test(&t->online, 1));
        check(topology_refresh(&t, root) == 0);
        check(topology_online_changed(t, root) == 0);

        /* Offline. */
        restore_needed = 1;
        r = write_cpu1("0");
        if (r < 0) {
                fprintf(stderr, "Cannot take CPU 1 offline: %s\n", strerror(-r));
                return 1;
        }
        check(topology_online_changed(t, root) == 1);
        r = wait_event(fd, &e);
        if (r < 0) {
                fprintf(stderr, "No offline uevent for CPU 1: %s\n", strerror(-r));
                return 1;
        }
        check(e.action == HOTPLUG_OFFLINE);
        printf("uevent: offline CPU %d\n", e.cpu);
        check(topology_refresh(&t, root) == 1);
        check(!cpumask_test(&t->online, 1));
        check(topology_cpu(t, 1) == NULL);
        check(t->n_cpus >= 1);
        check(topology_refresh(&t, root) == 0);
        check(topology_online_changed(t, root) == 0);
        printf("offline: topology_refresh() reported the change; %zu CPUs online\n", t->n_cpus);

        /* Online again. */
        r = write_cpu1("1");
        if (r < 0) {
                fprintf(stderr, "Cannot put CPU 1 online: %s\n", strerror(-r));
                return 1;
        }
        restore_needed = 0;
        check(topology_online_changed(t, root) == 1);
        r = wait_event(fd, &e);
        if (r < 0) {
                fprintf(stderr, "No online uevent for CPU 1: %s\n", strerror(-r));
                return 1;
        }
        check(e.action == HOTPLUG_ONLINE);
        printf("uevent: online CPU %d\n", e.cpu);
        check(topology_refresh(&t, root) == 1);
        check(cpumask_test(&t->online, 1));
        check(topology_cpu(t, 1) != NULL);
        check(topology_refresh(&t, root) == 0);
        printf("online: topology_refresh() reported the change; %zu CPUs online\n", t->n_cpus);

        /* Nothing left to read. */
        check(hotplug_drain(fd) == 0);
        return 0;
}
