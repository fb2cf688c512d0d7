/* SPDX-License-Identifier: GPL-2.0-only */
/* The groups' table of "status" and "groups", and the frame of "top" (peltctl-table.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "peltd/macro.h"
#include "peltd/peltctl-table.h"
#include "peltd/peltctl-text.h"

#define COL_UTIL 6
#define COL_RUNNABLE 8
#define COL_SHARES 6
#define COL_CPUS_MAX 16
#define COL_GAP 2
#define REASON_INDENT 4

/* A row's owner as a column shows it: "-" when peltd places it or the daemon did not say. */
static const char *owner_text(const Row *row) {
        return row->details && !isempty(row->owner) ? row->owner : "-";
}

static const char *policy_text(const Row *row) {
        return isempty(row->policy) ? "-" : row->policy;
}

/* The widths of the columns that follow their values: path, CPUs (capped), policy and owner. */
typedef struct Widths {
        size_t path, cpus, policy, owner;
} Widths;

static int measure(const Row *rows, size_t n, Widths *w) {
        *w = (Widths){ strlen("GROUP"), strlen("CPUS"), strlen("POLICY"), strlen("OWNER") };
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = text_sanitize(rows[i].path), *c = text_sanitize(rows[i].cpus),
                                    *pol = text_sanitize(policy_text(&rows[i])), *o = text_sanitize(owner_text(&rows[i]));

                if (!p || !c || !pol || !o)
                        return -ENOMEM;
                w->path = MAX(w->path, text_width(p));
                w->cpus = MAX(w->cpus, text_width(c));
                w->policy = MAX(w->policy, text_width(pol));
                w->owner = MAX(w->owner, text_width(o));
        }
        w->cpus = MIN(w->cpus, (size_t) COL_CPUS_MAX);
        return 0;
}

/* s sanitized and cut to width (keep_tail: its end kept), or NULL. */
static char *cell(const char *s, size_t width, bool keep_tail) {
        _cleanup_free_ char *t = text_sanitize(s);

        return t ? text_ellipsize(t, width, keep_tail) : NULL;
}

static int table_row(FILE *f, const Row *row, const Widths *w, size_t width) {
        _cleanup_free_ char *p = cell(row->path, w->path, true), *c = cell(row->cpus, w->cpus, false),
                            *pol = cell(policy_text(row), w->policy, false), *o = cell(owner_text(row), w->owner, false),
                            *why = cell(row->reason, width - REASON_INDENT, false);

        if (!p || !c || !pol || !o || !why)
                return -ENOMEM;
        text_pad(f, p, w->path);
        fprintf(f, "%*.2f%*.2f%*" PRIu64 "%*s", COL_GAP + COL_UTIL, row->util / 1024.0, COL_GAP + COL_RUNNABLE,
                row->runnable / 1024.0, COL_GAP + COL_SHARES, row->shares, COL_GAP, "");
        text_pad(f, c, w->cpus);
        fprintf(f, "%*s", COL_GAP, "");
        text_pad(f, pol, w->policy);
        fprintf(f, "%*s%s\n", COL_GAP, "", o);
        if (!isempty(why))
                fprintf(f, "%*s%s\n", REASON_INDENT, "", why);
        return 0;
}

int table_print(FILE *f, const Row *rows, size_t n, size_t width) {
        size_t fixed;
        Widths w;
        int r;

        if (n == 0) {
                fputs("No managed groups.\n", f);
                return 0;
        }
        r = measure(rows, n, &w);
        if (r < 0)
                return r;
        width = MAX(width, (size_t) 80);
        /* At most 6+8+6+16+11+9 columns and 6 gaps: 68, so a path keeps at least 12 of 80. */
        fixed = COL_UTIL + COL_RUNNABLE + COL_SHARES + w.cpus + w.policy + w.owner + 6 * COL_GAP;
        w.path = MIN(w.path, width - fixed);

        text_pad(f, "GROUP", w.path);
        fprintf(f, "%*s%*s%*s%*s", COL_GAP + COL_UTIL, "UTIL", COL_GAP + COL_RUNNABLE, "RUNNABLE", COL_GAP + COL_SHARES,
                "SHARES", COL_GAP, "");
        text_pad(f, "CPUS", w.cpus);
        fprintf(f, "%*s", COL_GAP, "");
        text_pad(f, "POLICY", w.policy);
        fprintf(f, "%*sOWNER\n", COL_GAP, "");
        for (size_t i = 0; i < n; i++) {
                r = table_row(f, &rows[i], &w, width);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- top -------------------------------------------------------------------------------------- */

/* top's numbers are narrower than the table's (up to 99.99 CPUs): the reason gets the room. */
#define TOP_UTIL 5
#define TOP_RUNNABLE 5
#define TOP_CHANGES 7
#define TOP_HEADER_LINES 3            /* the header, a blank line, the columns' names */
#define TOP_PATH_MIN 12

/* Busiest first; equal util by path, so that rows do not swap places between frames. */
static int by_util(const void *a, const void *b) {
        const Row *x = a, *y = b;

        if (x->util != y->util)
                return x->util < y->util ? 1 : -1;
        return strcmp(x->path, y->path);
}

static int top_row(FILE *f, const Row *row, const Widths *w, size_t reason_w) {
        _cleanup_free_ char *p = cell(row->path, w->path, true), *c = cell(row->cpus, w->cpus, false),
                            *o = cell(owner_text(row), w->owner, false), *why = cell(row->reason, reason_w, false);

        if (!p || !c || !o || !why)
                return -ENOMEM;
        text_pad(f, p, w->path);
        fprintf(f, "%*.2f%*.2f%*s", COL_GAP + TOP_UTIL, row->util / 1024.0, COL_GAP + TOP_RUNNABLE,
                row->runnable / 1024.0, COL_GAP, "");
        text_pad(f, c, w->cpus);
        fprintf(f, "%*" PRIu64 "%*s", COL_GAP + COL_SHARES, row->shares, COL_GAP, "");
        text_pad(f, o, w->owner);
        if (row->details)
                fprintf(f, "%*" PRIu64 "%*s", COL_GAP + TOP_CHANGES, row->changes, COL_GAP, "");
        else
                fprintf(f, "%*s%*s", COL_GAP + TOP_CHANGES, "-", COL_GAP, "");
        fprintf(f, "%s\n", why);
        return 0;
}

/* "policy P, backend B, N rounds, M placement changes, K groups", cut to width, and a blank line. */
static int top_header(FILE *f, const TopHeader *h, size_t n, size_t width) {
        _cleanup_free_ char *text = NULL, *safe = NULL, *cut = NULL;

        if (asprintf(&text, "policy %s, backend %s, %" PRIu64 " rounds, %" PRIu64 " placement change%s, %zu group%s",
                     h->policy, h->backend, h->rounds, h->changes, h->changes == 1 ? "" : "s", n, n == 1 ? "" : "s") < 0)
                return -ENOMEM;
        safe = text_sanitize(text);
        cut = safe ? text_ellipsize(safe, width, false) : NULL;
        if (!cut)
                return -ENOMEM;
        fprintf(f, "%s\n\n", cut);
        return 0;
}

int top_print(FILE *f, const TopHeader *h, Row *rows, size_t n, size_t width, size_t height) {
        _cleanup_free_ char *reason = NULL;
        size_t fixed, rest, shown = n;
        Widths w;
        int r;

        qsort(rows, n, sizeof *rows, by_util);
        r = measure(rows, n, &w);
        if (r < 0)
                return r;
        width = MAX(width, (size_t) 80);
        fixed = TOP_UTIL + TOP_RUNNABLE + w.cpus + COL_SHARES + w.owner + TOP_CHANGES + 7 * COL_GAP;
        rest = width - fixed;
        /* The path and the reason share what is left: the path at most half of it (but 12). */
        w.path = MIN(w.path, MAX(rest / 2, (size_t) TOP_PATH_MIN));
        if (height > 0 && n > height - MIN(height, (size_t) TOP_HEADER_LINES))
                shown = height > TOP_HEADER_LINES + 1 ? height - TOP_HEADER_LINES - 1 : 0;

        r = top_header(f, h, n, width);
        if (r < 0)
                return r;
        text_pad(f, "GROUP", w.path);
        fprintf(f, "%*s%*s%*s", COL_GAP + TOP_UTIL, "UTIL", COL_GAP + TOP_RUNNABLE, "RUN", COL_GAP, "");
        text_pad(f, "CPUS", w.cpus);
        fprintf(f, "%*s%*s", COL_GAP + COL_SHARES, "SHARES", COL_GAP, "");
        text_pad(f, "OWNER", w.owner);
        reason = text_ellipsize("REASON", rest - w.path, false);
        if (!reason)
                return -ENOMEM;
        fprintf(f, "%*s%*s%s\n", COL_GAP + TOP_CHANGES, "CHANGES", COL_GAP, "", reason);
        for (size_t i = 0; i < shown; i++) {
                r = top_row(f, &rows[i], &w, rest - w.path);
                if (r < 0)
                        return r;
        }
        if (shown < n)
                fprintf(f, "… %zu more group%s\n", n - shown, n - shown == 1 ? "" : "s");
        return 0;
}
