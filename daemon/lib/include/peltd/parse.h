/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * Strict number parsing: the whole string must be the number (surrounding whitespace allowed, as
 * kernel files end in a newline). Returns 0, -EINVAL (not a number) or -ERANGE (does not fit).
 * Never atoi.
 */
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi64(const char *s, int64_t *ret);
int safe_atou(const char *s, unsigned *ret);
int safe_atoi(const char *s, int *ret);
/* A decimal with an optional fraction ("1.5"); no exponent, no inf/nan. */
int safe_atod(const char *s, double *ret);

/* yes/no/true/false/1/0 (case-insensitive; also on/off). Returns 1, 0 or -EINVAL. */
int parse_boolean(const char *s);

/* Splits s at whitespace into a NULL-terminated vector; returns NULL on OOM. */
char **strv_split_whitespace(const char *s);
size_t strv_length(char *const *l);

/* Removes trailing whitespace (and NUL padding already cut by the reader) in place. */
char *strstrip_trailing(char *s);

/* The INI syntax's limits, shared by peltd's reader (ini.h) and peltctl's drop-in editor. */
/* inih splits longer lines silently: peltd refuses them. */
#define INI_LINE_MAX 199
/* Configuration and plan files are at most this long (1 MiB); a longer one is refused. */
#define INI_FILE_MAX (1024U * 1024)

/*
 * As inih's find_chars_or_comment() with inline comments on: the index of the first of chars in
 * s[0..n), or of an inline comment (';' after whitespace), or n.
 */
size_t ini_find_chars_or_comment(const char *s, size_t n, const char *chars);
