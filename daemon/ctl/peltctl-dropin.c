/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Editing peltctl's drop-in (peltctl-dropin.h). The text is cut into lines, each classified the way
 * inih reads it; the lines of the setting being changed are dropped (with their continuation
 * lines), and the new "Key=Value" line takes the place of the first one. Nothing else moves.
 */
#include <ctype.h>
#include <inttypes.h>

#include "peltd/alloc-util.h"
#include "peltd/cgroup-path.h"
#include "peltd/macro.h"
#include "peltd/parse.h"
#include "peltd/peltctl-dropin.h"
#include "peltd/policy-name.h"
#include "peltd/utf8.h"

#define SHARES_MIN 2
#define SHARES_MAX 262144

typedef enum LineKind {
        LINE_BLANK,
        LINE_COMMENT,
        LINE_SECTION,
        LINE_KEY,
        LINE_CONTINUATION,
        LINE_OTHER,                  /* what inih cannot parse: kept, peltd will name it */
} LineKind;

typedef struct Line {
        const char *start;
        size_t len;                  /* without the newline */
        LineKind kind;
        bool in_match;               /* inside a section the setting belongs to */
        bool drop;
} Line;

typedef struct Edit {
        const char *section;         /* "Daemon" or "Group" */
        const char *path;            /* the [Group PATH], normalised; NULL for [Daemon] */
        const char *key;
        const char *line;            /* the new "Key=Value" line; NULL: remove the key */
} Edit;

/* Whether the section header [inner] (the text between '[' and ']') is the edit's section. */
static bool section_matches(const Edit *e, const char *inner, size_t n) {
        _cleanup_free_ char *copy = strndup(inner, n), *norm = NULL;
        char *name, *arg, *end;

        if (!copy)
                return false;
        name = copy;
        while (isspace((unsigned char) *name))
                name++;
        arg = name;
        while (*arg && !isspace((unsigned char) *arg))
                arg++;
        if (*arg)
                *arg++ = 0;
        while (isspace((unsigned char) *arg))
                arg++;
        end = arg + strlen(arg);
        while (end > arg && isspace((unsigned char) end[-1]))
                *--end = 0;

        if (!streq(name, e->section))
                return false;
        if (!e->path)
                return *arg == 0;
        return *arg && cgroup_path_normalize(arg, &norm) >= 0 && streq(norm, e->path);
}

/* Classifies the lines as inih reads them and marks what the edit drops. */
static void classify(Line *lines, size_t n, const Edit *e) {
        bool after_key = false, in_match = false, dropping = false;

        for (size_t i = 0; i < n; i++) {
                Line *l = &lines[i];
                size_t skip = 0, end;

                while (skip < l->len && isspace((unsigned char) l->start[skip]))
                        skip++;
                if (skip == l->len) {
                        l->kind = LINE_BLANK;
                        l->in_match = in_match;
                        continue;
                }
                if (l->start[skip] == '#' || l->start[skip] == ';')
                        l->kind = LINE_COMMENT;
                else if (after_key && skip > 0) {
                        l->kind = LINE_CONTINUATION;
                        l->drop = dropping;
                } else if (l->start[skip] == '[') {
                        end = skip + 1 + ini_find_chars_or_comment(l->start + skip + 1, l->len - skip - 1, "]");
                        if (end < l->len && l->start[end] == ']') {
                                l->kind = LINE_SECTION;
                                in_match = section_matches(e, l->start + skip + 1, end - skip - 1);
                                after_key = dropping = false;
                        } else
                                l->kind = LINE_OTHER;
                } else {
                        end = skip + ini_find_chars_or_comment(l->start + skip, l->len - skip, "=:");
                        if (end < l->len && (l->start[end] == '=' || l->start[end] == ':')) {
                                size_t k = end;

                                while (k > skip && isspace((unsigned char) l->start[k - 1]))
                                        k--;
                                l->kind = LINE_KEY;
                                after_key = true;
                                dropping = in_match && k - skip == strlen(e->key) &&
                                           strneq(l->start + skip, e->key, k - skip);
                                l->drop = dropping;
                        } else
                                l->kind = LINE_OTHER;
                }
                l->in_match = in_match;
        }
}

/* A matching section left with neither keys nor comments (nor lines peltd would complain of) goes. */
static void drop_empty_sections(Line *lines, size_t n) {
        for (size_t i = 0; i < n; i++) {
                size_t j;
                bool empty = true;

                if (lines[i].kind != LINE_SECTION || !lines[i].in_match)
                        continue;
                for (j = i + 1; j < n && lines[j].kind != LINE_SECTION; j++)
                        if (lines[j].kind != LINE_BLANK && !lines[j].drop)
                                empty = false;
                if (!empty)
                        continue;
                /* With its blank lines: those before the next section now set that one apart. */
                for (size_t k = i; k < j; k++)
                        lines[k].drop = true;
                /* The last section: the blank line that set it apart from what came before. */
                if (j == n && i > 0 && lines[i - 1].kind == LINE_BLANK)
                        lines[i - 1].drop = true;
        }
}

/* Cuts text into lines (a last line without a newline counts); *ret NULL for empty text. */
static int split_lines(const char *text, Line **ret, size_t *ret_n) {
        _cleanup_free_ Line *lines = NULL;
        size_t n = 0, allocated = 0;

        for (const char *p = text; *p;) {
                const char *nl = strchrnul(p, '\n');

                if (ARRAY_RESERVE(lines, allocated, n + 1, 32) < 0)
                        return -ENOMEM;
                lines[n++] = (Line){ .start = p, .len = (size_t) (nl - p) };
                p = *nl ? nl + 1 : nl;
        }
        *ret = TAKE_PTR(lines);
        *ret_n = n;
        return 0;
}

static int apply_edit(const char *text, const Edit *e, char **ret) {
        _cleanup_free_ Line *lines = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, size = 0, at = SIZE_MAX;
        bool written = false, last_blank = true, after_key = false;
        FILE *f;
        int r;

        r = split_lines(text, &lines, &n);
        if (r < 0)
                return r;
        classify(lines, n, e);

        if (e->line) {
                /* In place of the first line dropped, else after the first matching section's last key. */
                for (size_t i = 0; i < n && at == SIZE_MAX; i++)
                        if (lines[i].drop && lines[i].kind == LINE_KEY)
                                at = i;
                for (size_t i = 0; i < n && at == SIZE_MAX; i++) {
                        if (lines[i].kind != LINE_SECTION || !lines[i].in_match)
                                continue;
                        at = i;
                        for (size_t j = i + 1; j < n && lines[j].kind != LINE_SECTION; j++)
                                if (lines[j].kind == LINE_KEY || lines[j].kind == LINE_CONTINUATION)
                                        at = j;
                }
        } else
                drop_empty_sections(lines, n);

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        if (!startswith(text, DROPIN_HEADER)) {
                fputs(DROPIN_HEADER, f);
                last_blank = false;
        }
        for (size_t i = 0; i < n; i++) {
                if (i == at && lines[i].drop) {
                        fprintf(f, "%s\n", e->line);
                        written = after_key = true;
                        last_blank = false;
                }
                if (!lines[i].drop) {
                        const char *start = lines[i].start;
                        size_t len = lines[i].len;

                        /*
                         * An indented line that was no continuation (no key before it in its
                         * section) would become one after a key line written before it: its
                         * indent, which meant nothing, goes.
                         */
                        if (after_key && lines[i].kind != LINE_BLANK && lines[i].kind != LINE_COMMENT && lines[i].kind != LINE_CONTINUATION)
                                while (len > 0 && isspace((unsigned char) *start)) {
                                        start++;
                                        len--;
                                }
                        fprintf(f, "%.*s\n", (int) len, start);
                        last_blank = lines[i].kind == LINE_BLANK;
                        if (lines[i].kind == LINE_KEY)
                                after_key = true;
                        else if (lines[i].kind == LINE_SECTION)
                                after_key = false;
                }
                if (i == at && !written) {
                        fprintf(f, "%s\n", e->line);
                        written = after_key = true;
                        last_blank = false;
                }
        }
        if (e->line && !written) {
                if (e->path)
                        fprintf(f, "%s[%s %s]\n%s\n", last_blank ? "" : "\n", e->section, e->path, e->line);
                else
                        fprintf(f, "%s[%s]\n%s\n", last_blank ? "" : "\n", e->section, e->line);
        }
        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

int dropin_set_policy(const char *text, const char *policy, char **ret) {
        _cleanup_free_ char *line = NULL;

        if (policy_from_string(policy) == POLICY_INVALID)
                return -EINVAL;
        if (asprintf(&line, "Policy=%s", policy) < 0)
                return -ENOMEM;
        return apply_edit(text, &(Edit){ .section = "Daemon", .key = "Policy", .line = line }, ret);
}

int dropin_set_shares(const char *text, const char *path, uint64_t shares, char **ret) {
        _cleanup_free_ char *line = NULL;

        if (dropin_check_group_path(path, NULL) < 0 || (shares != 0 && (shares < SHARES_MIN || shares > SHARES_MAX)))
                return -EINVAL;
        if (shares != 0 && asprintf(&line, "Shares=%" PRIu64, shares) < 0)
                return -ENOMEM;
        return apply_edit(text, &(Edit){ .section = "Group", .path = path, .key = "Shares", .line = line }, ret);
}

static bool has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

int dropin_check_group_path(const char *path, const char **ret_reason) {
        _cleanup_free_ char *norm = NULL;
        const char *why = NULL;
        int r;

        r = cgroup_path_normalize(path, &norm);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                why = "is not an absolute cgroup path without \".\" or \"..\"";
        else if (streq(norm, "/"))
                why = "is the root cgroup";
        else if (!streq(norm, path))
                why = "is not normalised (no empty components, no trailing '/')";
        else if (strchr(path, ']'))
                why = "contains ']' (write it as \\x5d)";
        else if (ini_find_chars_or_comment(path, strlen(path), "") < strlen(path))
                why = "contains a ';' after whitespace (a comment to peltd.conf)";
        else if (isspace((unsigned char) path[strlen(path) - 1]))
                why = "ends in whitespace";
        else if (strlen("[Group ]") + strlen(path) > INI_LINE_MAX)
                why = "is too long for a line of peltd.conf";
        else if (has_control(path))
                why = "contains a control character (write it as \\xNN)";
        else {
                /* peltd reads "\xNN" as the byte it stands for (utf8.h), and a backslash only so. */
                _cleanup_free_ char *raw = NULL;

                r = utf8_unescape(path, &raw);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        why = "contains a backslash that does not start \\xNN (write a backslash as \\x5c)";
        }
        if (why) {
                if (ret_reason)
                        *ret_reason = why;
                return -EINVAL;
        }
        return 0;
}
