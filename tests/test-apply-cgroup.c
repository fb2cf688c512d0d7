/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Applying and restoring against a simulated cgroup v1 hierarchy that enforces the kernel's cpuset
 * rules (a child inside its parent: EACCES when it would leave it, EBUSY when the parent would
 * leave a child out), so that ordering, retries and rollback are tested on every run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/apply-cgroup.h"
#include "peltd/macro.h"

typedef struct SimGroup {
        const char *path;
        CpuMask cpus;
        char shares[32];
        char subtree[64];
        bool gone;
        bool inherit_ok;             /* v2-like: an empty cpuset.cpus is allowed */
} SimGroup;

typedef struct Sim {
        SimGroup g[8];
        size_t n;
        int writes;
        int fail_shares;             /* error to return for cpu.shares writes; 0 */
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
        SimGroup *g = &sim.g[sim.n++];

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
        return (CgWrite){ .hierarchy = h, .group = strdup(group), .file = file, .value = strdup(value) };
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

        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), 0);
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
        CgWrite n[] = { W("cpuset", "/peltd/batch", "cpuset.cpus", "0") };
        CgWrite w[] = {
                W("cpuset", "/peltd/batch", "cpuset.cpus", "0-5"),
                W("cpu", "/peltd/batch", "cpu.shares", "512"), /* already so: not written */
        };

        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, n, 1, false), 0);
        sim.writes = 0;
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_string_equal(cpus_of("/peltd/batch"), "0-5");
        assert_int_equal(sim.writes, 1);
        assert_false(w[1].changed);
        /* The first original stays: 0-3, not the 0 peltd wrote in between. */
        assert_string_equal(originals_find(o, "cpuset", "/peltd/batch", "cpuset.cpus")->original, "0-3");
        assert_string_equal(originals_find(o, "cpuset", "/peltd/batch", "cpuset.cpus")->written, "0-5");
        done(n, 1);
        done(w, ELEMENTSOF(w));
}

static void test_rollback_keeps_group_consistent(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CgWrite w[] = {
                W("cpuset", "/peltd/batch", "cpuset.cpus", "2"),
                W("cpu", "/peltd/batch", "cpu.shares", "4096"),
        };

        assert_int_equal(originals_load(statepath, &o), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), -EIO);
        /* The cpuset went back: the group is as it was. */
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_string_equal(sim_find(&sim, "/peltd/batch")->shares, "512");
        assert_false(w[0].changed);
        assert_int_equal(w[1].error, -EIO);
        /* And nothing is left in the state file: the files hold their originals. */
        assert_int_equal(o->n_entries, 0);
        done(w, ELEMENTSOF(w));
}

static void test_refusals(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL, *bad = NULL;
        CgWrite empty[] = { W("cpuset", "/peltd/web", "cpuset.cpus", "") };
        CgWrite gone[] = { W("cpuset", "/peltd/nope", "cpuset.cpus", "0") };
        CgWrite w[] = { W("cpu", "/peltd/web", "cpu.shares", "100") };
        CgWrite outside[] = { W("cpuset", "/peltd/batch", "cpuset.cpus", "8") };

        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, empty, 1, false), -EINVAL);
        assert_int_equal(cg_write_batch(&io, o, gone, 1, false), -ENOENT);
        /* Outside its parent for good: no progress is possible, the error stands. */
        assert_int_equal(cg_write_batch(&io, o, outside, 1, false), -EACCES);
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_int_equal(sim.writes, 0);
        assert_int_equal(o->n_entries, 0);

        /* No record of the original, no write. */
        assert_int_equal(originals_load("/proc/peltd-none/state", &bad), 0);
        assert_true(cg_write_batch(&io, bad, w, 1, false) < 0);
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

        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), true), 0);
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
        CgWrite b[] = { W("cpuset", "/peltd/batch", "cpuset.cpus", "3"), W("cpu", "/peltd/batch", "cpu.shares", "100") };

        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_int_equal(cg_write_batch(&io, o, b, ELEMENTSOF(b), false), 0);

        /* Someone else changes batch's shares; CPU 2 goes offline (v1 drops it from every cpuset). */
        snprintf(sim_find(&sim, "/peltd/batch")->shares, 32, "777");
        assert_int_equal(cpumask_parse_list("1", &sim_find(&sim, "/peltd/web")->cpus), 0);
        assert_int_equal(cpumask_parse_list("1", &sim_find(&sim, "/peltd/web/a")->cpus), 0);
        sim.g[4].gone = true; /* /peltd/web/b went away */
        cpumask_clear(&online, 2);

        /* A restart reads the state file back; a dry run changes nothing at all. */
        assert_int_equal(originals_load(statepath, &again), 0);
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
        done(b, ELEMENTSOF(b));
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
        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "cpuset cpu");
        assert_int_equal(o->n_entries, 1);
        assert_string_equal(o->entries[0].written, "+cpuset +cpu");
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "");
        assert_int_equal(o->n_entries, 0);

        /* One that was on before stays on. */
        snprintf(sim_find(&sim, "/peltd")->subtree, sizeof sim.g[0].subtree, "cpu");
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "cpu cpuset");
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "cpu");
        done(w, ELEMENTSOF(w));
}

static void test_restore_narrowing_order_and_subtree_control(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;
        CgWrite w[] = {
                W("cpuset", "/peltd", "cgroup.subtree_control", "+cpuset"),
                W("cpuset", "/peltd/batch", "cpuset.cpus", "0-7"),
        };

        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load(statepath, &o), 0);
        /* batch widens from 0-3 to 0-7; restoring narrows it again, and disables what peltd enabled, last. */
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), 0);
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
        CgWrite w[] = { W("cpu", "/peltd/web", "cpu.shares", "3000") };

        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, w, 1, false), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(cg_restore(&io, o, &online, false), 1);
        assert_int_equal(o->n_entries, 1);
        sim.fail_shares = 0;
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(sim_find(&sim, "/peltd/web")->shares, "1024");
        done(w, 1);
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

        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cpumask_parse_list("4-5", &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(find_write(w, n, "/peltd/web", "cpuset.cpus"), "4-5");
        /* a (0-7) keeps what lies inside: 4-5; b (4-7) too. */
        assert_string_equal(find_write(w, n, "/peltd/web/a", "cpuset.cpus"), "4-5");
        assert_string_equal(find_write(w, n, "/peltd/web/b", "cpuset.cpus"), "4-5");
        assert_string_equal(find_write(w, n, "/peltd/web", "cpu.shares"), "2048");
        assert_int_equal(cg_write_batch(&io, o, w, n, false), 0);
        cg_writes_free(w, n);

        /* Narrower, outside b's own set: b gets the group's set. Then wider again: b gets back its own 4-7. */
        assert_int_equal(cpumask_parse_list("1", &p.cpus), 0);
        p.shares = 0;
        assert_int_equal(placement_writes(&io, o, &p, &w, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(find_write(w, n, "/peltd/web/b", "cpuset.cpus"), "1");
        assert_int_equal(cg_write_batch(&io, o, w, n, false), 0);
        cg_writes_free(w, n);
        assert_int_equal(cpumask_parse_list("0-7", &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n), 0);
        assert_string_equal(find_write(w, n, "/peltd/web/b", "cpuset.cpus"), "4-7");
        assert_string_equal(find_write(w, n, "/peltd/web/a", "cpuset.cpus"), "0-7");
        assert_int_equal(cg_write_batch(&io, o, w, n, false), 0);
        assert_string_equal(cpus_of("/peltd/web/b"), "4-7");
        cg_writes_free(w, n);

        /* No empty set, ever. */
        cpumask_zero(&p.cpus);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n), -EINVAL);
}

static void test_placement_v2_and_systemd(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        Placement p = { .group = "/peltd/web", .shares = 2048, .target = APPLY_V2 };
        CgWrite *w = NULL;
        size_t n = 0;

        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cpumask_parse_list("0-1", &p.cpus), 0);
        assert_int_equal(placement_writes(&io, o, &p, &w, &n), 0);
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
        assert_int_equal(placement_writes(&io, o, &p, &w, &n), 0);
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
        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), 0);
        assert_int_equal(cg_write_batch(&io, o, back, ELEMENTSOF(back), false), 0);
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
        CgWrite w[] = {
                W("cpuset", "/peltd/batch", "cpuset.cpus", "6-7"),
                W("cpu", "/peltd/batch", "cpu.shares", "300"),
        };

        /* batch (0-3) would move to 6-7; shares fail; it goes back to 0-3 and the state file is empty. */
        assert_int_equal(originals_load(statepath, &o), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), -EIO);
        assert_string_equal(cpus_of("/peltd/batch"), "0-3");
        assert_false(w[0].changed);
        assert_int_equal(o->n_entries, 0);
        done(w, ELEMENTSOF(w));
}

static void test_rollback_disables_what_it_enabled(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CgWrite w[] = {
                W("cpuset", "/peltd", "cgroup.subtree_control", "+cpuset"),
                W("cpu", "/peltd/web", "cpu.shares", "300"),
        };

        /* The controller is enabled first, then the shares fail: the rollback turns it off again. */
        assert_int_equal(originals_load(statepath, &o), 0);
        sim.fail_shares = -EIO;
        assert_int_equal(cg_write_batch(&io, o, w, ELEMENTSOF(w), false), -EIO);
        assert_string_equal(sim_find(&sim, "/peltd")->subtree, "");
        assert_non_null(strstr(sim.log, "/peltd cgroup.subtree_control=-cpuset\n"));
        assert_false(w[0].changed);
        assert_int_equal(o->n_entries, 0);
        done(w, ELEMENTSOF(w));
}

static void test_restore_inside_a_shrunk_parent(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;
        CgWrite w[] = { W("cpuset", "/peltd/batch", "cpuset.cpus", "1") };

        /* CPU 3 went offline and came back: v1 gave it back to nobody, so /peltd holds 0-2,4-7 now. */
        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(cg_write_batch(&io, o, w, 1, false), 0);
        assert_int_equal(cpumask_parse_list("0-2,4-7", &sim_find(&sim, "/peltd")->cpus), 0);

        /* batch's original 0-3 cannot come back whole: it gets what its parent allows, and is done. */
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_string_equal(cpus_of("/peltd/batch"), "0-2");
        assert_int_equal(o->n_entries, 0);
        done(w, 1);
}

static void test_restore_v2_inherit(_unused_ void **state) {
        _cleanup_originals_ Originals *o = NULL;
        CpuMask online;

        /* v2: a cpuset.cpus that was empty (the parent's CPUs) goes back to empty. */
        assert_int_equal(cpumask_parse_list("0-7", &online), 0);
        assert_int_equal(originals_load(statepath, &o), 0);
        assert_int_equal(originals_record(o, "cpuset", "/peltd/web", "cpuset.cpus", "", "0-7"), 0);
        sim_find(&sim, "/peltd/web")->inherit_ok = true;
        assert_int_equal(cg_restore(&io, o, &online, false), 0);
        assert_true(cpumask_empty(&sim_find(&sim, "/peltd/web")->cpus));
        assert_int_equal(o->n_entries, 0);
}

static int setup(_unused_ void **state) {
        if (!mkdtemp(tmpdir))
                return -1;
        snprintf(statepath, sizeof statepath, "%s/originals", tmpdir);
        return 0;
}

static int teardown(_unused_ void **state) {
        char cmd[300];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_narrow_children_first, setup_test),
                cmocka_unit_test_setup(test_widen_parents_first_and_skip_equal, setup_test),
                cmocka_unit_test_setup(test_rollback_keeps_group_consistent, setup_test),
                cmocka_unit_test_setup(test_refusals, setup_test),
                cmocka_unit_test_setup(test_dry_run_writes_nothing, setup_test),
                cmocka_unit_test_setup(test_restore, setup_test),
                cmocka_unit_test_setup(test_restore_narrowing_order_and_subtree_control, setup_test),
                cmocka_unit_test_setup(test_subtree_control_two_controllers, setup_test),
                cmocka_unit_test_setup(test_restore_failure_is_kept, setup_test),
                cmocka_unit_test_setup(test_rollback_disables_what_it_enabled, setup_test),
                cmocka_unit_test_setup(test_restore_inside_a_shrunk_parent, setup_test),
                cmocka_unit_test_setup(test_restore_v2_inherit, setup_test),
                cmocka_unit_test_setup(test_placement_v1_descendants, setup_test),
                cmocka_unit_test_setup(test_placement_v2_and_systemd, setup_test),
                cmocka_unit_test_setup(test_disjoint_move, setup_test),
                cmocka_unit_test_setup(test_rollback_of_a_move, setup_test),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
