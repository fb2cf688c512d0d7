/* SPDX-License-Identifier: GPL-2.0-only */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/parse.h"

static void test_u64(_unused_ void **state) {
        uint64_t v;

        assert_int_equal(safe_atou64("42\n", &v), 0);
        assert_int_equal(v, 42);
        assert_int_equal(safe_atou64(" 18446744073709551615 ", &v), 0);
        assert_int_equal(v, UINT64_MAX);
        assert_int_equal(safe_atou64("18446744073709551616", &v), -ERANGE);
        assert_int_equal(safe_atou64("-1", &v), -EINVAL);
        assert_int_equal(safe_atou64("", &v), -EINVAL);
        assert_int_equal(safe_atou64("12abc", &v), -EINVAL);
        assert_int_equal(safe_atou64("1 2", &v), -EINVAL);
        assert_int_equal(safe_atou64("0x10", &v), -EINVAL);
        assert_int_equal(safe_atou64(NULL, &v), -EINVAL);
}

static void test_int(_unused_ void **state) {
        int i;
        unsigned u;

        assert_int_equal(safe_atoi("-5", &i), 0);
        assert_int_equal(i, -5);
        assert_int_equal(safe_atoi("+7", &i), 0);
        assert_int_equal(i, 7);
        assert_int_equal(safe_atoi("2147483648", &i), -ERANGE);
        assert_int_equal(safe_atoi("-", &i), -EINVAL);
        assert_int_equal(safe_atou("4294967296", &u), -ERANGE);
}

static void test_double(_unused_ void **state) {
        double d;

        assert_int_equal(safe_atod("1.5", &d), 0);
        assert_true(d == 1.5);
        assert_int_equal(safe_atod("-0.25\n", &d), 0);
        assert_true(d == -0.25);
        assert_int_equal(safe_atod("3", &d), 0);
        assert_int_equal(safe_atod(".5", &d), 0);
        assert_int_equal(safe_atod("1e3", &d), -EINVAL);
        assert_int_equal(safe_atod("inf", &d), -EINVAL);
        assert_int_equal(safe_atod("nan", &d), -EINVAL);
        assert_int_equal(safe_atod("0x1p3", &d), -EINVAL);
        assert_int_equal(safe_atod(".", &d), -EINVAL);
        assert_int_equal(safe_atod("", &d), -EINVAL);
}

static void test_boolean(_unused_ void **state) {
        assert_int_equal(parse_boolean("yes"), 1);
        assert_int_equal(parse_boolean("TRUE"), 1);
        assert_int_equal(parse_boolean("1"), 1);
        assert_int_equal(parse_boolean("no"), 0);
        assert_int_equal(parse_boolean("false"), 0);
        assert_int_equal(parse_boolean("0"), 0);
        assert_int_equal(parse_boolean("maybe"), -EINVAL);
        assert_int_equal(parse_boolean(""), -EINVAL);
}

static void test_split(_unused_ void **state) {
        _cleanup_strv_free_ char **l = strv_split_whitespace("  /a/*  /b\t/c/d \n");

        assert_non_null(l);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "/a/*");
        assert_string_equal(l[2], "/c/d");

        _cleanup_strv_free_ char **e = strv_split_whitespace("   ");
        assert_non_null(e);
        assert_int_equal(strv_length(e), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_u64),     cmocka_unit_test(test_int),   cmocka_unit_test(test_double),
                cmocka_unit_test(test_boolean), cmocka_unit_test(test_split),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
