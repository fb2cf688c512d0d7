/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cgroup files sample-cgroup.c reads, parsed as it parses them (cgroup-util.c, parse.c,
 * cpumask.c). The input is split at '|' into:
 *
 *   0 cpuacct.usage   1 cpuacct.usage_percpu   2 cpu.stat (v1)   3 cpu.shares
 *   4 cpuset.effective_cpus / cpuset.cpus.effective   5 cpu.stat (v2)   6 cpu.weight
 *   7 tasks / cgroup.threads
 *
 * each cut at its first NUL, as a read into a string sees it. Values that parse are in range
 * (a tid is positive, a weight gives shares of 2..262144, a counter list fits its array and
 * formats back to the same numbers), and a key is never matched by a longer key it begins.
 */
#include <inttypes.h>

#include "fuzz-util.h"
#include "peltd/cgroup-util.h"
#include "peltd/cpumask.h"
#include "peltd/macro.h"
#include "peltd/parse.h"

enum {
        F_USAGE,
        F_PERCPU,
        F_STAT_V1,
        F_SHARES,
        F_CPUS,
        F_STAT_V2,
        F_WEIGHT,
        F_TASKS,
        _F_MAX,
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

static void check_keyed(const char *s, const char *key) {
        _cleanup_free_ char *longer = NULL;
        uint64_t v = 0, w = 0;
        int r = cgroup_parse_keyed_u64(s, key, &v);

        FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
        /* With a longer key in front, which must not match, the answer is the same. */
        FUZZ_CHECK(asprintf(&longer, "%s_x 1\n%s", key, s) > 0);
        FUZZ_CHECK(cgroup_parse_keyed_u64(longer, key, &w) == r);
        if (r == 0)
                FUZZ_CHECK(v == w);
}

static void check_u64(const char *s) {
        uint64_t v;
        int r = safe_atou64(s, &v);

        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
}

static void check_list(const char *s) {
        static const size_t sizes[] = { 1, 4, 512 };

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                _cleanup_free_ uint64_t *v = fuzz_nonnull(malloc(sizes[i] * sizeof *v));
                _cleanup_free_ char *again = NULL;
                int n = cgroup_parse_u64_list(s, v, sizes[i]);
                size_t len = 0;

                FUZZ_CHECK(n == -EINVAL || (n >= 0 && (size_t) n <= sizes[i]));
                if (n <= 0)
                        continue;
                again = fuzz_nonnull(malloc((size_t) n * 21 + 2));
                for (int k = 0; k < n; k++)
                        len += (size_t) sprintf(again + len, "%" PRIu64 " ", v[k]);
                again[len++] = '\n';
                again[len] = 0;
                {
                        _cleanup_free_ uint64_t *w = fuzz_nonnull(malloc(sizes[i] * sizeof *w));

                        FUZZ_CHECK(cgroup_parse_u64_list(again, w, sizes[i]) == n);
                        FUZZ_CHECK(memcmp(v, w, (size_t) n * sizeof *v) == 0);
                }
        }
}

static void check_cpus(char *s) {
        CpuMask m;
        int r = cpumask_parse_list(strstrip_trailing(s), &m);

        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
}

static void check_weight(const char *s) {
        uint64_t v;

        if (safe_atou64(s, &v) < 0 || v < 1 || v > 10000)
                return;
        v = cgroup_weight_to_shares(v);
        FUZZ_CHECK(v >= 2 && v <= 262144);
        v = cgroup_shares_to_weight(v);
        FUZZ_CHECK(v >= 1 && v <= 10000);
}

static void check_tids(const char *s) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;
        int r = cgroup_parse_tids(s, &tids, &n);

        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0)
                return;
        for (size_t i = 0; i < n; i++)
                FUZZ_CHECK(tids[i] > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        FuzzPiece p[_F_MAX];
        char *f[_F_MAX] = {};
        size_t n = fuzz_split(data, size, '|', p, _F_MAX);

        for (size_t i = 0; i < _F_MAX; i++)
                f[i] = i < n ? fuzz_string(p[i].data, p[i].size) : fuzz_string(NULL, 0);

        check_u64(f[F_USAGE]);
        check_list(f[F_PERCPU]);
        check_keyed(f[F_STAT_V1], "throttled_time");
        check_keyed(f[F_STAT_V1], "nr_throttled");
        check_u64(f[F_SHARES]);
        check_cpus(f[F_CPUS]);
        check_keyed(f[F_STAT_V2], "usage_usec");
        check_keyed(f[F_STAT_V2], "throttled_usec");
        check_keyed(f[F_STAT_V2], "nr_throttled");
        check_weight(f[F_WEIGHT]);
        check_tids(f[F_TASKS]);

        for (size_t i = 0; i < _F_MAX; i++)
                free(f[i]);
        return 0;
}
