/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU lists ("0-3,8") and hex maps ("ff,0000000f"), as cpumask.c parses sysfs and cgroupfs files and
 * AllowedCPUs=. Whatever parses formats back to a list (and a map) that parses to the same mask;
 * the AllowedCPUs= bytes hold the same CPUs; a truncated format fits its buffer.
 */
#include "fuzz-util.h"
#include "peltd/cpumask.h"
#include "peltd/macro.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

/* The map as sysfs writes it: 32-bit words, most significant first, comma-separated. */
static char *format_hex(const CpuMask *m) {
        int last = cpumask_last(m), words = last < 0 ? 1 : last / 32 + 1;
        char *buf = fuzz_nonnull(malloc((size_t) words * 9 + 1)), *p = buf;

        for (int w = words - 1; w >= 0; w--) {
                uint32_t v = (uint32_t) (m->bits[w / 2] >> (32 * (w % 2)));

                p += sprintf(p, "%08x%s", v, w ? "," : "");
        }
        return buf;
}

static void check_mask(const CpuMask *m, size_t format_size) {
        _cleanup_free_ char *list = NULL, *hex = NULL, *small = NULL;
        static uint8_t bytes[CPUMASK_MAX / 8];
        CpuMask again;
        size_t n;

        list = cpumask_to_list(m);
        FUZZ_CHECK(list);
        FUZZ_CHECK(cpumask_parse_list(list, &again) == 0);
        FUZZ_CHECK(cpumask_equal(m, &again));
        FUZZ_CHECK(cpumask_empty(m) == (list[0] == 0));

        hex = format_hex(m);
        FUZZ_CHECK(cpumask_parse_hex(hex, &again) == 0);
        FUZZ_CHECK(cpumask_equal(m, &again));

        n = cpumask_to_bytes(m, bytes);
        FUZZ_CHECK(n == (cpumask_empty(m) ? 0 : (size_t) cpumask_last(m) / 8 + 1));
        for (size_t i = 0; i < n * 8; i++)
                FUZZ_CHECK(!!(bytes[i / 8] & (1u << (i % 8))) == cpumask_test(m, (int) i));

        /* A buffer of any size: the output fits, and is the full list whenever that fits. */
        small = fuzz_nonnull(malloc(format_size + 1));
        small[format_size] = 0x5a;
        cpumask_format(m, small, format_size);
        FUZZ_CHECK(small[format_size] == 0x5a);
        if (format_size > 0) {
                FUZZ_CHECK(strlen(small) < format_size);
                if (strlen(list) + 4 < format_size)
                        FUZZ_CHECK(streq(small, list));
        }

        FUZZ_CHECK(cpumask_count(m) >= 0 && cpumask_count(m) <= CPUMASK_MAX);
        if (!cpumask_empty(m)) {
                FUZZ_CHECK(cpumask_test(m, cpumask_first(m)));
                FUZZ_CHECK(cpumask_test(m, cpumask_last(m)));
                FUZZ_CHECK(cpumask_first(m) <= cpumask_last(m));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size);
        size_t format_size = size > 0 ? data[0] : 0;
        CpuMask m;
        int r;

        r = cpumask_parse_list(s, &m);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0)
                check_mask(&m, format_size);

        r = cpumask_parse_hex(s, &m);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0)
                check_mask(&m, format_size);
        return 0;
}
