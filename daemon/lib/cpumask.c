/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"

void cpumask_zero(CpuMask *m) {
        memset(m, 0, sizeof *m);
}

int cpumask_set(CpuMask *m, int cpu) {
        if (cpu < 0 || cpu >= CPUMASK_MAX)
                return -ERANGE;
        m->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
        return 0;
}

void cpumask_clear(CpuMask *m, int cpu) {
        if (cpu >= 0 && cpu < CPUMASK_MAX)
                m->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

bool cpumask_test(const CpuMask *m, int cpu) {
        if (cpu < 0 || cpu >= CPUMASK_MAX)
                return false;
        return m->bits[cpu / 64] & (UINT64_C(1) << (cpu % 64));
}

/* The bits set in x; the baseline x86-64 ISA has no popcount instruction, and the library's is a call. */
static int popcount64(uint64_t x) {
        x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
        x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
        x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
        return (int) ((x * UINT64_C(0x0101010101010101)) >> 56);
}

int cpumask_count(const CpuMask *m) {
        int n = 0;

        /* Masks are mostly empty words (8192 bits for a machine's few CPUs): count the words set. */
        for (size_t i = 0; i < CPUMASK_WORDS; i++)
                if (m->bits[i])
                        n += popcount64(m->bits[i]);
        return n;
}

bool cpumask_empty(const CpuMask *m) {
        for (size_t i = 0; i < CPUMASK_WORDS; i++)
                if (m->bits[i])
                        return false;
        return true;
}

bool cpumask_equal(const CpuMask *a, const CpuMask *b) {
        return memcmp(a->bits, b->bits, sizeof a->bits) == 0;
}

bool cpumask_subset(const CpuMask *a, const CpuMask *b) {
        for (size_t i = 0; i < CPUMASK_WORDS; i++)
                if (a->bits[i] & ~b->bits[i])
                        return false;
        return true;
}

bool cpumask_intersects(const CpuMask *a, const CpuMask *b) {
        for (size_t i = 0; i < CPUMASK_WORDS; i++)
                if (a->bits[i] & b->bits[i])
                        return true;
        return false;
}

void cpumask_and(CpuMask *ret, const CpuMask *a, const CpuMask *b) {
        for (size_t i = 0; i < CPUMASK_WORDS; i++)
                ret->bits[i] = a->bits[i] & b->bits[i];
}

void cpumask_or(CpuMask *ret, const CpuMask *a, const CpuMask *b) {
        for (size_t i = 0; i < CPUMASK_WORDS; i++)
                ret->bits[i] = a->bits[i] | b->bits[i];
}

void cpumask_andnot(CpuMask *ret, const CpuMask *a, const CpuMask *b) {
        for (size_t i = 0; i < CPUMASK_WORDS; i++)
                ret->bits[i] = a->bits[i] & ~b->bits[i];
}

int cpumask_next(const CpuMask *m, int after) {
        int cpu = after + 1;

        if (cpu < 0)
                cpu = 0;
        while (cpu < CPUMASK_MAX) {
                uint64_t w = m->bits[cpu / 64] >> (cpu % 64);

                if (w)
                        return cpu + __builtin_ctzll(w);
                cpu = (cpu / 64 + 1) * 64;
        }
        return -1;
}

int cpumask_first(const CpuMask *m) {
        return cpumask_next(m, -1);
}

int cpumask_last(const CpuMask *m) {
        for (int i = CPUMASK_WORDS - 1; i >= 0; i--)
                if (m->bits[i])
                        return i * 64 + 63 - __builtin_clzll(m->bits[i]);
        return -1;
}

static int parse_cpu(const char **p, int *ret) {
        char *end;
        unsigned long v;

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        errno = 0;
        v = strtoul(*p, &end, 10);
        if (errno == ERANGE || v >= CPUMASK_MAX)
                return -ERANGE;
        *p = end;
        *ret = (int) v;
        return 0;
}

int cpumask_parse_list(const char *s, CpuMask *ret) {
        CpuMask m;
        const char *p = s;
        int r;

        cpumask_zero(&m);
        while (isspace((unsigned char) *p))
                p++;

        while (*p && !isspace((unsigned char) *p)) {
                int a, b;

                r = parse_cpu(&p, &a);
                if (r < 0)
                        return r;
                b = a;
                if (*p == '-') {
                        p++;
                        r = parse_cpu(&p, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                }
                for (int c = a; c <= b; c++)
                        (void) cpumask_set(&m, c);
                if (*p == ',') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                } else if (*p && !isspace((unsigned char) *p))
                        return -EINVAL;
                else
                        break;
        }

        while (isspace((unsigned char) *p))
                p++;
        if (*p)
                return -EINVAL;
        *ret = m;
        return 0;
}

int cpumask_parse_hex(const char *s, CpuMask *ret) {
        CpuMask m;
        const char *p = s, *end;
        int bit = 0;

        while (isspace((unsigned char) *p))
                p++;
        end = p + strlen(p);
        while (end > p && isspace((unsigned char) end[-1]))
                end--;
        if (end == p)
                return -EINVAL;

        /* Walk from the least significant digit. */
        cpumask_zero(&m);
        for (const char *q = end; q > p; q--) {
                char c = q[-1];
                int v;

                if (c == ',')
                        continue;
                if (!isxdigit((unsigned char) c))
                        return -EINVAL;
                v = isdigit((unsigned char) c) ? c - '0' : tolower((unsigned char) c) - 'a' + 10;
                for (int j = 0; j < 4; j++, bit++)
                        if (v & (1 << j)) {
                                if (cpumask_set(&m, bit) < 0)
                                        return -ERANGE;
                        }
        }
        *ret = m;
        return 0;
}

const char *cpumask_format(const CpuMask *m, char *buf, size_t size) {
        size_t n = 0;
        bool truncated = false;

        if (size == 0)
                return buf;
        buf[0] = 0;
        for (int a = cpumask_first(m); a >= 0;) {
                int b = a;
                char item[32];
                int l;

                while (cpumask_test(m, b + 1))
                        b++;
                if (b == a)
                        l = snprintf(item, sizeof item, "%s%d", n ? "," : "", a);
                else
                        l = snprintf(item, sizeof item, "%s%d-%d", n ? "," : "", a, b);
                if (n + (size_t) l + 4 >= size) {
                        truncated = true;
                        break;
                }
                memcpy(buf + n, item, (size_t) l + 1);
                n += (size_t) l;
                a = cpumask_next(m, b);
        }
        if (truncated && size >= 4)
                strcpy(buf + MIN(n, size - 4), "...");
        return buf;
}

char *cpumask_to_list(const CpuMask *m) {
        /* At most 5 characters a CPU ("dddd," or half of "dddd-dddd,"), plus the slack cpumask_format() keeps. */
        size_t size = (size_t) cpumask_count(m) * 6 + 8;
        char *buf = malloc(size);

        if (!buf)
                return NULL;
        return (char *) cpumask_format(m, buf, size);
}

size_t cpumask_to_bytes(const CpuMask *m, uint8_t *ret) {
        int last = cpumask_last(m);

        if (last < 0)
                return 0;
        memset(ret, 0, (size_t) last / 8 + 1);
        CPUMASK_FOREACH(cpu, m)
                ret[cpu / 8] |= (uint8_t) (1u << (cpu % 8));
        return (size_t) last / 8 + 1;
}
