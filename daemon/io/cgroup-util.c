/* SPDX-License-Identifier: GPL-2.0-only */
#include <dirent.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <sys/vfs.h>

#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/parse.h"

CgroupFs *cgroup_fs_free(CgroupFs *fs) {
        if (!fs)
                return NULL;
        rootdir_free(fs->cpu);
        rootdir_free(fs->cpuacct);
        rootdir_free(fs->cpuset);
        rootdir_free(fs->unified);
        free(fs);
        return NULL;
}

const char *cgroup_mode_to_string(CgroupMode m) {
        return m == CGROUP_MODE_V2 ? "v2" : "v1";
}

static int open_optional(const char *path, RootDir **ret) {
        *ret = NULL;
        return path ? rootdir_open(path, ret) : 0;
}

int cgroup_fs_open_v1(const char *cpu, const char *cpuacct, const char *cpuset, CgroupFs **ret) {
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        int r;

        fs = new0(CgroupFs, 1);
        if (!fs)
                return -ENOMEM;
        fs->mode = CGROUP_MODE_V1;
        if ((r = open_optional(cpu, &fs->cpu)) < 0 || (r = open_optional(cpuacct, &fs->cpuacct)) < 0 ||
            (r = open_optional(cpuset, &fs->cpuset)) < 0)
                return r;
        *ret = TAKE_PTR(fs);
        return 0;
}

int cgroup_fs_open_v2(const char *unified, CgroupFs **ret) {
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        int r;

        fs = new0(CgroupFs, 1);
        if (!fs)
                return -ENOMEM;
        fs->mode = CGROUP_MODE_V2;
        r = rootdir_open(unified, &fs->unified);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(fs);
        return 0;
}

/* libcgroup logs to stdout unless told otherwise; its messages are ours at debug. */
static void libcgroup_logger(_unused_ void *userdata, _unused_ int level, const char *fmt, va_list ap) {
        _cleanup_free_ char *m = NULL;

        if (log_get_max_level() < LOG_DEBUG || vasprintf(&m, fmt, ap) < 0)
                return;
        log_debug("libcgroup: %s", strstrip_trailing(m));
}

/* The controller's mount point, or NULL when it is not mounted. */
static char *mount_point(const char *controller) {
        char *mp = NULL;

        if (cgroup_get_subsys_mount_point(controller, &mp) != 0)
                return NULL;
        return mp;
}

static bool is_cgroup2(const char *path) {
        struct statfs sfs;

        return statfs(path, &sfs) == 0 && (uint64_t) sfs.f_type == (uint64_t) CGROUP2_SUPER_MAGIC;
}

int cgroup_fs_open_system(CgroupFs **ret) {
        _cleanup_free_ char *cpu = NULL, *cpuacct = NULL, *cpuset = NULL;
        static bool initialized = false;
        int r;

        if (!initialized) {
                cgroup_set_logger(libcgroup_logger, CGROUP_LOG_DEBUG, NULL);
                r = cgroup_init();
                if (r != 0) {
                        log_debug("libcgroup: cgroup_init() failed: %s", cgroup_strerror(r));
                        return -ENOMEDIUM;
                }
                initialized = true;
        }

        cpu = mount_point("cpu");
        cpuacct = mount_point("cpuacct");
        cpuset = mount_point("cpuset");

        /*
         * v2 is the mode where the cpu controller lives on a cgroup2 mount. A cgroup2 mount that
         * holds other controllers only (here: /sys/fs/cgroup/unified with hugetlb) is not it.
         */
        if (cpu && is_cgroup2(cpu))
                return cgroup_fs_open_v2(cpu, ret);
        if (!cpu && !cpuacct)
                return -ENOMEDIUM;
        return cgroup_fs_open_v1(cpu, cpuacct, cpuset, ret);
}

RootDir *cgroup_fs_usage_root(const CgroupFs *fs) {
        return fs->mode == CGROUP_MODE_V2 ? fs->unified : fs->cpuacct;
}

RootDir *cgroup_fs_cpu_root(const CgroupFs *fs) {
        return fs->mode == CGROUP_MODE_V2 ? fs->unified : fs->cpu;
}

RootDir *cgroup_fs_cpuset_root(const CgroupFs *fs) {
        return fs->mode == CGROUP_MODE_V2 ? fs->unified : fs->cpuset;
}

const char *cgroup_fs_threads_file(const CgroupFs *fs) {
        return fs->mode == CGROUP_MODE_V2 ? "cgroup.threads" : "tasks";
}

int cgroup_parse_tids(const char *s, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *v = NULL;
        size_t n = 0, allocated = 0;

        while (*s) {
                const char *eol = strchrnul(s, '\n');
                uint64_t tid = 0;
                size_t len = (size_t) (eol - s);

                if (len > 0) {
                        if (len > 10)
                                return -EINVAL;
                        for (const char *p = s; p < eol; p++) {
                                if (*p < '0' || *p > '9')
                                        return -EINVAL;
                                tid = tid * 10 + (uint64_t) (*p - '0');
                        }
                        if (tid == 0 || tid > INT32_MAX)
                                return -EINVAL;
                        if (n == allocated) {
                                size_t na = allocated ? allocated * 2 : 64;
                                pid_t *nv = realloc(v, na * sizeof *v);

                                if (!nv)
                                        return -ENOMEM;
                                v = nv;
                                allocated = na;
                        }
                        v[n++] = (pid_t) tid;
                }
                s = *eol ? eol + 1 : eol;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int cgroup_parse_keyed_u64(const char *s, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);

        while (*s) {
                const char *eol = strchrnul(s, '\n');

                if ((size_t) (eol - s) > kl && strneq(s, key, kl) && s[kl] == ' ') {
                        char buf[32];
                        size_t vl = (size_t) (eol - s) - kl - 1;

                        if (vl == 0 || vl >= sizeof buf)
                                return -EINVAL;
                        memcpy(buf, s + kl + 1, vl);
                        buf[vl] = 0;
                        return safe_atou64(buf, ret) < 0 ? -EINVAL : 0;
                }
                s = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

int cgroup_parse_u64_list(const char *s, uint64_t *ret, size_t max) {
        size_t n = 0, len = strlen(s);

        if (len == 0 || s[len - 1] != '\n')
                return -EINVAL;
        for (;;) {
                char *end;
                unsigned long long v;

                while (*s == ' ' || *s == '\n' || *s == '\t')
                        s++;
                if (!*s)
                        break;
                if (*s < '0' || *s > '9' || n >= max)
                        return -EINVAL;
                errno = 0;
                v = strtoull(s, &end, 10);
                if (errno != 0 || (*end && *end != ' ' && *end != '\n' && *end != '\t'))
                        return -EINVAL;
                ret[n++] = (uint64_t) v;
                s = end;
        }
        return (int) n;
}

uint64_t cgroup_weight_to_shares(uint64_t weight) {
        return CLAMP(weight * 1024 / 100, (uint64_t) 2, (uint64_t) 262144);
}

uint64_t cgroup_shares_to_weight(uint64_t shares) {
        return CLAMP(shares * 100 / 1024, (uint64_t) 1, (uint64_t) 10000);
}

uint64_t cgroup_shares_read_back(bool v2, uint64_t shares) {
        return v2 ? cgroup_weight_to_shares(cgroup_shares_to_weight(shares)) : shares;
}

static int walk(const RootDir *r, const char *path, cgroup_walk_cb cb, void *userdata, bool top) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *rel = NULL;
        struct dirent *de;
        int k;

        rel = cgroup_file_path(path, "");
        if (!rel)
                return -ENOMEM;
        k = rootdir_opendir(r, *rel ? rel : ".", &d);
        if (k < 0)
                /* Removed since its parent was read: normal; the top itself must be there. */
                return top ? k : 0;

        k = cb(path, userdata);
        if (k != 0)
                return k < 0 ? k : 0;

        while ((de = readdir(d))) {
                _cleanup_free_ char *child = NULL;

                if (de->d_type != DT_DIR || dot_or_dot_dot(de->d_name))
                        continue;
                child = cgroup_child_path(path, de->d_name);
                if (!child)
                        return -ENOMEM;
                k = walk(r, child, cb, userdata, false);
                if (k < 0)
                        return k;
        }
        return 0;
}

int cgroup_walk(const RootDir *r, const char *top, cgroup_walk_cb cb, void *userdata) {
        return walk(r, top, cb, userdata, true);
}

typedef struct ManagedList {
        const GroupFilter *filter;
        char **v;
        size_t n;
} ManagedList;

static int managed_cb(const char *path, void *userdata) {
        ManagedList *l = userdata;
        char **nv;

        if (!l->filter->selects(path, l->filter->userdata))
                return 0;
        nv = realloc(l->v, (l->n + 2) * sizeof *nv);
        if (!nv)
                return -ENOMEM;
        l->v = nv;
        l->v[l->n] = strdup(path);
        if (!l->v[l->n])
                return -ENOMEM;
        l->v[++l->n] = NULL;
        /* Of nested matches only the topmost is managed. */
        return 1;
}

static int path_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int cgroup_list_managed(const RootDir *r, const GroupFilter *f, char ***ret) {
        ManagedList l = { .filter = f };
        int k;

        k = cgroup_walk(r, f->root, managed_cb, &l);
        if (k < 0) {
                strv_free(l.v);
                return k;
        }
        if (!l.v) {
                l.v = new0(char *, 1);
                if (!l.v)
                        return -ENOMEM;
        }
        qsort(l.v, l.n, sizeof *l.v, path_cmp);
        *ret = l.v;
        return 0;
}
