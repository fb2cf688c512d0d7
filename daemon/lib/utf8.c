/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peltd/utf8.h"

/*
 * RFC 3629, section 4 (the well-formed byte sequences):
 *
 *   U+0000..U+007F     00..7F
 *   U+0080..U+07FF     C2..DF 80..BF                 (C0, C1: overlong)
 *   U+0800..U+0FFF     E0     A0..BF 80..BF          (E0 80..9F: overlong)
 *   U+1000..U+CFFF     E1..EC 80..BF 80..BF
 *   U+D000..U+D7FF     ED     80..9F 80..BF          (ED A0..BF: surrogates)
 *   U+E000..U+FFFF     EE..EF 80..BF 80..BF
 *   U+10000..U+3FFFF   F0     90..BF 80..BF 80..BF   (F0 80..8F: overlong)
 *   U+40000..U+FFFFF   F1..F3 80..BF 80..BF 80..BF
 *   U+100000..U+10FFFF F4     80..8F 80..BF 80..BF   (F4 90..: above U+10FFFF; F5..FF never)
 *
 * The second byte has the ranges above; every later one is 80..BF.
 */
size_t utf8_sequence_length(const char *s, size_t n) {
        const uint8_t *p = (const uint8_t *) s;
        uint8_t lo = 0x80, hi = 0xbf;
        size_t len;

        if (n == 0)
                return 0;
        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                len = 2;
        else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                len = 3;
                if (p[0] == 0xe0)
                        lo = 0xa0;
                else if (p[0] == 0xed)
                        hi = 0x9f;
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                len = 4;
                if (p[0] == 0xf0)
                        lo = 0x90;
                else if (p[0] == 0xf4)
                        hi = 0x8f;
        } else
                return 0; /* a continuation byte, C0, C1 or F5..FF */

        if (n < len || p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (p[i] < 0x80 || p[i] > 0xbf)
                        return 0;
        return len;
}

/* The bytes of a NUL-terminated string from s on, at most 4 (a sequence never holds a NUL). */
static size_t avail(const char *s) {
        return strnlen(s, 4);
}

bool utf8_is_valid(const char *s) {
        while (*s) {
                size_t k;

                /* ASCII, by far the most common, one byte at a time without the table. */
                if ((uint8_t) *s < 0x80) {
                        s++;
                        continue;
                }
                k = utf8_sequence_length(s, avail(s));
                if (k == 0)
                        return false;
                s += k;
        }
        return true;
}

/*
 * The bytes at s written as they are (k > 0), or as "\xNN" (0): a byte that starts no valid
 * sequence, a control character (0x01..0x1f, 0x7f) and the backslash itself, so that the form
 * decodes back to the bytes and two different names never print the same.
 */
static size_t kept_length(const char *s) {
        size_t k = utf8_sequence_length(s, avail(s));

        if (k == 1 && ((uint8_t) *s < 0x20 || *s == 0x7f || *s == '\\'))
                return 0;
        return k;
}

bool utf8_needs_escape(const char *s) {
        while (*s) {
                size_t k = kept_length(s);

                if (k == 0)
                        return true;
                s += k;
        }
        return false;
}

size_t utf8_escaped_length(const char *s) {
        size_t n = 0;

        while (*s) {
                size_t k = kept_length(s);

                if (k == 0) {
                        n += 4;
                        s++;
                } else {
                        n += k;
                        s += k;
                }
        }
        return n;
}

size_t utf8_escape_to(const char *s, char *buf, size_t size) {
        static const char hex[] = "0123456789abcdef";
        size_t n = 0;

        if (size == 0)
                return 0;
        while (*s) {
                size_t k = kept_length(s);

                if (k == 0) {
                        uint8_t b = (uint8_t) *s;

                        if (n + 4 >= size)
                                break;
                        buf[n++] = '\\';
                        buf[n++] = 'x';
                        buf[n++] = hex[b >> 4];
                        buf[n++] = hex[b & 0xf];
                        s++;
                } else {
                        if (n + k >= size)
                                break;
                        memcpy(buf + n, s, k);
                        n += k;
                        s += k;
                }
        }
        buf[n] = 0;
        return n;
}

const char *utf8_escape(const char *s, char **ret_alloc) {
        size_t n;
        char *buf;

        *ret_alloc = NULL;
        if (!utf8_needs_escape(s))
                return s;
        n = utf8_escaped_length(s);
        buf = malloc(n + 1);
        if (!buf)
                return NULL;
        (void) utf8_escape_to(s, buf, n + 1);
        *ret_alloc = buf;
        return buf;
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        c |= 0x20;
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int utf8_unescape(const char *s, char **ret) {
        char *out = malloc(strlen(s) + 1), *o = out;

        if (!out)
                return -ENOMEM;
        while (*s) {
                int hi, lo;

                if (*s != '\\') {
                        *o++ = *s++;
                        continue;
                }
                hi = s[1] == 'x' ? hex_digit(s[2]) : -1;
                lo = hi >= 0 ? hex_digit(s[3]) : -1;
                if (lo < 0 || (hi | lo) == 0) {
                        free(out);
                        return -EINVAL;
                }
                *o++ = (char) (hi << 4 | lo);
                s += 4;
        }
        *o = 0;
        *ret = out;
        return 0;
}
