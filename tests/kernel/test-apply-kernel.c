/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's apply steps (apply-steps.h) and cg_restore() on the real kernel: a private subtree in the cpuset and cpu
 * hierarchies (v1), or in the unified one (v2, the test guest), removed at the end, also on
 * failure. Checks that the order and retry rules hold against the kernel's own cpuset checks, and
 * on v2 that a placement enables the controllers it needs and a restore puts back empty cpusets
 * and disables what it enabled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "machine-lock.h"
#include "peltd/apply-cgroup.h"
#include "peltd/cgroup-util.h"
#include "peltd/macro.h"
#include "peltd/rootdir.h"
#include "apply-steps.h"
#include "test-cleanup.h"

#define CPUSET_MOUNT "/sys/fs/cgroup/cpuset"
#define CPU_MOUNT "/sys/fs/cgroup/cpu"
#define UNIFIED_MOUNT "/sys/fs/cgroup"

static bool v2;

static char base[64];        /* "/peltd-test-PID" */
static char statepath[128];
static CgroupFs *fs;
static CgroupAccess cg_access;
static CgroupIO io;
static CpuMask online;
static char all_cpus[64];

static void sh(const char *fmt, ...) {
        char cmd[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        if (system(cmd) != 0)
                fail_msg("command failed: %s", cmd);
}

static void cleanup_tree(void) {
        static const char *const mounts[] = { CPUSET_MOUNT, CPU_MOUNT };
        char cmd[256];

        /* Children before parents: rmdir refuses a group with children. */
        for (size_t i = 0; i < (v2 ? 1 : ELEMENTSOF(mounts)); i++) {
                const char *mnt = v2 ? UNIFIED_MOUNT : mounts[i];

                snprintf(cmd, sizeof cmd, "[ -d %s%s ] && find %s%s -depth -type d -exec rmdir {} + 2>/dev/null", mnt,
                         base, mnt, base);
                (void) !system(cmd);
        }
        unlink(statepath);
        {
                /* And the state file's directory. */
                char dir[sizeof statepath];

                snprintf(dir, sizeof dir, "%s", statepath);
                if (strrchr(dir, '/'))
                        *strrchr(dir, '/') = 0;
                (void) rmdir(dir);
        }
}

static char *get(const char *h, const char *group, const char *file) {
        static char buf[256];
        char *v = NULL;

        assert_int_equal(io.read(io.userdata, h, group, file, &v), 0);
        snprintf(buf, sizeof buf, "%s", v);
        free(v);
        return buf;
}

static CgWrite W(const char *h, const char *group, const char *file, const char *value) {
        ApplyTarget t;
        const PlacedValue *pv = placed_value_at(h, file, &t);
        CgWrite w;

        assert_non_null(pv);
        assert_int_equal(cg_write_init(&w, pv, t, group, value), 0);
        return w;
}

static int setup(_unused_ void **state) {
        _cleanup_free_ char *s = NULL;

        machine_lock();
        v2 = access(CPUSET_MOUNT "/cpuset.cpus", F_OK) < 0 && access(UNIFIED_MOUNT "/cgroup.controllers", F_OK) == 0;
        if (!v2 && access(CPUSET_MOUNT "/cpuset.cpus", F_OK) < 0) {
                fprintf(stderr, "neither a cgroup v1 cpuset hierarchy at " CPUSET_MOUNT " nor cgroup v2 at " UNIFIED_MOUNT "\n");
                return -1;
        }
        snprintf(base, sizeof base, "/peltd-test-%d", (int) getpid());
        snprintf(statepath, sizeof statepath, "/tmp/peltd-test-apply-kernel-%d/originals", (int) getpid());
        atexit(cleanup_tree);
        /* Also when killed: the state file's directory, and the groups below as make_tree() and
         * test_v2_place_restore() make them, parents first (removed last). */
        {
                char dir[sizeof statepath];

                snprintf(dir, sizeof dir, "%s", statepath);
                *strrchr(dir, '/') = 0;
                test_cleanup_path(dir);
        }
        for (size_t i = 0; i < (v2 ? 1 : 2); i++) {
                const char *mnt = v2 ? UNIFIED_MOUNT : i == 0 ? CPUSET_MOUNT : CPU_MOUNT;
                char p[160];

                snprintf(p, sizeof p, "%s%s", mnt, base);
                test_cleanup_cgroup(p);
                snprintf(p, sizeof p, "%s%s/g", mnt, base);
                test_cleanup_cgroup(p);
                snprintf(p, sizeof p, "%s%s/g/c", mnt, base);
                test_cleanup_cgroup(p);
                snprintf(p, sizeof p, "%s%s/h", mnt, base);
                test_cleanup_cgroup(p);
        }

        if ((v2 ? cgroup_fs_open_v2(UNIFIED_MOUNT, &fs) : cgroup_fs_open_v1(CPU_MOUNT, NULL, CPUSET_MOUNT, &fs)) < 0)
                return -1;
        cg_access = (CgroupAccess){ .fs = fs };
        io = cgroup_io_real(&cg_access);
        if (rootdir_read_string(cgroup_fs_cpuset_root(fs), v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus", &s) < 0 ||
            cpumask_parse_list(s, &online) < 0)
                return -1;
        cpumask_format(&online, all_cpus, sizeof all_cpus);
        return 0;
}

static int teardown(_unused_ void **state) {
        cleanup_tree();
        cgroup_fs_free(fs);
        return 0;
}

/* /base/g with a child /base/g/c, both on every CPU (v1 cpusets start empty: set them, mems too). */
static void make_tree(void) {
        cleanup_tree();
        sh("mkdir -p %s%s/g/c %s%s/g", CPUSET_MOUNT, base, CPU_MOUNT, base);
        sh("cd %s%s && cat ../cpuset.mems > cpuset.mems && echo %s > cpuset.cpus && "
           "cat cpuset.mems > g/cpuset.mems && echo %s > g/cpuset.cpus && "
           "cat cpuset.mems > g/c/cpuset.mems && echo %s > g/c/cpuset.cpus",
           CPUSET_MOUNT, base, all_cpus, all_cpus, all_cpus);
}

/* p for group, written in one batch. */
static void place(Originals *o, Placement *p, const char *group) {
        CgWrite *w = NULL;
        size_t n = 0;

        p->group = group;
        assert_int_equal(place_steps(&io, o, p, &w, &n), 0);
        cg_writes_free(w, n);
}

static void test_narrow_widen_restore(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        Placement p = { .shares = 2048, .target = APPLY_V1 };
        char g[96], c[96], last[8];
        int lastcpu = cpumask_last(&online);

        if (v2)
                skip(); /* v1's parent/child rules; test_v2_place_restore covers v2 */
        if (cpumask_count(&online) < 2)
                fail_msg("needs two online CPUs");
        make_tree();
        snprintf(g, sizeof g, "%s/g", base);
        snprintf(c, sizeof c, "%s/g/c", base);
        snprintf(last, sizeof last, "%d", lastcpu);

        /* The kernel refuses the parent first (EBUSY): the batch must get the order right itself. */
        assert_int_equal(io.write(io.userdata, "cpuset", g, "cpuset.cpus", last), -EBUSY);

        /* g and its child c on the last CPU, with shares: c narrowed first. */
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(cpumask_parse_list(last, &p.cpus), 0);
        place(o, &p, g);
        assert_string_equal(get("cpuset", g, "cpuset.cpus"), last);
        assert_string_equal(get("cpuset", c, "cpuset.cpus"), last);
        assert_string_equal(get("cpu", g, "cpu.shares"), "2048");

        /* A child outside its parent is refused for good (EACCES) and the batch leaves nothing changed. */
        CgWrite bad[] = { W("cpu", g, "cpu.shares", "4096"), W("cpuset", c, "cpuset.cpus", "0") };
        assert_int_equal(apply_steps(&io, o, bad, ELEMENTSOF(bad), false), -EACCES);
        assert_string_equal(get("cpu", g, "cpu.shares"), "2048");
        assert_string_equal(get("cpuset", c, "cpuset.cpus"), last);

        /* Restoring widens again, parents first. */
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(get("cpuset", g, "cpuset.cpus"), all_cpus);
        assert_string_equal(get("cpuset", c, "cpuset.cpus"), all_cpus);
        assert_string_equal(get("cpu", g, "cpu.shares"), "1024");
        assert_int_equal(o->n_entries, 0);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                cg_write_done(&bad[i]);
}

/*
 * What the kernel refuses, and how peltd takes it: a v1 child cpuset none of whose CPUs the parent's
 * new set keeps leaves the parent alone, naming the child (the kernel would say EBUSY, a refusal
 * another change may lift); a CPU the machine does not have is EINVAL, refused for good.
 */
static void test_v1_refusals(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        _cleanup_free_ char *child = NULL;
        char g[96], c[96], last[8], first[8];
        Placement p = { .target = APPLY_V1 };
        CgWrite *w = NULL;
        size_t n = 0;

        if (v2)
                skip(); /* v1's parent/child rules */
        if (cpumask_count(&online) < 2)
                fail_msg("needs two online CPUs");
        make_tree();
        snprintf(g, sizeof g, "%s/g", base);
        snprintf(c, sizeof c, "%s/g/c", base);
        snprintf(last, sizeof last, "%d", cpumask_last(&online));
        snprintf(first, sizeof first, "%d", cpumask_first(&online));
        sh("echo %s > %s%s/cpuset.cpus", last, CPUSET_MOUNT, c);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);

        /* The kernel's own answer to the parent moved off its child's CPUs. */
        assert_int_equal(io.write(io.userdata, "cpuset", g, "cpuset.cpus", first), -EBUSY);
        assert_int_equal(cg_error_class(-EBUSY), CG_ERROR_TRANSIENT);

        /* peltd's: not planned at all, the child named. */
        p.group = g;
        assert_int_equal(cpumask_parse_list(first, &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n, &child), -EBUSY);
        assert_string_equal(child, c);
        assert_string_equal(get("cpuset", g, "cpuset.cpus"), all_cpus);
        assert_string_equal(get("cpuset", c, "cpuset.cpus"), last);

        /* The parent on the child's CPU: placed, and the child keeps its own. */
        assert_int_equal(cpumask_parse_list(last, &p.cpus), 0);
        place(o, &p, g);
        assert_string_equal(get("cpuset", g, "cpuset.cpus"), last);
        assert_string_equal(get("cpuset", c, "cpuset.cpus"), last);

        /*
         * Refused for good, the batch changing nothing: a CPU beyond the machine's possible ones
         * (ERANGE), shares that are not a number (EINVAL), with the cpuset written first.
         */
        {
                char value[32];

                snprintf(value, sizeof value, "%s,%d", last, CPUMASK_MAX - 1);
                CgWrite bad[] = { W("cpuset", g, "cpuset.cpus", value) };
                assert_int_equal(apply_steps(&io, o, bad, 1, false), -ERANGE);
                assert_ptr_equal(cg_batch_failure(bad, 1), &bad[0]);
                assert_int_equal(cg_error_class(bad[0].error), CG_ERROR_PERMANENT);
                assert_string_equal(get("cpuset", g, "cpuset.cpus"), last);
                assert_string_equal(originals_find(o, "cpuset", g, "cpuset.cpus")->written, last);
                cg_write_done(&bad[0]);

                CgWrite worse[] = { W("cpuset", g, "cpuset.cpus", all_cpus), W("cpu", g, "cpu.shares", "many") };
                assert_int_equal(apply_steps(&io, o, worse, 2, false), -EINVAL);
                assert_ptr_equal(cg_batch_failure(worse, 2), &worse[1]);
                assert_int_equal(cg_error_class(worse[1].error), CG_ERROR_PERMANENT);
                assert_string_equal(get("cpuset", g, "cpuset.cpus"), last); /* rolled back */
                assert_string_equal(get("cpu", g, "cpu.shares"), "1024");
                assert_null(originals_find(o, "cpu", g, "cpu.shares"));
                cg_write_done(&worse[0]);
                cg_write_done(&worse[1]);
        }
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(get("cpuset", g, "cpuset.cpus"), all_cpus);
        assert_int_equal(o->n_entries, 0);
}

/*
 * v2: /base/g/c with a task in c, and /base/h without tasks; cpuset and cpu enabled for base's
 * children (by the test) but not for g's. Placing c must enable them in g (base and the root
 * already pass them on). Restoring must empty h's cpuset again (a v2 cpuset that was empty is
 * "every CPU of the parent"), give g and c, which the kernel does not let go empty while they have
 * tasks, their parents' CPUs, and disable in g what the placement enabled.
 */
static void test_v2_place_restore(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        char g[96], c[96], h[96], last[8];
        int lastcpu = cpumask_last(&online);
        Placement p = { .shares = 2048, .target = APPLY_V2 };
        pid_t task;

        if (!v2)
                skip(); /* the test guest runs it (tests/vm) */
        if (cpumask_count(&online) < 2)
                fail_msg("needs two online CPUs");
        cleanup_tree();
        sh("echo '+cpuset +cpu' > %s/cgroup.subtree_control", UNIFIED_MOUNT);
        sh("mkdir -p %s%s/g/c %s%s/h && echo '+cpuset +cpu' > %s%s/cgroup.subtree_control", UNIFIED_MOUNT, base,
           UNIFIED_MOUNT, base, UNIFIED_MOUNT, base);
        snprintf(g, sizeof g, "%s/g", base);
        snprintf(c, sizeof c, "%s/g/c", base);
        snprintf(h, sizeof h, "%s/h", base);
        snprintf(last, sizeof last, "%d", lastcpu);
        assert_string_equal(get("unified", g, "cpuset.cpus"), "");
        assert_string_equal(get("unified", g, "cgroup.subtree_control"), "");
        task = fork();
        assert_true(task >= 0);
        if (task == 0) {
                pause();
                _exit(0);
        }
        sh("echo %d > %s%s/cgroup.procs", (int) task, UNIFIED_MOUNT, c);

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(cpumask_parse_list(last, &p.cpus), 0);
        place(o, &p, g);
        place(o, &p, c);
        place(o, &p, h);
        assert_string_equal(get("unified", h, "cpuset.cpus"), last);

        assert_string_equal(get("unified", g, "cpuset.cpus"), last);
        assert_string_equal(get("unified", g, "cpu.weight"), "200");
        assert_string_equal(get("unified", g, "cgroup.subtree_control"), "cpuset cpu");
        assert_string_equal(get("unified", c, "cpuset.cpus"), last);
        assert_string_equal(get("unified", c, "cpuset.cpus.effective"), last);
        assert_string_equal(get("unified", c, "cpu.weight"), "200");

        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_int_equal(o->n_entries, 0);
        assert_string_equal(get("unified", h, "cpuset.cpus"), "");
        assert_string_equal(get("unified", h, "cpuset.cpus.effective"), all_cpus);
        assert_string_equal(get("unified", g, "cpuset.cpus"), all_cpus);
        assert_string_equal(get("unified", g, "cpuset.cpus.effective"), all_cpus);
        assert_string_equal(get("unified", g, "cpu.weight"), "100");
        assert_string_equal(get("unified", g, "cgroup.subtree_control"), "");
        /* The base's own controllers were on before: left on. */
        assert_string_equal(get("unified", base, "cgroup.subtree_control"), "cpuset cpu");

        /* c's files went with g's controllers; its task may run on every CPU again. */
        {
                char cmd[128], line[128] = "";
                FILE *f;

                snprintf(cmd, sizeof cmd, "sed -n 's/^Cpus_allowed_list:\\s*//p' /proc/%d/status", (int) task);
                f = popen(cmd, "r");
                assert_non_null(f);
                assert_non_null(fgets(line, sizeof line, f));
                pclose(f);
                line[strcspn(line, "\n")] = 0;
                assert_string_equal(line, all_cpus);
        }
        kill(task, SIGKILL);
        waitpid(task, NULL, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_narrow_widen_restore),
                cmocka_unit_test(test_v1_refusals),
                cmocka_unit_test(test_v2_place_restore),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
