/* SPDX-License-Identifier: GPL-2.0-only */
/* peltctl's terminal text: control characters escaped, display widths, ellipsizing, wrapping. */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/peltctl-table.h"
#include "peltd/peltctl-text.h"

static void expect_str(char *got, const char *want) {
        assert_non_null(got);
        if (!streq(got, want))
                fail_msg("got \"%s\", wanted \"%s\"", got, want);
        free(got);
}

static void test_sanitize(_unused_ void **state) {
        expect_str(text_sanitize("/a/b c"), "/a/b c");
        expect_str(text_sanitize("caf\xc3\xa9 \\xff"), "caf\xc3\xa9 \\xff");
        /* ESC ] 0 ; title BEL, a newline, DEL, C1 CSI (U+009B), a byte that is not UTF-8. */
        expect_str(text_sanitize("\x1b]0;t\x07|\n|\x7f|\xc2\x9b|\xff"), "\\x1b]0;t\\x07|\\x0a|\\x7f|\\xc2\\x9b|\\xff");
        expect_str(text_sanitize(""), "");
}

static void test_width(_unused_ void **state) {
        assert_int_equal(text_width(""), 0);
        assert_int_equal(text_width("abc"), 3);
        assert_int_equal(text_width("caf\xc3\xa9"), 4);
        assert_int_equal(text_width("…"), 1);
        assert_int_equal(text_width("\xe6\x97\xa5\xe6\x9c\xac"), 4); /* two wide CJK characters */
}

static void test_ellipsize(_unused_ void **state) {
        expect_str(text_ellipsize("/a/b", 4, false), "/a/b");
        expect_str(text_ellipsize("/a/b", 10, true), "/a/b");
        expect_str(text_ellipsize("/machine.slice/web", 8, false), "/machin…");
        expect_str(text_ellipsize("/machine.slice/web", 8, true), "…ice/web");
        expect_str(text_ellipsize("/x/caf\xc3\xa9s", 5, true), "…af\xc3\xa9s");
        expect_str(text_ellipsize("/x/caf\xc3\xa9s", 7, false), "/x/caf…");
        /* A wide character that no longer fits is left out whole: the result may be narrower. */
        expect_str(text_ellipsize("a\xe6\x97\xa5\xe6\x9c\xac", 3, false), "a…");
        expect_str(text_ellipsize("\xe6\x97\xa5\xe6\x9c\xac" "b", 3, true), "…b");
        expect_str(text_ellipsize("abc", 1, false), "…");
        expect_str(text_ellipsize("abc", 0, true), "");
        for (size_t w = 1; w < 12; w++) {
                char *a = text_ellipsize("/a/b\xc3\xa9/\xe6\x97\xa5/dd", w, false), *b = text_ellipsize("/a/b\xc3\xa9/\xe6\x97\xa5/dd", w, true);

                assert_true(text_width(a) <= w && text_width(b) <= w);
                free(a);
                free(b);
        }
}

static char *wrap(const char *s, size_t first, size_t indent, size_t width) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        text_wrap(f, s, first, indent, width);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static void test_wrap(_unused_ void **state) {
        expect_str(wrap("2 CPUs, 1 package", 10, 10, 80), "2 CPUs, 1 package\n");
        expect_str(wrap("aaa bbb ccc ddd", 4, 4, 12), "aaa bbb\n    ccc ddd\n");
        expect_str(wrap("aaa  bbb", 0, 2, 5), "aaa\n  bbb\n");
        /* A word wider than the line is cut where the line ends. */
        expect_str(wrap("x /a/very/long/path", 2, 2, 10), "x\n  /a/very/\n  long/pat\n  h\n");
}

/* What a table function wrote, as a string. */
#define CAPTURE(ret, call)                                                      \
        do {                                                                    \
                size_t _size = 0;                                               \
                FILE *f = open_memstream(&(ret), &_size);                       \
                                                                                \
                assert_non_null(f);                                             \
                assert_int_equal((call), 0);                                    \
                assert_int_equal(fclose(f), 0);                                 \
        } while (0)

static const Row table_rows[] = {
        { .path = "/peltd/web", .util = 512, .runnable = 600, .shares = 1024, .cpus = "0-1", .policy = "balanced",
          .reason = "balanced: long-running, spread", .details = true, .owner = "" },
        { .path = "/peltd/kubepods.slice", .util = 1024, .runnable = 1024, .shares = 2048, .cpus = "1", .policy = "none",
          .reason = "kubelet places it", .details = true, .owner = "kubelet", .changes = 0 },
};

/* The OWNER column: "-" where peltd places the group, the owner where another does; policy "none". */
static void test_table(_unused_ void **state) {
        char *out = NULL;

        CAPTURE(out, table_print(f, table_rows, ELEMENTSOF(table_rows), 80));
        expect_str(out, "GROUP                    UTIL  RUNNABLE  SHARES  CPUS  POLICY    OWNER\n"
                        "/peltd/web               0.50      0.59    1024  0-1   balanced  -\n"
                        "    balanced: long-running, spread\n"
                        "/peltd/kubepods.slice    1.00      1.00    2048  1     none      kubelet\n"
                        "    kubelet places it\n");
        /* From an older daemon's ListGroups: no owners known. */
        {
                Row old = table_rows[1];

                old.details = false;
                old.owner = NULL;
                CAPTURE(out, table_print(f, &old, 1, 80));
                expect_str(out, "GROUP                    UTIL  RUNNABLE  SHARES  CPUS  POLICY  OWNER\n"
                                "/peltd/kubepods.slice    1.00      1.00    2048  1     none    -\n"
                                "    kubelet places it\n");
        }
        CAPTURE(out, table_print(f, NULL, 0, 80));
        expect_str(out, "No managed groups.\n");
}

/* Every line of a table within its width, whatever the values' lengths. */
static void test_table_width(_unused_ void **state) {
        Row r = { .path = "/a/very/long/path/of/a/group/that/does/not/fit/in/eighty/columns/at/all.scope",
                  .util = 1e6, .runnable = 1e6, .shares = 262144, .cpus = "0,2,4,6,8,10,12,14,16,18,20", .policy = "performance",
                  .reason = "a reason that goes on and on and on, longer than any terminal line should be, and then some more",
                  .details = true, .owner = "partition", .changes = 123456 };
        char *out = NULL;

        for (size_t width = 80; width <= 120; width += 40) {
                Row rows[] = { r, r };

                CAPTURE(out, table_print(f, rows, 2, width));
                for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
                        if (text_width(line) > width)
                                fail_msg("wider than %zu: %s", width, line);
                free(out);
                CAPTURE(out, top_print(f, &(TopHeader){ "performance", "cgroupfs", 1, 2 }, rows, 2, width, 0));
                for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
                        if (text_width(line) > width)
                                fail_msg("top: wider than %zu: %s", width, line);
                free(out);
        }
}

/* top's frame: sorted by util, busiest first; cut to the height with a line saying how many more. */
static void test_top(_unused_ void **state) {
        Row rows[] = { table_rows[0], table_rows[1], table_rows[0] };
        char *out = NULL;

        rows[2].path = "/peltd/idle";
        rows[2].util = 0;
        rows[0].changes = 7;
        CAPTURE(out, top_print(f, &(TopHeader){ .policy = "balanced", .backend = "cgroupfs", .rounds = 1200, .changes = 1 },
                               rows, ELEMENTSOF(rows), 80, 0));
        expect_str(out, "policy balanced, backend cgroupfs, 1200 rounds, 1 placement change, 3 groups\n"
                        "\n"
                        "GROUP              UTIL    RUN  CPUS  SHARES  OWNER    CHANGES  REASON\n"
                        "…/kubepods.slice   1.00   1.00  1       2048  kubelet        0  kubelet places …\n"
                        "/peltd/web         0.50   0.59  0-1     1024  -              7  balanced: long-…\n"
                        "/peltd/idle        0.00   0.59  0-1     1024  -              0  balanced: long-…\n");
        CAPTURE(out, top_print(f, &(TopHeader){ .policy = "power", .backend = "systemd" }, rows, ELEMENTSOF(rows), 80, 5));
        expect_str(out, "policy power, backend systemd, 0 rounds, 0 placement changes, 3 groups\n"
                        "\n"
                        "GROUP              UTIL    RUN  CPUS  SHARES  OWNER    CHANGES  REASON\n"
                        "…/kubepods.slice   1.00   1.00  1       2048  kubelet        0  kubelet places …\n"
                        "… 2 more groups\n");
        /* Wider: the path whole, the reason whole. */
        CAPTURE(out, top_print(f, &(TopHeader){ .policy = "power", .backend = "systemd" }, rows, 1, 120, 0));
        expect_str(out, "policy power, backend systemd, 0 rounds, 0 placement changes, 1 group\n"
                        "\n"
                        "GROUP                   UTIL    RUN  CPUS  SHARES  OWNER    CHANGES  REASON\n"
                        "/peltd/kubepods.slice   1.00   1.00  1       2048  kubelet        0  kubelet places it\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sanitize),
                cmocka_unit_test(test_width),
                cmocka_unit_test(test_ellipsize),
                cmocka_unit_test(test_wrap),
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_table_width),
                cmocka_unit_test(test_top),
        };

        /* As peltctl: display widths of a UTF-8 LC_CTYPE. */
        if (!setlocale(LC_CTYPE, "C.UTF-8"))
                fail_msg("no C.UTF-8 locale");
        return cmocka_run_group_tests(tests, NULL, NULL);
}
