/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Applying and restoring against a simulated cgroup v1 hierarchy that enforces the kernel's cpuset
 * rules (a child inside its parent: EACCES when it would leave it, EBUSY when the parent would
 * leave a child out), so that ordering, retries and rollback are tested on every run, through the
 * daemon's own apply steps (apply-steps.h, manager_apply_groups()). With --mounts (root, the kernel
 * suite) only what needs a mount of its own: a state directory that is full.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "peltd/apply-cgroup.h"
#include "peltd/macro.h"
#include "../../daemon/manager/manager-internal.h"
#include "apply-steps.h"
#include "stderr-capture.h"
#include "test-cleanup.h"

typedef struct SimGroup {
        const char *path;
        CpuMask cpus;
        char shares[32];
        char subtree[64];
        bool gone;
        bool inherit_ok;             /* v2-like: an empty cpuset.cpus is allowed */
} SimGroup;

typedef struct Sim {
        SimGroup g[16];
        size_t n;
        int writes;
        int fail_shares;             /* error to return for cpu.shares writes; 0 */
        const char *fail_group;      /* writes of fail_file of this group return fail_err */
        const char *fail_file;
        int fail_err;
        int fail_tries;              /* how many times they were tried */
        bool gone_on_write;          /* the group is removed at its first write (after the batch read it) */
        char log[2048];
} Sim;

static SimGroup *sim_find(Sim *s, const char *path) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->g[i].path, path) && !s->g[i].gone)
                        return &s->g[i];
        return NULL;
}

static bool is_child(const char *child, const char *parent) {
        size_t l = strlen(parent);

        if (streq(parent, "/"))
                return child[0] == '/' && child[1] && !strchr(child + 1, '/');
        return strncmp(child, parent, l) == 0 && child[l] == '/' && !strchr(child + l + 1, '/');
}

static int sim_read(void *userdata, _unused_ const char *h, const char *group, const char *file, char **ret) {
        Sim *s = userdata;
        SimGroup *g = sim_find(s, group);

        if (!g)
                return -ENOENT;
        if (streq(file, "cpuset.cpus"))
                *ret = cpumask_to_list(&g->cpus);
        else if (streq(file, "cpu.shares"))
                *ret = strdup(g->shares);
        else if (streq(file, "cgroup.subtree_control"))
                *ret = strdup(g->subtree);
        else
                return -ENOENT;
        return 0;
}

static int sim_write(void *userdata, _unused_ const char *h, const char *group, const char *file, const char *value) {
        Sim *s = userdata;
        SimGroup *g = sim_find(s, group);
        char line[128];

        if (!g)
                return -ENOENT;
        if (s->gone_on_write) {
                g->gone = true;
                return -ENOENT;
        }
        if (s->fail_err && streq(group, s->fail_group) && streq(file, s->fail_file)) {
                s->fail_tries++;
                return s->fail_err;
        }
        if (streq(file, "cpuset.cpus")) {
                CpuMask m;

                if (cpumask_parse_list(value, &m) < 0)
                        return -EINVAL;
                if (cpumask_empty(&m)) {
                        if (!g->inherit_ok)
                                return -ENOSPC;
                        g->cpus = m;
                        s->writes++;
                        return 0;
                }
                for (size_t i = 0; i < s->n; i++) {
                        SimGroup *o = &s->g[i];

                        if (o->gone)
                                continue;
                        if (is_child(group, o->path) && !cpumask_subset(&m, &o->cpus))
                                return -EACCES; /* outside the parent */
                        if (is_child(o->path, group) && !cpumask_subset(&o->cpus, &m))
                                return -EBUSY;  /* a child left outside */
                }
                g->cpus = m;
        } else if (streq(file, "cpu.shares")) {
                if (s->fail_shares)
                        return s->fail_shares;
                snprintf(g->shares, sizeof g->shares, "%s", value);
        } else if (streq(file, "cgroup.subtree_control")) {
                /* Words "+cpuset -cpu ...", as the kernel takes them; the file lists what is on. */
                char words[128], *save = NULL, on[64] = "";

                snprintf(words, sizeof words, "%s", value);
                for (char *t = strtok_r(words, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                        char list[64], *save2 = NULL;

                        if (t[0] != '+' && t[0] != '-')
                                return -EINVAL;
                        snprintf(list, sizeof list, "%s", g->subtree);
                        on[0] = 0;
                        for (char *c = strtok_r(list, " ", &save2); c; c = strtok_r(NULL, " ", &save2))
                                if (!streq(c, t + 1))
                                        snprintf(on + strlen(on), sizeof on - strlen(on), "%s%s", on[0] ? " " : "", c);
                        if (t[0] == '+')
                                snprintf(on + strlen(on), sizeof on - strlen(on), "%s%s", on[0] ? " " : "", t + 1);
                        snprintf(g->subtree, sizeof g->subtree, "%s", on);
                }
        } else
                return -ENOENT;
        s->writes++;
        snprintf(line, sizeof line, "%s %s=%s\n", group, file, value);
        strncat(s->log, line, sizeof s->log - strlen(s->log) - 1);
        return 0;
}

static int sim_children(void *userdata, _unused_ const char *h, const char *group, char ***ret) {
        Sim *s = userdata;
        char **l = new0(char *, s->n + 1);
        size_t k = 0;

        if (!sim_find(s, group)) {
                free(l);
                return -ENOENT;
        }
        for (size_t i = 0; i < s->n; i++)
                if (!s->g[i].gone && is_child(s->g[i].path, group))
                        l[k++] = strdup(s->g[i].path);
        *ret = l;
        return 0;
}

static Sim sim;
static CgroupIO io = { sim_read, sim_write, sim_children, &sim };
static char tmpdir[] = "/tmp/peltd-test-apply-XXXXXX";
static char statepath[256];

static void sim_add(const char *path, const char *cpus, const char *shares) {
        SimGroup *g;

        assert_true(sim.n < ELEMENTSOF(sim.g));
        g = &sim.g[sim.n++];

        *g = (SimGroup){ .path = path };
        assert_int_equal(cpumask_parse_list(cpus, &g->cpus), 0);
        snprintf(g->shares, sizeof g->shares, "%s", shares);
}

static const char *cpus_of(const char *path) {
        static char buf[64];

        return cpumask_format(&sim_find(&sim, path)->cpus, buf, sizeof buf);
}

static int setup_test(_unused_ void **state) {
        memset(&sim, 0, sizeof sim);
        sim_add("/", "0-7", "1024");
        sim_add("/peltd", "0-7", "1024");
        sim_add("/peltd/web", "0-7", "1024");
        sim_add("/peltd/web/a", "0-7", "1024");
        sim_add("/peltd/web/b", "4-7", "1024");
        sim_add("/peltd/batch", "0-3", "512");
        unlink(statepath);
        return 0;
}

static CgWrite W(const char *h, const char *group, const char *file, const char *value) {
        ApplyTarget t;
        const PlacedValue *pv = placed_value_at(h, file, &t);
        CgWrite w;

        assert_non_null(pv);
        assert_int_equal(cg_write_init(&w, pv, t, group, value), 0);
        return w;
}

static void done(CgWrite *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                cg_write_done(&w[i]);
}

static void test_narrow_children_first(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        /* Given parent-first, the order the kernel would refuse: the batch sorts it. */
        CgWrite w[] = {
                W("cpuset", "/peltd/web", "cpuset.cpus", "0-1"),
                W("cpuset", "/peltd/web/a", "cpuset.cpus", "0-1"),
                W("cpuset", "/peltd/web/b", "cpuset.cpus", "1"),
                W("cpu", "/peltd/web", "cpu.shares", "2048"),
        };

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_string_equal(cpus_of("/peltd/web"), "0-1");
        assert_string_equal(cpus_of("/peltd/web/a"), "0-1");
        assert_string_equal(cpus_of("/peltd/web/b"), "1");
        assert_string_equal(sim_find(&sim, "/peltd/web")->shares, "2048");
        /* b moves from 4-7 to 1: through the union 1,4-7 (a v1 child must stay inside its parent throughout). */
        assert_int_equal(sim.writes, 5);
        assert_non_null(strstr(sim.log, "/peltd/web/b cpuset.cpus=1,4-7\n"));
        for (size_t i = 0; i < ELEMENTSOF(w); i++)
                assert_true(w[i].changed);
        /* Children were written before their parent, no refusal needed. */
        assert_true(strstr(sim.log, "/peltd/web/a cpuset") < strstr(sim.log, "/peltd/web cpuset"));

        /* Every original is recorded. */
        assert_int_equal(o->n_entries, 4);
        assert_string_equal(originals_find(o, "cpuset", "/peltd/web/b", "cpuset.cpus")->original, "4-7");
        assert_string_equal(originals_find(o, "cpu", "/peltd/web", "cpu.shares")->original, "1024");
        done(w, ELEMENTSOF(w));
}

static void test_widen_parents_first_and_skip_equal(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        Placement p = { .group = "/peltd/batch", .target = APPLY_V1 };
        CgWrite *n = NULL, *w = NULL;
        size_t nn, nw;

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(cpumask_parse_list("0", &p.cpus), 0);
        assert_int_equal(place_steps(&io, o, &p, &n, &nn), 0);
        sim.writes = 0;
        /* The shares are 512 already: not written. */
        assert_int_equal(cpumask_parse_list("0-5", &p.cpus), 0);
        p.shares = 512;
        assert_int_equal(place_steps(&io, o, &p, &w, &nw), 0);
        assert_int_equal(nw, 2);
        assert_string_equal(cpus_of("/peltd/batch"), "0-5");
        assert_int_equal(sim.writes, 1);
        assert_false(w[1].changed);
        /* The first original stays: 0-3, not the 0 peltd wrote in between. */
        assert_string_equal(originals_find(o, "cpuset", "/peltd/batch", "cpuset.cpus")->original, "0-3");
        assert_string_equal(originals_find(o, "cpuset", "/peltd/batch", "cpuset.cpus")->written, "0-5");
        cg_writes_free(n, nn);
        cg_writes_free(w, nw);
}

static void test_rollback_keeps_group_consistent(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        Placement p = { .group = "/peltd/batch", .shares = 4096, .target = APPLY_V1 };
        CgWrite *w = NULL;
        size_t n;

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(cpumask_parse_list("2", &p.cpus), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(place_steps(&io, o, &p, &w, &n), -EIO);
        /* The cpuset went back: the group is as it was. */
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_string_equal(sim_find(&sim, "/peltd/batch")->shares, "512");
        assert_false(w[0].changed);
        assert_int_equal(w[1].error, -EIO);
        /* And nothing is left in the state file: the files hold their originals. */
        assert_int_equal(o->n_entries, 0);
        cg_writes_free(w, n);
}

static void test_refusals(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *bad = NULL;
        CgWrite empty[] = { W("cpuset", "/peltd/web", "cpuset.cpus", "") };
        CgWrite gone[] = { W("cpuset", "/peltd/nope", "cpuset.cpus", "0") };
        CgWrite w[] = { W("cpu", "/peltd/web", "cpu.shares", "100") };
        CgWrite outside[] = { W("cpuset", "/peltd/batch", "cpuset.cpus", "8") };

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(apply_steps(&io, o, empty, 1, false), -EINVAL);
        assert_int_equal(apply_steps(&io, o, gone, 1, false), -ENOENT);
        /* Outside its parent for good: no progress is possible, the error stands. */
        assert_int_equal(apply_steps(&io, o, outside, 1, false), -EACCES);
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_int_equal(sim.writes, 0);
        assert_int_equal(o->n_entries, 0);

        /* No record of the original, no write. */
        assert_int_equal(originals_load_checked("/proc/peltd-none/state", &bad, NULL), 0);
        assert_true(apply_steps(&io, bad, w, 1, false) < 0);
        assert_string_equal(sim_find(&sim, "/peltd/web")->shares, "1024");
        assert_int_equal(sim.writes, 0);
        done(empty, 1);
        done(gone, 1);
        done(w, 1);
        done(outside, 1);
}

static void test_dry_run_writes_nothing(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CgWrite w[] = {
                W("cpuset", "/peltd/web", "cpuset.cpus", "0"),
                W("cpu", "/peltd/web", "cpu.shares", "1024"),
        };

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), true), 0);
        assert_true(w[0].changed);
        assert_false(w[1].changed);
        assert_int_equal(sim.writes, 0);
        assert_int_equal(o->n_entries, 0);
        assert_int_equal(access(statepath, F_OK), -1);
        done(w, ELEMENTSOF(w));
}

static void test_restore(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *again = NULL;
        CpuMask online;
        CgWrite w[] = {
                W("cpuset", "/peltd/web", "cpuset.cpus", "1-2"),
                W("cpuset", "/peltd/web/a", "cpuset.cpus", "1-2"),
                W("cpuset", "/peltd/web/b", "cpuset.cpus", "2"),
                W("cpu", "/peltd/web", "cpu.shares", "2048"),
        };
        Placement p = { .group = "/peltd/batch", .shares = 100, .target = APPLY_V1 };
        CgWrite *b = NULL;
        size_t nb;

        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_int_equal(cpumask_parse_list("3", &p.cpus), 0);
        assert_int_equal(place_steps(&io, o, &p, &b, &nb), 0);

        /* Someone else changes batch's shares; CPU 2 goes offline (v1 drops it from every cpuset). */
        snprintf(sim_find(&sim, "/peltd/batch")->shares, 32, "777");
        assert_int_equal(cpumask_parse_list("1", &sim_find(&sim, "/peltd/web")->cpus), 0);
        assert_int_equal(cpumask_parse_list("1", &sim_find(&sim, "/peltd/web/a")->cpus), 0);
        sim.g[4].gone = true; /* /peltd/web/b went away */
        cpumask_clear(&online, 2);

        /* A restart reads the state file back; a dry run changes nothing at all. */
        assert_int_equal(originals_load_checked(statepath, &again, NULL), 0);
        assert_int_equal(again->n_entries, 6);
        sim.writes = 0;
        assert_int_equal(cg_restore(&io, again, &online, true), 0);
        assert_int_equal(sim.writes, 0);
        assert_int_equal(again->n_entries, 6);

        assert_int_equal(cg_restore(&io, again, &online, false), 0);
        /* Widening restores go parent first; offline CPU 2 cannot be written back. */
        assert_string_equal(cpus_of("/peltd/web"), "0-1,3-7");
        assert_string_equal(cpus_of("/peltd/web/a"), "0-1,3-7");
        assert_string_equal(sim_find(&sim, "/peltd/web")->shares, "1024");
        assert_string_equal(cpus_of("/peltd/batch"), "0-1,3");
        /* The value someone else wrote is left alone. */
        assert_string_equal(sim_find(&sim, "/peltd/batch")->shares, "777");
        assert_int_equal(again->n_entries, 0);
        assert_int_equal(access(statepath, F_OK), -1);
        done(w, ELEMENTSOF(w));
        cg_writes_free(b, nb);
}

/* Two controllers enabled one write each: the state file keeps both, and a restore disables both. */
static void test_subtree_control_two_controllers(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;
        CgWrite w[] = {
                W("unified", "/peltd", "cgroup.subtree_control", "+cpuset"),
                W("unified", "/peltd", "cgroup.subtree_control", "+cpu"),
        };

        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "cpuset cpu");
        assert_int_equal(o->n_entries, 1);
        assert_string_equal(o->entries[0].written, "+cpuset +cpu");
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "");
        assert_int_equal(o->n_entries, 0);

        /* One that was on before stays on. */
        snprintf(sim_find(&sim, "/peltd")->subtree, sizeof sim.g[0].subtree, "cpu");
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "cpu cpuset");
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "cpu");
        done(w, ELEMENTSOF(w));
}

static void test_restore_narrowing_order_and_subtree_control(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;
        CgWrite w[] = {
                W("unified", "/peltd", "cgroup.subtree_control", "+cpuset"),
                W("cpuset", "/peltd/batch", "cpuset.cpus", "0-7"),
        };

        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        /* batch widens from 0-3 to 0-7; restoring narrows it again, and disables what peltd enabled, last. */
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "cpuset");
        assert_true(strstr(sim.log, "subtree_control=+cpuset") < strstr(sim.log, "batch cpuset.cpus"));
        sim.log[0] = 0;
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "");
        assert_true(strstr(sim.log, "batch cpuset.cpus") < strstr(sim.log, "subtree_control=-cpuset"));
        done(w, ELEMENTSOF(w));
}

static void test_restore_failure_is_kept(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;
        /* web's shares alone: its CPUs (and its children's) stay as they are. */
        Placement p = { .group = "/peltd/web", .shares = 3000, .target = APPLY_V1 };
        CgWrite *w = NULL;
        size_t n;

        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(cpumask_parse_list("0-7", &p.cpus), 0);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(place_steps(&io, o, &p, &w, &n), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(cg_restore(&io, o, &online, false), 1);
        assert_int_equal(o->n_entries, 1);
        sim.fail_shares = 0;
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(sim_find(&sim, "/peltd/web")->shares, "1024");
        cg_writes_free(w, n);
}

/*
 * Entries outside CgroupRoot= (a sibling subtree, a name that only starts like the root) are
 * refused one by one and stay recorded; the rest are restored.
 */
static void test_restore_only_beneath_the_root(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;

        sim_add("/sibling", "0-7", "1024");
        sim_add("/sibling/v", "0-3", "1024");
        sim_add("/peltdx", "0-7", "2");
        snprintf(sim_find(&sim, "/peltd/batch")->shares, sizeof sim.g[0].shares, "2");
        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(originals_put(o, "cpuset", "/sibling/v", "cpuset.cpus", "0-7", "0-3"), 0);
        assert_int_equal(originals_put(o, "cpu", "/peltd/batch", "cpu.shares", "512", "2"), 0);
        assert_int_equal(originals_put(o, "cpu", "/peltdx", "cpu.shares", "1024", "2"), 0);
        assert_int_equal(originals_commit(o), 0);

        assert_int_equal(cg_restore_beneath(&io, o, "/peltd", &online, false), 2);
        assert_string_equal(cpus_of("/sibling/v"), "0-3");
        assert_string_equal(sim_find(&sim, "/peltdx")->shares, "2");
        assert_string_equal(sim_find(&sim, "/peltd/batch")->shares, "512");
        assert_int_equal(o->n_entries, 2);
        assert_non_null(originals_find(o, "cpuset", "/sibling/v", "cpuset.cpus"));
        assert_non_null(originals_find(o, "cpu", "/peltdx", "cpu.shares"));
}

static const char *find_write(CgWrite *w, size_t n, const char *group, const char *file) {
        for (size_t i = 0; i < n; i++)
                if (streq(w[i].group, group) && streq(w[i].file, file))
                        return w[i].value;
        return NULL;
}

static void test_placement_v1_descendants(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        Placement p = { .group = "/peltd/web", .shares = 2048, .target = APPLY_V1 };
        CgWrite *w = NULL;
        size_t n = 0;

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(cpumask_parse_list("4-5", &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n, NULL), 0);
        assert_int_equal(n, 4);
        assert_string_equal(find_write(w, n, "/peltd/web", "cpuset.cpus"), "4-5");
        /* a (0-7) keeps what lies inside: 4-5; b (4-7) too. */
        assert_string_equal(find_write(w, n, "/peltd/web/a", "cpuset.cpus"), "4-5");
        assert_string_equal(find_write(w, n, "/peltd/web/b", "cpuset.cpus"), "4-5");
        assert_string_equal(find_write(w, n, "/peltd/web", "cpu.shares"), "2048");
        assert_int_equal(apply_steps(&io, o, w, n, false), 0);
        cg_writes_free(w, n);

        /*
         * Narrower, outside b's own set (4-7, recorded): b is not moved outside its own CPUs, the
         * group is left alone and b named. Then wider again: b gets back its own 4-7.
         */
        assert_int_equal(cpumask_parse_list("1", &p.cpus), 0);
        p.shares = 0;
        {
                _cleanup_free_ char *child = NULL;

                w = NULL;
                n = 0;
                assert_int_equal(placement_writes(&io, o, &p, &w, &n, &child), -EBUSY);
                assert_string_equal(child, "/peltd/web/b");
                assert_null(w);
                assert_int_equal(n, 0);
        }
        assert_int_equal(cpumask_parse_list("0-7", &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n, NULL), 0);
        assert_string_equal(find_write(w, n, "/peltd/web/b", "cpuset.cpus"), "4-7");
        assert_string_equal(find_write(w, n, "/peltd/web/a", "cpuset.cpus"), "0-7");
        assert_int_equal(apply_steps(&io, o, w, n, false), 0);
        assert_string_equal(cpus_of("/peltd/web/b"), "4-7");
        cg_writes_free(w, n);

        /* No empty set, ever. */
        cpumask_zero(&p.cpus);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n, NULL), -EINVAL);
}

static void test_placement_v2_and_systemd(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        Placement p = { .group = "/peltd/web", .shares = 2048, .target = APPLY_V2 };
        CgWrite *w = NULL;
        size_t n = 0;

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(cpumask_parse_list("0-1", &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n, NULL), 0);
        /* Controllers on the way down: / and /peltd pass cpuset and cpu on. */
        assert_int_equal(n, 4 + 1 + 2 + 1);
        assert_string_equal(w[0].group, "/");
        assert_string_equal(w[0].value, "+cpuset");
        assert_string_equal(w[1].value, "+cpu");
        assert_string_equal(w[2].group, "/peltd");
        assert_string_equal(find_write(w, n, "/peltd/web", "cpuset.cpus"), "0-1");
        assert_string_equal(find_write(w, n, "/peltd/web", "cpu.weight"), "200");
        cg_writes_free(w, n);

        p.target = APPLY_SYSTEMD;
        p.unit = "web.service";
        assert_int_equal(placement_writes(&io, o, &p, &w, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_string_equal(find_write(w, n, "web.service", "AllowedCPUs"), "0-1");
        assert_string_equal(find_write(w, n, "web.service", "CPUWeight"), "200");
        assert_string_equal(w[0].hierarchy, "systemd");
        cg_writes_free(w, n);
}

static void test_disjoint_move(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CgWrite w[] = {
                W("cpuset", "/peltd/web", "cpuset.cpus", "0-1"),
                W("cpuset", "/peltd/web/a", "cpuset.cpus", "0-1"),
                W("cpuset", "/peltd/web/b", "cpuset.cpus", "0"),
        };
        CgWrite back[] = {
                W("cpuset", "/peltd/web", "cpuset.cpus", "6-7"),
                W("cpuset", "/peltd/web/a", "cpuset.cpus", "6-7"),
                W("cpuset", "/peltd/web/b", "cpuset.cpus", "7"),
        };

        /* A group and its children move to CPUs none of them had: no order of direct writes works. */
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_int_equal(apply_steps(&io, o, back, ELEMENTSOF(back), false), 0);
        assert_string_equal(cpus_of("/peltd/web"), "6-7");
        assert_string_equal(cpus_of("/peltd/web/a"), "6-7");
        assert_string_equal(cpus_of("/peltd/web/b"), "7");
        assert_string_equal(originals_find(o, "cpuset", "/peltd/web/b", "cpuset.cpus")->original, "4-7");
        assert_string_equal(originals_find(o, "cpuset", "/peltd/web/b", "cpuset.cpus")->written, "7");
        done(w, ELEMENTSOF(w));
        done(back, ELEMENTSOF(back));
}

static void test_rollback_of_a_move(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        Placement p = { .group = "/peltd/batch", .shares = 300, .target = APPLY_V1 };
        CgWrite *w = NULL;
        size_t n;

        /* batch (0-3) would move to 6-7; shares fail; it goes back to 0-3 and the state file is empty. */
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(cpumask_parse_list("6-7", &p.cpus), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(place_steps(&io, o, &p, &w, &n), -EIO);
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_false(w[0].changed);
        assert_int_equal(o->n_entries, 0);
        cg_writes_free(w, n);
}

static void test_rollback_disables_what_it_enabled(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CgWrite w[] = {
                W("unified", "/peltd", "cgroup.subtree_control", "+cpuset"),
                W("cpu", "/peltd/web", "cpu.shares", "300"),
        };

        /* The controller is enabled first, then the shares fail: the rollback turns it off again. */
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(apply_steps(&io, o, w, ELEMENTSOF(w), false), -EIO);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "");
        assert_non_null(strstr(sim.log, "/peltd cgroup.subtree_control=-cpuset\n"));
        assert_false(w[0].changed);
        assert_int_equal(o->n_entries, 0);
        done(w, ELEMENTSOF(w));
}

static void test_restore_inside_a_shrunk_parent(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;
        Placement p = { .group = "/peltd/batch", .target = APPLY_V1 };
        CgWrite *w = NULL;
        size_t n;

        /* CPU 3 went offline and came back: v1 gave it back to nobody, so /peltd holds 0-2,4-7 now. */
        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(cpumask_parse_list("1", &p.cpus), 0);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(place_steps(&io, o, &p, &w, &n), 0);
        assert_int_equal(cpumask_parse_list("0-2,4-7", &sim_find(&sim, "/peltd")->cpus), 0);

        /* batch's original 0-3 cannot come back whole: it gets what its parent allows, and is done. */
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(cpus_of("/peltd/batch"), "0-2");
        assert_int_equal(o->n_entries, 0);
        cg_writes_free(w, n);
}

static void test_restore_v2_inherit(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;

        /* v2: a cpuset.cpus that was empty (the parent's CPUs) goes back to empty. */
        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        assert_int_equal(originals_put(o, "unified", "/peltd/web", "cpuset.cpus", "", "0-7"), 0);
        assert_int_equal(originals_commit(o), 0);
        sim_find(&sim, "/peltd/web")->inherit_ok = true;
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_true(cpumask_empty(&sim_find(&sim, "/peltd/web")->cpus));
        assert_int_equal(o->n_entries, 0);
}

static int setup(_unused_ void **state) {
        if (!test_mkdtemp(tmpdir))
                return -1;
        snprintf(statepath, sizeof statepath, "%s/originals", tmpdir);
        return 0;
}

static int teardown(_unused_ void **state) {
        char cmd[300];

        snprintf(cmd, sizeof cmd, "%s/full", tmpdir);
        (void) umount2(cmd, MNT_DETACH); /* test_state_directory_full's, if it stopped half way */
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

/*
 * The table of what peltd writes (apply-values.h). The names the state file keeps are a contract
 * read back after a crash: each maps to its row and target, every place of every row maps back to
 * itself, and the state file takes those places and no others. Then each row's text: a new knob's
 * row is tested here too.
 */
static void test_table(_unused_ void **state) {
        static const struct {
                const char *hierarchy, *file;
                PlacedValueId id;
                ApplyTarget target;
        } contract[] = {
                { "cpuset", "cpuset.cpus", PLACED_CPUS, APPLY_V1 },
                { "unified", "cpuset.cpus", PLACED_CPUS, APPLY_V2 },
                { "systemd", "AllowedCPUs", PLACED_CPUS, APPLY_SYSTEMD },
                { "cpu", "cpu.shares", PLACED_SHARES, APPLY_V1 },
                { "unified", "cpu.weight", PLACED_SHARES, APPLY_V2 },
                { "systemd", "CPUWeight", PLACED_SHARES, APPLY_SYSTEMD },
                { "unified", "cgroup.subtree_control", PLACED_CONTROLLERS, APPLY_V2 },
        };
        const PlacedValue *cpus = &placed_values[PLACED_CPUS], *shares = &placed_values[PLACED_SHARES];
        Placement p = { .group = "/g", .shares = 2048 };
        char *v = NULL;
        ApplyTarget t;

        for (size_t i = 0; i < ELEMENTSOF(contract); i++) {
                assert_ptr_equal(placed_value_at(contract[i].hierarchy, contract[i].file, &t), &placed_values[contract[i].id]);
                assert_int_equal(t, contract[i].target);
        }
        for (size_t i = 0; i < _PLACED_VALUE_MAX; i++)
                for (ApplyTarget a = 0; a < _APPLY_TARGET_MAX; a++) {
                        const PlacedPlace *pl = placed_place(&placed_values[i], a);
                        Original e;

                        if (!pl)
                                continue;
                        assert_ptr_equal(placed_value_at(pl->hierarchy, pl->file, &t), &placed_values[i]);
                        assert_int_equal(t, a);
                        e = (Original){ .hierarchy = (char *) pl->hierarchy, .file = (char *) pl->file,
                                        .group = (char *) (a == APPLY_SYSTEMD ? "web.service" : "/a") };
                        assert_null(original_check(&e));
                }
        assert_null(placed_value_at("cpuset", "cpuset.mems", NULL));
        assert_null(placed_value_at("cpu", "cpu.weight", NULL));

        /* CPU lists: compared as sets, never written empty; offline CPUs dropped are still peltd's. */
        assert_true(cpus->kind->holds("0,1,2", "0-2"));
        assert_false(cpus->kind->valid(""));
        assert_true(cg_holds_written("cpuset.cpus", "0,3", "0-3", &(CpuMask){ .bits = { 0x9 } }, false));
        /* Shares: as they are on v1, as a weight on v2 and for systemd; none set, nothing written. */
        assert_int_equal(cpumask_parse_list("0-1", &p.cpus), 0);
        assert_int_equal(shares->format(&p, APPLY_V1, &v), 0);
        assert_string_equal(v, "2048");
        free(v);
        assert_int_equal(shares->format(&p, APPLY_V2, &v), 0);
        assert_string_equal(v, "200");
        free(v);
        p.shares = 0;
        assert_int_equal(shares->format(&p, APPLY_SYSTEMD, &v), 0);
        assert_null(v);
        assert_int_equal(cpus->format(&p, APPLY_V1, &v), 0);
        assert_string_equal(v, "0-1");
        free(v);
}

static void test_error_classes(_unused_ void **state) {
        /* What the batch or another round may lift. */
        assert_int_equal(cg_error_class(-EBUSY), CG_ERROR_TRANSIENT);
        assert_int_equal(cg_error_class(-EACCES), CG_ERROR_TRANSIENT);
        assert_int_equal(cg_error_class(-EAGAIN), CG_ERROR_TRANSIENT);
        assert_int_equal(cg_error_class(-EINTR), CG_ERROR_TRANSIENT);
        /* What the kernel refuses as such. */
        assert_int_equal(cg_error_class(-EINVAL), CG_ERROR_PERMANENT);
        assert_int_equal(cg_error_class(-EPERM), CG_ERROR_PERMANENT);
        assert_int_equal(cg_error_class(-ENOSPC), CG_ERROR_PERMANENT);
        assert_int_equal(cg_error_class(-EOPNOTSUPP), CG_ERROR_PERMANENT);
        assert_int_equal(cg_error_class(-EXFULL), CG_ERROR_PERMANENT);
        /* The group went away. */
        assert_int_equal(cg_error_class(-ENOENT), CG_ERROR_GONE);
        assert_int_equal(cg_error_class(-ENODEV), CG_ERROR_GONE);
}

static void test_missing_file_of_a_present_group(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CgWrite w[] = { W("unified", "/peltd/web", "cpu.weight", "100") };

        assert_int_equal(originals_load_checked(statepath, &o, NULL), 0);
        /* The group is there, the file is not: not "gone", a file that should exist. */
        assert_int_equal(apply_steps(&io, o, w, 1, false), -EOPNOTSUPP);
        assert_ptr_equal(cg_batch_failure(w, 1), &w[0]);
        assert_int_equal(sim.writes, 0);
        done(w, 1);
}

/* ---- The daemon's side: manager_apply_groups() over rounds, its log lines counted --------------- */

/* The log of a daemon test, shown when it fails (stderr goes to a file while it runs). */
static char logpath[300];

typedef struct Daemon {
        Manager m;
        Config config;
        Topology topology;
        CgroupFs fs;
        ManagedGroup g;
        PolicyResult res;
} Daemon;

static void daemon_start(Daemon *d, const char *group, const char *state) {
        *d = (Daemon){ .config = { .state_file = (char *) state, .backend = BACKEND_CGROUPFS },
                       .fs = { .mode = CGROUP_MODE_V1 } };
        assert_int_equal(cpumask_parse_list("0-7", &d->topology.online), 0);
        d->m = (Manager){ .config = &d->config, .topology = &d->topology, .fs = &d->fs, .io = io, .lock_fd = -1 };
        assert_int_equal(originals_load_checked(state, &d->m.originals, NULL), 0);
        d->g = (ManagedGroup){ .path = strdup(group), .info_valid = true, .cpus = sim_find(&sim, group)->cpus };
        assert_non_null(d->g.path);
        d->res = (PolicyResult){ .managed = true, .reason = "test" };

        /* What the daemon says goes to a file, to be counted (and shown by stderr_capture_teardown()). */
        snprintf(logpath, sizeof logpath, "%s/log", tmpdir);
        assert_int_equal(stderr_capture_begin(logpath, "  peltd: "), 0);
}

static void daemon_stop(Daemon *d) {
        assert_int_equal(stderr_capture_end(), 0);
        managed_group_done(&d->g);
        originals_free(d->m.originals);
}

/* Lines the daemon logged that hold s. */
static int logged(_unused_ const Daemon *d, const char *s) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[1024];
        int n = 0;

        fflush(stderr);
        f = fopen(logpath, "re");
        assert_non_null(f);
        while (fgets(line, sizeof line, f))
                n += !!strstr(line, s);
        return n;
}

/* n rounds that plan cpus for the group (shares left alone). */
static void rounds(Daemon *d, const char *cpus, int n) {
        ManagedGroup *g = &d->g;
        const PolicyResult *res = &d->res;
        const uint64_t shares = 0;

        assert_int_equal(cpumask_parse_list(cpus, &d->res.cpus), 0);
        for (int i = 0; i < n; i++)
                manager_apply_groups(&d->m, &g, &res, &shares, 1);
}

static void test_permanent_refusals_said_once_not_retried(_unused_ void **state) {
        static const int errs[] = { EINVAL, EPERM, ENOSPC };

        for (size_t e = 0; e < ELEMENTSOF(errs); e++) {
                Daemon d;
                char line[128];

                setup_test(NULL);
                sim.fail_group = "/peltd/batch";
                sim.fail_file = "cpuset.cpus";
                sim.fail_err = -errs[e];
                daemon_start(&d, "/peltd/batch", statepath);

                rounds(&d, "4-5", 30);
                /* Tried once, said once with the file, the value and the error; nothing left recorded. */
                assert_int_equal(sim.fail_tries, 1);
                snprintf(line, sizeof line, "Failed to write \"4-5\" to cpuset.cpus of /peltd/batch: %s", strerror(errs[e]));
                assert_int_equal(logged(&d, line), 1);
                assert_int_equal(logged(&d, "not trying again"), 1);
                assert_string_equal(cpus_of("/peltd/batch"), "0-3");
                assert_int_equal(d.m.originals->n_entries, 0);
                assert_int_equal(d.m.placement_errors, 1);

                /* Something changed: a new plan is tried (once), a reload tries again (once). */
                rounds(&d, "4-6", 30);
                assert_int_equal(sim.fail_tries, 2);
                d.g.target_known = false;
                rounds(&d, "4-6", 30);
                assert_int_equal(sim.fail_tries, 3);
                /* So do CPUs going offline or coming back. */
                assert_int_equal(cpumask_parse_list("0-6", &d.topology.online), 0);
                rounds(&d, "4-6", 30);
                assert_int_equal(sim.fail_tries, 4);
                assert_int_equal(logged(&d, "Failed to write"), 4);
                assert_int_equal(d.m.placement_errors, 4); /* each failed write counted (for the metrics) */

                /* The kernel takes it now (the topology changed again): placed, and said so. */
                sim.fail_err = 0;
                assert_int_equal(cpumask_parse_list("0-7", &d.topology.online), 0);
                rounds(&d, "4-6", 1);
                assert_string_equal(cpus_of("/peltd/batch"), "4-6");
                assert_int_equal(logged(&d, "/peltd/batch: CPUs 0-3 -> 4-6"), 1);
                daemon_stop(&d);
        }
}

static void test_transient_refusals_retried_with_backoff(_unused_ void **state) {
        static const int errs[] = { EBUSY, EACCES };

        for (size_t e = 0; e < ELEMENTSOF(errs); e++) {
                Daemon d;

                setup_test(NULL);
                sim.fail_group = "/peltd/batch";
                sim.fail_file = "cpuset.cpus";
                sim.fail_err = -errs[e];
                daemon_start(&d, "/peltd/batch", statepath);

                /* Tries after waits of 1, 2, 4, 8 rounds: rounds 1, 3, 6, 11, 20 of 20. */
                rounds(&d, "4-5", 20);
                assert_int_equal(sim.fail_tries, 5);
                assert_int_equal(logged(&d, "Failed to write \"4-5\" to cpuset.cpus of /peltd/batch"), 1);
                assert_int_equal(logged(&d, "trying again later"), 1);
                /* The wait is capped: 16, 32, then every CG_RETRY_MAX_ROUNDS (64) + 1 rounds: 16 tries in 1,000. */
                rounds(&d, "4-5", 1000);
                assert_int_equal(sim.fail_tries, 5 + 16);
                assert_int_equal(logged(&d, "Failed to write"), 1);
                assert_int_equal(d.m.placement_errors, 5 + 16);

                sim.fail_err = 0;
                rounds(&d, "4-5", CG_RETRY_MAX_ROUNDS + 1);
                assert_string_equal(cpus_of("/peltd/batch"), "4-5");
                assert_int_equal(logged(&d, "/peltd/batch placed after"), 1);
                daemon_stop(&d);
        }
}

static void test_group_gone_between_read_and_write(_unused_ void **state) {
        Daemon d;

        daemon_start(&d, "/peltd/batch", statepath);
        sim.gone_on_write = true;
        rounds(&d, "4-5", 3);
        /* Dropped quietly (the group walk forgets it), with nothing left in the state file. */
        assert_int_equal(logged(&d, "/peltd/batch"), 0);
        assert_int_equal(d.m.originals->n_entries, 0);
        assert_int_equal(d.m.placement_errors, 0); /* a group that went is no error */
        daemon_stop(&d);
}

static void test_child_outside_the_new_set_leaves_the_parent(_unused_ void **state) {
        Daemon d;

        /* web/b runs on 4-7 of its own; web planned on 0-1 would move b outside its CPUs. */
        daemon_start(&d, "/peltd/web", statepath);
        rounds(&d, "0-1", 30);
        assert_string_equal(cpus_of("/peltd/web"), "0-7");
        assert_string_equal(cpus_of("/peltd/web/b"), "4-7");
        assert_int_equal(sim.writes, 0);
        assert_int_equal(logged(&d, "Leaving /peltd/web alone: its child /peltd/web/b"), 1);

        /* Planned on 3-5: b keeps what of its own set the parent keeps, a (0-7) too. */
        rounds(&d, "3-5", 1);
        assert_string_equal(cpus_of("/peltd/web"), "3-5");
        assert_string_equal(cpus_of("/peltd/web/b"), "4-5");
        assert_string_equal(cpus_of("/peltd/web/a"), "3-5");
        daemon_stop(&d);
}

/* ---- What needs a mount of its own (root): the kernel suite runs it, as "apply-cgroup --mounts" -- */

/* Fills the file at path until the file system has no room left. */
static void fill_up(const char *path) {
        _cleanup_close_ int fd = -1;
        char block[4096] = { 0 };

        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        while (write(fd, block, sizeof block) > 0)
                ;
        /* The last pages, a byte at a time. */
        while (write(fd, block, 1) > 0)
                ;
}

static void test_state_directory_full(_unused_ void **state) {
        _cleanup_originals_ Originals *saved = NULL;
        char dir[300], path[320], fill[320];
        SimGroup *g;
        Daemon d;
        int writes;

        /* A state directory with no room left: a tmpfs of two pages, filled. */
        snprintf(dir, sizeof dir, "%s/full", tmpdir);
        snprintf(path, sizeof path, "%s/originals", dir);
        snprintf(fill, sizeof fill, "%s/fill", dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        assert_int_equal(mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=8k,mode=0700"), 0);
        fill_up(fill);

        daemon_start(&d, "/peltd/batch", path);
        rounds(&d, "4-5", 30);
        /* No change without a record, one line for the episode, each round's failed save counted. */
        assert_int_equal(sim.writes, 0);
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_int_equal(logged(&d, "Cannot save the state file"), 1);
        assert_int_equal(logged(&d, "No space left on device"), 1);
        assert_int_equal(d.m.placement_errors, 30);
        /* The round's records taken back: nothing in memory that is not on disk. */
        assert_false(originals_dirty(d.m.originals));
        assert_int_equal(d.m.originals->n_entries, 0);

        /* Room again: placed at the next round (no back-off), recorded, and said once. */
        assert_int_equal(unlink(fill), 0);
        rounds(&d, "4-5", 1);
        assert_string_equal(cpus_of("/peltd/batch"), "4-5");
        assert_non_null(originals_find(d.m.originals, "cpuset", "/peltd/batch", "cpuset.cpus"));
        assert_int_equal(logged(&d, "can be saved again"), 1);
        assert_int_equal(logged(&d, "Cannot save the state file"), 1);

        /*
         * Full again, and someone else writes the cpuset peltd placed: the drift check takes their
         * value as the original (in memory) and places the group again. Not while that record cannot
         * be saved: their value stays, and the record stays in memory, for the next commit to save.
         */
        fill_up(fill);
        g = sim_find(&sim, "/peltd/batch");
        assert_int_equal(cpumask_parse_list("6-7", &g->cpus), 0);
        assert_int_equal(originals_set_original(d.m.originals, "cpuset", "/peltd/batch", "cpuset.cpus", "6-7"), 0);
        d.g.cpus = g->cpus;
        d.g.drift = true;
        writes = sim.writes;
        rounds(&d, "4-5", 10);
        assert_int_equal(sim.writes, writes);
        assert_string_equal(cpus_of("/peltd/batch"), "6-7");
        assert_true(originals_dirty(d.m.originals));
        assert_string_equal(originals_find(d.m.originals, "cpuset", "/peltd/batch", "cpuset.cpus")->original, "6-7");
        assert_int_equal(logged(&d, "Cannot save the state file"), 2);

        /* Room again: their value is saved as the original before peltd writes. */
        assert_int_equal(unlink(fill), 0);
        rounds(&d, "4-5", 1);
        assert_false(originals_dirty(d.m.originals));
        assert_int_equal(originals_load_checked(path, &saved, NULL), 0);
        assert_string_equal(originals_find(saved, "cpuset", "/peltd/batch", "cpuset.cpus")->original, "6-7");
        assert_int_equal(logged(&d, "can be saved again"), 2);
        daemon_stop(&d);
        assert_int_equal(umount2(dir, MNT_DETACH), 0);
        assert_int_equal(rmdir(dir), 0);
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test_setup(test_error_classes, setup_test),
                cmocka_unit_test_setup(test_missing_file_of_a_present_group, setup_test),
                cmocka_unit_test_setup_teardown(test_permanent_refusals_said_once_not_retried, setup_test, stderr_capture_teardown),
                cmocka_unit_test_setup_teardown(test_transient_refusals_retried_with_backoff, setup_test, stderr_capture_teardown),
                cmocka_unit_test_setup_teardown(test_group_gone_between_read_and_write, setup_test, stderr_capture_teardown),
                cmocka_unit_test_setup_teardown(test_child_outside_the_new_set_leaves_the_parent, setup_test, stderr_capture_teardown),
                cmocka_unit_test_setup(test_narrow_children_first, setup_test),
                cmocka_unit_test_setup(test_widen_parents_first_and_skip_equal, setup_test),
                cmocka_unit_test_setup(test_rollback_keeps_group_consistent, setup_test),
                cmocka_unit_test_setup(test_refusals, setup_test),
                cmocka_unit_test_setup(test_dry_run_writes_nothing, setup_test),
                cmocka_unit_test_setup(test_restore, setup_test),
                cmocka_unit_test_setup(test_restore_narrowing_order_and_subtree_control, setup_test),
                cmocka_unit_test_setup(test_subtree_control_two_controllers, setup_test),
                cmocka_unit_test_setup(test_restore_failure_is_kept, setup_test),
                cmocka_unit_test_setup(test_restore_only_beneath_the_root, setup_test),
                cmocka_unit_test_setup(test_rollback_disables_what_it_enabled, setup_test),
                cmocka_unit_test_setup(test_restore_inside_a_shrunk_parent, setup_test),
                cmocka_unit_test_setup(test_restore_v2_inherit, setup_test),
                cmocka_unit_test_setup(test_placement_v1_descendants, setup_test),
                cmocka_unit_test_setup(test_placement_v2_and_systemd, setup_test),
                cmocka_unit_test_setup(test_disjoint_move, setup_test),
                cmocka_unit_test_setup(test_rollback_of_a_move, setup_test),
        };
        const struct CMUnitTest mount_tests[] = {
                cmocka_unit_test_setup_teardown(test_state_directory_full, setup_test, stderr_capture_teardown),
        };

        if (argc > 1 && streq(argv[1], "--mounts")) {
                if (geteuid() != 0) {
                        fprintf(stderr, "test-apply-cgroup --mounts mounts a tmpfs, which needs root: skipped.\n");
                        return 77;
                }
                return cmocka_run_group_tests(mount_tests, setup, teardown);
        }
        return cmocka_run_group_tests(tests, setup, teardown);
}
