/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgroup v2 writes on a fixture tree (this machine runs v1): the file names, the values, the
 * shares-to-weight conversion, the controllers the parents must pass on, and the restore, through
 * the same CgroupIO the daemon uses. The tree is made fresh in a temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "peltd/apply-cgroup.h"
#include "peltd/cgroup-util.h"
#include "peltd/log.h"
#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "fixture-util.h"
#include "../daemon/manager/manager-internal.h"
#include "apply-steps.h"
#include "stderr-capture.h"
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
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);

        assert_int_equal(cpumask_parse_list("2-3", &p.cpus), 0);
        assert_int_equal(place_steps(&io, o, &p, &w, &n), 0);
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
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        placed_groups(o);
        /* Someone else changed one cpuset meanwhile; another group is gone. */
        put("cpuset/g0005/cpuset.cpus", "2\n");
        fx_sh("rm -r '%s/cpuset/g0007' '%s/cpu/g0007'", tmpdir, tmpdir);

        saves = o->n_saves;
        log_set_max_level(LOG_WARNING); /* a line per value restored */
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
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        placed_groups(o);
        /* Every entry restored, the save is the file's removal: a directory there refuses it. */
        free(o->path);
        assert_true(asprintf(&o->path, "%s/cpuset", tmpdir) > 0);
        assert_int_equal(cg_restore(&io, o, &online, false), -EISDIR);
        assert_string_equal(get("cpuset/g1999/cpuset.cpus"), "0-3");

        /* What the state file on disk still says is restored already: no write, and it is removed. */
        assert_int_equal(originals_load_checked(statepath, &again, NULL), 0);
        assert_int_equal(again->n_entries, 2 * RESTORE_GROUPS);
        c.writes = 0;
        assert_int_equal(cg_restore(&io, again, &online, false), 0);
        assert_int_equal(c.writes, 0);
        assert_int_equal(stat(statepath, &st), -1);
        log_set_max_level(LOG_INFO);
        fx_sh("rm -r '%s/cpuset' '%s/cpu'", tmpdir, tmpdir);
}

/* ---- The daemon's rounds on a v1 tree: what each reads and writes, counted through the root layer ---- */

typedef struct Trace {
        char ops[64][160];
        unsigned n, lost;
} Trace;

static void trace_op(void *userdata, const char *op, const char *path) {
        Trace *t = userdata;

        if (t->n < ELEMENTSOF(t->ops))
                snprintf(t->ops[t->n++], sizeof t->ops[0], "%s %s", op, path[0] == '/' ? path + 1 : path);
        else
                t->lost++;
}

/* How many traced operations start with prefix ("open peltd/web/", "opendir ", "write "). */
static unsigned traced(const Trace *t, const char *prefix) {
        unsigned n = 0;

        assert_int_equal(t->lost, 0);
        for (unsigned i = 0; i < t->n; i++)
                n += strneq(t->ops[i], prefix, strlen(prefix));
        return n;
}

typedef struct Daemon {
        CgroupFs *fs;
        CgroupAccess access;
        Config config;
        Topology topology;
        Manager m;
        ManagedGroup g, *gp;
        PolicyResult res;
        uint64_t shares;             /* what the sampler would read from cpu.shares */
        Trace trace;
        char log[400];
} Daemon;

static void daemon_start(Daemon *d) {
        char cpusets[400], cpus[400];

        snprintf(cpusets, sizeof cpusets, "%s/mgr/cpuset", tmpdir);
        snprintf(cpus, sizeof cpus, "%s/mgr/cpu", tmpdir);
        put("mgr/cpuset/cpuset.cpus", "0-3\n");
        put("mgr/cpuset/peltd/cpuset.cpus", "0-3\n");
        put("mgr/cpuset/peltd/web/cpuset.cpus", "0-3\n");
        put("mgr/cpuset/peltd/web/cpuset.mems", "0\n");
        put("mgr/cpuset/peltd/web/child/cpuset.cpus", "1-3\n");
        put("mgr/cpu/peltd/web/cpu.shares", "1024\n");

        *d = (Daemon){ .config = { .state_file = statepath, .backend = BACKEND_CGROUPFS }, .shares = 1024 };
        assert_int_equal(cgroup_fs_open_v1(cpus, NULL, cpusets, &d->fs), 0);
        d->access = (CgroupAccess){ .fs = d->fs };
        assert_int_equal(cpumask_parse_list("0-3", &d->topology.online), 0);
        d->m = (Manager){ .config = &d->config, .topology = &d->topology, .fs = d->fs, .io = cgroup_io_real(&d->access),
                          .lock_fd = -1 };
        (void) unlink(statepath);
        assert_int_equal(originals_load_checked(statepath, &d->m.originals, NULL), 0);
        d->g = (ManagedGroup){ .path = strdup("/peltd/web") };
        assert_non_null(d->g.path);
        d->gp = &d->g;
        d->m.groups = &d->g;
        d->m.n_groups = 1;
        d->res = (PolicyResult){ .managed = true, .shares_set = true, .shares = 2048, .reason = "test" };
        d->fs->cpuset->trace = d->fs->cpu->trace = trace_op;
        d->fs->cpuset->trace_userdata = d->fs->cpu->trace_userdata = &d->trace;

        /* What the daemon says goes to a file, to be counted (and shown by stderr_capture_teardown()). */
        snprintf(d->log, sizeof d->log, "%s/mgr.log", tmpdir);
        assert_int_equal(stderr_capture_begin(d->log, "  peltd: "), 0);
}

static void daemon_stop(Daemon *d) {
        managed_group_done(&d->g);
        originals_free(d->m.originals);
        cgroup_fs_free(d->fs);
        fx_sh("rm -r '%s/mgr'", tmpdir);
}

static unsigned logged(const Daemon *d, const char *s) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[1024];
        unsigned n = 0;

        fflush(stderr);
        f = fopen(d->log, "re");
        assert_non_null(f);
        while (fgets(line, sizeof line, f))
                n += !!strstr(line, s);
        return n;
}

/* One round as the daemon runs it: the groups read, then the plan applied; the trace from here. */
static void round_(Daemon *d, bool task_round, const char *cpus) {
        d->trace = (Trace){};
        assert_int_equal(cpumask_parse_list(cpus, &d->res.cpus), 0);
        manager_read_groups(&d->m, task_round);
        assert_true(d->g.info_valid);
        {
                const PolicyResult *res = &d->res;

                manager_apply_groups(&d->m, &d->gp, &res, &d->shares, 1);
        }
}

/*
 * A placed group whose plan holds costs no I/O of its placement: none at group rounds, and at a
 * task round one read of each file peltd placed (the drift check) and of the parent's cpuset —
 * no listing of its children, no cpuset.mems, no write.
 */
static void test_steady_group_costs_no_placement_io(_unused_ void **state) {
        Daemon d;
        unsigned saves;

        daemon_start(&d);
        saves = d.m.originals->n_saves;
        round_(&d, true, "2-3");
        assert_string_equal(get("mgr/cpuset/peltd/web/cpuset.cpus"), "2-3");
        assert_string_equal(get("mgr/cpuset/peltd/web/child/cpuset.cpus"), "2-3");
        assert_string_equal(get("mgr/cpu/peltd/web/cpu.shares"), "2048");
        /* Three records, one save before the three writes; the descendants were listed (web's, child's). */
        assert_int_equal(d.m.originals->n_entries, 3);
        assert_int_equal(d.m.originals->n_saves, saves + 1);
        assert_int_equal(traced(&d.trace, "opendir peltd/web"), 2);
        assert_int_equal(traced(&d.trace, "write "), 3);
        d.shares = 2048;

        for (int i = 0; i < 30; i++) {
                round_(&d, false, "2-3");
                assert_int_equal(d.trace.n, 0);
        }
        for (int i = 0; i < 3; i++) {
                round_(&d, true, "2-3");
                assert_int_equal(traced(&d.trace, "open peltd/web/cpuset.cpus"), 1);
                assert_int_equal(traced(&d.trace, "open peltd/web/child/cpuset.cpus"), 1);
                assert_int_equal(traced(&d.trace, "open peltd/web/cpu.shares"), 1);
                assert_int_equal(traced(&d.trace, "open peltd/cpuset.cpus"), 1);
                assert_int_equal(d.trace.n, 4);
        }
        assert_int_equal(d.m.originals->n_saves, saves + 1);

        /* A new plan: the children are listed again, the change saved once more. */
        round_(&d, false, "3");
        assert_string_equal(get("mgr/cpuset/peltd/web/child/cpuset.cpus"), "3");
        assert_int_equal(traced(&d.trace, "opendir peltd/web"), 2);
        assert_int_equal(d.m.originals->n_saves, saves + 2);
        assert_int_equal(logged(&d, "/peltd/web: CPUs 2-3 -> 3"), 1);
        daemon_stop(&d);
}

/*
 * Someone else writes a placed file: the next task round takes that value as the file's original,
 * places the plan again and says so once for the episode; a stop puts back the other value.
 */
static void test_drift_becomes_the_original(_unused_ void **state) {
        Daemon d;
        CpuMask online;

        daemon_start(&d);
        round_(&d, true, "2-3");
        d.shares = 2048;

        /* Someone else widens the group and sets its shares; group rounds do not look. */
        put("mgr/cpuset/peltd/web/cpuset.cpus", "0-3\n");
        put("mgr/cpu/peltd/web/cpu.shares", "512\n");
        round_(&d, false, "2-3");
        assert_string_equal(get("mgr/cpuset/peltd/web/cpuset.cpus"), "0-3");
        d.shares = 512;
        round_(&d, true, "2-3");
        assert_string_equal(get("mgr/cpuset/peltd/web/cpuset.cpus"), "2-3");
        assert_string_equal(get("mgr/cpu/peltd/web/cpu.shares"), "2048");
        d.shares = 2048;
        assert_string_equal(originals_find(d.m.originals, "cpuset", "/peltd/web", "cpuset.cpus")->original, "0-3");
        assert_string_equal(originals_find(d.m.originals, "cpu", "/peltd/web", "cpu.shares")->original, "512");
        assert_int_equal(logged(&d, "was changed by someone else"), 1);
        /* Placing the same plan again is not a change of placement. */
        assert_int_equal(logged(&d, "/peltd/web: CPUs"), 1);

        /* The other writer keeps at it: placed again each task round, said no more. */
        for (int i = 0; i < 3; i++) {
                put("mgr/cpuset/peltd/web/cpuset.cpus", "1-3\n");
                round_(&d, true, "2-3");
                assert_string_equal(get("mgr/cpuset/peltd/web/cpuset.cpus"), "2-3");
        }
        assert_int_equal(logged(&d, "was changed by someone else"), 1);
        assert_string_equal(originals_find(d.m.originals, "cpuset", "/peltd/web", "cpuset.cpus")->original, "1-3");
        /* It stopped: the episode is over; a new one is said again. */
        round_(&d, true, "2-3");
        put("mgr/cpuset/peltd/web/child/cpuset.cpus", "3\n");
        round_(&d, true, "2-3");
        assert_int_equal(logged(&d, "was changed by someone else"), 2);
        /* The descendant's own choice lies inside the group's set: it is what the plan gives it now. */
        assert_string_equal(get("mgr/cpuset/peltd/web/child/cpuset.cpus"), "3");
        assert_string_equal(originals_find(d.m.originals, "cpuset", "/peltd/web/child", "cpuset.cpus")->original, "3");

        /* A stop puts back the other writers' values. */
        assert_int_equal(cpumask_parse_list("0-3", &online), 0);
        assert_int_equal(cg_restore(&d.m.io, d.m.originals, &online, false), 0);
        assert_string_equal(get("mgr/cpuset/peltd/web/cpuset.cpus"), "1-3");
        assert_string_equal(get("mgr/cpuset/peltd/web/child/cpuset.cpus"), "3");
        assert_string_equal(get("mgr/cpu/peltd/web/cpu.shares"), "512");
        daemon_stop(&d);
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
                cmocka_unit_test_teardown(test_steady_group_costs_no_placement_io, stderr_capture_teardown),
                cmocka_unit_test_teardown(test_drift_becomes_the_original, stderr_capture_teardown),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
