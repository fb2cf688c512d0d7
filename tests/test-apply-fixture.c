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
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
