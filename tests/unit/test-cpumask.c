/* SPDX-License-Identifier: GPL-2.0-only */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"

static void check_roundtrip(const char *in, const char *out, int count) {
        CpuMask m;
        _cleanup_free_ char *s = NULL;

        assert_int_equal(cpumask_parse_list(in, &m), 0);
        assert_int_equal(cpumask_count(&m), count);
        s = cpumask_to_list(&m);
        assert_non_null(s);
        assert_string_equal(s, out);
}

static void test_parse_list(_unused_ void **state) {
        check_roundtrip("0-3,8", "0-3,8", 5);
        check_roundtrip("0,1,2,3", "0-3", 4);
        check_roundtrip("  5\n", "5", 1);
        check_roundtrip("", "", 0);
        check_roundtrip("\n", "", 0);
        check_roundtrip("0-1,1-2", "0-2", 3);
        check_roundtrip("8191", "8191", 1);
        check_roundtrip("0,2,4,6,8-15,100-102,4000", "0,2,4,6,8-15,100-102,4000", 16);
}

static void test_parse_list_bad(_unused_ void **state) {
        CpuMask m;

        assert_int_equal(cpumask_parse_list("3-1", &m), -EINVAL);
        assert_int_equal(cpumask_parse_list("a", &m), -EINVAL);
        assert_int_equal(cpumask_parse_list("1,", &m), -EINVAL);
        assert_int_equal(cpumask_parse_list("1-", &m), -EINVAL);
        assert_int_equal(cpumask_parse_list("-1", &m), -EINVAL);
        assert_int_equal(cpumask_parse_list("1 2", &m), -EINVAL);
        assert_int_equal(cpumask_parse_list("8192", &m), -ERANGE);
        assert_int_equal(cpumask_parse_list("99999999999999999999", &m), -ERANGE);
}

static void test_parse_hex(_unused_ void **state) {
        CpuMask m;
        _cleanup_free_ char *s = NULL;

        assert_int_equal(cpumask_parse_hex("00000000,0000ff0f\n", &m), 0);
        s = cpumask_to_list(&m);
        assert_string_equal(s, "0-3,8-15");
        assert_int_equal(cpumask_parse_hex("1,00000000", &m), 0);
        assert_true(cpumask_test(&m, 32));
        assert_int_equal(cpumask_count(&m), 1);
        assert_int_equal(cpumask_parse_hex("xyz", &m), -EINVAL);
        assert_int_equal(cpumask_parse_hex("", &m), -EINVAL);
}

static void test_ops(_unused_ void **state) {
        CpuMask a, b, r;

        assert_int_equal(cpumask_parse_list("0-7", &a), 0);
        assert_int_equal(cpumask_parse_list("4-11", &b), 0);
        cpumask_and(&r, &a, &b);
        assert_int_equal(cpumask_first(&r), 4);
        assert_int_equal(cpumask_last(&r), 7);
        cpumask_or(&r, &a, &b);
        assert_int_equal(cpumask_count(&r), 12);
        cpumask_andnot(&r, &a, &b);
        assert_int_equal(cpumask_count(&r), 4);
        assert_true(cpumask_subset(&r, &a));
        assert_false(cpumask_subset(&a, &r));
        assert_true(cpumask_intersects(&a, &b));
        assert_false(cpumask_intersects(&r, &b));
        assert_false(cpumask_equal(&a, &b));
        cpumask_zero(&r);
        assert_true(cpumask_empty(&r));
        assert_int_equal(cpumask_first(&r), -1);
        assert_int_equal(cpumask_last(&r), -1);
        assert_int_equal(cpumask_set(&r, CPUMASK_MAX), -ERANGE);
        assert_int_equal(cpumask_set(&r, 200), 0);
        assert_int_equal(cpumask_next(&r, 0), 200);
        assert_int_equal(cpumask_next(&r, 200), -1);

        int n = 0;
        CPUMASK_FOREACH(cpu, &b) {
                assert_true(cpu >= 4 && cpu <= 11);
                n++;
        }
        assert_int_equal(n, 8);
}

static void test_bytes(_unused_ void **state) {
        CpuMask m;
        uint8_t buf[CPUMASK_MAX / 8];

        assert_int_equal(cpumask_parse_list("1,9-10", &m), 0);
        assert_int_equal(cpumask_to_bytes(&m, buf), 2);
        assert_int_equal(buf[0], 0x02);
        assert_int_equal(buf[1], 0x06);
        cpumask_zero(&m);
        assert_int_equal(cpumask_to_bytes(&m, buf), 0);
}

static void test_format_truncates(_unused_ void **state) {
        CpuMask m;
        char buf[12];

        assert_int_equal(cpumask_parse_list("0,2,4,6,8,10,12,14", &m), 0);
        cpumask_format(&m, buf, sizeof buf);
        assert_string_equal(buf, "0,2,4,6...");
}

/* Lists of up to 8,192 CPUs in their longest forms (~20 KB), whole both ways. */
static void check_long_list(int step, int run) {
        size_t size = 64 * 1024, n = 0;
        _cleanup_free_ char *in = malloc(size), *out = NULL;
        char small[128];
        CpuMask m;
        int count = 0;

        assert_non_null(in);
        in[0] = 0;
        for (int cpu = 0; cpu + run - 1 < CPUMASK_MAX; cpu += step) {
                if (run == 1)
                        n += (size_t) snprintf(in + n, size - n, "%s%d", n ? "," : "", cpu);
                else
                        n += (size_t) snprintf(in + n, size - n, "%s%d-%d", n ? "," : "", cpu, cpu + run - 1);
                count += run;
        }
        assert_true(n < size);
        assert_int_equal(cpumask_parse_list(in, &m), 0);
        assert_int_equal(cpumask_count(&m), count);
        out = cpumask_to_list(&m);
        assert_non_null(out);
        assert_string_equal(out, in);

        /* Into a small buffer (logs): cut, and it says so. */
        cpumask_format(&m, small, sizeof small);
        assert_true(strlen(small) < sizeof small);
        assert_true(strlen(small) > 100);
        assert_string_equal(small + strlen(small) - 3, "...");
}

static void test_long_lists(_unused_ void **state) {
        CpuMask m;

        check_long_list(2, 1);       /* 0,2,4,...,8190: 4,096 items */
        check_long_list(3, 1);
        check_long_list(4, 2);       /* 0-1,4-5,...,8188-8189: five characters a CPU */
        assert_int_equal(cpumask_parse_list("0-8191\n", &m), 0);
        assert_int_equal(cpumask_count(&m), CPUMASK_MAX);
        assert_int_equal(cpumask_parse_list("0-8192", &m), -ERANGE);
        assert_int_equal(cpumask_parse_list("8192", &m), -ERANGE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_list),  cmocka_unit_test(test_parse_list_bad),
                cmocka_unit_test(test_parse_hex),   cmocka_unit_test(test_ops),
                cmocka_unit_test(test_bytes),       cmocka_unit_test(test_format_truncates),
                cmocka_unit_test(test_long_lists),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
