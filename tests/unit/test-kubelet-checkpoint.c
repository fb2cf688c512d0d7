/* SPDX-License-Identifier: GPL-2.0-only */
/* kubelet's CPU manager checkpoint from its bytes: what kubelet writes, and what is refused, with why. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "peltd/cpumask.h"
#include "peltd/kubelet-checkpoint.h"
#include "peltd/macro.h"

static KubeletCheckpoint *parse_ok(const char *text) {
        KubeletCheckpoint *c = NULL;
        _cleanup_free_ char *error = NULL;
        int r = kubelet_checkpoint_parse(text, strlen(text), &c, &error);

        if (r < 0)
                fail_msg("%s: %d %s", text, r, error ?: "(no error)");
        assert_null(error);
        return c;
}

/* The error text a refused checkpoint gives. */
static void assert_refused(const char *text, size_t size, const char *want) {
        KubeletCheckpoint *c = NULL;
        _cleanup_free_ char *error = NULL;

        assert_int_equal(kubelet_checkpoint_parse(text, size, &c, &error), -EINVAL);
        assert_null(c);
        assert_non_null(error);
        if (!streq(error, want))
                fail_msg("%s: got \"%s\", want \"%s\"", text, error, want);
}

#define REFUSED(text, want) assert_refused(text, strlen(text), want)

static void assert_cpus(const CpuMask *m, const char *want) {
        _cleanup_free_ char *s = cpumask_to_list(m);

        assert_string_equal(s, want);
}

/* As kubelet writes it (pkg/kubelet/cm/cpumanager/state/checkpoint.go, v2). */
static void test_static(_unused_ void **state) {
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c = parse_ok(
                "{\"policyName\":\"static\",\"defaultCpuSet\":\"0,2-12,14-23\",\"entries\":{"
                "\"235148fe-393f-47a8-a17d-bd55bc1a836b\":{\"app\":\"1,13\",\"sidecar\":\"24\"},"
                "\"a1b2\":{\"db\":\"25-26\"}},\"checksum\":1552716370}\n");

        assert_string_equal(c->policy, "static");
        assert_true(c->is_static);
        assert_cpus(&c->default_cpus, "0,2-12,14-23");
        assert_cpus(&c->exclusive, "1,13,24-26");
        assert_int_equal(c->n_entries, 3);
        assert_string_equal(c->entries[0].pod, "235148fe-393f-47a8-a17d-bd55bc1a836b");
        assert_string_equal(c->entries[0].container, "app");
        assert_cpus(&c->entries[0].cpus, "1,13");
        assert_string_equal(c->entries[1].container, "sidecar");
        assert_string_equal(c->entries[2].pod, "a1b2");
        assert_string_equal(c->entries[2].container, "db");
        assert_cpus(&c->entries[2].cpus, "25-26");
}

/* Static with no exclusive containers (yet): entries absent, null, or empty. */
static void test_static_no_entries(_unused_ void **state) {
        const char *texts[] = {
                "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"checksum\":14413152}",
                "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"entries\":null,\"checksum\":1}",
                "  {\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"entries\":{},\"checksum\":1}  \r\n",
                "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"entries\":{\"pod\":{}}}",
        };

        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c = parse_ok(texts[i]);

                assert_true(c->is_static);
                assert_int_equal(c->n_entries, 0);
                assert_true(cpumask_empty(&c->exclusive));
                assert_cpus(&c->default_cpus, "0-7");
        }
}

/* policyName none (kubelet's default): no CPU is exclusive, whatever entries say. */
static void test_none(_unused_ void **state) {
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c =
                parse_ok("{\"policyName\":\"none\",\"defaultCpuSet\":\"\",\"checksum\":1353318690}");
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *d =
                parse_ok("{\"policyName\":\"none\",\"entries\":{\"p\":{\"c\":\"1\"}}}");

        assert_string_equal(c->policy, "none");
        assert_false(c->is_static);
        assert_true(cpumask_empty(&c->default_cpus));
        assert_true(cpumask_empty(&c->exclusive));
        assert_false(d->is_static);
        assert_int_equal(d->n_entries, 1);
        assert_true(cpumask_empty(&d->exclusive));
}

static void test_refused_json(_unused_ void **state) {
        REFUSED("", "not JSON: it ends early");
        REFUSED("   ", "not JSON: it ends early");
        REFUSED("{\"policyName\":\"static\"", "not JSON: it ends early");
        REFUSED("[1,2]", "expected a JSON object");
        REFUSED("\"static\"", "expected a JSON object");
        REFUSED("{\"policyName\":\"static\"} {}", "not JSON: unexpected character at byte 24");
        assert_refused("{\"policyName\":\"static\"}\0", 25, "not JSON: it holds a NUL byte");
        REFUSED("{policyName:\"static\"}", "not JSON: quoted object property name expected at byte 1");
}

static void test_refused_fields(_unused_ void **state) {
        REFUSED("{}", "policyName: missing");
        REFUSED("{\"policyName\":\"\"}", "policyName: expected a policy's name as a string");
        REFUSED("{\"policyName\":7}", "policyName: expected a policy's name as a string");
        REFUSED("{\"policyName\":\"st\\u0000atic\"}", "policyName: expected a policy's name as a string");
        REFUSED("{\"policyName\":\"static\",\"defaultCpuSet\":\"0-\"}", "defaultCpuSet: \"0-\" is not a CPU list");
        REFUSED("{\"policyName\":\"static\",\"defaultCpuSet\":3}", "defaultCpuSet: expected a CPU list as a string");
        REFUSED("{\"policyName\":\"static\",\"defaultCpuSet\":\"99999\"}", "defaultCpuSet: \"99999\" names a CPU above 8191");
        REFUSED("{\"policyName\":\"static\",\"entries\":[]}", "entries: expected an object of pods");
        REFUSED("{\"policyName\":\"static\",\"entries\":{\"pod\":\"1-2\"}}",
                "entries.pod: expected an object of containers and their CPUs");
        REFUSED("{\"policyName\":\"static\",\"entries\":{\"pod\":{\"app\":\"1-\"}}}", "entries.pod.app: \"1-\" is not a CPU list");
        REFUSED("{\"policyName\":\"static\",\"entries\":{\"pod\":{\"app\":\"3-1\"}}}", "entries.pod.app: \"3-1\" is not a CPU list");
        REFUSED("{\"policyName\":\"static\",\"entries\":{\"pod\":{\"app\":null}}}", "entries.pod.app: expected a CPU list as a string");
        REFUSED("{\"policyName\":\"static\",\"entries\":{\"pod\":{\"\":\"1\"}}}", "entries.pod.: a container without a name");
        REFUSED("{\"policyName\":\"static\",\"entries\":{\"\":{}}}", "entries: a pod without a UID");
        REFUSED("{\"policyName\":\"static\",\"checksum\":\"12\"}", "checksum: expected an integer");
}

/* Names and values in the error are escaped (utf8.h: bytes that are not UTF-8) and long ones cut. */
static void test_error_text(_unused_ void **state) {
        char text[512], x[201];

        REFUSED("{\"policyName\":\"static\",\"entries\":{\"p\\u00e9\xff\":{\"a\":\"1\xfe\"}}}",
                "entries.p\u00e9\\xff.a: \"1\\xfe\" is not a CPU list");
        memset(x, 'x', 200);
        x[200] = '\0';
        snprintf(text, sizeof text, "{\"policyName\":\"static\",\"defaultCpuSet\":\"%s\"}", x);
        assert_refused(text, strlen(text), "defaultCpuSet: \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\" is not a CPU list");
}

/* The bytes given, not up to a NUL: a checkpoint in the middle of a buffer. */
static void test_size(_unused_ void **state) {
        const char *text = "{\"policyName\":\"static\",\"entries\":{\"p\":{\"c\":\"1\"}}}garbage";
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c = NULL;

        assert_int_equal(kubelet_checkpoint_parse(text, strlen(text) - 7, &c, NULL), 0);
        assert_cpus(&c->exclusive, "1");
        assert_int_equal(kubelet_checkpoint_parse(text, strlen(text), &c, NULL), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_static),
                cmocka_unit_test(test_static_no_entries),
                cmocka_unit_test(test_none),
                cmocka_unit_test(test_refused_json),
                cmocka_unit_test(test_refused_fields),
                cmocka_unit_test(test_error_text),
                cmocka_unit_test(test_size),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
