/* SPDX-License-Identifier: GPL-2.0-only */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "peltd/alloc-util.h"
#include "peltd/cpumask.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/sample-cgroup.h"
#include "peltd/time-util.h"

/*
 * A directory above managed groups, up to the walk's root: when its usage counter did not move
 * since the last round, nothing below it ran, and its groups need not be read.
 */
typedef struct Ancestor {
        char *path;
        int fd;                      /* its usage counter (v1 cpuacct.usage, v2 cpu.stat), -1: none */
        ssize_t parent;              /* its own parent in the list, -1: none */
        bool have;                   /* usage holds its last reading */
        uint64_t usage;
        bool moved;                  /* this round: its counter moved, or is not known */
} Ancestor;

struct CgroupSampler {
        const CgroupFs *fs;
        GroupFilter filter;
        const unsigned *capacity;
        size_t n_capacity;
        bool read_all;               /* every counter every round (a reference for tests) */
        bool want_percpu;            /* per-CPU usage besides capacities that differ (steal) */
        bool refresh_all;            /* every group's shares, cpuset and quota at the next round */

        Ancestor *ancestors;         /* sorted by path: parents before their children */
        size_t n_ancestors;

        CgroupGroup **groups;        /* sorted by path */
        size_t n_groups, allocated;

        char **paths;                /* every group of the last walk */
        size_t n_paths, allocated_paths;

        /*
         * Scratch for the counter files whose length grows with the machine (usage_percpu, the
         * cpuset, cpu.stat): the longest read so far, kept, shared by every group (groups are
         * read one after the other), so a round allocates nothing once it has grown.
         */
        ReadBuf buf;
        uint64_t *percpu;            /* CPUMASK_MAX values, parsed before they are copied */

        uint64_t (*clock)(void *userdata);
        void *clock_userdata;
};

static uint64_t monotonic_ns(_unused_ void *userdata) {
        return now_nsec(CLOCK_MONOTONIC);
}

void cgroup_sampler_set_clock(CgroupSampler *s, uint64_t (*clock)(void *userdata), void *userdata) {
        s->clock = clock ?: monotonic_ns;
        s->clock_userdata = userdata;
}

int cgroup_sampler_new(const CgroupFs *fs, const GroupFilter *filter, CgroupSampler **ret) {
        CgroupSampler *s = new0(CgroupSampler, 1);

        if (!s)
                return -ENOMEM;
        s->fs = fs;
        s->filter = *filter;
        s->clock = monotonic_ns;
        *ret = s;
        return 0;
}

void cgroup_sampler_set_filter(CgroupSampler *s, const GroupFilter *filter) {
        s->filter = *filter;
}

static void close_fd(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void group_free(CgroupGroup *g) {
        if (!g)
                return;
        close_fd(&g->usage_fd);
        close_fd(&g->percpu_fd);
        close_fd(&g->stat_fd);
        close_fd(&g->shares_fd);
        close_fd(&g->cpus_fd);
        close_fd(&g->quota_fd);
        free(g->percpu_ns);
        free(g->path);
        free(g);
}

static void ancestor_done(Ancestor *a) {
        free(a->path);
        close_fd(&a->fd);
}

static void paths_clear(CgroupSampler *s) {
        for (size_t i = 0; i < s->n_paths; i++)
                free(s->paths[i]);
        s->n_paths = 0;
}

CgroupSampler *cgroup_sampler_free(CgroupSampler *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_groups; i++)
                group_free(s->groups[i]);
        free(s->groups);
        for (size_t i = 0; i < s->n_ancestors; i++)
                ancestor_done(&s->ancestors[i]);
        free(s->ancestors);
        paths_clear(s);
        free(s->paths);
        readbuf_done(&s->buf);
        free(s->percpu);
        free(s);
        return NULL;
}

void cgroup_sampler_set_capacities(CgroupSampler *s, const unsigned *capacity, size_t n) {
        s->capacity = capacity;
        s->n_capacity = n;
}

static unsigned capacity_of(const CgroupSampler *s, size_t cpu) {
        return s->capacity && cpu < s->n_capacity && s->capacity[cpu] ? s->capacity[cpu] : 1024;
}

void cgroup_sampler_set_percpu(CgroupSampler *s, bool want) {
        s->want_percpu = want;
}

void cgroup_sampler_set_read_all(CgroupSampler *s, bool read_all) {
        s->read_all = read_all;
}

/*
 * Per-CPU usage matters where the CPUs differ in capacity (each CPU's time counts its capacity),
 * or where steal shares are taken per CPU; elsewhere the total says the same.
 */
static bool percpu_wanted(const CgroupSampler *s) {
        if (s->read_all || s->want_percpu)
                return true;
        for (size_t i = 1; i < s->n_capacity; i++)
                if (capacity_of(s, i) != capacity_of(s, 0))
                        return true;
        return false;
}

size_t cgroup_sampler_n_groups(const CgroupSampler *s) {
        return s->n_groups;
}

size_t cgroup_sampler_fds_wanted(const CgroupSampler *s) {
        /*
         * Six counter files a group (usage, usage_percpu, cpu.stat, shares, cpus, quota), one an
         * ancestor; a walk holds a directory a level.
         */
        return 6 * s->n_groups + s->n_ancestors + 64;
}

CgroupGroup *cgroup_sampler_group(CgroupSampler *s, size_t i) {
        return i < s->n_groups ? s->groups[i] : NULL;
}

const char *cgroup_sampler_path(const CgroupSampler *s, size_t path_index) {
        return path_index < s->n_paths ? s->paths[path_index] : NULL;
}

void cgroup_sampler_settle(CgroupSampler *s) {
        size_t j = 0;

        for (size_t i = 0; i < s->n_groups; i++) {
                CgroupGroup *g = s->groups[i];

                if (g->state == CGROUP_GROUP_GONE) {
                        group_free(g);
                        continue;
                }
                if (g->state == CGROUP_GROUP_NEW)
                        g->state = CGROUP_GROUP_LIVE;
                s->groups[j++] = g;
        }
        s->n_groups = j;
}

static int open_group_file(const RootDir *r, const char *group, const char *file) {
        _cleanup_free_ char *p = NULL;

        if (!r)
                return -ENOENT;
        p = cgroup_file_path(group, file);
        if (!p)
                return -ENOMEM;
        return rootdir_open_file(r, p, O_RDONLY);
}

/* A removed cgroup's open files answer ENODEV; its path, ENOENT. */
static bool gone_errno(int k) {
        return k == -ENODEV || k == -ENOENT || k == -ESRCH;
}

static int read_status(int fd, ssize_t n) {
        if (fd < 0)
                return -EBADF; /* the file does not exist for this group: not a sign that it went */
        return n < 0 ? (int) n : 0;
}

/* Reads a kept-open counter file whole into the sampler's buffer (s->buf.data). */
static int read_fd(CgroupSampler *s, int fd) {
        return read_status(fd, fd < 0 ? 0 : pread_full(fd, &s->buf));
}

/*
 * A file holding one number (cpuacct.usage, cpu.shares, cpu.weight): a u64 is at most 20 digits,
 * and a file that fills the 64 bytes is refused (-EFBIG), not taken for its first bytes.
 */
static int read_u64_fd(int fd, uint64_t *ret) {
        char buf[64];
        int k = read_status(fd, fd < 0 ? 0 : pread_string(fd, buf, sizeof buf));

        if (k < 0)
                return k;
        return safe_atou64(buf, ret) < 0 ? -EINVAL : 0;
}

/* usage_percpu into g->percpu_ns, which grows to the number of CPUs and stays. */
static int take_percpu(CgroupSampler *s, CgroupGroup *g, const char *text) {
        int n;

        if (!s->percpu) {
                s->percpu = new0(uint64_t, CPUMASK_MAX);
                if (!s->percpu)
                        return -ENOMEM;
        }
        /* One value per possible CPU: more than CPUMASK_MAX is not a file a kernel writes. */
        n = cgroup_parse_u64_list(text, s->percpu, CPUMASK_MAX);
        if (n <= 0)
                return -EINVAL;
        if ((size_t) n > g->allocated_percpu) {
                uint64_t *nv = realloc(g->percpu_ns, (size_t) n * sizeof *nv);

                if (!nv)
                        return -ENOMEM;
                g->percpu_ns = nv;
                g->allocated_percpu = (size_t) n;
        }
        memcpy(g->percpu_ns, s->percpu, (size_t) n * sizeof *g->percpu_ns);
        g->n_percpu = (size_t) n;
        return 0;
}

/*
 * v2 controller files (cpu.weight, cpuset.cpus.effective) come and go with the parent's
 * cgroup.subtree_control — systemd turns the cpu controller on for a unit given CPUWeight= and off
 * again when none is left — while the group stays. An fd whose file went answers ENODEV: it is
 * closed and the file looked for again, as is a file that was not there, once a round. Only
 * cpu.stat, which every v2 group has, says whether the group itself is gone.
 */
static void v2_reopen(CgroupSampler *s, CgroupGroup *g, int *fd, const char *file) {
        close_fd(fd);
        *fd = MAX(open_group_file(s->fs->unified, g->path, file), -1);
}

static int read_v2_controller_u64(CgroupSampler *s, CgroupGroup *g, int *fd, const char *file, uint64_t *ret) {
        int k;

        if (*fd < 0)
                v2_reopen(s, g, fd, file);
        k = read_u64_fd(*fd, ret);
        if (gone_errno(k)) {
                v2_reopen(s, g, fd, file);
                k = read_u64_fd(*fd, ret);
        }
        return k;
}

static int read_v2_controller(CgroupSampler *s, CgroupGroup *g, int *fd, const char *file) {
        int k;

        if (*fd < 0)
                v2_reopen(s, g, fd, file);
        k = read_fd(s, *fd);
        if (gone_errno(k)) {
                v2_reopen(s, g, fd, file);
                k = read_fd(s, *fd);
        }
        return k;
}

/* The CPUs g may use (in s->buf): for throttling (summed over them) and for their capacity. */
static void take_cpus(CgroupSampler *s, CgroupGroup *g) {
        uint64_t sum = 0;
        CpuMask m;

        if (cpumask_parse_list(strstrip_trailing(s->buf.data), &m) < 0 || cpumask_empty(&m)) {
                log_debug("%s: cpuset does not parse, keeping the last one.", g->path);
                return;
        }
        CPUMASK_FOREACH(cpu, &m)
                sum += capacity_of(s, (size_t) cpu);
        g->nr_cpus = (unsigned) cpumask_count(&m);
        g->capacity = (unsigned) (sum / g->nr_cpus);
}

/* Whether a quota limits the group (v1 cpu.cfs_quota_us not -1, v2 cpu.max not "max"): it may be throttled. */
static void take_quota(CgroupSampler *s, CgroupGroup *g) {
        const char *t = s->buf.data;

        g->has_quota = !(t[0] == '-' || startswith(t, "max"));
}

/* v2 cpu.stat: the usage and the throttling counters. */
static void take_v2_stat(CgroupSampler *s, CgroupGroup *g) {
        const char *buf = s->buf.data;
        uint64_t v;

        g->have_usage = g->have_throttled = false;
        if (cgroup_parse_keyed_u64(buf, "usage_usec", &v) >= 0) {
                g->usage_ns = v * 1000;
                g->have_usage = true;
        } else
                log_debug("%s: cpu.stat has no usable usage_usec, skipping it this round.", g->path);
        if (cgroup_parse_keyed_u64(buf, "throttled_usec", &v) >= 0) {
                g->throttled_ns = v * 1000;
                g->have_throttled = true;
        }
        if (cgroup_parse_keyed_u64(buf, "nr_throttled", &v) >= 0)
                g->nr_throttled = v;
}

/* v2: the cpuset, the weight and the quota (at a refresh). */
static void read_v2_settings(CgroupSampler *s, CgroupGroup *g) {
        uint64_t v;
        int k;

        g->read_mask |= CGROUP_READ_CPUS | CGROUP_READ_SHARES | CGROUP_READ_QUOTA;
        if (read_v2_controller(s, g, &g->cpus_fd, "cpuset.cpus.effective") >= 0)
                take_cpus(s, g);
        k = read_v2_controller_u64(s, g, &g->shares_fd, "cpu.weight", &v);
        g->have_shares = k >= 0 && v >= 1 && v <= 10000;
        if (g->have_shares)
                g->shares = cgroup_weight_to_shares(v);
        if (read_v2_controller(s, g, &g->quota_fd, "cpu.max") >= 0)
                take_quota(s, g);
        else
                g->has_quota = false;
}

/* v2: cpu.stat (which every group has: it says whether the group is gone); at a refresh the rest. */
static int read_group_v2(CgroupSampler *s, CgroupGroup *g, bool refresh) {
        int k;

        g->read_mask |= CGROUP_READ_USAGE;
        k = read_fd(s, g->stat_fd);
        g->sample_ns = s->clock(s->clock_userdata);
        if (gone_errno(k))
                return -ENODEV;
        if (k >= 0)
                take_v2_stat(s, g);
        else
                g->have_usage = g->have_throttled = false;
        if (refresh)
                read_v2_settings(s, g);
        return 0;
}

/* v1: the cpuset and the shares, at a refresh. Returns -ENODEV when the group is gone. */
static int read_v1_settings(CgroupSampler *s, CgroupGroup *g) {
        uint64_t v;
        int k;

        g->read_mask |= CGROUP_READ_CPUS | CGROUP_READ_SHARES | CGROUP_READ_QUOTA;
        if (g->cpus_fd >= 0) {
                k = read_fd(s, g->cpus_fd);
                if (k >= 0)
                        take_cpus(s, g);
                else if (gone_errno(k))
                        return -ENODEV;
        }
        /* A group missing from the cpu hierarchy is still managed where it exists. */
        k = read_u64_fd(g->shares_fd, &v);
        g->have_shares = k >= 0 && v >= 2;
        if (g->have_shares)
                g->shares = v;
        g->has_quota = read_fd(s, g->quota_fd) >= 0;
        if (g->has_quota)
                take_quota(s, g);
        return 0;
}

/* v1 cpu.stat: the throttling counters. */
static void read_v1_stat(CgroupSampler *s, CgroupGroup *g) {
        const char *buf;
        uint64_t v;

        g->read_mask |= CGROUP_READ_STAT;
        g->have_throttled = false;
        if (read_fd(s, g->stat_fd) < 0)
                return;
        buf = s->buf.data;
        if (cgroup_parse_keyed_u64(buf, "throttled_time", &v) >= 0) {
                g->throttled_ns = v;
                g->have_throttled = true;
        } else
                log_debug("%s: cpu.stat has no usable throttled_time, skipping it this round.", g->path);
        if (cgroup_parse_keyed_u64(buf, "nr_throttled", &v) >= 0)
                g->nr_throttled = v;
}

/* v1: the usage, per CPU where wanted, the throttling counters where a quota can make them grow. */
static int read_group_v1(CgroupSampler *s, CgroupGroup *g, bool refresh, bool percpu) {
        uint64_t v;
        int k;

        if (refresh && read_v1_settings(s, g) < 0)
                return -ENODEV;

        g->read_mask |= CGROUP_READ_USAGE;
        k = read_u64_fd(g->usage_fd, &v);
        if (gone_errno(k))
                return -ENODEV;
        g->have_usage = k >= 0;
        if (k >= 0)
                g->usage_ns = v;
        else if (k == -EINVAL)
                log_debug("%s: cpuacct.usage does not parse, skipping it this round.", g->path);

        g->percpu_current = false;
        if (percpu) {
                g->read_mask |= CGROUP_READ_PERCPU;
                k = read_fd(s, g->percpu_fd);
                if (gone_errno(k))
                        return -ENODEV;
                g->n_percpu = 0;
                if (k >= 0) {
                        k = take_percpu(s, g, s->buf.data);
                        if (k == -ENOMEM)
                                return k;
                        if (k < 0)
                                log_debug("%s: cpuacct.usage_percpu does not parse, skipping it this round.", g->path);
                        g->percpu_current = k >= 0;
                } else if (k == -EFBIG)
                        log_debug("%s: cpuacct.usage_percpu is over 4 MiB, skipping it.", g->path);
        } else
                g->n_percpu = 0; /* not as of now: no quiet round may take it for current */
        g->sample_ns = s->clock(s->clock_userdata);

        /* Without a quota of its own a group is never throttled (an ancestor's shows in the ancestor's). */
        if (g->has_quota || s->read_all)
                read_v1_stat(s, g);
        return 0;
}

/*
 * Whether g provably did not run since the last round: its usage is known, and an ancestor's
 * counter did not move. A group with a quota may be throttled without running: it is read.
 */
static bool quiet(const CgroupSampler *s, const CgroupGroup *g) {
        return !s->read_all && g->have_usage && !g->has_quota && g->ancestor >= 0 &&
               (size_t) g->ancestor < s->n_ancestors && !s->ancestors[g->ancestor].moved;
}

/* Reads what this round needs of g's counters; returns -ENODEV when the group is gone. */
static int read_group(CgroupSampler *s, CgroupGroup *g, bool percpu) {
        bool refresh = g->refresh || s->read_all;

        g->read_mask = 0;
        g->refresh = false;
        if (quiet(s, g)) {
                /* Its counters are as they were: only the time moves on (and the settings are read when due). */
                g->sample_ns = s->clock(s->clock_userdata);
                g->percpu_current = g->n_percpu > 0;
                if (!refresh)
                        return 0;
                if (s->fs->mode == CGROUP_MODE_V2) {
                        read_v2_settings(s, g);
                        return 0;
                }
                return read_v1_settings(s, g);
        }
        if (s->fs->mode == CGROUP_MODE_V2)
                return read_group_v2(s, g, refresh);
        return read_group_v1(s, g, refresh, percpu);
}

/* An ancestor's usage counter. */
static int read_ancestor(CgroupSampler *s, const Ancestor *a, uint64_t *ret) {
        uint64_t v;
        int k;

        if (s->fs->mode != CGROUP_MODE_V2)
                return read_u64_fd(a->fd, ret);
        k = read_fd(s, a->fd);
        if (k < 0)
                return k;
        if (cgroup_parse_keyed_u64(s->buf.data, "usage_usec", &v) < 0)
                return -EINVAL;
        *ret = v * 1000;
        return 0;
}

/* The ancestors' counters, parents first: below one that did not move, none moved. */
static void read_ancestors(CgroupSampler *s) {
        for (size_t i = 0; i < s->n_ancestors; i++) {
                Ancestor *a = &s->ancestors[i];
                uint64_t v;
                int k;

                if (a->parent >= 0 && !s->ancestors[a->parent].moved && a->have) {
                        a->moved = false;
                        continue;
                }
                k = read_ancestor(s, a, &v);
                if (k < 0) {
                        a->moved = true;
                        a->have = false;
                        if (gone_errno(k))
                                close_fd(&a->fd); /* made again, perhaps: opened again after the next walk */
                        continue;
                }
                a->moved = !a->have || v != a->usage;
                a->usage = v;
                a->have = true;
        }
}

void cgroup_sampler_refresh(CgroupSampler *s, const char *path) {
        if (!path) {
                s->refresh_all = true;
                return;
        }
        for (size_t i = 0; i < s->n_groups; i++)
                if (streq(s->groups[i]->path, path))
                        s->groups[i]->refresh = true;
}

void cgroup_sampler_read_counters(CgroupSampler *s) {
        bool percpu = percpu_wanted(s);

        if (!s->read_all)
                read_ancestors(s);
        for (size_t i = 0; i < s->n_groups; i++) {
                CgroupGroup *g = s->groups[i];

                if (g->state != CGROUP_GROUP_LIVE)
                        continue;
                g->refresh |= s->refresh_all;
                if (read_group(s, g, percpu) == -ENODEV) {
                        log_debug("%s: removed, no longer sampled.", g->path);
                        g->state = CGROUP_GROUP_GONE;
                }
        }
        s->refresh_all = false;
}

static int group_new(CgroupSampler *s, const char *path, CgroupGroup **ret) {
        CgroupGroup *g = new0(CgroupGroup, 1);
        bool v2 = s->fs->mode == CGROUP_MODE_V2;
        int k;

        if (!g)
                return -ENOMEM;
        g->usage_fd = g->percpu_fd = g->stat_fd = g->shares_fd = g->cpus_fd = g->quota_fd = -1;
        g->ancestor = -1;
        g->refresh = true;
        g->state = CGROUP_GROUP_NEW;
        g->path = strdup(path);
        if (!g->path) {
                free(g);
                return -ENOMEM;
        }

        /* Each file is optional: a group missing from a hierarchy is sampled where it exists. */
        if (v2) {
                g->stat_fd = MAX(open_group_file(s->fs->unified, path, "cpu.stat"), -1);
                g->shares_fd = MAX(open_group_file(s->fs->unified, path, "cpu.weight"), -1);
                g->cpus_fd = MAX(open_group_file(s->fs->unified, path, "cpuset.cpus.effective"), -1);
                g->quota_fd = MAX(open_group_file(s->fs->unified, path, "cpu.max"), -1);
        } else {
                g->usage_fd = MAX(open_group_file(s->fs->cpuacct, path, "cpuacct.usage"), -1);
                g->percpu_fd = MAX(open_group_file(s->fs->cpuacct, path, "cpuacct.usage_percpu"), -1);
                g->stat_fd = MAX(open_group_file(s->fs->cpu, path, "cpu.stat"), -1);
                g->shares_fd = MAX(open_group_file(s->fs->cpu, path, "cpu.shares"), -1);
                g->quota_fd = MAX(open_group_file(s->fs->cpu, path, "cpu.cfs_quota_us"), -1);
                k = open_group_file(s->fs->cpuset, path, "cpuset.effective_cpus");
                if (k < 0)
                        k = open_group_file(s->fs->cpuset, path, "cpuset.cpus");
                g->cpus_fd = MAX(k, -1);
        }

        /* The baseline: everything (the throttling counters with or without a quota). */
        k = read_group(s, g, percpu_wanted(s));
        if (k >= 0 && s->fs->mode != CGROUP_MODE_V2 && !g->has_quota)
                read_v1_stat(s, g);
        if (k < 0) {
                group_free(g);
                return k;
        }
        *ret = g;
        return 0;
}

static int group_cmp(const void *key, const void *elem) {
        return strcmp(key, (*(CgroupGroup *const *) elem)->path);
}

static ssize_t group_find(const CgroupSampler *s, const char *path, size_t *ret_insert) {
        size_t lo = 0, hi = s->n_groups;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = group_cmp(path, &s->groups[mid]);

                if (c == 0)
                        return (ssize_t) mid;
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        if (ret_insert)
                *ret_insert = lo;
        return -1;
}

/*
 * A selected group: the known one, or a new one with its baseline (NULL when it vanished meanwhile).
 * A group is its path and its directory: a new directory at a known path (another inode, or the
 * old one's files gone) is a new group; the old one is GONE and stays beside it until settled.
 */
static int group_get(CgroupSampler *s, const char *path, uint64_t ino, CgroupGroup **ret) {
        size_t at = 0;
        ssize_t i = group_find(s, path, &at);
        CgroupGroup *g;
        int k;

        if (i >= 0) {
                /* Duplicates (a GONE one, then its successor) sit next to each other: take the last. */
                while ((size_t) i + 1 < s->n_groups && streq(s->groups[i + 1]->path, path))
                        i++;
                g = s->groups[i];
                if (g->state != CGROUP_GROUP_GONE && g->ino == ino) {
                        *ret = g;
                        return 0;
                }
                if (g->state != CGROUP_GROUP_GONE) {
                        log_debug("%s: made again (new directory), sampling it afresh.", path);
                        g->state = CGROUP_GROUP_GONE;
                }
                at = (size_t) i + 1;
        }
        k = group_new(s, path, &g);
        if (k == -ENODEV) {
                *ret = NULL;
                return 0;
        }
        if (k < 0)
                return k;
        g->ino = ino;
        if (ARRAY_RESERVE(s->groups, s->allocated, s->n_groups + 1, 16) < 0) {
                group_free(g);
                return -ENOMEM;
        }
        memmove(s->groups + at + 1, s->groups + at, (s->n_groups - at) * sizeof *s->groups);
        s->groups[at] = g;
        s->n_groups++;
        *ret = g;
        return 0;
}

static int path_add(CgroupSampler *s, const char *path, size_t *ret) {
        if (ARRAY_RESERVE(s->paths, s->allocated_paths, s->n_paths + 1, 64) < 0)
                return -ENOMEM;
        s->paths[s->n_paths] = strdup(path);
        if (!s->paths[s->n_paths])
                return -ENOMEM;
        *ret = s->n_paths++;
        return 0;
}

static int path_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int ancestor_cmp(const void *key, const void *elem) {
        return strcmp(key, ((const Ancestor *) elem)->path);
}

static ssize_t ancestor_find(const CgroupSampler *s, const char *path) {
        const Ancestor *a = s->n_ancestors > 0 ? bsearch(path, s->ancestors, s->n_ancestors, sizeof *a, ancestor_cmp) : NULL;

        return a ? a - s->ancestors : -1;
}

/* Whether path lies strictly below the walk's root. */
static bool below_root(const CgroupSampler *s, const char *path) {
        const char *t = streq(s->filter.root, "/") ? path : startswith(path, s->filter.root);

        return t && t[0] == '/' && t[1];
}

/*
 * After a walk: the ancestors of every group, up to the walk's root, each with its usage counter
 * kept open (those already known keep theirs and their last reading), each group pointed at its
 * parent among them.
 */
static void paths_free(char ***want, size_t *n) {
        for (size_t i = 0; i < *n; i++)
                free((*want)[i]);
        free(*want);
        *want = NULL;
        *n = 0;
}

static int ancestors_update(CgroupSampler *s) {
        _cleanup_free_ bool *taken = NULL;
        char **want = NULL;
        size_t n = 0, allocated = 0, k = 0;
        Ancestor *na;

        for (size_t i = 0; i < s->n_groups; i++) {
                char *p = s->groups[i]->state == CGROUP_GROUP_GONE || !below_root(s, s->groups[i]->path)
                                  ? NULL
                                  : cgroup_parent_path(s->groups[i]->path);

                for (; p; p = below_root(s, p) ? cgroup_parent_path(want[n - 1]) : NULL) {
                        if (ARRAY_RESERVE(want, allocated, n + 2, 16) < 0) {
                                free(p);
                                paths_free(&want, &n);
                                return -ENOMEM;
                        }
                        want[n++] = p;
                        want[n] = NULL;
                }
        }
        if (want)
                qsort(want, n, sizeof *want, path_cmp);

        na = new0(Ancestor, MAX(n, 1u));
        taken = new0(bool, MAX(s->n_ancestors, 1u));
        if (!na || !taken) {
                free(na);
                paths_free(&want, &n);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                ssize_t old;

                if (k > 0 && streq(na[k - 1].path, want[i]))
                        continue;
                na[k] = (Ancestor){ .path = TAKE_PTR(want[i]), .fd = -1 };
                old = ancestor_find(s, na[k].path);
                if (old >= 0 && s->ancestors[old].fd >= 0) {
                        /* Known: its fd and its last reading stay. */
                        na[k].fd = s->ancestors[old].fd;
                        na[k].have = s->ancestors[old].have;
                        na[k].usage = s->ancestors[old].usage;
                        na[k].moved = s->ancestors[old].moved;
                        taken[old] = true;
                } else
                        na[k].fd = MAX(open_group_file(cgroup_fs_usage_root(s->fs), na[k].path,
                                                       s->fs->mode == CGROUP_MODE_V2 ? "cpu.stat" : "cpuacct.usage"),
                                       -1);
                k++;
        }
        paths_free(&want, &n);
        for (size_t i = 0; i < s->n_ancestors; i++) {
                if (taken[i])
                        s->ancestors[i].fd = -1;
                ancestor_done(&s->ancestors[i]);
        }
        free(s->ancestors);
        s->ancestors = na;
        s->n_ancestors = k;

        for (size_t i = 0; i < k; i++) {
                _cleanup_free_ char *p = below_root(s, na[i].path) ? cgroup_parent_path(na[i].path) : NULL;

                na[i].parent = p ? ancestor_find(s, p) : -1;
        }
        for (size_t i = 0; i < s->n_groups; i++) {
                CgroupGroup *g = s->groups[i];
                _cleanup_free_ char *p = below_root(s, g->path) ? cgroup_parent_path(g->path) : NULL;

                g->ancestor = p ? ancestor_find(s, p) : -1;
        }
        return 0;
}

typedef struct Walk {
        CgroupSampler *s;
        const RootDir *root;
        const char *threads_file;
        cgroup_member_cb cb;
        cgroup_id_cb id_cb;          /* instead of cb: each group's directory inode, no membership file */
        void *userdata;
} Walk;

/* A selected group found by the walk, its directory's inode ino: the known one or a new one (NULL: gone meanwhile). */
static int walk_found(Walk *w, const char *path, uint64_t ino, CgroupGroup **ret) {
        int k = group_get(w->s, path, ino, ret);

        if (k < 0 || !*ret)
                return k;
        (*ret)->seen = true;
        (*ret)->nr_tasks = 0;
        return 0;
}

/*
 * Where no group above path is managed and the filter selects path, it is the managed group from
 * here down (*managed). Returns 1 to go on, 0 when it is gone meanwhile (below the top), or -errno.
 */
static int walk_select(Walk *w, const char *path, DIR *d, bool top, CgroupGroup **managed) {
        struct stat st;
        int k;

        if (*managed || !w->s->filter.selects(path, w->s->filter.userdata))
                return 1;
        if (fstat(dirfd(d), &st) < 0)
                return top ? -errno : 0;
        k = walk_found(w, path, (uint64_t) st.st_ino, managed);
        if (k < 0 || !*managed)
                return k; /* an error, or gone meanwhile */
        return 1;
}

/* The BPF sampler's membership: the group's directory inode (its cgroup id). Returns as walk_select(). */
static int walk_id(Walk *w, const char *path, DIR *d, bool top, CgroupGroup *managed) {
        struct stat st;
        size_t idx;
        int k;

        if (fstat(dirfd(d), &st) < 0)
                return top ? -errno : 0;
        k = path_add(w->s, path, &idx);
        if (k < 0)
                return k;
        w->id_cb((uint64_t) st.st_ino, idx, managed, w->userdata);
        return 1;
}

/*
 * /proc's membership: the threads the group's tasks file lists, each handed to the callback and
 * counted in the managed group. Returns as walk_select().
 */
static int walk_members(Walk *w, const char *path, bool top, CgroupGroup *managed) {
        _cleanup_free_ char *file = NULL, *content = NULL;
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_close_ int fd = -1;
        size_t n_tids = 0, idx;
        int k;

        /* Reopened every time: on v1 a kept tasks fd goes on serving the list it cached. */
        file = cgroup_file_path(path, w->threads_file);
        if (!file)
                return -ENOMEM;
        fd = rootdir_open_file(w->root, file, O_RDONLY);
        if (fd >= 0 && read_full_fd(fd, &content, NULL) >= 0) {
                k = cgroup_parse_tids(content, &tids, &n_tids);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        log_debug("%s: %s does not parse, ignoring it this round.", path, w->threads_file);
                        n_tids = 0;
                }
        } else if (!top && fd < 0)
                return 0; /* removed meanwhile */

        k = path_add(w->s, path, &idx);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n_tids; i++)
                w->cb(tids[i], idx, managed, w->userdata);
        if (managed)
                managed->nr_tasks += n_tids;
        return 1;
}

static int walk_group(Walk *w, const char *path, CgroupGroup *managed, bool top);

/* The subdirectories of path, d open on it, each walked in turn. */
static int walk_children(Walk *w, const char *path, DIR *d, CgroupGroup *managed) {
        struct dirent *de;
        int k;

        while ((de = readdir(d))) {
                _cleanup_free_ char *child = NULL;

                if (de->d_type != DT_DIR || dot_or_dot_dot(de->d_name))
                        continue;
                child = cgroup_child_path(path, de->d_name);
                if (!child)
                        return -ENOMEM;
                /*
                 * Without membership to read (no tasks files, no cgroup ids), nothing below a
                 * managed group is of interest (of nested matches only the topmost is managed):
                 * its inode is all the walk needs.
                 */
                if (!w->cb && !w->id_cb && !managed && w->s->filter.selects(child, w->s->filter.userdata)) {
                        CgroupGroup *g;
                        struct stat st;

                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                                continue; /* removed since the directory was read */
                        k = walk_found(w, child, (uint64_t) st.st_ino, &g);
                        if (k < 0)
                                return k;
                        continue;
                }
                k = walk_group(w, child, managed, false);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* One directory of the walk: its group (if selected), its membership, then its children. */
static int walk_group(Walk *w, const char *path, CgroupGroup *managed, bool top) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *rel = NULL;
        int k;

        rel = cgroup_file_path(path, "");
        if (!rel)
                return -ENOMEM;
        k = rootdir_opendir(w->root, *rel ? rel : ".", &d);
        if (k < 0)
                /* Removed since its parent was read: normal. */
                return top ? k : 0;

        k = walk_select(w, path, d, top, &managed);
        if (k <= 0)
                return k;
        if (w->id_cb)
                k = walk_id(w, path, d, top, managed);
        else if (w->cb)
                k = walk_members(w, path, top, managed);
        if (k <= 0)
                return k;
        return walk_children(w, path, d, managed);
}

static int walk(CgroupSampler *s, cgroup_member_cb cb, cgroup_id_cb id_cb, void *userdata) {
        Walk w = {
                .s = s,
                .root = cgroup_fs_usage_root(s->fs),
                .threads_file = cgroup_fs_threads_file(s->fs),
                .cb = cb,
                .id_cb = id_cb,
                .userdata = userdata,
        };
        int k;

        if (!w.root)
                return -ENOMEDIUM;
        for (size_t i = 0; i < s->n_groups; i++)
                s->groups[i]->seen = false;
        paths_clear(s);

        /* Membership needs the whole hierarchy (every thread's cgroup); the groups only CgroupRoot's subtree. */
        k = walk_group(&w, cb || id_cb ? "/" : s->filter.root, NULL, true);
        if (k < 0)
                return k;

        for (size_t i = 0; i < s->n_groups; i++) {
                CgroupGroup *g = s->groups[i];

                if (!g->seen && g->state != CGROUP_GROUP_GONE) {
                        log_debug("%s: no longer there (or no longer selected), dropping it.", g->path);
                        g->state = CGROUP_GROUP_GONE;
                }
        }
        return ancestors_update(s);
}

int cgroup_sampler_walk(CgroupSampler *s, cgroup_member_cb cb, void *userdata) {
        return walk(s, cb, NULL, userdata);
}

int cgroup_sampler_walk_ids(CgroupSampler *s, cgroup_id_cb cb, void *userdata) {
        return walk(s, NULL, cb, userdata);
}
