/* SPDX-License-Identifier: GPL-2.0-only */
/* peltctl's terminal text: control characters escaped, display widths, ellipsizing, wrapping. */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/macro.h"
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sanitize),
                cmocka_unit_test(test_width),
                cmocka_unit_test(test_ellipsize),
                cmocka_unit_test(test_wrap),
        };

        /* As peltctl: display widths of a UTF-8 LC_CTYPE. */
        if (!setlocale(LC_CTYPE, "C.UTF-8"))
                fail_msg("no C.UTF-8 locale");
        return cmocka_run_group_tests(tests, NULL, NULL);
}
