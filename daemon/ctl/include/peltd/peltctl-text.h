/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Text for a terminal, as peltctl prints it. What the daemon sends is UTF-8 already (bytes that are
 * not, as "\xNN"); a control character in a group's name could still move the cursor or retitle
 * the terminal, so text_sanitize() writes those (C0, DEL, C1) as "\xNN" too, byte by byte, and any
 * byte that is not UTF-8 likewise. Widths are display columns: wcwidth() of each character under
 * the process's LC_CTYPE (peltctl sets C.UTF-8), one for a character it does not know.
 *
 * Pure: no I/O but the FILE given, no logging. NULL means out of memory.
 */

/* s with control characters and bytes that are not UTF-8 as "\xNN". */
char *text_sanitize(const char *s);

/* The display width of s (sanitized text). */
size_t text_width(const char *s);

/*
 * s if it fits in width columns, else its longest start (keep_tail: end) that fits with "…" put
 * where it was cut. width 0 gives "".
 */
char *text_ellipsize(const char *s, size_t width, bool keep_tail);

/* Writes s and then spaces up to width columns (nothing more when s is as wide or wider). */
void text_pad(FILE *f, const char *s, size_t width);

/*
 * Writes s wrapped at spaces into lines of at most width columns; the first line starts at column
 * first (already written by the caller), later ones with indent spaces. A word wider than a line
 * is cut where the line ends. Ends with a newline.
 */
void text_wrap(FILE *f, const char *s, size_t first, size_t indent, size_t width);
