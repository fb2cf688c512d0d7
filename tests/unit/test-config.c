/* SPDX-License-Identifier: GPL-2.0-only */
/* The strict INI layer and the daemon's configuration: values, precedence, and FILE:LINE errors. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "peltd/cgroup-path.h"
#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/ini.h"
#include "peltd/macro.h"
#include "peltd/parse.h"
#include "test-cleanup.h"

static char tmpdir[] = "/tmp/peltd-test-config-XXXXXX";

static char *write_file(const char *name, const char *content) {
        char *path;
        FILE *f;

        assert_true(asprintf(&path, "%s/%s", tmpdir, name) > 0);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
        return path;
}

/* Runs config_load() on path and returns what it logged (stderr), and its result. */
static char *load_path_capture(const char *path, int *ret, Config **ret_config) {
        char logpath[256], *log = NULL;
        int saved, fd;
        Config *c = NULL;
        FILE *f;
        size_t n = 0;

        snprintf(logpath, sizeof logpath, "%s/stderr", tmpdir);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        dup2(fd, STDERR_FILENO);
        close(fd);
        *ret = config_load(path, &c);
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);

        f = fopen(logpath, "re");
        assert_non_null(f);
        if (getdelim(&log, &n, 0, f) < 0) {
                free(log);
                log = strdup("");
        }
        fclose(f);
        if (ret_config)
                *ret_config = c;
        else
                config_free(c);
        return log;
}

/* Runs config_load() on content and returns what it logged (stderr), and its result. */
static char *load_capture(const char *content, int *ret, Config **ret_config) {
        _cleanup_free_ char *path = write_file("peltd.conf", content);

        return load_path_capture(path, ret, ret_config);
}

static void expect_error(const char *content, const char *fragment) {
        int r;
        _cleanup_free_ char *log = load_capture(content, &r, NULL);

        if (r != -EINVAL || !strstr(log, fragment))
                fail_msg("expected -EINVAL and \"%s\" in the log; got %d and:\n%s", fragment, r, log);
}

static void test_defaults(_unused_ void **state) {
        _cleanup_config_ Config *c = NULL;

        assert_int_equal(config_new_default(&c), 0);
        assert_int_equal(c->policy, POLICY_BALANCED);
        assert_int_equal(c->sample_interval_usec, 100000);
        assert_int_equal(c->task_sample_interval_usec, 1000000);
        assert_int_equal(c->task_tracking, TASK_TRACKING_AUTO);
        assert_string_equal(c->cgroup_root, "/");
        assert_null(c->groups);
        assert_string_equal(c->state_file, "/run/peltd/originals");
        assert_false(c->dry_run);
        assert_int_equal(c->backend, BACKEND_AUTO);
        assert_string_equal(c->metrics_file, "/run/peltd/metrics.prom");
        assert_int_equal(c->sampling_backend, SAMPLING_BACKEND_AUTO);
}

static void test_every_key(_unused_ void **state) {
        _cleanup_free_ char *log = NULL;
        Config *c = NULL;
        const GroupConfig *g;
        int r;

        log = load_capture("# a comment\n"
                           "; another\n"
                           "[Daemon]\n"
                           "Policy=power ; inline comment\n"
                           "SampleIntervalMSec=250\n"
                           "TaskSampleIntervalMSec = 2000\n"
                           "TaskTracking=no\n"
                           "CgroupRoot=/peltd//test/\n"
                           "Groups=/peltd/test/web /peltd/test/batch-*\n"
                           "  /peltd/test/db\n"
                           "StateFile=/run/peltd-test/originals\n"
                           "DryRun=yes\n"
                           "Backend=cgroupfs\n"
                           "MetricsFile=/var/lib/node-exporter/peltd.prom\n"
                           "SamplingBackend=proc\n"
                           "\n"
                           "[Group /peltd/test/web]\n"
                           "Shares=2048\n"
                           "Policy=performance\n"
                           "AllowedCPUs=0-3,8\n"
                           "MinCPUs=2\n"
                           "[Group /peltd/test/batch-1]\n"
                           "Manage=no\n",
                           &r, &c);
        if (r < 0)
                fail_msg("%s", log);
        assert_int_equal(c->policy, POLICY_POWER);
        assert_int_equal(c->sample_interval_usec, 250000);
        assert_int_equal(c->task_sample_interval_usec, 2000000);
        assert_int_equal(c->task_tracking, TASK_TRACKING_NO);
        assert_string_equal(c->cgroup_root, "/peltd/test");
        assert_int_equal(strv_length(c->groups), 3);
        assert_string_equal(c->groups[2], "/peltd/test/db");
        assert_string_equal(c->state_file, "/run/peltd-test/originals");
        assert_true(c->dry_run);
        assert_int_equal(c->backend, BACKEND_CGROUPFS);
        assert_string_equal(c->metrics_file, "/var/lib/node-exporter/peltd.prom");
        assert_int_equal(c->sampling_backend, SAMPLING_BACKEND_PROC);
        assert_int_equal(c->n_group_configs, 2);
        g = config_find_group(c, "/peltd/test/web");
        assert_non_null(g);
        assert_int_equal(g->shares, 2048);
        assert_int_equal(g->policy, POLICY_PERFORMANCE);
        assert_true(g->has_allowed_cpus);
        assert_int_equal(cpumask_count(&g->allowed_cpus), 5);
        assert_int_equal(g->min_cpus, 2);
        assert_int_equal(g->manage, -1);
        g = config_find_group(c, "/peltd/test/batch-1");
        assert_int_equal(g->manage, 0);
        assert_int_equal(g->shares, 0);
        assert_int_equal(g->policy, POLICY_INVALID);
        assert_null(config_find_group(c, "/peltd/test/none"));

        assert_true(config_selects_group(c, "/peltd/test/web"));
        assert_true(config_selects_group(c, "/peltd/test/batch-7"));
        assert_false(config_selects_group(c, "/peltd/test/batch-7/sub")); /* '*' stops at '/' */
        assert_false(config_selects_group(c, "/peltd/test/other"));
        config_free(c);
}

static void test_selects_direct_children(_unused_ void **state) {
        _cleanup_config_ Config *c = NULL;

        assert_int_equal(config_new_default(&c), 0);
        assert_true(config_selects_group(c, "/system.slice"));
        assert_false(config_selects_group(c, "/system.slice/foo.service"));
        assert_false(config_selects_group(c, "/"));
        free(c->cgroup_root);
        c->cgroup_root = strdup("/peltd");
        assert_true(config_selects_group(c, "/peltd/web"));
        assert_false(config_selects_group(c, "/peltd"));
        assert_false(config_selects_group(c, "/peltdx/web"));
        assert_false(config_selects_group(c, "/peltd/web/a"));
        assert_false(config_selects_group(c, "/other/web"));
}

static void test_errors_name_file_and_line(_unused_ void **state) {
        expect_error("[Daemon]\nPolicy=fast\n", "peltd.conf:2: Policy=fast: Unknown policy");
        expect_error("[Daemon]\n\nSampleIntervalMSec=5\n", "peltd.conf:3: SampleIntervalMSec=5: Expected an integer from 10 to 60000");
        expect_error("[Daemon]\nSampleIntervalMSec=1O0\n", ":2: SampleIntervalMSec=1O0");
        expect_error("[Daemon]\nDryRun=maybe\n", ":2: DryRun=maybe: Expected a boolean");
        expect_error("[Daemon]\nColour=blue\n", ":2: Colour=blue: Unknown key in section [Daemon]");
        expect_error("[Deamon]\nPolicy=power\n", ":1: Unknown section [Deamon]");
        expect_error("[Daemon]\n[Extra]\n", ":2: Unknown section [Extra]");
        expect_error("Policy=power\n", ":1: Policy=power: Key outside of any section");
        expect_error("[Daemon]\nCgroupRoot=/a/../b\n", ":2: CgroupRoot=/a/../b: Expected an absolute cgroup path");
        expect_error("[Daemon]\nCgroupRoot=relative\n", ":2: CgroupRoot=relative");
        expect_error("[Daemon]\nTaskTracking=sometimes\n", ":2: TaskTracking=sometimes: Expected auto, yes or no");
        expect_error("[Daemon]\nBackend=docker\n", ":2: Backend=docker");
        expect_error("[Daemon]\nSamplingBackend=ebpf\n", ":2: SamplingBackend=ebpf: Expected auto, bpf or proc");
        expect_error("[Daemon]\nMetricsFile=metrics.prom\n", ":2: MetricsFile=metrics.prom: Expected an absolute file path");
        expect_error("[Daemon]\nPolicy=power\n  performance\n", ":3: Policy=performance: Continuation line");
        expect_error("[Daemon]\nPolicy\n", ":2: Syntax error");
        expect_error("[Daemon\nPolicy=power\n", ":1: Section header without a closing ']'");
        expect_error("[Daemon]\nPolicy=\n", ":2: Policy=: Empty value");
        expect_error("[Daemon]\nGroups=/a/../b\n", ":2: Groups=/a/../b");
        expect_error("[Daemon]\nGroups=/a//b\n", "not normalised");
        expect_error("[Daemon]\nStateFile=run/x\n", ":2: StateFile=run/x: Expected an absolute file path");
        expect_error("[Group]\nShares=5\n", ":1: Section [Group] needs an argument");
        expect_error("[Daemon x]\n", ":1: Section [Daemon] takes no argument");
        expect_error("[Group /a/..]\nShares=5\n", ":1: [Group /a/..]: expected an absolute cgroup path");
        expect_error("[Group /web]\nShares=1\n", ":2: Shares=1: Expected an integer from 2 to 262144");
        expect_error("[Group /web]\nShares=262145\n", ":2: Shares=262145");
        expect_error("[Group /web]\nAllowedCPUs=3-1\n", ":2: AllowedCPUs=3-1: Expected a CPU list");
        expect_error("[Group /web]\nAllowedCPUs=9000\n", ":2: AllowedCPUs=9000: CPU number too large");
        expect_error("[Group /web]\nMinCPUs=0\n", ":2: MinCPUs=0");
        expect_error("[Group /web]\nManage=perhaps\n", ":2: Manage=perhaps");
        expect_error("[Daemon]\nCgroupRoot=/peltd\n[Group /other/web]\nShares=100\n",
                     ":3: [Group /other/web] is not below CgroupRoot=/peltd");
        expect_error("[Daemon]\nCgroupRoot=/peltd\nGroups=/other/*\n", "Groups=/other/* does not lie below CgroupRoot=/peltd");
        expect_error("[Group /]\nShares=100\n", "the root cgroup cannot be managed");

        /* Lines inih would split silently are refused. */
        char longline[400];
        snprintf(longline, sizeof longline, "[Daemon]\nGroups=/%0250d\n", 0);
        expect_error(longline, ":2: Line too long (258 characters, at most 199)");
}

static void test_every_error_reported(_unused_ void **state) {
        int r;
        _cleanup_free_ char *log = load_capture("[Daemon]\nPolicy=fast\nDryRun=maybe\n[Group /web]\nShares=1\n", &r, NULL);

        assert_int_equal(r, -EINVAL);
        assert_non_null(strstr(log, ":2: Policy=fast"));
        assert_non_null(strstr(log, ":3: DryRun=maybe"));
        assert_non_null(strstr(log, ":5: Shares=1"));
}

static void test_missing_file(_unused_ void **state) {
        Config *c = NULL;
        char path[256];

        snprintf(path, sizeof path, "%s/does-not-exist.conf", tmpdir);
        assert_int_equal(config_load(path, &c), -ENOENT);
        assert_null(c);

        /* The default location may be missing: all defaults. */
        assert_int_equal(config_load_files(path, NULL, &c), 0);
        assert_int_equal(c->policy, POLICY_BALANCED);
        config_free(c);
}

static void test_dropins_override_key_by_key(_unused_ void **state) {
        _cleanup_free_ char *main_file = NULL, *d1 = NULL, *d2 = NULL, *dir = NULL;
        Config *c = NULL;

        assert_true(asprintf(&dir, "%s/peltd.conf.d", tmpdir) > 0);
        mkdir(dir, 0755);
        main_file = write_file("main.conf",
                               "[Daemon]\nPolicy=power\nSampleIntervalMSec=200\nGroups=/a /b\n"
                               "[Group /a]\nShares=300\nMinCPUs=2\n");
        /* Applied in name order: 10 then 20. */
        d2 = write_file("peltd.conf.d/20-late.conf", "[Daemon]\nPolicy=performance\n[Group /a]\nShares=500\n");
        d1 = write_file("peltd.conf.d/10-early.conf", "[Daemon]\nPolicy=balanced\nGroups=/c\n");
        free(write_file("peltd.conf.d/30-ignored.txt", "garbage"));

        assert_int_equal(config_load_files(main_file, dir, &c), 0);
        assert_int_equal(c->policy, POLICY_PERFORMANCE);
        assert_int_equal(c->sample_interval_usec, 200000);
        /* Groups= from a later file replaces the list. */
        assert_int_equal(strv_length(c->groups), 1);
        assert_string_equal(c->groups[0], "/c");
        assert_int_equal(config_find_group(c, "/a")->shares, 500);
        assert_int_equal(config_find_group(c, "/a")->min_cpus, 2);
        config_free(c);

        /* A broken drop-in fails the whole load and names its own file. */
        _cleanup_free_ char *bad = write_file("peltd.conf.d/25-bad.conf", "[Daemon]\nPolicy=turbo\n");
        c = NULL;
        assert_int_equal(config_load_files(main_file, dir, &c), -EINVAL);
        assert_null(c);
        unlink(bad);
        unlink(d1);
        unlink(d2);
}

static void test_cgroup_paths(_unused_ void **state) {
        static const struct {
                const char *in, *out;
        } ok[] = {
                { "/", "/" }, { "//", "/" }, { "/a", "/a" }, { "/a/", "/a" }, { "/a//b", "/a/b" }, { "/a.b/..c", "/a.b/..c" },
                /* A name may hold control characters: every group peltd may place, it can record. */
                { "/a\tb/\x1b\x7f", "/a\tb/\x1b\x7f" },
        };
        static const char *const bad[] = { "", "a", "/a/..", "/./a", "/a/../b", "a/b" };

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                _cleanup_free_ char *p = NULL;

                assert_int_equal(cgroup_path_normalize(ok[i].in, &p), 0);
                assert_string_equal(p, ok[i].out);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *p = NULL;

                assert_int_equal(cgroup_path_normalize(bad[i], &p), -EINVAL);
                assert_null(p);
        }
        assert_true(cgroup_path_under("/a/b", "/a"));
        assert_true(cgroup_path_under("/a", "/a"));
        assert_false(cgroup_path_under("/ab", "/a"));
        assert_true(cgroup_path_under("/x", "/"));
}

/* MetricsFile= empty: no metrics file, also over an earlier file's value. */
static void test_metrics_file_empty(_unused_ void **state) {
        _cleanup_free_ char *log = NULL;
        _cleanup_config_ Config *c = NULL;
        int r;

        log = load_capture("[Daemon]\nMetricsFile=/run/x.prom\nMetricsFile=\n", &r, &c);
        if (r < 0)
                fail_msg("%s", log);
        assert_null(c->metrics_file);
}

/* EnergyMeter= and PowercapDir=: their defaults, their values, their errors. */
static void test_energy_meter_keys(_unused_ void **state) {
        _cleanup_free_ char *log = NULL;
        _cleanup_config_ Config *c = NULL;
        int r;

        assert_int_equal(config_new_default(&c), 0);
        assert_int_equal(c->energy_meter, ENERGY_METER_SETTING_AUTO);
        assert_string_equal(c->powercap_dir, "/sys/class/powercap");
        config_free(TAKE_PTR(c));
        log = load_capture("[Daemon]\nEnergyMeter=none\nPowercapDir=/run/peltd-test/powercap\n", &r, &c);
        if (r < 0)
                fail_msg("%s", log);
        assert_int_equal(c->energy_meter, ENERGY_METER_SETTING_NONE);
        assert_string_equal(c->powercap_dir, "/run/peltd-test/powercap");
        expect_error("[Daemon]\nEnergyMeter=rapl\n", ":2: EnergyMeter=rapl: Expected auto, powercap or none");
        expect_error("[Daemon]\nPowercapDir=sys/class/powercap\n", ":2: PowercapDir=sys/class/powercap: Expected an absolute");
}

/* Every header opens its section: a repeated one merges key by key, an empty one still counts. */
static void test_repeated_and_empty_sections(_unused_ void **state) {
        _cleanup_free_ char *log = NULL;
        Config *c = NULL;
        const GroupConfig *g;
        int r;

        log = load_capture("[Group /a]\nShares=100\n[Daemon]\nPolicy=power\n[Group /a]\nMinCPUs=2\n[Group /b]\n", &r, &c);
        assert_int_equal(r, 0);
        g = config_find_group(c, "/a");
        assert_non_null(g);
        assert_int_equal(g->shares, 100);
        assert_int_equal(g->min_cpus, 2);
        assert_int_equal(g->source_line, 1);
        assert_non_null(config_find_group(c, "/b"));
        assert_int_equal(c->n_group_configs, 2);
        config_free(c);
}

/*
 * Indented lines as inih reads them: after a key, a continuation (refused where the key takes one
 * value, a "[" line too); with no key since the section's header, a line like any other.
 */
static void test_indented_lines(_unused_ void **state) {
        _cleanup_free_ char *log = NULL;
        Config *c = NULL;
        int r;

        log = load_capture("# x\n\t[Daemon]\n  DryRun=yes\n\n[Group /a]\n\tShares=300\n; y\n[Daemon]\n\tPolicy=power\n", &r, &c);
        if (r < 0)
                fail_msg("%s", log);
        assert_true(c->dry_run);
        assert_int_equal(c->policy, POLICY_POWER);
        assert_int_equal(config_find_group(c, "/a")->shares, 300);
        assert_int_equal(config_find_group(c, "/a")->source_line, 5);
        config_free(c);

        expect_error("[Daemon]\nDryRun=yes\n# c\n  [Group /a]\n", ":4: DryRun=[Group /a]: Continuation line");
        expect_error("[Daemon]\nDryRun=yes\n\n\tPolicy=power\n", ":4: DryRun=Policy=power: Continuation line");
        expect_error("[Daemon]\nDryRun=yes\n[Group /a]\n\tShares=300\n\t\tMinCPUs=2\n", ":5: Shares=MinCPUs=2: Continuation line");
}

static void test_policy_names(_unused_ void **state) {
        assert_int_equal(policy_from_string("power"), POLICY_POWER);
        assert_int_equal(policy_from_string("performance"), POLICY_PERFORMANCE);
        assert_int_equal(policy_from_string("balanced"), POLICY_BALANCED);
        assert_int_equal(policy_from_string("Power"), POLICY_INVALID);
        assert_int_equal(policy_from_string(NULL), POLICY_INVALID);
        assert_string_equal(policy_to_string(POLICY_POWER), "power");
        assert_null(policy_to_string(_POLICY_MAX));
}

static void expect_refused(const char *path, const char *reason) {
        int r;
        _cleanup_free_ char *log = load_path_capture(path, &r, NULL);

        if (r != -EPERM || !strstr(log, path) || !strstr(log, reason))
                fail_msg("expected -EPERM naming %s and \"%s\"; got %d and:\n%s", path, reason, r, log);
}

/* Whoever can write a config file chooses StateFile= and what peltd writes: only root's files count. */
static void test_untrusted_config_files(_unused_ void **state) {
        _cleanup_free_ char *good = write_file("good.conf", "[Daemon]\nPolicy=power\n"), *path = NULL, *dir = NULL,
                            *dropin = NULL, *link = NULL;
        Config *c = NULL;
        int r;

        /* Root's rules, for root's daemon: trusted is root's own file, a file of 65534 another user's. */
        if (geteuid() != 0)
                skip();
        path = write_file("untrusted.conf", "[Daemon]\nStateFile=/tmp/evil\n");
        assert_int_equal(chmod(path, 0666), 0);
        expect_refused(path, "is writable by group or others");
        assert_int_equal(chmod(path, 0620), 0);
        expect_refused(path, "is writable by group or others");
        assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(chown(path, 65534, 65534), 0);
        expect_refused(path, "is owned by another user");
        unlink(path);

        /* A FIFO never blocks the load; a device is refused before it is read (/dev/zero: forever). */
        assert_int_equal(mkfifo(path, 0600), 0);
        expect_refused(path, "is a FIFO");
        unlink(path);
        assert_int_equal(symlink("/dev/zero", path), 0);
        expect_refused(path, "is a device");
        unlink(path);

        /* A symlink is followed and the file it reaches checked: to root's own file, fine. */
        assert_int_equal(symlink(good, path), 0);
        assert_int_equal(config_load(path, &c), 0);
        assert_int_equal(c->policy, POLICY_POWER);
        config_free(c);
        c = NULL;
        unlink(path);

        /* Over 1 MiB: refused. */
        {
                FILE *f = fopen(path, "we");

                assert_non_null(f);
                for (int i = 0; i < 70000; i++)
                        fputs("# padding line\n", f);
                fclose(f);
                expect_refused(path, "is too large");
                unlink(path);
        }

        /* A drop-in someone else may write refuses the whole load, naming the drop-in. */
        assert_true(asprintf(&dir, "%s/untrusted.d", tmpdir) > 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        dropin = write_file("untrusted.d/50-x.conf", "[Daemon]\nPolicy=performance\n");
        assert_int_equal(chmod(dropin, 0666), 0);
        r = config_load_files(good, dir, &c);
        assert_int_equal(r, -EPERM);
        assert_null(c);
        unlink(dropin);
        /* A drop-in linked to a device: refused, not read until memory runs out. */
        assert_true(asprintf(&link, "%s/60-zero.conf", dir) > 0);
        assert_int_equal(symlink("/dev/zero", link), 0);
        assert_int_equal(config_load_files(good, dir, &c), -EPERM);
        unlink(link);
        rmdir(dir);
}


/* --config-dir DIR: DIR/peltd.conf (may be missing) then DIR/peltd.conf.d/ *.conf in name order. */
static void test_config_dir(_unused_ void **state) {
        _cleanup_config_ Config *c = NULL;
        _cleanup_free_ char *d = NULL, *a = NULL, *b = NULL, *m = NULL, *dir = NULL;

        assert_true(asprintf(&dir, "%s/cdir", tmpdir) > 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        d = write_file("cdir/peltd.conf", "[Daemon]\nPolicy=power\nSampleIntervalMSec=300\n");
        assert_true(asprintf(&m, "%s/cdir/peltd.conf.d", tmpdir) > 0);
        assert_int_equal(mkdir(m, 0755), 0);
        a = write_file("cdir/peltd.conf.d/10-a.conf", "[Daemon]\nPolicy=performance\n");
        b = write_file("cdir/peltd.conf.d/90-peltctl.conf", "[Daemon]\nPolicy=balanced\n");
        assert_int_equal(config_load_from(NULL, dir, &c), 0);
        assert_int_equal(c->policy, POLICY_BALANCED);
        assert_int_equal(c->sample_interval_usec, 300000);
        c = config_free(c);

        /* --config wins over --config-dir; a missing main file means its defaults. */
        assert_int_equal(config_load_from(d, dir, &c), 0);
        assert_int_equal(c->policy, POLICY_POWER);
        c = config_free(c);
        assert_int_equal(unlink(d), 0);
        assert_int_equal(config_load_from(NULL, dir, &c), 0);
        assert_int_equal(c->policy, POLICY_BALANCED);
        assert_int_equal(c->sample_interval_usec, 100000);
        c = config_free(c);

        assert_int_equal(config_load_from(NULL, "/nonexistent-peltd-dir", &c), -ENOENT);
        assert_int_equal(config_load_from(NULL, a, &c), -ENOTDIR);
}

/* "#" after a value is no comment for inih: refused, naming FILE:LINE and what to write instead. */
static void test_hash_after_value(_unused_ void **state) {
        _cleanup_free_ char *log = NULL;
        Config *c = NULL;
        int r;

        expect_error("[Daemon]\nPolicy=power   # the default is balanced\n",
                     "peltd.conf:2: Policy=power   # the default is balanced: \"#\" starts a comment only at the start of a line; after a value, use \";\"");
        /* The tab, a control character, is written as \x09 in the log. */
        expect_error("[Daemon]\nCgroupRoot=/x\t# the subtree\n", ":2: CgroupRoot=/x\\x09# the subtree: \"#\" starts a comment");
        expect_error("[Daemon]\nGroups=/a\n  /b # more\n", ":3: Groups=/b # more: \"#\" starts a comment");

        /* A "#" inside a word, a ";" comment and a "#" line are fine. */
        log = load_capture("# a comment line\n[Daemon]\nCgroupRoot=/x#1   ; the subtree\n", &r, &c);
        if (r < 0)
                fail_msg("%s", log);
        assert_string_equal(c->cgroup_root, "/x#1");
        config_free(c);
}

/* An empty Groups= is the default (the direct children of CgroupRoot), also after a list. */
static void test_empty_groups(_unused_ void **state) {
        _cleanup_free_ char *log = NULL;
        Config *c = NULL;
        int r;

        log = load_capture("[Daemon]\nGroups=   ; the direct children\n", &r, &c);
        if (r < 0)
                fail_msg("%s", log);
        assert_null(c->groups);
        assert_true(config_selects_group(c, "/a"));
        config_free(c);

        free(log);
        log = load_capture("[Daemon]\nGroups=/a/*\nGroups=\n", &r, &c);
        if (r < 0)
                fail_msg("%s", log);
        assert_null(c->groups);
        config_free(c);
}

/* CgroupRoot= is a cgroup path; a mount point's path gets an error that says what to write. */
static void test_cgroup_root_is_a_cgroup_path(_unused_ void **state) {
        expect_error("[Daemon]\nCgroupRoot=/sys/fs/cgroup/cpuset/batch\n",
                     ":2: CgroupRoot=/sys/fs/cgroup/cpuset/batch: CgroupRoot= is a cgroup path as in /proc/PID/cgroup");
        expect_error("[Daemon]\nCgroupRoot=//sys/fs/cgroup\n", ":2: CgroupRoot=//sys/fs/cgroup: CgroupRoot= is a cgroup path");
}

/* A Groups= glob outside CgroupRoot is named with the line it came from. */
static void test_groups_error_line(_unused_ void **state) {
        expect_error("[Daemon]\nCgroupRoot=/x\nGroups=/x/a\n  /y/b\n", "peltd.conf:4: Groups=/y/b does not lie below CgroupRoot=/x.");
        expect_error("[Daemon]\nGroups=/y/*\n[Daemon]\nCgroupRoot=/x\n", "peltd.conf:2: Groups=/y/* does not lie below CgroupRoot=/x.");
}

/* MetricsFile= may be neither the state file nor its lock, whatever the spelling. */
static void test_files_kept_apart(_unused_ void **state) {
        expect_error("[Daemon]\nStateFile=/run/p/s\nMetricsFile=/run/p//s\n",
                     "MetricsFile=/run/p//s and StateFile=/run/p/s name the same file");
        expect_error("[Daemon]\nStateFile=/run/p/s\nMetricsFile=/run/p/s.lock\n",
                     "MetricsFile=/run/p/s.lock is the lock of StateFile=/run/p/s");
}

/* --config-dir is a literal path: glob characters in it are part of its name. */
static void test_config_dir_literal(_unused_ void **state) {
        _cleanup_config_ Config *c = NULL;
        _cleanup_free_ char *dir = NULL, *dropins = NULL, *a = NULL, *other = NULL;

        assert_true(asprintf(&dir, "%s/conf[1]", tmpdir) > 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        assert_true(asprintf(&dropins, "%s/peltd.conf.d", dir) > 0);
        assert_int_equal(mkdir(dropins, 0755), 0);
        a = write_file("conf[1]/peltd.conf.d/50-canary.conf", "[Daemon]\nDryRun=yes\n");
        /* "conf1" would match the pattern conf[1]: it must not be read. */
        assert_true(asprintf(&other, "%s/conf1", tmpdir) > 0);
        assert_int_equal(mkdir(other, 0755), 0);
        assert_int_equal(config_load_from(NULL, dir, &c), 0);
        assert_true(c->dry_run);
}

/* A drop-in directory anyone may add a file to, or another user's, is refused: nothing in it is read. */
static void test_dropin_dir_untrusted(_unused_ void **state) {
        _cleanup_free_ char *dir = NULL, *dropins = NULL, *a = NULL;
        Config *c = NULL;

        assert_true(asprintf(&dir, "%s/untrusted-dir", tmpdir) > 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        assert_true(asprintf(&dropins, "%s/peltd.conf.d", dir) > 0);
        assert_int_equal(mkdir(dropins, 0755), 0);
        a = write_file("untrusted-dir/peltd.conf.d/50-x.conf", "[Daemon]\nDryRun=yes\n");
        assert_int_equal(chmod(dropins, 0777), 0);
        assert_int_equal(config_load_from(NULL, dir, &c), -EPERM);
        assert_null(c);
        assert_int_equal(chmod(dropins, 0755), 0);
        assert_int_equal(chown(dropins, 65534, 65534), 0);
        assert_int_equal(config_load_from(NULL, dir, &c), -EPERM);
        assert_null(c);
        assert_int_equal(chown(dropins, 0, 0), 0);
        assert_int_equal(config_load_from(NULL, dir, &c), 0);
        assert_true(c->dry_run);
        config_free(c);
}

static int setup(_unused_ void **state) {
        return test_mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(_unused_ void **state) {
        char cmd[300];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_every_key),
                cmocka_unit_test(test_selects_direct_children),
                cmocka_unit_test(test_errors_name_file_and_line),
                cmocka_unit_test(test_every_error_reported),
                cmocka_unit_test(test_missing_file),
                cmocka_unit_test(test_dropins_override_key_by_key),
                cmocka_unit_test(test_dropin_dir_untrusted),
                cmocka_unit_test(test_cgroup_paths),
                cmocka_unit_test(test_repeated_and_empty_sections),
                cmocka_unit_test(test_metrics_file_empty),
                cmocka_unit_test(test_energy_meter_keys),
                cmocka_unit_test(test_indented_lines),
                cmocka_unit_test(test_policy_names),
                cmocka_unit_test(test_untrusted_config_files),
                cmocka_unit_test(test_config_dir),
                cmocka_unit_test(test_hash_after_value),
                cmocka_unit_test(test_empty_groups),
                cmocka_unit_test(test_cgroup_root_is_a_cgroup_path),
                cmocka_unit_test(test_groups_error_line),
                cmocka_unit_test(test_files_kept_apart),
                cmocka_unit_test(test_config_dir_literal),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
