/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Text that is not UTF-8: group paths and thread names are bytes. Wherever peltd writes them as
 * text, each byte that is not part of valid UTF-8, each control character (0x01..0x1f, 0x7f) and
 * the backslash itself are written as the four characters "\xNN" (two lower-case hex digits);
 * everything else is kept as it is, and the output format's own escaping applies afterwards. The
 * form is unambiguous and decodes back to the bytes (utf8_unescape()): the four characters "\xff"
 * come out as "\x5cxff", the byte 0xff as "\xff".
 *
 * Valid UTF-8 is RFC 3629's: no overlong forms, no surrogates (U+D800..U+DFFF), nothing above
 * U+10FFFF, no truncated sequences. Scanning goes byte by byte: a valid sequence is copied whole,
 * any other byte is escaped alone, and scanning resumes at the next byte.
 *
 * Pure: no I/O, no logging.
 */

/* The length (1..4) of the valid UTF-8 sequence at s (at most n bytes), or 0 if there is none. */
size_t utf8_sequence_length(const char *s, size_t n);

/* Whether the string is valid UTF-8 throughout. */
bool utf8_is_valid(const char *s);

/* Whether s holds anything that is written as "\xNN". */
bool utf8_needs_escape(const char *s);

/* The length of s escaped, without the terminating NUL. */
size_t utf8_escaped_length(const char *s);

/*
 * s as text: s itself when nothing in it is escaped (nothing allocated, *ret_alloc NULL), else a new
 * string, also stored in *ret_alloc for the caller to free. NULL when out of memory.
 */
const char *utf8_escape(const char *s, char **ret_alloc);

/*
 * s escaped into buf (size bytes, NUL-terminated when size > 0). Cut short where it does not fit,
 * never inside an escape or a multi-byte character. Returns the length written.
 */
size_t utf8_escape_to(const char *s, char *buf, size_t size);

/*
 * The bytes text names: each "\xNN" (hex digits in either case) decoded, everything else kept.
 * -EINVAL for a backslash that does not start "\xNN" and for "\x00"; -ENOMEM. *ret is the caller's.
 */
int utf8_unescape(const char *s, char **ret);
