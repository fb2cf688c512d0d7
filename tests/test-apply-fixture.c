/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgroup v2 writes on a fixture tree (this machine runs v1): the file names, the values, the
 * shares-to-weight conversion, the controllers the parents must pass on, and the restore, through
 * the same CgroupIO the daemon uses. The tree is made fresh in a temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "peltd/apply-cgroup.h"
#include "peltd/cgroup-util.h"
#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "fixture-util.h"
#include "../daemon/manager-internal.h"
#include "test-cleanup.h"

static char tmpdir[] = "/tmp/peltd-test-apply-fixture-XXXXXX";
static char statepath[300];

static void put(const char *rel, const char *value) {
        fx_write(tmpdir, rel, "%s", value);
}

static const char *get(const char *rel) {
        return fx_read(tmpdir, rel);
}

static void mkdirs(const char *rel) {
        char path[512];

        snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
        assert_int_equal(mkdir(path, 0755), 0);
}

static void test_v2_placement_and_restore(_unused_ void **state) {
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_originals_ Originals *o = NULL;
        CgroupAccess access;
        CgroupIO io;
        Placement p = { .group = "/peltd/web", .shares = 2048, .target = APPLY_V2 };
        CgWrite *w = NULL;
        size_t n = 0;
        CpuMask online;

        /* A v2 tree where the parent passes cpu on but not yet cpuset, and web has a child of its own. */
        put("cgroup.subtree_control", "cpuset cpu io memory\n");
        mkdirs("peltd");
        put("peltd/cgroup.subtree_control", "cpu\n");
        mkdirs("peltd/web");
        put("peltd/web/cpuset.cpus", "\n");
        put("peltd/web/cpu.weight", "100\n");
        mkdirs("peltd/web/worker");
        put("peltd/web/worker/cpuset.cpus", "\n");

        assert_int_equal(cgroup_fs_open_v2(tmpdir, &fs), 0);
        access = (CgroupAccess){ .fs = fs };
        io = cgroup_io_real(&access);
        assert_int_equal(originals_load(statepath, &o), 0);

        assert_int_equal(cpumask_parse_list("2-3", &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n, NULL), 0);
        assert_int_equal(cg_write_batch(&io, o, w, n, false), 0);
        cg_writes_free(w, n);

        assert_string_equal(get("peltd/web/cpuset.cpus"), "2-3");
        assert_string_equal(get("peltd/web/cpu.weight"), "200");       /* 2048 * 100 / 1024 */
        assert_string_equal(get("peltd/cgroup.subtree_control"), "+cpuset");
        assert_string_equal(get("cgroup.subtree_control"), "cpuset cpu io memory"); /* already on: not written */
        assert_string_equal(get("peltd/web/worker/cpuset.cpus"), "");   /* inherits: left alone */

        /* Every original, under the hierarchy's name. */
        assert_int_equal(o->n_entries, 3);
        assert_string_equal(originals_find(o, "unified", "/peltd/web", "cpuset.cpus")->original, "");
        assert_string_equal(originals_find(o, "unified", "/peltd/web", "cpu.weight")->original, "100");
        assert_string_equal(originals_find(o, "unified", "/peltd", "cgroup.subtree_control")->original, "cpu");

        /*
         * Restore: a regular file stands in for subtree_control, so put back the kernel's view of it
         * ("cpuset cpu") before the restore reads it.
         */
        put("peltd/cgroup.subtree_control", "cpuset cpu\n");
        assert_int_equal(cpumask_parse_list("0-3", &online), 0);
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(get("peltd/web/cpuset.cpus"), "");
        assert_string_equal(get("peltd/web/cpu.weight"), "100");
        assert_string_equal(get("peltd/cgroup.subtree_control"), "-cpuset");
        assert_int_equal(o->n_entries, 0);
}

/* A thread's affinity is judged against the cpuset of the group it is in, not the managed group's. */
static void test_child_cpuset_is_not_pinning(_unused_ void **state) {
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        ThreadCpuset cache = { .r = -ENOENT };
        Topology topology = {};
        Manager m = { .topology = &topology };
        ManagedGroup g = { .path = (char *) "/pin/web" };
        CpuMask a;

        /* A v1 cpuset tree: web on 0-7, its child worker on 2-3 of its own. */
        mkdirs("pin");
        mkdirs("pin/web");
        put("pin/web/cpuset.cpus", "0-7\n");
        mkdirs("pin/web/worker");
        put("pin/web/worker/cpuset.cpus", "2-3\n");
        assert_int_equal(cgroup_fs_open_v1(NULL, NULL, tmpdir, &fs), 0);
        m.fs = fs;
        assert_int_equal(cpumask_parse_list("0-7", &topology.online), 0);
        assert_int_equal(cpumask_parse_list("0-7", &g.cpus), 0);

        /* A worker thread runs on its own cpuset, 2-3: narrower than web's, but not pinned. */
        assert_int_equal(cpumask_parse_list("2-3", &a), 0);
        assert_false(manager_thread_pinned(&m, &g, "/pin/web/worker", &a, &cache));
        /* The same affinity in web itself is pinning; so is a worker thread on CPU 2 alone. */
        assert_true(manager_thread_pinned(&m, &g, "/pin/web", &a, &cache));
        assert_int_equal(cpumask_parse_list("2", &a), 0);
        assert_true(manager_thread_pinned(&m, &g, "/pin/web/worker", &a, &cache));
        /* A group gone meanwhile says nothing about pinning. */
        assert_false(manager_thread_pinned(&m, &g, "/pin/web/gone", &a, &cache));
        free(cache.path);
}

/* The daemon's CgroupIO, each call counted. */
typedef struct CountingIO {
        CgroupIO real;
        unsigned reads, writes, children;
} CountingIO;

static int count_read(void *u, const char *h, const char *g, const char *f, char **ret) {
        CountingIO *c = u;

        c->reads++;
        return c->real.read(c->real.userdata, h, g, f, ret);
}

static int count_write(void *u, const char *h, const char *g, const char *f, const char *v) {
        CountingIO *c = u;

        c->writes++;
        return c->real.write(c->real.userdata, h, g, f, v);
}

static int count_children(void *u, const char *h, const char *g, char ***ret) {
        CountingIO *c = u;

        c->children++;
        return c->real.children(c->real.userdata, h, g, ret);
}

#define RESTORE_GROUPS 2000

/* 2,000 v1 groups placed by peltd (cpuset 1, shares 2048), recorded with their originals (0-3, 1024). */
static void placed_groups(Originals *o) {
        char rel[64], group[32];

        for (int i = 0; i < RESTORE_GROUPS; i++) {
                snprintf(group, sizeof group, "/g%04d", i);
                snprintf(rel, sizeof rel, "cpuset%s/cpuset.cpus", group);
                put(rel, "1\n");
                snprintf(rel, sizeof rel, "cpu%s/cpu.shares", group);
                put(rel, "2048\n");
                assert_int_equal(originals_put(o, "cpuset", group, "cpuset.cpus", "0-3", "1"), 0);
                assert_int_equal(originals_put(o, "cpu", group, "cpu.shares", "1024", "2048"), 0);
        }
        assert_int_equal(originals_commit(o), 0);
}

/*
 * 4,000 recorded values put back with one save of the state file, after the writes. A restore cut
 * short before that save (here: the save fails) leaves files restored but still recorded: the next
 * restore writes nothing to them and forgets them.
 */
static void test_v1_restore_many_values(_unused_ void **state) {
        _cleanup_cgroup_fs_ CgroupFs *fs = NULL;
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        char cpusets[400], cpus[400], rel[64];
        CountingIO c;
        CgroupIO io;
        CpuMask online;
        unsigned saves;
        struct stat st;

        snprintf(cpusets, sizeof cpusets, "%s/cpuset", tmpdir);
        snprintf(cpus, sizeof cpus, "%s/cpu", tmpdir);
        put("cpuset/cpuset.cpus", "0-3\n");
        put("cpu/cpu.shares", "1024\n");
        assert_int_equal(cgroup_fs_open_v1(cpus, NULL, cpusets, &fs), 0);
        c = (CountingIO){ .real = cgroup_io_real(&(CgroupAccess){ .fs = fs }) };
        io = (CgroupIO){ count_read, count_write, count_children, &c };
        assert_int_equal(cpumask_parse_list("0-3", &online), 0);
        (void) unlink(statepath);
        assert_int_equal(originals_load(statepath, &o), 0);
        placed_groups(o);
        /* Someone else changed one cpuset meanwhile; another group is gone. */
        put("cpuset/g0005/cpuset.cpus", "2\n");
        fx_sh("rm -r '%s/cpuset/g0007' '%s/cpu/g0007'", tmpdir, tmpdir);

        saves = o->n_saves;
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_int_equal(o->n_saves, saves + 1);
        assert_int_equal(o->n_entries, 0);
        assert_int_equal(stat(statepath, &st), -1);
        /* Two reads and two writes a group, no more: the shared parent's cpuset is read once. */
        assert_int_equal(c.writes, 2 * (RESTORE_GROUPS - 1) - 1);
        assert_true(c.reads <= 2 * RESTORE_GROUPS + 1);
        for (int i = 0; i < RESTORE_GROUPS; i++) {
                if (i == 7)
                        continue;
                snprintf(rel, sizeof rel, "cpuset/g%04d/cpuset.cpus", i);
                assert_string_equal(get(rel), i == 5 ? "2" : "0-3");
                snprintf(rel, sizeof rel, "cpu/g%04d/cpu.shares", i);
                assert_string_equal(get(rel), "1024");
        }

        /* Placed again; this time the state file cannot be saved after the writes. */
        fx_sh("mkdir -p '%s/cpuset/g0007' '%s/cpu/g0007'", tmpdir, tmpdir);
        originals_free(TAKE_PTR(o));
        assert_int_equal(originals_load(statepath, &o), 0);
        placed_groups(o);
        /* Every entry restored, the save is the file's removal: a directory there refuses it. */
        free(o->path);
        assert_true(asprintf(&o->path, "%s/cpuset", tmpdir) > 0);
        assert_int_equal(cg_restore(&io, o, &online, false), -EISDIR);
        assert_string_equal(get("cpuset/g1999/cpuset.cpus"), "0-3");

        /* What the state file on disk still says is restored already: no write, and it is removed. */
        assert_int_equal(originals_load(statepath, &again), 0);
        assert_int_equal(again->n_entries, 2 * RESTORE_GROUPS);
        c.writes = 0;
        assert_int_equal(cg_restore(&io, again, &online, false), 0);
        assert_int_equal(c.writes, 0);
        assert_int_equal(stat(statepath, &st), -1);
        fx_sh("rm -r '%s/cpuset' '%s/cpu'", tmpdir, tmpdir);
}

static int setup(_unused_ void **state) {
        if (!test_mkdtemp(tmpdir))
                return -1;
        snprintf(statepath, sizeof statepath, "%s-state/originals", tmpdir);
        {
                char dir[sizeof tmpdir + 6];

                snprintf(dir, sizeof dir, "%s-state", tmpdir);
                test_cleanup_path(dir);
        }
        return 0;
}

static int teardown(_unused_ void **state) {
        char cmd[700];

        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s-state'", tmpdir, tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v2_placement_and_restore),
                cmocka_unit_test(test_child_cpuset_is_not_pinning),
                cmocka_unit_test(test_v1_restore_many_values),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
