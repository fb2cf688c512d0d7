/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peltd/alloc-util.h"
#include "peltd/cgroup-path.h"
#include "peltd/sample-pressure.h"

void run_delays_done(RunDelays *d) {
        free(d->threads);
        *d = (RunDelays){};
}

int schedstat_parse_run_delay(const char *s, uint64_t *ret_ns) {
        unsigned long long run, delay;
        int end = 0;

        if (sscanf(s, "%llu %llu %*u%n", &run, &delay, &end) < 2 || end == 0)
                return -EINVAL;
        *ret_ns = delay;
        return 0;
}

/* One thread's run_delay; -ESRCH (or -ENOENT) when it is gone. */
static int read_run_delay(const RootDir *proc, pid_t tid, uint64_t *ret_ns) {
        _cleanup_free_ char *s = NULL;
        char path[64];
        int r;

        /* PID/task/TID: /proc/TID of a thread that is not the leader gives process-wide figures in places. */
        snprintf(path, sizeof path, "%d/task/%d/schedstat", (int) tid, (int) tid);
        r = rootdir_read_string(proc, path, &s);
        if (r < 0)
                return r;
        return schedstat_parse_run_delay(s, ret_ns);
}

static int compare_tids(const void *a, const void *b) {
        const ThreadDelay *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The tids of the group's membership file. */
static int read_members(const RootDir *root, const char *threads_file, const char *group, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ char *file = cgroup_file_path(group, threads_file), *content = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        if (!file)
                return -ENOMEM;
        fd = rootdir_open_file(root, file, O_RDONLY);
        if (fd < 0)
                return fd;
        r = read_full_fd(fd, &content, NULL);
        if (r < 0)
                return r;
        return cgroup_parse_tids(content, ret, ret_n);
}

int run_delays_read(const RootDir *root, const char *threads_file, const char *group, const RootDir *proc,
                    RunDelays *d, uint64_t *ret_growth_ns, uint64_t *ret_sum_ns) {
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_free_ ThreadDelay *now = NULL;
        size_t n_tids = 0, n = 0, j = 0;
        uint64_t growth = 0, sum = 0;
        int r;

        r = read_members(root, threads_file, group, &tids, &n_tids);
        if (r < 0)
                return r;
        now = new0(ThreadDelay, MAX(n_tids, 1u));
        if (!now)
                return -ENOMEM;
        for (size_t i = 0; i < n_tids; i++) {
                uint64_t delay;

                if (read_run_delay(proc, tids[i], &delay) < 0)
                        continue; /* gone meanwhile */
                now[n++] = (ThreadDelay){ .tid = tids[i], .run_delay_ns = delay };
                sum += delay;
        }
        qsort(now, n, sizeof *now, compare_tids);

        /* Both sorted by tid: the growth of the threads in both. */
        for (size_t i = 0; i < n; i++) {
                while (j < d->n && d->threads[j].tid < now[i].tid)
                        j++;
                if (j < d->n && d->threads[j].tid == now[i].tid && now[i].run_delay_ns > d->threads[j].run_delay_ns)
                        growth += now[i].run_delay_ns - d->threads[j].run_delay_ns;
        }
        free(d->threads);
        d->threads = TAKE_PTR(now);
        d->n = n;
        *ret_growth_ns = growth;
        *ret_sum_ns = sum;
        return 0;
}

int psi_parse_some_total(const char *s, uint64_t *ret_usec) {
        for (const char *line = s; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                const char *total;
                unsigned long long v;
                int end = 0;

                if (strncmp(line, "some ", 5) != 0)
                        continue;
                total = strstr(line, " total=");
                if (!total || (strchr(line, '\n') && total > strchr(line, '\n')))
                        return -EINVAL;
                if (sscanf(total, " total=%llu%n", &v, &end) != 1 || end == 0 ||
                    (total[end] != '\0' && total[end] != '\n'))
                        return -EINVAL;
                *ret_usec = v;
                return 0;
        }
        return -EINVAL;
}

int psi_trigger_open(const RootDir *root, const char *group, usec_t stall_usec, usec_t window_usec) {
        _cleanup_free_ char *file = cgroup_file_path(group, "cpu.pressure");
        _cleanup_close_ int fd = -1;
        char trigger[64];
        int n;

        if (!file)
                return -ENOMEM;
        fd = rootdir_open_file(root, file, O_RDWR | O_NONBLOCK);
        if (fd < 0)
                return fd;
        /* The kernel takes the trigger with its terminating NUL. */
        n = snprintf(trigger, sizeof trigger, "some %" PRIu64 " %" PRIu64, stall_usec, window_usec);
        if (write(fd, trigger, (size_t) n + 1) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int psi_read_some_total(int fd, uint64_t *ret_usec) {
        char buf[256];
        ssize_t n = pread(fd, buf, sizeof buf - 1, 0);

        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return psi_parse_some_total(buf, ret_usec);
}
