/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/utf8.h"

/* The escaped form decodes back to the bytes. */
static void roundtrip(const char *s) {
        _cleanup_free_ char *alloc = NULL, *back = NULL;

        assert_int_equal(utf8_unescape(utf8_escape(s, &alloc), &back), 0);
        assert_string_equal(back, s);
}

/* s escaped, both ways: utf8_escape() and utf8_escape_to() with room to spare. */
static void check(const char *s, const char *want) {
        _cleanup_free_ char *alloc = NULL;
        char buf[256];
        const char *t;

        t = utf8_escape(s, &alloc);
        assert_non_null(t);
        assert_string_equal(t, want);
        assert_int_equal(utf8_escaped_length(s), strlen(want));
        assert_int_equal(utf8_escape_to(s, buf, sizeof buf), strlen(want));
        assert_string_equal(buf, want);
        assert_true(utf8_is_valid(want));
        assert_int_equal(utf8_needs_escape(s), !streq(s, want));
        roundtrip(s);
}

static void test_valid_kept(_unused_ void **state) {
        check("", "");
        check("/system.slice/web.service", "/system.slice/web.service");
        /* Two, three and four bytes, at each end of their ranges. */
        check("\xc2\x80 \xdf\xbf", "\xc2\x80 \xdf\xbf");
        check("/caf\xc3\xa9", "/caf\xc3\xa9");
        check("\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf",
              "\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf");
        check("\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf3\xbf\xbf\xbf \xf4\x8f\xbf\xbf",
              "\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf3\xbf\xbf\xbf \xf4\x8f\xbf\xbf");
}

static void test_backslash_and_controls(_unused_ void **state) {
        /* The backslash itself is escaped: "\x41" in the input is not the byte 0x41. */
        check("a\\x41\\", "a\\x5cx41\\x5c");
        /* Control characters never go raw to a terminal or the journal. */
        check("a\tb\n", "a\\x09b\\x0a");
        check("\x1b[31mred\x7f", "\\x1b[31mred\\x7f");
        /* The four characters "\xff" and the byte 0xff: two names, two forms. */
        check("\\xff\xff", "\\x5cxff\\xff");
}

static void test_unescape(_unused_ void **state) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        char *bad = NULL;

        assert_int_equal(utf8_unescape("/plain/path", &a), 0);
        assert_string_equal(a, "/plain/path");
        assert_int_equal(utf8_unescape("/g\\xFF\\x5c\\x09", &b), 0);
        assert_string_equal(b, "/g\xff\\\t");
        assert_int_equal(utf8_unescape("", &c), 0);
        assert_string_equal(c, "");
        /* A backslash that starts no "\xNN", a cut escape, and a NUL: refused. */
        assert_int_equal(utf8_unescape("a\\b", &bad), -EINVAL);
        assert_int_equal(utf8_unescape("a\\x4", &bad), -EINVAL);
        assert_int_equal(utf8_unescape("a\\xg0", &bad), -EINVAL);
        assert_int_equal(utf8_unescape("a\\", &bad), -EINVAL);
        assert_int_equal(utf8_unescape("a\\x00", &bad), -EINVAL);
        assert_null(bad);
}

static void test_fast_path(_unused_ void **state) {
        const char *s = "/sys\xc3\xa9m.slice";
        char *alloc = (char *) 1;

        assert_ptr_equal(utf8_escape(s, &alloc), s);
        assert_null(alloc);
}

static void test_invalid_escaped(_unused_ void **state) {
        /* A byte that is never UTF-8, in the middle and at the end. */
        check("/a\xffz", "/a\\xffz");
        check("/a\xff", "/a\\xff");
        check("\xfe\xf5\xf8", "\\xfe\\xf5\\xf8");
        /* A lone continuation byte, and one after a complete character. */
        check("\x80", "\\x80");
        check("\xc3\xa9\xa9", "\xc3\xa9\\xa9");
        /* Overlong forms: '/' in two, three and four bytes; C0 and C1 never start anything. */
        check("\xc0\xaf", "\\xc0\\xaf");
        check("\xc1\xbf", "\\xc1\\xbf");
        check("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
        check("\xe0\x9f\xbf", "\\xe0\\x9f\\xbf");
        check("\xf0\x80\x80\xaf", "\\xf0\\x80\\x80\\xaf");
        check("\xf0\x8f\xbf\xbf", "\\xf0\\x8f\\xbf\\xbf");
        /* Surrogates, high and low (CESU-8 style pairs too). */
        check("\xed\xa0\x80", "\\xed\\xa0\\x80");
        check("\xed\xbf\xbf", "\\xed\\xbf\\xbf");
        check("\xed\xa0\xbd\xed\xb8\x80", "\\xed\\xa0\\xbd\\xed\\xb8\\x80");
        /* Above U+10FFFF. */
        check("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
        check("\xf7\xbf\xbf\xbf", "\\xf7\\xbf\\xbf\\xbf");
        /* Truncated sequences: at the end, and before an ASCII byte that is kept. */
        check("ab\xe2\x82", "ab\\xe2\\x82");
        check("\xc3", "\\xc3");
        check("\xf0\x9f\x98", "\\xf0\\x9f\\x98");
        check("\xe2\x82z\xe2\x82\xac", "\\xe2\\x82z\xe2\x82\xac");
        /* A thread name as the kernel keeps it: 15 bytes, cut in the middle of a character. */
        check("worker-\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x82", "worker-\xc3\xa9\xc3\xa9\xc3\xa9\\xe2\\x82");
}

static void test_sequence_length(_unused_ void **state) {
        assert_int_equal(utf8_sequence_length("a", 1), 1);
        assert_int_equal(utf8_sequence_length("\xe2\x82\xac", 3), 3);
        assert_int_equal(utf8_sequence_length("\xe2\x82\xac", 2), 0);
        assert_int_equal(utf8_sequence_length("\xf4\x8f\xbf\xbf", 4), 4);
        assert_int_equal(utf8_sequence_length("x", 0), 0);
        /* A NUL is never a continuation. */
        assert_int_equal(utf8_sequence_length("\xc3\0", 2), 0);
}

static void test_escape_to_cut(_unused_ void **state) {
        char buf[8];

        /* Never half an escape: "ab" and then "\xff" would need 6 + NUL. */
        assert_int_equal(utf8_escape_to("ab\xff\xff", buf, 7), 6);
        assert_string_equal(buf, "ab\\xff");
        assert_int_equal(utf8_escape_to("ab\xff\xff", buf, 6), 2);
        assert_string_equal(buf, "ab");
        /* Never half a character. */
        assert_int_equal(utf8_escape_to("abcd\xe2\x82\xac", buf, 7), 4);
        assert_string_equal(buf, "abcd");
        assert_int_equal(utf8_escape_to("abcd\xe2\x82\xac", buf, 8), 7);
        assert_string_equal(buf, "abcd\xe2\x82\xac");
        assert_int_equal(utf8_escape_to("abc", buf, 1), 0);
        assert_string_equal(buf, "");
        assert_int_equal(utf8_escape_to("abc", buf, 0), 0);
}

/* Every byte value alone: exactly the printable ASCII ones but the backslash are kept. */
static void test_every_byte(_unused_ void **state) {
        for (unsigned b = 1; b < 256; b++) {
                char s[2] = { (char) b, 0 }, want[8];

                if (b >= 0x20 && b < 0x7f && b != '\\')
                        snprintf(want, sizeof want, "%c", b);
                else
                        snprintf(want, sizeof want, "\\x%02x", b);
                check(s, want);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_kept),     cmocka_unit_test(test_fast_path),
                cmocka_unit_test(test_backslash_and_controls), cmocka_unit_test(test_unescape),
                cmocka_unit_test(test_invalid_escaped), cmocka_unit_test(test_sequence_length),
                cmocka_unit_test(test_escape_to_cut),  cmocka_unit_test(test_every_byte),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
