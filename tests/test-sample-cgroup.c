/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgroup-util.c and sample-cgroup.c on fixture v1 and v2 trees, and the whole sample -> track
 * round (sampling.c) on a fixture /proc plus cgroup tree: groups selected, counters read and
 * converted, a thread moving groups, a group removed mid-round, counters going backwards.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fixture-util.h"
#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/macro.h"
#include "peltd/parse.h"
#include "peltd/sample-cgroup.h"
#include "peltd/sampling.h"

#define MS 1000000ULL

static Config *config_with(const char *root, const char *groups) {
        Config *c = NULL;

        assert_int_equal(config_new_default(&c), 0);
        if (root) {
                free(c->cgroup_root);
                c->cgroup_root = strdup(root);
        }
        if (groups) {
                strv_free(c->groups);
                c->groups = strv_split_whitespace(groups);
        }
        return c;
}

static CgroupFs *open_v1(const char *dir) {
        char cpu[512], cpuacct[512], cpuset[512];
        CgroupFs *fs = NULL;

        snprintf(cpu, sizeof cpu, "%s/cpu", dir);
        snprintf(cpuacct, sizeof cpuacct, "%s/cpuacct", dir);
        snprintf(cpuset, sizeof cpuset, "%s/cpuset", dir);
        assert_int_equal(cgroup_fs_open_v1(cpu, cpuacct, cpuset, &fs), 0);
        return fs;
}

/* ---- cgroup-util --------------------------------------------------------------------------------- */

static void test_parsers(_unused_ void **state) {
        _cleanup_free_ pid_t *tids = NULL;
        uint64_t v[4], x;
        size_t n;
        char *p;

        assert_int_equal(cgroup_parse_tids("1\n22\n333\n", &tids, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(tids[2], 333);
        free(tids);
        tids = NULL;
        assert_int_equal(cgroup_parse_tids("", &tids, &n), 0);
        assert_int_equal(n, 0);
        free(tids);
        tids = NULL;
        assert_int_equal(cgroup_parse_tids("12\nab\n", &tids, &n), -EINVAL);
        assert_int_equal(cgroup_parse_tids("0\n", &tids, &n), -EINVAL);
        assert_int_equal(cgroup_parse_tids("-5\n", &tids, &n), -EINVAL);
        /* A truncated last line is taken as it stands. */
        assert_int_equal(cgroup_parse_tids("7\n8", &tids, &n), 0);
        assert_int_equal(n, 2);

        assert_int_equal(cgroup_parse_keyed_u64("nr_periods 10\nnr_throttled 2\nthrottled_time 5000\n", "throttled_time", &x), 0);
        assert_int_equal(x, 5000);
        assert_int_equal(cgroup_parse_keyed_u64("nr_throttled 2\n", "throttled_time", &x), -ENOENT);
        assert_int_equal(cgroup_parse_keyed_u64("throttled_time x\n", "throttled_time", &x), -EINVAL);
        /* A key that is a prefix of another is not matched by it. */
        assert_int_equal(cgroup_parse_keyed_u64("usage_usec_x 5\nusage_usec 7\n", "usage_usec", &x), 0);
        assert_int_equal(x, 7);

        assert_int_equal(cgroup_parse_u64_list("600 400 \n", v, 4), 2);
        assert_int_equal(v[1], 400);
        assert_int_equal(cgroup_parse_u64_list("1 2 x\n", v, 4), -EINVAL);
        assert_int_equal(cgroup_parse_u64_list("1 2 3 4 5\n", v, 4), -EINVAL);
        /* Cut short (the kernel ends the list with a newline), or a value past 2^64 - 1. */
        assert_int_equal(cgroup_parse_u64_list("600 40", v, 4), -EINVAL);
        assert_int_equal(cgroup_parse_u64_list("", v, 4), -EINVAL);
        assert_int_equal(cgroup_parse_u64_list("18446744073709551615 \n", v, 4), 1);
        assert_int_equal(cgroup_parse_u64_list("18446744073709551616 \n", v, 4), -EINVAL);

        assert_int_equal(cgroup_weight_to_shares(100), 1024);
        assert_int_equal(cgroup_weight_to_shares(1), 10);
        assert_int_equal(cgroup_weight_to_shares(10000), 102400);
        assert_int_equal(cgroup_shares_to_weight(2), 1);
        assert_int_equal(cgroup_shares_to_weight(262144), 10000);
        /* What a read gives back: 500 is weight 48 on v2, read as 491; v1 keeps every value. */
        assert_int_equal(cgroup_shares_read_back(true, 500), 491);
        assert_int_equal(cgroup_shares_read_back(true, 1024), 1024);
        assert_int_equal(cgroup_shares_read_back(true, 2), 10);
        assert_int_equal(cgroup_shares_read_back(false, 500), 500);

        p = cgroup_file_path("/", "tasks");
        assert_string_equal(p, "tasks");
        free(p);
        p = cgroup_file_path("/a/b", "tasks");
        assert_string_equal(p, "a/b/tasks");
        free(p);
        p = cgroup_child_path("/", "a");
        assert_string_equal(p, "/a");
        free(p);
        p = cgroup_child_path("/a", "b");
        assert_string_equal(p, "/a/b");
        free(p);
}

/* The daemon's filter; each call replaces the last (the walkers copy it or use it at once). */
static const GroupFilter *filter_of(const Config *c) {
        static GroupFilter f;

        f = config_group_filter(c);
        return &f;
}

static void test_managed_groups(_unused_ void **state) {
        char *dir = fx_copy("cgroup-v1");
        CgroupFs *fs = open_v1(dir);
        Config *c;
        char **l = NULL;

        /* Default: CgroupRoot's direct children. */
        c = config_with(NULL, NULL);
        assert_int_equal(cgroup_list_managed(cgroup_fs_usage_root(fs), filter_of(c), &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "/bad");
        assert_string_equal(l[1], "/batch");
        assert_string_equal(l[2], "/web");
        strv_free(l);
        config_free(c);

        /* Globs: of nested matches only the topmost; '*' does not match '/'. */
        c = config_with(NULL, "/web* /web/* /ba*");
        assert_int_equal(cgroup_list_managed(cgroup_fs_usage_root(fs), filter_of(c), &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "/bad");
        assert_string_equal(l[1], "/batch");
        assert_string_equal(l[2], "/web");
        strv_free(l);
        config_free(c);

        c = config_with("/web", NULL);
        assert_int_equal(cgroup_list_managed(cgroup_fs_usage_root(fs), filter_of(c), &l), 0);
        assert_int_equal(strv_length(l), 1);
        assert_string_equal(l[0], "/web/workers");
        strv_free(l);
        config_free(c);

        /* A CgroupRoot that does not exist is an error. */
        c = config_with("/nope", NULL);
        assert_int_equal(cgroup_list_managed(cgroup_fs_usage_root(fs), filter_of(c), &l), -ENOENT);
        config_free(c);

        cgroup_fs_free(fs);
        fx_remove(dir);
}

/* ---- the group sampler ----------------------------------------------------------------------------- */

typedef struct Members {
        pid_t tid[16];
        const char *cgroup[16];
        const char *group[16];
        size_t n;
        CgroupSampler *s;
} Members;

static void member(pid_t tid, size_t path_index, CgroupGroup *group, void *userdata) {
        Members *m = userdata;

        assert_true(m->n < 16);
        m->tid[m->n] = tid;
        m->cgroup[m->n] = cgroup_sampler_path(m->s, path_index);
        m->group[m->n] = group ? group->path : NULL;
        m->n++;
}

static const Members *find_member(const Members *m, pid_t tid, size_t *ret) {
        for (size_t i = 0; i < m->n; i++)
                if (m->tid[i] == tid) {
                        *ret = i;
                        return m;
                }
        return NULL;
}

static CgroupGroup *group_named(CgroupSampler *s, const char *path) {
        for (size_t i = 0; i < cgroup_sampler_n_groups(s); i++)
                if (streq(cgroup_sampler_group(s, i)->path, path))
                        return cgroup_sampler_group(s, i);
        return NULL;
}

/* The files under dir this process has open: each at most once (a kept counter file is opened once). */
static size_t open_files_under(const char *dir) {
        char (*paths)[512] = calloc(1024, sizeof *paths);
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        size_t n = 0;

        assert_non_null(paths);
        assert_non_null(d);
        while ((de = readdir(d)) && n < 1024) {
                char link[300];
                ssize_t l;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
                l = readlink(link, paths[n], sizeof paths[n] - 1);
                if (l <= 0)
                        continue;
                paths[n][l] = 0;
                if (strneq(paths[n], dir, strlen(dir)))
                        n++;
        }
        closedir(d);
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                        if (streq(paths[i], paths[j]))
                                fail_msg("%s is open twice", paths[i]);
        free(paths);
        return n;
}

static void test_sampler_v1(_unused_ void **state) {
        char *dir = fx_copy("cgroup-v1");
        CgroupFs *fs = open_v1(dir);
        Config *c = config_with(NULL, NULL);
        CgroupSampler *s = NULL;
        Members m = {};
        CgroupGroup *web, *batch, *bad;
        size_t i;
        static const unsigned cap[2] = { 1024, 512 };

        assert_int_equal(cgroup_sampler_new(fs, filter_of(c), &s), 0);
        cgroup_sampler_set_capacities(s, cap, 2);
        m.s = s;
        cgroup_sampler_settle(s);
        assert_int_equal(cgroup_sampler_walk(s, member, &m), 0);
        assert_int_equal(cgroup_sampler_n_groups(s), 3);
        /* Counter files are kept open, each once; cgroup_sampler_fds_wanted() covers them. */
        assert_true(open_files_under(dir) > 0);
        assert_true(open_files_under(dir) <= cgroup_sampler_fds_wanted(s));

        web = group_named(s, "/web");
        assert_non_null(web);
        assert_int_equal(web->state, CGROUP_GROUP_NEW);
        assert_true(web->have_usage);
        assert_int_equal(web->usage_ns, 1000000000);
        assert_int_equal(web->n_percpu, 2);
        assert_int_equal(web->percpu_ns[0], 600000000);
        assert_true(web->have_throttled);
        assert_int_equal(web->throttled_ns, 5000000);
        assert_int_equal(web->nr_throttled, 2);
        assert_true(web->have_shares);
        assert_int_equal(web->shares, 2048);
        assert_int_equal(web->nr_cpus, 2);
        assert_int_equal(web->capacity, 768);
        /* nr_tasks counts descendants too. */
        assert_int_equal(web->nr_tasks, 2);

        batch = group_named(s, "/batch");
        assert_int_equal(batch->nr_cpus, 1);
        assert_int_equal(batch->capacity, 512);
        assert_int_equal(batch->shares, 512);

        /* "bad" lives only in cpuacct, with garbled files: sampled where it exists, garbage skipped. */
        bad = group_named(s, "/bad");
        assert_non_null(bad);
        assert_false(bad->have_usage);
        assert_int_equal(bad->n_percpu, 0);
        assert_false(bad->have_shares);
        assert_false(bad->have_throttled);
        assert_int_equal(bad->nr_tasks, 0);

        /* Every thread's cgroup, and its managed group. */
        assert_non_null(find_member(&m, 101, &i));
        assert_string_equal(m.cgroup[i], "/web/workers");
        assert_string_equal(m.group[i], "/web");
        assert_non_null(find_member(&m, 200, &i));
        assert_string_equal(m.cgroup[i], "/");
        assert_null(m.group[i]);

        /* Counters move; a thread moves from /web/workers to /batch (tasks files reopened each time). */
        fx_write(dir, "cpuacct/web/cpuacct.usage", "1100000000\n");
        fx_write(dir, "cpuacct/web/workers/tasks", "");
        fx_write(dir, "cpuacct/batch/tasks", "101\n");
        cgroup_sampler_settle(s);
        assert_int_equal(web->state, CGROUP_GROUP_LIVE);
        cgroup_sampler_read_counters(s);
        assert_int_equal(web->usage_ns, 1100000000);
        m.n = 0;
        assert_int_equal(cgroup_sampler_walk(s, member, &m), 0);
        assert_non_null(find_member(&m, 101, &i));
        assert_string_equal(m.group[i], "/batch");
        assert_int_equal(web->nr_tasks, 1);
        assert_int_equal(batch->nr_tasks, 1);

        /* A group removed mid-round: the walk no longer finds it; it is GONE, then dropped. */
        fx_sh("rm -rf '%s/cpuacct/batch' '%s/cpu/batch' '%s/cpuset/batch'", dir, dir, dir);
        cgroup_sampler_settle(s);
        cgroup_sampler_read_counters(s);
        m.n = 0;
        assert_int_equal(cgroup_sampler_walk(s, member, &m), 0);
        assert_int_equal(batch->state, CGROUP_GROUP_GONE);
        cgroup_sampler_settle(s);
        assert_int_equal(cgroup_sampler_n_groups(s), 2);
        assert_null(group_named(s, "/batch"));

        /* A group that appears is NEW, with its counters as a baseline. */
        fx_sh("mkdir -p '%s/cpuacct/new'", dir);
        fx_write(dir, "cpuacct/new/tasks", "100\n");
        fx_write(dir, "cpuacct/new/cpuacct.usage", "7\n");
        m.n = 0;
        assert_int_equal(cgroup_sampler_walk(s, member, &m), 0);
        assert_int_equal(group_named(s, "/new")->state, CGROUP_GROUP_NEW);
        assert_int_equal(group_named(s, "/new")->usage_ns, 7);

        /*
         * Made again (a new directory at the same path; made before the old one goes, so its inode
         * differs): the old group is GONE and a NEW one stands beside it; after settling, only the new.
         * A group whose name begins with '.' is a group like any other.
         */
        {
                CgroupGroup *old = group_named(s, "/new"), *fresh = NULL;
                size_t n_at_path = 0;

                cgroup_sampler_settle(s);
                fx_sh("mkdir '%s/cpuacct/new2' && echo 9 > '%s/cpuacct/new2/cpuacct.usage' && rm -rf '%s/cpuacct/new' && "
                      "mv '%s/cpuacct/new2' '%s/cpuacct/new' && mkdir '%s/cpuacct/.hidden'",
                      dir, dir, dir, dir, dir, dir);
                m.n = 0;
                assert_int_equal(cgroup_sampler_walk(s, member, &m), 0);
                for (size_t k = 0; k < cgroup_sampler_n_groups(s); k++) {
                        CgroupGroup *g = cgroup_sampler_group(s, k);

                        if (!streq(g->path, "/new"))
                                continue;
                        n_at_path++;
                        if (g != old)
                                fresh = g;
                }
                assert_int_equal(n_at_path, 2);
                assert_int_equal(old->state, CGROUP_GROUP_GONE);
                assert_non_null(fresh);
                assert_int_equal(fresh->state, CGROUP_GROUP_NEW);
                assert_int_equal(fresh->usage_ns, 9);
                assert_non_null(group_named(s, "/.hidden"));
                cgroup_sampler_settle(s);
                assert_ptr_equal(group_named(s, "/new"), fresh);
                assert_int_equal(fresh->state, CGROUP_GROUP_LIVE);
        }

        cgroup_sampler_free(s);
        config_free(c);
        cgroup_fs_free(fs);
        fx_remove(dir);
}

static void test_sampler_v2(_unused_ void **state) {
        char *dir = fx_copy("cgroup-v2");
        CgroupFs *fs = NULL;
        Config *c = config_with(NULL, NULL);
        CgroupSampler *s = NULL;
        Members m = {};
        CgroupGroup *web, *batch;
        size_t i;

        assert_int_equal(cgroup_fs_open_v2(dir, &fs), 0);
        assert_string_equal(cgroup_fs_threads_file(fs), "cgroup.threads");
        assert_int_equal(cgroup_sampler_new(fs, filter_of(c), &s), 0);
        m.s = s;
        assert_int_equal(cgroup_sampler_walk(s, member, &m), 0);
        assert_int_equal(cgroup_sampler_n_groups(s), 2);

        web = group_named(s, "/web");
        assert_true(web->have_usage);
        assert_int_equal(web->usage_ns, 1000000000);
        assert_int_equal(web->n_percpu, 0);
        assert_true(web->have_throttled);
        assert_int_equal(web->throttled_ns, 2500000);
        /* cpu.weight 200 is shares 2048; 10000 is 102400. */
        assert_int_equal(web->shares, 2048);
        batch = group_named(s, "/batch");
        assert_int_equal(batch->shares, 102400);
        assert_int_equal(batch->nr_cpus, 1);
        assert_int_equal(web->nr_tasks, 2);
        assert_non_null(find_member(&m, 101, &i));
        assert_string_equal(m.cgroup[i], "/web/workers");

        cgroup_sampler_free(s);
        config_free(c);
        cgroup_fs_free(fs);
        fx_remove(dir);
}

/*
 * v2 controller files come and go with the parent's cgroup.subtree_control (systemd turns cpu on
 * for a unit given CPUWeight=): a cpu.weight or cpuset.cpus.effective that appears later is read.
 */
static void test_sampler_v2_controller_files_appear(_unused_ void **state) {
        char *dir = fx_copy("cgroup-v2");
        CgroupFs *fs = NULL;
        Config *c = config_with(NULL, NULL);
        CgroupSampler *s = NULL;
        Members m = {};
        CgroupGroup *batch;
        char *p;

        assert_int_equal(asprintf(&p, "%s/batch/cpu.weight", dir), (int) strlen(dir) + strlen("/batch/cpu.weight"));
        assert_int_equal(unlink(p), 0);
        free(p);
        assert_int_equal(asprintf(&p, "%s/batch/cpuset.cpus.effective", dir), (int) strlen(dir) + strlen("/batch/cpuset.cpus.effective"));
        assert_int_equal(unlink(p), 0);
        free(p);

        assert_int_equal(cgroup_fs_open_v2(dir, &fs), 0);
        assert_int_equal(cgroup_sampler_new(fs, filter_of(c), &s), 0);
        m.s = s;
        assert_int_equal(cgroup_sampler_walk(s, member, &m), 0);
        batch = group_named(s, "/batch");
        assert_false(batch->have_shares);
        assert_true(batch->have_usage);

        /* Read at the next refresh: each task round, or after peltd wrote them. */
        fx_write(dir, "batch/cpu.weight", "48\n");
        fx_write(dir, "batch/cpuset.cpus.effective", "1\n");
        cgroup_sampler_settle(s);
        cgroup_sampler_read_counters(s);
        assert_false(batch->have_shares);
        cgroup_sampler_refresh(s, NULL);
        cgroup_sampler_read_counters(s);
        assert_true(batch->have_shares);
        assert_int_equal(batch->shares, 491);
        assert_int_equal(batch->nr_cpus, 1);

        cgroup_sampler_free(s);
        config_free(c);
        cgroup_fs_free(fs);
        fx_remove(dir);
}

/* ---- sample -> track, whole rounds on fixtures ------------------------------------------------------ */

typedef struct Pipe {
        char *proc_dir, *cg_dir;
        RootDir *proc;
        CgroupFs *fs;
        Config *c;
        Sampling *s;
        uint64_t now;
        uint64_t run[3];             /* cumulative run ns of 100, 101, 200 */
        uint64_t web_usage;
        uint64_t elsewhere;          /* what ran in the other groups, for the root's counter */
        bool gone100;
} Pipe;

static const unsigned caps[2] = { 1024, 1024 };

/* Reads are stamped with the test's time: the fixture's counters change only between rounds. */
static uint64_t pipe_clock(void *userdata) {
        return ((Pipe *) userdata)->now;
}

static void pipe_open(Pipe *p) {
        *p = (Pipe){ .run = { 1000000, 5000000, 300000000 }, .web_usage = 1000000000, .now = 1000 * MS };
        p->proc_dir = fx_copy("proc");
        p->cg_dir = fx_copy("cgroup-v1");
        assert_int_equal(rootdir_open(p->proc_dir, &p->proc), 0);
        p->fs = open_v1(p->cg_dir);
        p->c = config_with(NULL, NULL);
        assert_int_equal(sampling_new(p->proc, p->fs, p->c,
                                      &(SamplingOptions){ .task_tracking = true, .capacity = caps, .n_capacity = 2,
                                                          .clock = pipe_clock, .clock_userdata = p },
                                      &p->s),
                         0);
}

static void pipe_close(Pipe *p) {
        sampling_free(p->s);
        config_free(p->c);
        cgroup_fs_free(p->fs);
        rootdir_free(p->proc);
        fx_remove(p->proc_dir);
        fx_remove(p->cg_dir);
}

/* A thread's schedstat (rel, under the proc tree) once it has run run ns in all, a timeslice a ms. */
static void pipe_schedstat(Pipe *p, const char *rel, uint64_t run) {
        fx_write(p->proc_dir, rel, "%llu 0 %llu\n", (unsigned long long) run, (unsigned long long) run / MS);
}

/*
 * /web's usage counters as p->web_usage has them, and the root's, which counts what runs anywhere
 * (as the kernel's do: /web's, 200's in the root itself, the other groups' that stand still); then
 * a round 100 ms after the last.
 */
static void pipe_finish_round(Pipe *p) {
        fx_write(p->cg_dir, "cpuacct/web/cpuacct.usage", "%llu\n", (unsigned long long) p->web_usage);
        fx_write(p->cg_dir, "cpuacct/web/cpuacct.usage_percpu", "%llu 0\n", (unsigned long long) p->web_usage);
        fx_write(p->cg_dir, "cpuacct/cpuacct.usage", "%llu\n",
                 (unsigned long long) (8000000000ULL + p->web_usage + p->run[2] + p->elsewhere));
        p->now += 100 * MS;
        assert_int_equal(sampling_round(p->s, p->now, true), 0);
}

/* A 100 ms round in which 100 ran 25%, 101 50%, 200 not at all; /web used what its threads did. */
static void pipe_round(Pipe *p) {
        p->run[0] += 25 * MS;
        p->run[1] += 50 * MS;
        p->web_usage += 75 * MS;
        if (!p->gone100)
                pipe_schedstat(p, "100/task/100/schedstat", p->run[0]);
        pipe_schedstat(p, "100/task/101/schedstat", p->run[1]);
        pipe_finish_round(p);
}

static const SampledThread *out_thread(Pipe *p, pid_t tid) {
        SampledThread *t;
        size_t n = sampling_threads(p->s, &t);

        for (size_t i = 0; i < n; i++)
                if (t[i].tid == tid)
                        return &t[i];
        return NULL;
}

static const SampledGroup *out_group(Pipe *p, const char *path) {
        SampledGroup *g;
        size_t n = sampling_groups(p->s, &g);

        for (size_t i = 0; i < n; i++)
                if (streq(g[i].path, path))
                        return &g[i];
        return NULL;
}

static void test_pipeline(_unused_ void **state) {
        Pipe p;
        const SampledThread *t;
        const SampledGroup *g;

        pipe_open(&p);
        assert_int_equal(sampling_round(p.s, p.now, true), 0);
        /* The baseline: nothing is reported yet. */
        assert_null(out_thread(&p, 100));
        for (int i = 0; i < 40; i++)
                pipe_round(&p);
        assert_int_equal(sampling_rounds(p.s), 40);

        t = out_thread(&p, 100);
        assert_non_null(t);
        assert_string_equal(t->cgroup, "/web");
        assert_int_equal(t->pid, 100);
        assert_in_range(t->v.util_avg, 254, 258);
        assert_in_range(t->v.runnable_avg, 254, 258);
        assert_int_equal(t->avg_slice_ns, 1 * MS);
        t = out_thread(&p, 101);
        assert_string_equal(t->cgroup, "/web/workers");
        assert_string_equal(t->comm, "web) (worker");
        assert_int_equal(t->nice, -5);
        assert_in_range(t->v.util_avg, 510, 514);
        /* load follows the weight of nice -5. */
        assert_in_range(t->v.load_avg, 3121 / 2 - 8, 3121 / 2 + 8);
        t = out_thread(&p, 200);
        assert_string_equal(t->cgroup, "/");
        assert_int_equal(t->v.util_avg, 0);
        assert_int_equal(t->avg_slice_ns, 0);

        g = out_group(&p, "/web");
        assert_non_null(g);
        assert_in_range(g->v.util_avg, 766, 770);
        assert_in_range(g->v.runnable_avg, 764, 772);
        /* load = shares * min(runnable / 1024, 1) */
        assert_in_range(g->v.load_avg, 2048 * 764 / 1024, 2048 * 772 / 1024);
        assert_int_equal(g->shares, 2048);
        assert_int_equal(g->nr_tasks, 2);
        assert_int_equal(g->throttled_ns, 0);

        /* 101 moves to /batch: /web's runnable drops by its share, /batch's rises by as much. */
        fx_write(p.cg_dir, "cpuacct/web/workers/tasks", "");
        fx_write(p.cg_dir, "cpuacct/batch/tasks", "101\n");
        p.now += MS;
        assert_int_equal(sampling_round(p.s, p.now, true), 0);
        t = out_thread(&p, 101);
        assert_string_equal(t->cgroup, "/batch");
        g = out_group(&p, "/batch");
        assert_in_range(g->v.runnable_avg, 500, 514);
        g = out_group(&p, "/web");
        assert_in_range(g->v.runnable_avg, 250, 262);

        /* /batch is removed after the thread left it again: the thread's load goes with the thread. */
        fx_write(p.cg_dir, "cpuacct/batch/tasks", "");
        fx_write(p.cg_dir, "cpuacct/tasks", "200\n300\n400\n101\n");
        fx_sh("rm -rf '%s/cpuacct/batch' '%s/cpu/batch' '%s/cpuset/batch'", p.cg_dir, p.cg_dir, p.cg_dir);
        pipe_round(&p);
        assert_null(out_group(&p, "/batch"));
        t = out_thread(&p, 101);
        assert_string_equal(t->cgroup, "/");
        assert_in_range(t->v.util_avg, 500, 520);

        /* /web's usage goes backwards (recreated): skipped, never negative, then tracked again. */
        p.web_usage = 5;
        pipe_round(&p);
        g = out_group(&p, "/web");
        assert_true(g->v.util_avg <= 1024);
        pipe_round(&p);
        pipe_round(&p);
        g = out_group(&p, "/web");
        assert_in_range(g->v.util_avg, 700, 800);

        /* 100 exits; 200's TID... is reused by a thread of another process. */
        fx_sh("rm -rf '%s/100/task/100'", p.proc_dir);
        p.gone100 = true;
        fx_sh("rm -rf '%s/200' && mkdir -p '%s/900/task/200'", p.proc_dir, p.proc_dir);
        fx_write(p.proc_dir, "900/task/200/schedstat", "1 0 1\n");
        fx_write(p.proc_dir, "900/task/200/stat",
                 "200 (other) S 1 900 900 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77777 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
        pipe_round(&p);
        assert_null(out_thread(&p, 100));
        /* Found this round: not reported before it has been tracked for a round. */
        assert_null(out_thread(&p, 200));
        pipe_round(&p);
        t = out_thread(&p, 200);
        assert_non_null(t);
        assert_int_equal(t->pid, 900);
        assert_string_equal(t->comm, "other");
        assert_int_equal(t->v.util_avg, 0);

        pipe_close(&p);
}

/*
 * A round in which 100 and 200 ran for the given ns and 101 not at all. /web's usage moves by
 * what its threads ran, as the kernel charges it; 200 is outside every managed group.
 */
static void quiet_round(Pipe *p, uint64_t run100, uint64_t run200) {
        p->run[0] += run100;
        p->run[2] += run200;
        p->web_usage += run100;
        pipe_schedstat(p, "100/task/100/schedstat", p->run[0]);
        pipe_schedstat(p, "200/task/200/schedstat", p->run[2]);
        pipe_finish_round(p);
}

/* The proc sampler's number for the next task round (stat is re-read where it % 10 == tid % 10). */
static unsigned next_proc_round(Pipe *p) {
        return sampling_rounds(p->s) + 2;
}

/* Idle rounds until the next one's number ends in digit. */
static void idle_until(Pipe *p, unsigned digit) {
        while (next_proc_round(p) % 10 != digit)
                quiet_round(p, 0, 0);
}

/*
 * Threads of a group whose usage counter did not move are not read: 100 and 101 in /web (and
 * /web/workers) while /web is idle, never 200 outside every group; a thread whose group changed,
 * or whose group's counter could not be read, is read; without the proc connector a quiet thread
 * is read in full in its stat round. What is tracked is what reading every round would give.
 */
static void test_quiet_threads(_unused_ void **state) {
        ProcSampler *ps;
        SampledThread a, b; /* copies: each out_thread() call renews the list */
        unsigned quiet = 0;
        Pipe p;

        pipe_open(&p);
        ps = sampling_proc_sampler(p.s);
        assert_int_equal(sampling_round(p.s, p.now, true), 0);
        for (int i = 0; i < 3; i++) {
                quiet_round(&p, 20 * MS, 20 * MS);
                assert_int_equal(proc_sampler_n_quiet(ps), 0);
        }

        /* Ten idle rounds: 100 and 101 are quiet but in their own stat round (a full read). */
        for (int i = 0; i < 10; i++) {
                quiet_round(&p, 0, 0);
                quiet += (unsigned) proc_sampler_n_quiet(ps);
        }
        assert_int_equal(quiet, 2 * 9);

        /* 100 and 200 did the same all along: reading 100 or not changes nothing. */
        quiet_round(&p, 30 * MS, 30 * MS);
        assert_non_null(out_thread(&p, 100));
        assert_non_null(out_thread(&p, 200));
        a = *out_thread(&p, 100);
        b = *out_thread(&p, 200);
        assert_true(a.v.util_avg > 100);
        assert_true(llabs((long long) a.v.util_avg - (long long) b.v.util_avg) <= 1);
        assert_true(llabs((long long) a.v.runnable_avg - (long long) b.v.runnable_avg) <= 1);
        /* Sleeping again (100 quiet), then running again after 50 ms. */
        quiet_round(&p, 0, 0);
        p.now -= 50 * MS;
        quiet_round(&p, 10 * MS, 10 * MS);
        a = *out_thread(&p, 100);
        b = *out_thread(&p, 200);
        assert_true(a.v.util_avg > 50);
        assert_true(llabs((long long) a.v.util_avg - (long long) b.v.util_avg) <= 1);

        /* Away from both stat rounds: exactly 100 and 101 are quiet. */
        idle_until(&p, 4);
        quiet_round(&p, 0, 0);
        assert_int_equal(proc_sampler_n_quiet(ps), 2);

        /* In 100's stat round (no connector here) it is read in full: only 101 is quiet. */
        idle_until(&p, 0);
        quiet_round(&p, 0, 0);
        assert_int_equal(proc_sampler_n_quiet(ps), 1);

        /*
         * 101 moves to /batch, idle too, its counter even equal to /web's: it is read, being in
         * another group than when last read.
         */
        idle_until(&p, 5);
        fx_write(p.cg_dir, "cpuacct/batch/cpuacct.usage", "%llu\n", (unsigned long long) p.web_usage);
        p.elsewhere++;
        quiet_round(&p, 0, 0);
        fx_write(p.cg_dir, "cpuacct/web/workers/tasks", "");
        fx_write(p.cg_dir, "cpuacct/batch/tasks", "101\n");
        quiet_round(&p, 0, 0);
        assert_int_equal(proc_sampler_n_quiet(ps), 1);
        assert_string_equal(out_thread(&p, 101)->cgroup, "/batch");
        quiet_round(&p, 0, 0);
        assert_int_equal(proc_sampler_n_quiet(ps), 2);

        /* /web's counter does not parse this round (something ran elsewhere, so it is read): its threads are read. */
        idle_until(&p, 5);
        p.now += 100 * MS;
        fx_write(p.cg_dir, "cpuacct/web/cpuacct.usage", "garbage\n");
        p.elsewhere++;
        fx_write(p.cg_dir, "cpuacct/cpuacct.usage", "%llu\n",
                 (unsigned long long) (8000000000ULL + p.web_usage + p.run[2] + p.elsewhere));
        assert_int_equal(sampling_round(p.s, p.now, true), 0);
        assert_int_equal(proc_sampler_n_quiet(ps), 1);
        quiet_round(&p, 0, 0);
        quiet_round(&p, 0, 0);
        assert_int_equal(proc_sampler_n_quiet(ps), 2);

        pipe_close(&p);
}

/* ---- what a round reads, and what it tracks ------------------------------------------------------ */

/*
 * A v1 tree of its own: /a/x, /a/y, /b/z, /q (managed: Groups= the children of /a and /b, and
 * /q), usage counters that add up as the kernel's do (a parent counts its children), /q with a
 * quota.
 */
typedef struct Tree {
        char *dir;
        uint64_t usage[4];           /* /a/x, /a/y, /b/z, /q */
        uint64_t throttled_q;
        unsigned shares[4];
} Tree;

static const char *const tree_groups[4] = { "/a/x", "/a/y", "/b/z", "/q" };

static void tree_write(Tree *t) {
        uint64_t a = t->usage[0] + t->usage[1], b = t->usage[2], all = a + b + t->usage[3] + 1000;

        fx_write(t->dir, "cpuacct/cpuacct.usage", "%llu\n", (unsigned long long) all);
        fx_write(t->dir, "cpuacct/a/cpuacct.usage", "%llu\n", (unsigned long long) a);
        fx_write(t->dir, "cpuacct/b/cpuacct.usage", "%llu\n", (unsigned long long) b);
        for (int i = 0; i < 4; i++) {
                char rel[128];

                snprintf(rel, sizeof rel, "cpuacct%s/cpuacct.usage", tree_groups[i]);
                fx_write(t->dir, rel, "%llu\n", (unsigned long long) t->usage[i]);
                snprintf(rel, sizeof rel, "cpuacct%s/cpuacct.usage_percpu", tree_groups[i]);
                fx_write(t->dir, rel, "%llu 0\n", (unsigned long long) t->usage[i]);
                snprintf(rel, sizeof rel, "cpu%s/cpu.shares", tree_groups[i]);
                fx_write(t->dir, rel, "%u\n", t->shares[i]);
        }
        fx_write(t->dir, "cpu/q/cpu.stat", "nr_periods 10\nnr_throttled 1\nthrottled_time %llu\n",
                 (unsigned long long) t->throttled_q);
}

static void tree_make(Tree *t) {
        *t = (Tree){ .dir = fx_copy("cgroup-v1"), .usage = { 100, 200, 300, 400 }, .shares = { 1024, 1024, 1024, 1024 } };
        fx_sh("rm -rf '%s/cpu' '%s/cpuacct' '%s/cpuset'", t->dir, t->dir, t->dir);
        for (int i = 0; i < 4; i++) {
                char rel[128];

                snprintf(rel, sizeof rel, "cpuacct%s/tasks", tree_groups[i]);
                fx_write(t->dir, rel, "");
                snprintf(rel, sizeof rel, "cpuset%s/cpuset.effective_cpus", tree_groups[i]);
                fx_write(t->dir, rel, "0-1\n");
                snprintf(rel, sizeof rel, "cpu%s/cpu.stat", tree_groups[i]);
                fx_write(t->dir, rel, "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");
                snprintf(rel, sizeof rel, "cpu%s/cpu.cfs_quota_us", tree_groups[i]);
                fx_write(t->dir, rel, i == 3 ? "50000\n" : "-1\n");
        }
        fx_write(t->dir, "cpuacct/tasks", "");
        tree_write(t);
}

static Config *tree_config(void) {
        return config_with(NULL, "/a/* /b/* /q");
}

/*
 * Group counter files are read only where the round needs them: none of a group below an ancestor
 * whose counter stood still (read again once it moves), per-CPU usage only where capacities
 * differ, cpu.stat only with a quota, shares, cpuset and quota at a refresh.
 */
static void count_opendir(void *userdata, const char *op, _unused_ const char *path) {
        *(unsigned *) userdata += streq(op, "opendir");
}

static void test_counters_read_when_needed(_unused_ void **state) {
        static const unsigned alike[2] = { 1024, 1024 }, unlike[2] = { 1024, 512 };
        unsigned opendirs = 0;
        Tree t;
        CgroupFs *fs;
        Config *c = tree_config();
        CgroupSampler *s = NULL;
        CgroupGroup *x, *y, *z, *q;
        const unsigned settings = CGROUP_READ_SHARES | CGROUP_READ_CPUS | CGROUP_READ_QUOTA;

        tree_make(&t);
        fs = open_v1(t.dir);
        assert_int_equal(cgroup_sampler_new(fs, filter_of(c), &s), 0);
        cgroup_sampler_set_capacities(s, alike, 2);
        cgroup_sampler_settle(s);
        assert_int_equal(cgroup_sampler_walk(s, NULL, NULL), 0);
        assert_int_equal(cgroup_sampler_n_groups(s), 4);
        x = group_named(s, "/a/x");
        y = group_named(s, "/a/y");
        z = group_named(s, "/b/z");
        q = group_named(s, "/q");
        /* The baseline reads everything but the per-CPU split, which says nothing new here. */
        assert_int_equal(x->read_mask, CGROUP_READ_USAGE | CGROUP_READ_STAT | settings);
        assert_int_equal(x->n_percpu, 0);
        assert_false(x->has_quota);
        assert_true(q->has_quota);
        assert_true(x->have_throttled);

        /* The ancestors' first reading proves nothing yet: every group's usage is read. */
        cgroup_sampler_settle(s);
        cgroup_sampler_read_counters(s);
        assert_int_equal(x->read_mask, CGROUP_READ_USAGE);
        assert_int_equal(q->read_mask, CGROUP_READ_USAGE | CGROUP_READ_STAT);

        /* Nothing ran: nothing is read but the group with a quota. */
        for (int i = 0; i < 5; i++) {
                cgroup_sampler_read_counters(s);
                assert_int_equal(x->read_mask, 0);
                assert_int_equal(y->read_mask, 0);
                assert_int_equal(z->read_mask, 0);
                assert_int_equal(q->read_mask, CGROUP_READ_USAGE | CGROUP_READ_STAT);
        }

        /* /b/z runs: /b moved, /a did not. z is read (its new usage taken), x and y are not. */
        t.usage[2] += 5000;
        tree_write(&t);
        cgroup_sampler_read_counters(s);
        assert_int_equal(z->read_mask, CGROUP_READ_USAGE);
        assert_int_equal(z->usage_ns, 5300);
        assert_int_equal(x->read_mask, 0);
        assert_int_equal(y->read_mask, 0);
        cgroup_sampler_read_counters(s);
        assert_int_equal(z->read_mask, 0);

        /* /a/y runs: both of /a are read (/a moved), y's counter taken; /b/z is not. */
        t.usage[1] += 7000;
        tree_write(&t);
        cgroup_sampler_read_counters(s);
        assert_int_equal(x->read_mask, CGROUP_READ_USAGE);
        assert_int_equal(y->read_mask, CGROUP_READ_USAGE);
        assert_int_equal(y->usage_ns, 7200);
        assert_int_equal(z->read_mask, 0);

        /* A refresh (a task round): settings of every group, usage only where something ran. */
        t.shares[0] = 2048;
        tree_write(&t);
        cgroup_sampler_refresh(s, NULL);
        cgroup_sampler_read_counters(s);
        assert_int_equal(x->read_mask, settings);
        assert_int_equal(x->shares, 2048);
        assert_int_equal(z->read_mask, settings);
        cgroup_sampler_read_counters(s);
        assert_int_equal(x->read_mask, 0);
        /* One group's, after peltd wrote them. */
        cgroup_sampler_refresh(s, "/b/z");
        cgroup_sampler_read_counters(s);
        assert_int_equal(z->read_mask, settings);
        assert_int_equal(x->read_mask, 0);

        /* A quota set on /a/x: from the next refresh on, its cpu.stat is read, every round. */
        fx_write(t.dir, "cpu/a/x/cpu.cfs_quota_us", "20000\n");
        cgroup_sampler_read_counters(s);
        assert_int_equal(x->read_mask, 0);
        cgroup_sampler_refresh(s, NULL);
        cgroup_sampler_read_counters(s);
        assert_true(x->has_quota);
        cgroup_sampler_read_counters(s);
        assert_int_equal(x->read_mask, CGROUP_READ_USAGE | CGROUP_READ_STAT);

        /* CPUs of different capacity: the per-CPU split is read where usage is. */
        cgroup_sampler_set_capacities(s, unlike, 2);
        t.usage[2] += 100;
        tree_write(&t);
        cgroup_sampler_read_counters(s);
        assert_int_equal(z->read_mask, CGROUP_READ_USAGE | CGROUP_READ_PERCPU);
        assert_int_equal(z->n_percpu, 2);
        assert_int_equal(y->read_mask, 0);
        /* So with steal, capacities alike. */
        cgroup_sampler_set_capacities(s, alike, 2);
        cgroup_sampler_set_percpu(s, true);
        t.usage[2] += 100;
        tree_write(&t);
        cgroup_sampler_read_counters(s);
        assert_int_equal(z->read_mask, CGROUP_READ_USAGE | CGROUP_READ_PERCPU);

        /* A walk without membership does not go below a managed group, yet sees one made again. */
        fx_sh("mkdir '%s/cpuacct/b/z2' && cp '%s/cpuacct/b/z/'* '%s/cpuacct/b/z2/' && rm -r '%s/cpuacct/b/z' && "
              "mv '%s/cpuacct/b/z2' '%s/cpuacct/b/z' && mkdir '%s/cpuacct/b/z/below'",
              t.dir, t.dir, t.dir, t.dir, t.dir, t.dir, t.dir);
        cgroup_sampler_settle(s);
        fs->cpuacct->trace = count_opendir;
        fs->cpuacct->trace_userdata = &opendirs;
        assert_int_equal(cgroup_sampler_walk(s, NULL, NULL), 0);
        fs->cpuacct->trace = NULL;
        assert_int_equal(opendirs, 3); /* /, /a, /b */
        assert_int_equal(z->state, CGROUP_GROUP_GONE);
        cgroup_sampler_settle(s);
        assert_int_equal(cgroup_sampler_n_groups(s), 4);
        assert_int_equal(group_named(s, "/b/z")->state, CGROUP_GROUP_LIVE);
        assert_null(group_named(s, "/b/z/below"));

        cgroup_sampler_free(s);
        config_free(c);
        cgroup_fs_free(fs);
        fx_remove(t.dir);
}

typedef struct Twin {
        uint64_t now;
} Twin;

static uint64_t twin_clock(void *userdata) {
        return ((Twin *) userdata)->now;
}

/*
 * What is tracked is what reading every counter every round gives: two samplers on the same tree,
 * one reading everything, over rounds where groups run, stop, are throttled, get new shares (at a
 * task round, as peltd or an operator writes them before peltd reads them).
 */
static void test_reads_left_out_track_the_same(_unused_ void **state) {
        static const unsigned alike[2] = { 1024, 1024 };
        Tree t;
        CgroupFs *fs;
        RootDir *proc = NULL;
        char *proc_dir = fx_copy("proc");
        Config *c = tree_config();
        Sampling *every = NULL, *lean = NULL;
        Twin clk = { .now = 1000 * MS };
        unsigned seed = 7;

        tree_make(&t);
        fs = open_v1(t.dir);
        assert_int_equal(rootdir_open(proc_dir, &proc), 0);
        assert_int_equal(sampling_new(proc, fs, c,
                                      &(SamplingOptions){ .capacity = alike, .n_capacity = 2, .clock = twin_clock,
                                                          .clock_userdata = &clk, .read_everything = true },
                                      &every),
                         0);
        assert_int_equal(sampling_new(proc, fs, c,
                                      &(SamplingOptions){ .capacity = alike, .n_capacity = 2, .clock = twin_clock,
                                                          .clock_userdata = &clk },
                                      &lean),
                         0);
        assert_int_equal(sampling_round(every, clk.now, true), 0);
        assert_int_equal(sampling_round(lean, clk.now, true), 0);

        for (int round = 1; round <= 120; round++) {
                SampledGroup *ge, *gl;
                size_t ne, nl;
                bool task = round % 10 == 0;

                /* Each group runs in some rounds, a share of them; /q is throttled now and then. */
                for (int i = 0; i < 4; i++) {
                        seed = seed * 1103515245u + 12345u;
                        if ((seed >> 16) % 3 == 0)
                                t.usage[i] += ((seed >> 8) % 90 + 1) * MS;
                }
                if (round % 7 == 0)
                        t.throttled_q += 20 * MS;
                if (task && round % 20 == 0)
                        t.shares[round / 20 % 4] += 512;
                tree_write(&t);
                clk.now += 100 * MS;
                assert_int_equal(sampling_round(every, clk.now, task), 0);
                assert_int_equal(sampling_round(lean, clk.now, task), 0);

                ne = sampling_groups(every, &ge);
                nl = sampling_groups(lean, &gl);
                assert_int_equal(ne, 4);
                assert_int_equal(nl, 4);
                for (size_t i = 0; i < ne; i++) {
                        assert_string_equal(ge[i].path, gl[i].path);
                        assert_int_equal(ge[i].v.util_avg, gl[i].v.util_avg);
                        assert_int_equal(ge[i].v.runnable_avg, gl[i].v.runnable_avg);
                        assert_int_equal(ge[i].v.load_avg, gl[i].v.load_avg);
                        assert_int_equal(ge[i].shares, gl[i].shares);
                        assert_int_equal(ge[i].throttled_ns, gl[i].throttled_ns);
                }
                if (round == 120) {
                        /* Not a trivial match: the groups ran, /q was throttled, shares changed. */
                        for (size_t i = 0; i < ne; i++)
                                assert_true(ge[i].v.util_avg > 0);
                        assert_true(gl[3].throttled_ns > 0);
                }
        }

        sampling_free(every);
        sampling_free(lean);
        config_free(c);
        cgroup_fs_free(fs);
        rootdir_free(proc);
        fx_remove(proc_dir);
        fx_remove(t.dir);
}

/* ---- big machines: files far over a page, read whole ------------------------------------------- */

/* A growing string, for files of any size. */
typedef struct Text {
        char *s;
        size_t n, allocated;
} Text;

static void text_add(Text *t, const char *fmt, ...) {
        va_list ap;
        int l;

        for (;;) {
                va_start(ap, fmt);
                l = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->allocated - t->n : 0, fmt, ap);
                va_end(ap);
                assert_true(l >= 0);
                if (t->s && t->n + (size_t) l < t->allocated)
                        break;
                t->allocated = MAX(t->allocated * 2, t->n + (size_t) l + 1);
                t->s = realloc(t->s, t->allocated);
                assert_non_null(t->s);
        }
        t->n += (size_t) l;
}

/* The kernel's usage_percpu: "%llu " for every possible CPU, then "\n". */
static uint64_t percpu_value(size_t cpu) {
        return UINT64_C(1000000000000) + cpu * 7919;
}

static Text percpu_file(size_t n_cpus) {
        Text t = {};

        for (size_t cpu = 0; cpu < n_cpus; cpu++)
                text_add(&t, "%" PRIu64 " ", percpu_value(cpu));
        text_add(&t, "\n");
        return t;
}

/* Every other CPU, one by one: the longest form a list of that many CPUs takes. */
static Text sparse_list(size_t n_cpus) {
        Text t = {};

        for (size_t cpu = 0; cpu < n_cpus; cpu += 2)
                text_add(&t, "%s%zu", cpu ? "," : "", cpu);
        text_add(&t, "\n");
        return t;
}

static void check_big_v1(size_t n_cpus) {
        char *dir = fx_copy("cgroup-v1");
        CgroupFs *fs = open_v1(dir);
        Config *c = config_with(NULL, NULL);
        CgroupSampler *s = NULL;
        CgroupGroup *web;
        unsigned *cap = calloc(n_cpus, sizeof *cap);
        Text percpu = percpu_file(n_cpus), cpus = sparse_list(n_cpus);
        uint64_t sum = 0, want_sum = 0, cap_sum = 0;

        assert_non_null(cap);
        for (size_t cpu = 0; cpu < n_cpus; cpu++) {
                cap[cpu] = 256 + (unsigned) (cpu % 769);
                want_sum += percpu_value(cpu);
                if (cpu % 2 == 0)
                        cap_sum += cap[cpu];
        }
        /* Several pages each: a reader with a fixed page-sized buffer sees a prefix only. */
        assert_true(percpu.n > 4096);
        if (n_cpus >= 4096)
                assert_true(cpus.n > 4096);
        fx_write(dir, "cpuacct/web/cpuacct.usage_percpu", "%s", percpu.s);
        fx_write(dir, "cpuset/web/cpuset.effective_cpus", "%s", cpus.s);

        assert_int_equal(cgroup_sampler_new(fs, filter_of(c), &s), 0);
        cgroup_sampler_set_capacities(s, cap, n_cpus);
        /* The files change, the root's counter does not: read them all the same, each round. */
        cgroup_sampler_set_read_all(s, true);
        cgroup_sampler_settle(s);
        assert_int_equal(cgroup_sampler_walk(s, NULL, NULL), 0);
        web = group_named(s, "/web");
        assert_non_null(web);
        assert_int_equal(web->n_percpu, n_cpus);
        for (size_t cpu = 0; cpu < web->n_percpu; cpu++) {
                assert_int_equal(web->percpu_ns[cpu], percpu_value(cpu));
                sum += web->percpu_ns[cpu];
        }
        assert_int_equal(sum, want_sum);
        assert_int_equal(web->nr_cpus, n_cpus / 2);
        assert_int_equal(web->capacity, (unsigned) (cap_sum / (n_cpus / 2)));

        /* Read again through the kept fds, as every round does. */
        cgroup_sampler_settle(s);
        cgroup_sampler_read_counters(s);
        assert_int_equal(web->state, CGROUP_GROUP_LIVE);
        assert_int_equal(web->n_percpu, n_cpus);
        assert_int_equal(web->percpu_ns[n_cpus - 1], percpu_value(n_cpus - 1));
        assert_int_equal(web->nr_cpus, n_cpus / 2);

        /* Garbage far past the first page: the whole file is refused, not its first values taken. */
        percpu.s[percpu.n - 40] = 'x';
        fx_write(dir, "cpuacct/web/cpuacct.usage_percpu", "%s", percpu.s);
        cgroup_sampler_read_counters(s);
        assert_int_equal(web->n_percpu, 0);

        /* Cut mid-number (no final newline, which the kernel always writes): refused. */
        free(percpu.s);
        percpu = percpu_file(n_cpus);
        fx_write(dir, "cpuacct/web/cpuacct.usage_percpu", "%.*s", (int) (percpu.n - 4), percpu.s);
        cgroup_sampler_read_counters(s);
        assert_int_equal(web->n_percpu, 0);

        /* Whole again: read exactly. */
        fx_write(dir, "cpuacct/web/cpuacct.usage_percpu", "%s", percpu.s);
        cgroup_sampler_read_counters(s);
        assert_int_equal(web->n_percpu, n_cpus);
        assert_int_equal(web->percpu_ns[n_cpus - 1], percpu_value(n_cpus - 1));

        free(percpu.s);
        free(cpus.s);
        free(cap);
        cgroup_sampler_free(s);
        config_free(c);
        cgroup_fs_free(fs);
        fx_remove(dir);
}

static void test_big_machines(_unused_ void **state) {
        /* 384 CPUs: the file is just over a page, its last values were cut off mid-number. */
        check_big_v1(384);
        check_big_v1(512);
        check_big_v1(4096);
        check_big_v1(8192);
}

static void test_too_many_cpus(_unused_ void **state) {
        char *dir = fx_copy("cgroup-v1");
        CgroupFs *fs = open_v1(dir);
        Config *c = config_with(NULL, NULL);
        CgroupSampler *s = NULL;
        Text percpu = percpu_file(8193);

        /* More values than CPUMASK_MAX CPUs: not a file a kernel writes; refused. */
        fx_write(dir, "cpuacct/web/cpuacct.usage_percpu", "%s", percpu.s);
        assert_int_equal(cgroup_sampler_new(fs, filter_of(c), &s), 0);
        cgroup_sampler_settle(s);
        assert_int_equal(cgroup_sampler_walk(s, NULL, NULL), 0);
        assert_non_null(group_named(s, "/web"));
        assert_int_equal(group_named(s, "/web")->n_percpu, 0);
        assert_true(group_named(s, "/web")->have_usage);

        free(percpu.s);
        cgroup_sampler_free(s);
        config_free(c);
        cgroup_fs_free(fs);
        fx_remove(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parsers),
                cmocka_unit_test(test_managed_groups),
                cmocka_unit_test(test_sampler_v1),
                cmocka_unit_test(test_sampler_v2),
                cmocka_unit_test(test_sampler_v2_controller_files_appear),
                cmocka_unit_test(test_pipeline),
                cmocka_unit_test(test_quiet_threads),
                cmocka_unit_test(test_counters_read_when_needed),
                cmocka_unit_test(test_reads_left_out_track_the_same),
                cmocka_unit_test(test_big_machines),
                cmocka_unit_test(test_too_many_cpus),
        };

        log_set_max_level(LOG_ERR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
