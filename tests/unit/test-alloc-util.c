/* SPDX-License-Identifier: GPL-2.0-only */
/* array_reserve(): how much room it makes, and what it leaves when it cannot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peltd/alloc-util.h"
#include "peltd/macro.h"

static void test_grows(_unused_ void **state) {
        uint64_t *v = NULL;
        size_t allocated = 0;

        /* Room already there: nothing moves. */
        assert_int_equal(ARRAY_RESERVE(v, allocated, 0, 16), 0);
        assert_null(v);
        assert_int_equal(allocated, 0);

        /* At least min, then twice what there was, or what is needed where that is more. */
        assert_int_equal(ARRAY_RESERVE(v, allocated, 1, 16), 0);
        assert_non_null(v);
        assert_int_equal(allocated, 16);
        v[15] = 7;
        assert_int_equal(ARRAY_RESERVE(v, allocated, 16, 16), 0);
        assert_int_equal(allocated, 16);
        assert_int_equal(ARRAY_RESERVE(v, allocated, 17, 16), 0);
        assert_int_equal(allocated, 32);
        assert_int_equal(v[15], 7);
        assert_int_equal(ARRAY_RESERVE(v, allocated, 100, 16), 0);
        assert_int_equal(allocated, 100);
        v[99] = 1;
        free(v);
}

static void test_too_big(_unused_ void **state) {
        uint64_t *v = NULL;
        size_t allocated = 0;

        assert_int_equal(ARRAY_RESERVE(v, allocated, 4, 0), 0);
        v[3] = 9;
        /* More elements than memory can hold: refused, the array as it was. */
        assert_int_equal(ARRAY_RESERVE(v, allocated, SIZE_MAX / 4, 0), -ENOMEM);
        assert_int_equal(allocated, 4);
        assert_int_equal(v[3], 9);
        free(v);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_grows),
                cmocka_unit_test(test_too_big),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
