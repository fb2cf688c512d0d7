/* SPDX-License-Identifier: GPL-2.0-only */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

#include "peltd/macro.h"
#include "peltd/metrics.h"
#include "test-cleanup.h"

/*
 * s's text in *ret. (Into the caller's variable, not returned: gcc -O2 and above cannot tell that a
 * pointer returned from here, once its address was metrics_render()'s, does not point into this
 * frame, and warns of a dangling pointer where the caller reads it.)
 */
static void render(const MetricsSnapshot *s, char **ret) {
        size_t size = 0;

        assert_int_equal(metrics_render(s, ret, &size), 0);
        assert_non_null(*ret);
        assert_int_equal(strlen(*ret), size);
}

/* Every family, in order, with its HELP and TYPE; exact values; a group without a known cpuset. */
static void test_render_exact(_unused_ void **state) {
        const MetricsGroup groups[] = {
                { .path = "/peltd/batch", .util = 301, .runnable = 1100, .load = 2048, .cpus = 1, .shares = 2048,
                  .placement_changes = 3, .throttled_ns = 1500000000, .managed = true, .owner = "", .foreign_writes = 2,
                  .pressure_usec = 1234567 },
                { .path = "/peltd/web", .util = 0, .runnable = 0, .load = 0, .cpus = -1, .shares = 1024,
                  .placement_changes = 0, .throttled_ns = 12, .managed = true, .owner = "kubelet", .pressure_usec = 40 },
                /* Sampled, not (yet) in the Manager's list: no figures of the Manager's. */
                { .path = "/peltd/zz", .cpus = -1, .shares = 2 },
        };
        const MetricsHeld held[] = { { "kubelet", 2 }, { "partition", 0 } };
        const MetricsSnapshot s = {
                .version = "0.1.0",
                .policy = "balanced",
                .group_rounds = 90,
                .task_rounds = 10,
                .threads_tracked = 345,
                .groups_managed = 2,
                .sampling_cpu_ns = 2000381000,
                .metrics_cpu_ns = 4000,
                .energy_estimate = 40.5,
                .energy_estimate_spread = 45,
                .placement_errors = 5,
                .held = held,
                .n_held = ELEMENTSOF(held),
                .groups = groups,
                .n_groups = ELEMENTSOF(groups),
        };
        _cleanup_free_ char *text = NULL;

        render(&s, &text);
        assert_string_equal(
                text,
                "# HELP peltd_build_info peltd's version, as the label version (always 1).\n"
                "# TYPE peltd_build_info gauge\n"
                "peltd_build_info{version=\"0.1.0\"} 1\n"
                "# HELP peltd_policy_info The daemon's placement policy, as the label policy (always 1).\n"
                "# TYPE peltd_policy_info gauge\n"
                "peltd_policy_info{policy=\"balanced\"} 1\n"
                "# HELP peltd_rounds_total Sampling rounds run: kind=\"task\" read every thread and group, kind=\"group\" the groups only.\n"
                "# TYPE peltd_rounds_total counter\n"
                "peltd_rounds_total{kind=\"group\"} 90\n"
                "peltd_rounds_total{kind=\"task\"} 10\n"
                "# HELP peltd_threads_tracked Threads whose load peltd tracks (0 while it tracks none).\n"
                "# TYPE peltd_threads_tracked gauge\n"
                "peltd_threads_tracked 345\n"
                "# HELP peltd_groups_managed Cgroups peltd manages.\n"
                "# TYPE peltd_groups_managed gauge\n"
                "peltd_groups_managed 2\n"
                "# HELP peltd_sampling_cpu_seconds_total CPU time peltd itself spent sampling threads and groups.\n"
                "# TYPE peltd_sampling_cpu_seconds_total counter\n"
                "peltd_sampling_cpu_seconds_total 2.000381\n"
                "# HELP peltd_metrics_cpu_seconds_total CPU time peltd itself spent on this file (taking its figures, rendering, writing), up to its last write.\n"
                "# TYPE peltd_metrics_cpu_seconds_total counter\n"
                "peltd_metrics_cpu_seconds_total 0.000004\n"
                "# HELP peltd_energy_estimate Energy estimate of the managed groups' load on the CPUs each may use now, in the energy model's units.\n"
                "# TYPE peltd_energy_estimate gauge\n"
                "peltd_energy_estimate 40.5\n"
                "# HELP peltd_energy_estimate_spread Energy estimate of the same load with every group on every online CPU, in the same units.\n"
                "# TYPE peltd_energy_estimate_spread gauge\n"
                "peltd_energy_estimate_spread 45\n"
                "# HELP peltd_placement_errors_total Placement writes that failed (cpuset.cpus, cpu.shares, cpu.weight, systemd properties), or were not made as the state file could not record them.\n"
                "# TYPE peltd_placement_errors_total counter\n"
                "peltd_placement_errors_total 5\n"
                "# HELP peltd_cpus_held CPUs another owner holds exclusively (kubelet's static CPUs, partitions, exclusive cpusets): in no set peltd writes.\n"
                "# TYPE peltd_cpus_held gauge\n"
                "peltd_cpus_held{owner=\"kubelet\"} 2\n"
                "peltd_cpus_held{owner=\"partition\"} 0\n"
                "# HELP peltd_group_util_cpus CPU the group's threads use: PELT util_avg of its usage, in CPUs (util/1024).\n"
                "# TYPE peltd_group_util_cpus gauge\n"
                "peltd_group_util_cpus{group=\"/peltd/batch\"} 0.2939453125\n"
                "peltd_group_util_cpus{group=\"/peltd/web\"} 0\n"
                "peltd_group_util_cpus{group=\"/peltd/zz\"} 0\n"
                "# HELP peltd_group_runnable_cpus CPU the group's threads want: PELT runnable_avg (running or waiting), in CPUs.\n"
                "# TYPE peltd_group_runnable_cpus gauge\n"
                "peltd_group_runnable_cpus{group=\"/peltd/batch\"} 1.07421875\n"
                "peltd_group_runnable_cpus{group=\"/peltd/web\"} 0\n"
                "peltd_group_runnable_cpus{group=\"/peltd/zz\"} 0\n"
                "# HELP peltd_group_load The group's shares-weighted demand: shares x min(runnable/1024, 1), in weight units.\n"
                "# TYPE peltd_group_load gauge\n"
                "peltd_group_load{group=\"/peltd/batch\"} 2048\n"
                "peltd_group_load{group=\"/peltd/web\"} 0\n"
                "peltd_group_load{group=\"/peltd/zz\"} 0\n"
                "# HELP peltd_group_cpus Number of CPUs the group may use now (its cpuset).\n"
                "# TYPE peltd_group_cpus gauge\n"
                "peltd_group_cpus{group=\"/peltd/batch\"} 1\n"
                "# HELP peltd_group_shares The group's cpu.shares (cgroup v2: cpu.weight converted).\n"
                "# TYPE peltd_group_shares gauge\n"
                "peltd_group_shares{group=\"/peltd/batch\"} 2048\n"
                "peltd_group_shares{group=\"/peltd/web\"} 1024\n"
                "peltd_group_shares{group=\"/peltd/zz\"} 2\n"
                "# HELP peltd_group_placement_changes_total Placement changes (CPUs or shares) peltd applied to the group since it found it.\n"
                "# TYPE peltd_group_placement_changes_total counter\n"
                "peltd_group_placement_changes_total{group=\"/peltd/batch\"} 3\n"
                "peltd_group_placement_changes_total{group=\"/peltd/web\"} 0\n"
                "peltd_group_placement_changes_total{group=\"/peltd/zz\"} 0\n"
                "# HELP peltd_group_throttled_seconds_total Growth of the group's throttled time counter since peltd found it, as the kernel counts it.\n"
                "# TYPE peltd_group_throttled_seconds_total counter\n"
                "peltd_group_throttled_seconds_total{group=\"/peltd/batch\"} 1.5\n"
                "peltd_group_throttled_seconds_total{group=\"/peltd/web\"} 0.000000012\n"
                "peltd_group_throttled_seconds_total{group=\"/peltd/zz\"} 0\n"
                "# HELP peltd_group_foreign_writes_total Writes by others to the group's files that peltd placed; peltd yielded to each.\n"
                "# TYPE peltd_group_foreign_writes_total counter\n"
                "peltd_group_foreign_writes_total{group=\"/peltd/batch\"} 2\n"
                "peltd_group_foreign_writes_total{group=\"/peltd/web\"} 0\n"
                "# HELP peltd_group_cpu_pressure_seconds_total Time the group's threads waited for a CPU: cgroup v2 cpu.pressure some total; v1 their run_delay.\n"
                "# TYPE peltd_group_cpu_pressure_seconds_total counter\n"
                "peltd_group_cpu_pressure_seconds_total{group=\"/peltd/batch\"} 1.234567\n"
                "peltd_group_cpu_pressure_seconds_total{group=\"/peltd/web\"} 0.00004\n"
                "# HELP peltd_group_owner_info A group peltd leaves alone because another owner places it, as the label owner (always 1).\n"
                "# TYPE peltd_group_owner_info gauge\n"
                "peltd_group_owner_info{group=\"/peltd/web\",owner=\"kubelet\"} 1\n");
}

/* The sample line of family `name` for one group, from the text. */
static const char *group_line(const char *text, const char *name, char *buf, size_t size) {
        const char *p = strstr(text, name), *end;

        /* The family's first sample: past "# HELP name" and "# TYPE name". */
        while (p && (p == text || p[-1] != '\n'))
                p = strstr(p + 1, name);
        assert_non_null(p);
        end = strchr(p, '\n');
        assert_non_null(end);
        assert_true((size_t) (end - p) < size);
        memcpy(buf, p, (size_t) (end - p));
        buf[end - p] = 0;
        return buf;
}

/* A quote, a backslash, a newline and a byte that is not UTF-8: \xNN first (the backslash and the newline too), then the format's escapes. */
static void test_label_escaping(_unused_ void **state) {
        const MetricsGroup g = { .path = "/a\"b\\c\nd\xff" "e\xc3\xa9", .util = 512, .cpus = 2 };
        const MetricsSnapshot s = { .version = "1\"\\", .policy = "power", .groups = &g, .n_groups = 1 };
        _cleanup_free_ char *text = NULL;
        char line[256];

        render(&s, &text);
        assert_string_equal(group_line(text, "peltd_group_util_cpus", line, sizeof line),
                            "peltd_group_util_cpus{group=\"/a\\\"b\\\\x5cc\\\\x0ad\\\\xffe\xc3\xa9\"} 0.5");
        assert_string_equal(group_line(text, "peltd_group_cpus", line, sizeof line),
                            "peltd_group_cpus{group=\"/a\\\"b\\\\x5cc\\\\x0ad\\\\xffe\xc3\xa9\"} 2");
        assert_string_equal(group_line(text, "peltd_build_info", line, sizeof line), "peltd_build_info{version=\"1\\\"\\\\x5c\"} 1");
        /* Nothing raw: every newline ends a line that is a comment or a sample. */
        for (const char *p = text; *p; p = strchr(p, '\n') + 1)
                assert_true(startswith(p, "# HELP ") || startswith(p, "# TYPE ") || startswith(p, "peltd_"));
}

/* No groups: the per-group families are left out whole; the rest are there. NaN and Inf as the format spells them. */
static void test_no_groups_special_values(_unused_ void **state) {
        const MetricsSnapshot s = { .version = "0.1.0", .policy = "performance", .energy_estimate = NAN,
                                    .energy_estimate_spread = INFINITY };
        _cleanup_free_ char *text = NULL;

        render(&s, &text);
        assert_null(strstr(text, "peltd_group_"));
        assert_non_null(strstr(text, "\npeltd_groups_managed 0\n"));
        assert_non_null(strstr(text, "\npeltd_energy_estimate NaN\n"));
        assert_non_null(strstr(text, "\npeltd_energy_estimate_spread +Inf\n"));
        assert_non_null(strstr(text, "\npeltd_sampling_cpu_seconds_total 0\n"));
}

/* The number of times needle occurs in text. */
static unsigned count(const char *text, const char *needle) {
        unsigned n = 0;

        for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
                n++;
        return n;
}

/*
 * Every sample's family has its HELP then its TYPE (gauge or counter) right before its samples,
 * and no family comes twice: its samples are together.
 */
static void test_families_grouped(_unused_ void **state) {
        const MetricsGroup groups[] = { { .path = "/a", .cpus = 1, .managed = true },
                                        { .path = "/b", .cpus = 2, .managed = true, .owner = "runtime" },
                                        { .path = "/c", .cpus = 1, .managed = true, .owner = "systemd" } };
        const MetricsHeld held[] = { { "kubelet", 1 }, { "partition", 3 } };
        const MetricsSnapshot s = { .version = "v", .policy = "p", .held = held, .n_held = ELEMENTSOF(held),
                                    .groups = groups, .n_groups = ELEMENTSOF(groups) };
        _cleanup_free_ char *text = NULL;
        char family[128] = "";
        bool typed = false;
        unsigned families = 0, samples = 0;

        render(&s, &text);
        for (char *p = text, *nl; *p; p = nl + 1) {
                char name[128], help[160];
                size_t len;

                nl = strchr(p, '\n');
                assert_non_null(nl);
                if (startswith(p, "# HELP ")) {
                        len = strcspn(p + 7, " ");
                        assert_true(len < sizeof family);
                        memcpy(family, p + 7, len);
                        family[len] = 0;
                        snprintf(help, sizeof help, "# HELP %s ", family);
                        assert_int_equal(count(text, help), 1);
                        typed = false;
                        families++;
                        continue;
                }
                if (startswith(p, "# TYPE ")) {
                        char gauge[160], counter[160];

                        assert_false(typed);
                        snprintf(gauge, sizeof gauge, "# TYPE %s gauge\n", family);
                        snprintf(counter, sizeof counter, "# TYPE %s counter\n", family);
                        assert_true(strneq(p, gauge, strlen(gauge)) || strneq(p, counter, strlen(counter)));
                        typed = true;
                        continue;
                }
                len = strcspn(p, "{ ");
                assert_true(len < sizeof name);
                memcpy(name, p, len);
                name[len] = 0;
                assert_string_equal(name, family);
                assert_true(typed);
                samples++;
        }
        /*
         * 10 families of one sample but the rounds' and the held CPUs' two, 9 per-group ones of 3
         * samples each, and the owners' of 2 (the groups owned elsewhere).
         */
        assert_int_equal(families, 11 + 9 + 1);
        assert_int_equal(samples, 13 + 9 * 3 + 2);
}

static char *read_file(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t size = 0;

        assert_non_null(f);
        assert_int_not_equal(getdelim(&buf, &size, 0, f), -1);
        return buf;
}

/* Written whole, 0644 under umask 077, no temporary file left; a planted temporary name is replaced, not followed. */
static void test_write_file(_unused_ void **state) {
        char dir[] = "/tmp/peltd-test-metrics-XXXXXX", path[128], tmp[160], target[160];
        _cleanup_free_ char *got = NULL, *untouched = NULL;
        mode_t old = umask(077);
        struct stat st;
        FILE *f;

        assert_non_null(test_mkdtemp(dir));
        snprintf(path, sizeof path, "%s/peltd.prom", dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        snprintf(target, sizeof target, "%s/elsewhere", dir);

        /* A symlink at the temporary name, to a file the writer must not touch. */
        f = fopen(target, "we");
        assert_non_null(f);
        fputs("keep\n", f);
        fclose(f);
        assert_int_equal(symlink(target, tmp), 0);

        assert_int_equal(metrics_write_file(path, "a 1\n", 4, NULL), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0644);
        got = read_file(path);
        assert_string_equal(got, "a 1\n");
        assert_int_equal(lstat(tmp, &st), -1);
        assert_int_equal(errno, ENOENT);
        untouched = read_file(target);
        assert_string_equal(untouched, "keep\n");

        /* Replaced, not appended to. */
        free(got);
        assert_int_equal(metrics_write_file(path, "b 2\n", 4, NULL), 0);
        got = read_file(path);
        assert_string_equal(got, "b 2\n");

        /* A directory that is not there: the error, and nothing made. */
        snprintf(path, sizeof path, "%s/missing/peltd.prom", dir);
        assert_int_equal(metrics_write_file(path, "c 3\n", 4, NULL), -ENOENT);
        umask(old);
}

/*
 * The directory through a symlink: followed where only root could have made it, refused where the
 * directory holding it is anyone's to write (a link planted in /tmp), and nothing written there.
 */
static void test_write_file_planted_symlink(_unused_ void **state) {
        char dir[] = "/tmp/peltd-test-metrics-XXXXXX", path[160], target[128], link[140], cmd[200];
        const char *why = NULL;
        struct stat st;

        assert_non_null(mkdtemp(dir));
        snprintf(target, sizeof target, "%s/target", dir);
        assert_int_equal(mkdir(target, 0755), 0);
        snprintf(link, sizeof link, "%s/link", dir);
        assert_int_equal(symlink(target, link), 0);
        snprintf(path, sizeof path, "%s/peltd.prom", link);

        /* dir is root's, mode 0700: root alone made the link. */
        assert_int_equal(metrics_write_file(path, "a 1\n", 4, &why), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(unlink(path), 0);

        /* Anyone may write to dir now: the link could be theirs. */
        assert_int_equal(chmod(dir, 01777), 0);
        assert_int_equal(metrics_write_file(path, "a 1\n", 4, &why), -EPERM);
        assert_non_null(why);
        assert_non_null(strstr(why, "symbolic link"));
        snprintf(cmd, sizeof cmd, "%s/peltd.prom.tmp", target);
        assert_int_equal(lstat(cmd, &st), -1);
        assert_int_equal(lstat(path, &st), -1);
        /* Another user's directory, not writable by others: the same. */
        assert_int_equal(chmod(dir, 0755), 0);
        assert_int_equal(chown(dir, 65534, 65534), 0);
        assert_int_equal(metrics_write_file(path, "a 1\n", 4, &why), -EPERM);

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

/* A failed rename leaves no temporary file: the target is a directory. */
static void test_write_file_rename_fails(_unused_ void **state) {
        char dir[] = "/tmp/peltd-test-metrics-XXXXXX", path[128], tmp[160];
        struct stat st;

        assert_non_null(test_mkdtemp(dir));
        snprintf(path, sizeof path, "%s/peltd.prom", dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(metrics_write_file(path, "a 1\n", 4, NULL), -EISDIR);
        assert_int_equal(lstat(tmp, &st), -1);
        assert_int_equal(errno, ENOENT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_render_exact),
                cmocka_unit_test(test_label_escaping),
                cmocka_unit_test(test_no_groups_special_values),
                cmocka_unit_test(test_families_grouped),
                cmocka_unit_test(test_write_file),
                cmocka_unit_test(test_write_file_rename_fails),
                cmocka_unit_test(test_write_file_planted_symlink),
        };

        test_cleanup_install();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
