/* SPDX-License-Identifier: GPL-2.0-only */
/* Who owns a group by its name: kubelet's hierarchy, the container runtimes' groups, and the rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/owner.h"

static void test_names(_unused_ void **state) {
        for (int o = 0; o < _OWNER_MAX; o++)
                assert_int_equal(group_owner_from_string(group_owner_to_string(o)), o);
        assert_string_equal(group_owner_to_string(OWNER_NONE), "");
        assert_string_equal(group_owner_to_string(OWNER_KUBELET), "kubelet");
        assert_null(group_owner_to_string(_OWNER_MAX));
        assert_int_equal(group_owner_from_string("kubelets"), OWNER_INVALID);
}

static void test_of_path(_unused_ void **state) {
        static const char id[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        char buf[256];

        assert_int_equal(group_owner_of_path("/kubepods"), OWNER_KUBELET);
        assert_int_equal(group_owner_of_path("/kubepods/besteffort/pod1234/abc"), OWNER_KUBELET);
        assert_int_equal(group_owner_of_path("/kubepods.slice/kubepods-burstable.slice"), OWNER_KUBELET);
        assert_int_equal(group_owner_of_path("/peltd/kubepods/x"), OWNER_KUBELET);
        assert_int_equal(group_owner_of_path("/kubepodsx"), OWNER_NONE);
        assert_int_equal(group_owner_of_path("/system.slice/docker-abc.scope"), OWNER_RUNTIME);
        assert_int_equal(group_owner_of_path("/machine.slice/libpod-abc.scope"), OWNER_RUNTIME);
        assert_int_equal(group_owner_of_path("/system.slice/crio-abc.scope"), OWNER_RUNTIME);
        assert_int_equal(group_owner_of_path("/system.slice/cri-containerd-abc.scope"), OWNER_RUNTIME);
        assert_int_equal(group_owner_of_path("/docker/0123456789ab"), OWNER_RUNTIME);
        snprintf(buf, sizeof buf, "/peltd/%s", id);
        assert_int_equal(group_owner_of_path(buf), OWNER_RUNTIME);
        /* One digit short, or not hex: a name like any other. */
        snprintf(buf, sizeof buf, "/peltd/%.63s", id);
        assert_int_equal(group_owner_of_path(buf), OWNER_NONE);
        assert_int_equal(group_owner_of_path("/docker/not-an-id"), OWNER_NONE);
        assert_int_equal(group_owner_of_path("/system.slice/docker.service"), OWNER_NONE);
        assert_int_equal(group_owner_of_path("/docker-"), OWNER_NONE);
        assert_int_equal(group_owner_of_path("/"), OWNER_NONE);
        assert_int_equal(group_owner_of_path(""), OWNER_NONE);
        assert_int_equal(group_owner_of_path("/web"), OWNER_NONE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_of_path),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
