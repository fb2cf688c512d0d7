/* SPDX-License-Identifier: GPL-2.0-only */
/* Terminal text for peltctl: sanitizing, display widths, ellipsizing and wrapping (peltctl-text.h). */
#include <stdint.h>
#include <wchar.h>

#include "peltd/macro.h"
#include "peltd/peltctl-text.h"
#include "peltd/utf8.h"

#define ELLIPSIS "…"

/* The code point of the valid UTF-8 sequence of len bytes at s. */
static uint32_t decode(const char *s, size_t len) {
        const uint8_t *p = (const uint8_t *) s;
        uint32_t c;

        if (len == 1)
                return p[0];
        c = p[0] & (0x7f >> len);
        for (size_t i = 1; i < len; i++)
                c = (c << 6) | (p[i] & 0x3f);
        return c;
}

static bool is_control(uint32_t c) {
        return c < 0x20 || (c >= 0x7f && c < 0xa0);
}

char *text_sanitize(const char *s) {
        size_t n = strlen(s);
        char *out = malloc(n * 4 + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < n;) {
                size_t len = utf8_sequence_length(s + i, n - i);

                if (len > 0 && !is_control(decode(s + i, len))) {
                        memcpy(o, s + i, len);
                        o += len;
                        i += len;
                        continue;
                }
                /* Not UTF-8, or a control character: each of its bytes as "\xNN". */
                for (size_t k = 0; k < MAX(len, (size_t) 1); k++)
                        o += sprintf(o, "\\x%02x", (uint8_t) s[i + k]);
                i += MAX(len, (size_t) 1);
        }
        *o = 0;
        return out;
}

/* The width of the character at s (len bytes), and its length through *ret_len. */
static size_t char_width(const char *s, size_t n, size_t *ret_len) {
        size_t len = utf8_sequence_length(s, n);
        int w;

        if (len == 0) {
                *ret_len = 1;
                return 1;
        }
        *ret_len = len;
        w = wcwidth((wchar_t) decode(s, len));
        return w < 0 ? 1 : (size_t) w;
}

size_t text_width(const char *s) {
        size_t n = strlen(s), width = 0;

        for (size_t i = 0, len; i < n; i += len)
                width += char_width(s + i, n - i, &len);
        return width;
}

char *text_ellipsize(const char *s, size_t width, bool keep_tail) {
        size_t n = strlen(s), total = text_width(s), used = 0, cut = 0;
        char *out;

        if (total <= width)
                return strdup(s);
        if (width == 0)
                return strdup("");

        /* Keep characters worth width - 1 columns, the ellipsis takes the last one. */
        if (!keep_tail)
                for (size_t i = 0, len, w; i < n; i += len) {
                        w = char_width(s + i, n - i, &len);
                        if (used + w > width - 1)
                                break;
                        used += w;
                        cut = i + len;
                }
        else {
                /* The tail: skip characters from the start until the rest fits. */
                size_t rest = total;

                for (size_t i = 0, len; i < n && rest > width - 1; i += len) {
                        rest -= char_width(s + i, n - i, &len);
                        cut = i + len;
                }
        }

        if (!keep_tail) {
                if (asprintf(&out, "%.*s" ELLIPSIS, (int) cut, s) < 0)
                        return NULL;
        } else if (asprintf(&out, ELLIPSIS "%s", s + cut) < 0)
                return NULL;
        return out;
}

void text_pad(FILE *f, const char *s, size_t width) {
        fputs(s, f);
        for (size_t w = text_width(s); w < width; w++)
                fputc(' ', f);
}

void text_wrap(FILE *f, const char *s, size_t first, size_t indent, size_t width) {
        size_t col = first, n = strlen(s);
        bool line_empty = true;

        for (size_t i = 0; i < n;) {
                size_t end = i, w = 0, len;

                if (s[i] == ' ') {
                        i++;
                        continue;
                }
                while (end < n && s[end] != ' ') {
                        w += char_width(s + end, n - end, &len);
                        end += len;
                }
                /* The word and the space before it fit on this line, or it starts a new one. */
                if (!line_empty && col + 1 + w > width) {
                        fprintf(f, "\n%*s", (int) indent, "");
                        col = indent;
                        line_empty = true;
                }
                if (!line_empty) {
                        fputc(' ', f);
                        col++;
                }
                for (size_t k = i, cw; k < end; k += len) {
                        cw = char_width(s + k, end - k, &len);
                        if (col + cw > width && col > indent) {
                                fprintf(f, "\n%*s", (int) indent, "");
                                col = indent;
                        }
                        fwrite(s + k, 1, len, f);
                        col += cw;
                }
                line_empty = false;
                i = end;
        }
        fputc('\n', f);
}
