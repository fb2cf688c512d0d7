/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Text that is not UTF-8 (DESIGN.md): group paths and thread names are bytes. Wherever peltd writes
 * them as text, each byte that is not part of valid UTF-8 is written as the four characters "\xNN"
 * (two lower-case hex digits); everything else is kept as it is, a backslash included, and the
 * output format's own escaping applies afterwards. The escaping is therefore not reversible: the
 * input bytes "\xff" (four characters) and the single byte 0xff come out the same.
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

/* The length of s escaped, without the terminating NUL. */
size_t utf8_escaped_length(const char *s);

/*
 * s as text: s itself when it is valid UTF-8 (nothing allocated, *ret_alloc NULL), else a new
 * string, also stored in *ret_alloc for the caller to free. NULL when out of memory.
 */
const char *utf8_escape(const char *s, char **ret_alloc);

/*
 * s escaped into buf (size bytes, NUL-terminated when size > 0). Cut short where it does not fit,
 * never inside an escape or a multi-byte character. Returns the length written.
 */
size_t utf8_escape_to(const char *s, char *buf, size_t size);
