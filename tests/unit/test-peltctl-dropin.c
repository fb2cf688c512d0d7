/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * peltctl's drop-in editor: the text it writes, the lines it keeps, and what peltd reads back from
 * the result with its own configuration rules (config_load_files()).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/ini.h"
#include "peltd/macro.h"
#include "peltd/peltctl-dropin.h"
#include "test-cleanup.h"

static char tmpdir[] = "/tmp/peltd-test-dropin-XXXXXX";

static char *policy(const char *text, const char *p) {
        char *out = NULL;

        assert_int_equal(dropin_set_policy(text, p, &out), 0);
        return out;
}

static char *shares(const char *text, const char *path, uint64_t n) {
        char *out = NULL;

        assert_int_equal(dropin_set_shares(text, path, n, &out), 0);
        return out;
}

static void expect_text(const char *got, const char *want) {
        if (!streq(got, want))
                fail_msg("got:\n%s\n---- wanted:\n%s", got, want);
}

/* Loads text as CONFIG_DIR/peltd.conf.d/90-peltctl.conf beside an empty peltd.conf, as peltd does. */
static Config *load(const char *text) {
        _cleanup_free_ char *dir = NULL, *file = NULL;
        Config *c = NULL;
        FILE *f;

        assert_true(asprintf(&dir, "%s/peltd.conf.d", tmpdir) > 0);
        assert_true(asprintf(&file, "%s/" DROPIN_NAME, dir) > 0);
        (void) mkdir(dir, 0755);
        f = fopen(file, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(file, 0644), 0);
        if (config_load_files("/nonexistent/peltd.conf", dir, &c) < 0)
                fail_msg("peltd did not read:\n%s", text);
        return c;
}

static void test_new_file(_unused_ void **state) {
        _cleanup_free_ char *a = policy("", "power");
        _cleanup_free_ char *b = shares(a, "/x/web", 500);
        _cleanup_config_ Config *c = NULL;

        expect_text(a, DROPIN_HEADER "\n[Daemon]\nPolicy=power\n");
        expect_text(b, DROPIN_HEADER "\n[Daemon]\nPolicy=power\n\n[Group /x/web]\nShares=500\n");
        c = load(b);
        assert_int_equal(c->policy, POLICY_POWER);
        assert_non_null(config_find_group(c, "/x/web"));
        assert_int_equal(config_find_group(c, "/x/web")->shares, 500);
}

static void test_replaces_in_place_and_keeps_the_rest(_unused_ void **state) {
        static const char in[] = DROPIN_HEADER
                "# mine\n"
                "[Daemon]\n"
                "SampleIntervalMSec=200\n"
                "Policy = balanced ; inline comment\n"
                "DryRun=no\n"
                "\n"
                "[Group /x/db]\n"
                "Shares=300\n"
                "MinCPUs=2\n";
        _cleanup_free_ char *a = policy(in, "performance");
        _cleanup_free_ char *b = shares(a, "/x/db", 4000);
        _cleanup_config_ Config *c = NULL;

        expect_text(b, DROPIN_HEADER
                    "# mine\n"
                    "[Daemon]\n"
                    "SampleIntervalMSec=200\n"
                    "Policy=performance\n"
                    "DryRun=no\n"
                    "\n"
                    "[Group /x/db]\n"
                    "Shares=4000\n"
                    "MinCPUs=2\n");
        c = load(b);
        assert_int_equal(c->policy, POLICY_PERFORMANCE);
        assert_int_equal(c->sample_interval_usec, 200 * USEC_PER_MSEC);
        assert_int_equal(config_find_group(c, "/x/db")->shares, 4000);
        assert_int_equal(config_find_group(c, "/x/db")->min_cpus, 2);
}

/*
 * An indented line with no key before it in its section is read as it stands; a key line written
 * before it would make it a continuation of that key. Its indent goes, so it means what it meant,
 * and the edit made again changes nothing (found by fuzz-peltctl-dropin).
 */
static void test_indented_lines_stay_what_they_were(_unused_ void **state) {
        static const char in[] =
                "# one\n"
                "\t[Daemon]\n"
                "# two\n"
                "\t[Group /x/web]\n"
                "MinCPUs=2\n"
                "[Daemon]\n"
                "  DryRun=yes\n";
        _cleanup_free_ char *a = policy(in, "power");
        _cleanup_free_ char *a2 = policy(a, "power");
        _cleanup_free_ char *b = shares(a2, "/x/web", 700);
        _cleanup_free_ char *b2 = shares(b, "/x/web", 700);
        _cleanup_config_ Config *c0 = load(in), *c = NULL;

        expect_text(a, DROPIN_HEADER
                    "# one\n"
                    "\t[Daemon]\n"
                    "Policy=power\n"
                    "# two\n"
                    "[Group /x/web]\n"
                    "MinCPUs=2\n"
                    "[Daemon]\n"
                    "  DryRun=yes\n");
        expect_text(a2, a);
        expect_text(b2, b);
        c = load(b2);
        assert_int_equal(c->policy, POLICY_POWER);
        assert_true(c->dry_run);
        assert_int_equal(config_find_group(c, "/x/web")->min_cpus, 2);
        assert_int_equal(config_find_group(c, "/x/web")->shares, 700);
        assert_int_equal(config_find_group(c0, "/x/web")->min_cpus, 2);
}

static void test_every_copy_goes(_unused_ void **state) {
        /* Two [Daemon] sections, a "Key: value" line, continuation lines, a section spelt otherwise. */
        static const char in[] =
                "[Daemon]\n"
                "Policy: power\n"
                "  continued\n"
                "# a comment stays\n"
                "[Group /x//web/]\n"
                "Policy=power\n"
                "Shares=10\n"
                "[Daemon]\n"
                "Policy=balanced\n"
                "[Group /x/web]\n"
                "Shares=20\n";
        _cleanup_free_ char *a = policy(in, "performance");
        _cleanup_free_ char *b = shares(a, "/x/web", 30);

        expect_text(b, DROPIN_HEADER
                    "[Daemon]\n"
                    "Policy=performance\n"
                    "# a comment stays\n"
                    "[Group /x//web/]\n"
                    "Policy=power\n"
                    "Shares=30\n"
                    "[Daemon]\n"
                    "[Group /x/web]\n");
        /* Policy= lines of [Group] sections are not the daemon's. */
        assert_non_null(strstr(b, "[Group /x//web/]\nPolicy=power\n"));
}

static void test_new_key_after_the_section_keys(_unused_ void **state) {
        static const char in[] = DROPIN_HEADER
                "[Group /x/a]\n"
                "MinCPUs=1\n"
                "\n"
                "# about b\n"
                "[Group /x/b]\n"
                "AllowedCPUs=0\n";
        _cleanup_free_ char *a = shares(in, "/x/a", 100);
        _cleanup_free_ char *b = policy(a, "power");

        expect_text(b, DROPIN_HEADER
                    "[Group /x/a]\n"
                    "MinCPUs=1\n"
                    "Shares=100\n"
                    "\n"
                    "# about b\n"
                    "[Group /x/b]\n"
                    "AllowedCPUs=0\n"
                    "\n"
                    "[Daemon]\n"
                    "Policy=power\n");
        _cleanup_config_ Config *c = load(b);
        assert_int_equal(c->policy, POLICY_POWER);
        assert_int_equal(config_find_group(c, "/x/a")->shares, 100);
}

static void test_shares_zero_removes(_unused_ void **state) {
        static const char in[] = DROPIN_HEADER
                "\n"
                "[Daemon]\n"
                "Policy=power\n"
                "\n"
                "[Group /x/a]\n"
                "Shares=100\n"
                "\n"
                "[Group /x/b]\n"
                "Shares=200\n"
                "MinCPUs=1\n"
                "\n"
                "[Group /x/c]\n"
                "# kept for the note\n"
                "Shares=300\n";
        _cleanup_free_ char *a = shares(in, "/x/a", 0);
        _cleanup_free_ char *b = shares(a, "/x/b", 0);
        _cleanup_free_ char *c = shares(b, "/x/c", 0);
        _cleanup_free_ char *d = shares(c, "/x/none", 0);

        expect_text(c, DROPIN_HEADER
                    "\n"
                    "[Daemon]\n"
                    "Policy=power\n"
                    "\n"
                    "[Group /x/b]\n"
                    "MinCPUs=1\n"
                    "\n"
                    "[Group /x/c]\n"
                    "# kept for the note\n");
        expect_text(d, c);
        _cleanup_config_ Config *conf = load(c);
        assert_null(config_find_group(conf, "/x/a"));
        assert_int_equal(config_find_group(conf, "/x/b")->shares, 0);
}

static void test_header_once_and_no_final_newline(_unused_ void **state) {
        _cleanup_free_ char *a = policy("[Daemon]\nDryRun=yes", "power");
        _cleanup_free_ char *b = policy(a, "balanced");

        expect_text(a, DROPIN_HEADER "[Daemon]\nDryRun=yes\nPolicy=power\n");
        expect_text(b, DROPIN_HEADER "[Daemon]\nDryRun=yes\nPolicy=balanced\n");
}

static void test_refused(_unused_ void **state) {
        static const char *const bad_paths[] = {
                "relative", "/", "/a/../b", "/a//b", "/a/", "/a]b", "/a ;b", "/a\tb ", "/a\nb", "/a\x1b" "b", "/bad\\xzz", "/bad\\x00", "/bad\\", "",
        };
        char long_path[200];
        const char *why = NULL;
        char *out = NULL;

        assert_int_equal(dropin_set_policy("", "turbo", &out), -EINVAL);
        assert_int_equal(dropin_set_shares("", "/x/a", 1, &out), -EINVAL);
        assert_int_equal(dropin_set_shares("", "/x/a", 262145, &out), -EINVAL);
        assert_null(out);
        for (size_t i = 0; i < ELEMENTSOF(bad_paths); i++) {
                why = NULL;
                if (dropin_check_group_path(bad_paths[i], &why) != -EINVAL || !why)
                        fail_msg("\"%s\" accepted", bad_paths[i]);
                assert_int_equal(dropin_set_shares("", bad_paths[i], 10, &out), -EINVAL);
        }
        memset(long_path, 'a', sizeof long_path - 1);
        long_path[0] = '/';
        long_path[sizeof long_path - 1] = 0;
        assert_int_equal(dropin_check_group_path(long_path, &why), -EINVAL);
        long_path[INI_LINE_MAX - strlen("[Group ]")] = 0;
        assert_int_equal(dropin_check_group_path(long_path, NULL), 0);

        /*
         * "\x2d" as systemd escapes '-' in unit names is four characters of the name: written with its
         * backslash as "\x5c", as peltd prints it. "\x2d" alone is the byte '-'.
         */
        assert_int_equal(dropin_check_group_path("/system.slice/systemd-fsck@dev-disk-by\\x5cx2duuid-1.service", NULL), 0);
        assert_int_equal(dropin_check_group_path("/a\\x7f\\xC3\\xff", NULL), 0);
        assert_int_equal(dropin_check_group_path("/a\\x\\xz", NULL), -EINVAL);

        /* A path with spaces, an escaped backslash, a control character and UTF-8 is read back as its bytes. */
        assert_int_equal(dropin_check_group_path("/x/a b/caf\xc3\xa9\\x5cn\\x09", NULL), 0);
        out = shares("", "/x/a b/caf\xc3\xa9\\x5cn\\x09", 64);
        _cleanup_config_ Config *c = load(out);
        assert_non_null(config_find_group(c, "/x/a b/caf\xc3\xa9\\n\t"));
        assert_int_equal(config_find_group(c, "/x/a b/caf\xc3\xa9\\n\t")->shares, 64);
        free(out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_new_file),
                cmocka_unit_test(test_replaces_in_place_and_keeps_the_rest),
                cmocka_unit_test(test_every_copy_goes),
                cmocka_unit_test(test_indented_lines_stay_what_they_were),
                cmocka_unit_test(test_new_key_after_the_section_keys),
                cmocka_unit_test(test_shares_zero_removes),
                cmocka_unit_test(test_header_once_and_no_final_newline),
                cmocka_unit_test(test_refused),
        };

        assert_non_null(test_mkdtemp(tmpdir));
        return cmocka_run_group_tests(tests, NULL, NULL);
}
