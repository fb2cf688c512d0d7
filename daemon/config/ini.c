/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "peltd/cgroup-path.h"
#include "peltd/cpumask.h"
#include "peltd/fs-util.h"
#include "peltd/ini.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/rootdir.h"
#include "peltd/policy-name.h"
#include "peltd/time-util.h"
#include "peltd/utf8.h"

enum {
        LINE_CONTINUATION = 1 << 0,  /* indented, after a key in its section: a continuation, for inih */
        LINE_REPORTED = 1 << 1,      /* the reader already reported an error on it */
};

typedef struct IniState {
        const char *path;
        const IniSchema *schema;
        void *userdata;
        FILE *f;
        unsigned lineno;             /* lines handed to inih so far */
        uint8_t *lines;              /* per line: LINE_CONTINUATION, LINE_REPORTED */
        size_t n_lines;
        int error;

        /* The section being read, as last seen by the reader and opened by the handler. */
        const IniSection *section;
        char *section_raw;           /* inih's section string, to notice a new section */
        void *section_data;
        bool section_bad;            /* reported once; its keys are skipped */
        unsigned section_line;       /* the line of the last section header the reader saw */
        bool section_fresh;          /* the reader opened a section at its header; keys follow */
        const char *last_key;        /* for continuation lines */
        bool after_key;              /* inih's prev_name is set: an indented line continues it */
} IniState;

int ini_error(const IniPos *pos, const char *value, const char *format, ...) {
        char msg[512];
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(msg, sizeof msg, format, ap);
        va_end(ap);
        if (pos->key)
                log_error("%s:%u: %s=%s: %s", pos->file, pos->line, pos->key, strna(value), msg);
        else
                log_error("%s:%u: %s", pos->file, pos->line, msg);
        return -EINVAL;
}

static const IniSection *find_section(const IniSchema *s, const char *name) {
        for (const IniSection *i = s->sections; i->name; i++)
                if (streq(i->name, name))
                        return i;
        return NULL;
}

static const IniKey *find_key(const IniSchema *s, const char *section, const char *key) {
        for (const IniKey *k = s->keys; k->key; k++)
                if (streq(k->section, section) && streq(k->key, key))
                        return k;
        return NULL;
}

/* Splits "Name ARG" into its name and (stripped) argument. */
static int split_section(const char *raw, char **ret_name, char **ret_arg) {
        const char *p = raw, *e;
        _cleanup_free_ char *name = NULL, *arg = NULL;

        while (isspace((unsigned char) *p))
                p++;
        e = p;
        while (*e && !isspace((unsigned char) *e))
                e++;
        name = strndup(p, (size_t) (e - p));
        if (!name)
                return -ENOMEM;
        while (isspace((unsigned char) *e))
                e++;
        if (*e) {
                arg = strdup(e);
                if (!arg)
                        return -ENOMEM;
                strstrip_trailing(arg);
        }
        *ret_name = TAKE_PTR(name);
        *ret_arg = TAKE_PTR(arg);
        return 0;
}

/* Forgets the section being read: its keys are skipped until a section opens. */
static void reset_section(IniState *st) {
        st->section = NULL;
        st->section_data = NULL;
        st->section_bad = true;
        st->last_key = NULL;
}

/*
 * Opens a checked section (after reset_section()) at its header's line, for the keys that follow.
 * The open function reports its own errors; after one, the section's keys are skipped.
 */
static void open_section(IniState *st, const IniSection *sec, unsigned line, const char *arg) {
        IniPos pos = { .file = st->path, .line = line, .section = sec->name };
        int r;

        r = sec->open(st->userdata, &pos, arg, &st->section_data);
        if (r < 0) {
                st->error = r;
                return;
        }
        st->section = sec;
        st->section_bad = false;
}

/*
 * Checks a "[...]" header line as the reader sees it, so that empty unknown sections are caught,
 * and opens the section there when open is set: every header opens its section, one without
 * keys and one given twice too (whether that is an error is the open function's to say).
 */
static void check_section_line(IniState *st, const char *line, bool open) {
        _cleanup_free_ char *inner = NULL, *name = NULL, *arg = NULL;
        const char *close = strchr(line, ']');
        IniPos pos = { .file = st->path, .line = st->lineno };
        const IniSection *sec;

        if (open) {
                st->section_fresh = true;
                reset_section(st);
        }
        if (!close) {
                st->error = ini_error(&pos, NULL, "Section header without a closing ']'.");
                return;
        }
        inner = strndup(line + 1, (size_t) (close - line - 1));
        if (!inner || split_section(inner, &name, &arg) < 0) {
                st->error = log_oom();
                return;
        }
        sec = find_section(st->schema, name);
        if (!sec)
                st->error = ini_error(&pos, NULL, "Unknown section [%s].", inner);
        else if (sec->has_argument && !arg)
                st->error = ini_error(&pos, NULL, "Section [%s] needs an argument: [%s ...].", name, name);
        else if (!sec->has_argument && arg)
                st->error = ini_error(&pos, NULL, "Section [%s] takes no argument, got \"%s\".", name, arg);
        if (!open || st->error < 0)
                return;
        open_section(st, sec, st->lineno, arg);
}

/* inih's reader: one line per call, as fgets would; refuses what inih would cut silently. */
static char *reader(char *str, int num, void *stream) {
        IniState *st = stream;
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0, len;
        ssize_t n;
        const char *p;

        n = getline(&line, &allocated, st->f);
        if (n < 0)
                return NULL;
        st->lineno++;
        len = (size_t) n;
        if (len > 0 && line[len - 1] == '\n')
                line[--len] = 0;

        if (st->n_lines < st->lineno + 1) {
                size_t nn = MAX(st->lineno + 1, st->n_lines * 2);
                uint8_t *nl = realloc(st->lines, nn);

                if (!nl) {
                        st->error = log_oom();
                        return NULL;
                }
                memset(nl + st->n_lines, 0, nn - st->n_lines);
                st->lines = nl;
                st->n_lines = nn;
        }

        if (memchr(line, 0, len)) {
                IniPos pos = { .file = st->path, .line = st->lineno };
                st->error = ini_error(&pos, NULL, "NUL byte in line.");
                st->lines[st->lineno] |= LINE_REPORTED;
                line[0] = 0;
                len = 0;
        }
        if (len > INI_LINE_MAX || len + 2 > (size_t) num) {
                IniPos pos = { .file = st->path, .line = st->lineno };
                st->error = ini_error(&pos, NULL, "Line too long (%zu characters, at most %d).", len, INI_LINE_MAX);
                st->lines[st->lineno] |= LINE_REPORTED;
                /* Hand inih an empty line in its place so that line numbers stay right. */
                line[0] = 0;
                len = 0;
        }

        p = line;
        while (isspace((unsigned char) *p))
                p++;
        /*
         * As inih reads the line: an indented one continues the last key, unless no key came since
         * the last section header (then it is read as if it were not indented); a header ends the
         * key's lines, a key begins them. Comments and blank lines change nothing.
         */
        if (*p == 0 || *p == '#' || *p == ';')
                ;
        else if (p > line && st->after_key)
                st->lines[st->lineno] |= LINE_CONTINUATION;
        else if (*p == '[') {
                int before = st->error;

                if (p[1 + ini_find_chars_or_comment(p + 1, strlen(p + 1), "]")] == ']')
                        st->after_key = false;
                st->section_line = st->lineno;
                st->error = 0;
                check_section_line(st, p, true);
                if (st->error < 0)
                        st->lines[st->lineno] |= LINE_REPORTED;
                else
                        st->error = before;
        } else {
                char c = p[ini_find_chars_or_comment(p, strlen(p), "=:")];

                if (c == '=' || c == ':')
                        st->after_key = true;
        }

        memcpy(str, line, len);
        str[len] = '\n';
        str[len + 1] = 0;
        return str;
}

/*
 * inih ends a value at ';' after whitespace, not at '#': "Policy=power   # comment" would keep the
 * comment in the value, and on a path key silently name another file or group. Refused instead.
 */
static bool has_hash_comment(const char *value) {
        for (const char *h = strchr(value, '#'); h; h = strchr(h + 1, '#'))
                if (h > value && isspace((unsigned char) h[-1]))
                        return true;
        return false;
}

static int handler(void *user, const char *section, const char *name, const char *value, int lineno) {
        IniState *st = user;
        IniPos pos = { .file = st->path, .line = (unsigned) lineno, .key = name };
        const IniKey *k;
        int r;

        pos.continuation = (size_t) lineno < st->n_lines && (st->lines[lineno] & LINE_CONTINUATION);

        if (st->section_fresh) {
                /* The reader opened this section at its header. */
                st->section_fresh = false;
                free(st->section_raw);
                st->section_raw = strdup(section);
                if (!st->section_raw)
                        return (st->error = log_oom()), 1;
        } else if (!st->section_raw || !streq(st->section_raw, section)) {
                _cleanup_free_ char *sname = NULL, *arg = NULL;
                const IniSection *sec;

                /* A new section: open it (the reader already reported unknown ones). */
                free(st->section_raw);
                st->section_raw = strdup(section);
                if (!st->section_raw)
                        return (st->error = log_oom()), 1;
                reset_section(st);

                if (isempty(section)) {
                        st->error = ini_error(&pos, value, "Key outside of any section.");
                        return 1;
                }
                if (split_section(section, &sname, &arg) < 0)
                        return (st->error = log_oom()), 1;
                sec = find_section(st->schema, sname);
                if (!sec || sec->has_argument != !!arg)
                        return 1; /* reported by the reader */
                /* The section is opened at its first key, but problems with it belong to its header. */
                open_section(st, sec, st->section_line, arg);
        }
        if (st->section_bad)
                return 1;

        pos.section = st->section->name;
        k = find_key(st->schema, st->section->name, name);
        if (!k) {
                st->error = ini_error(&pos, value, "Unknown key in section [%s].", st->section->name);
                return 1;
        }
        if (pos.continuation && !k->multiline) {
                st->error = ini_error(&pos, value, "Continuation line: %s= takes a single value.", name);
                return 1;
        }
        if (isempty(value) && !k->empty_ok) {
                st->error = ini_error(&pos, value, "Empty value.");
                return 1;
        }
        if (has_hash_comment(value)) {
                st->error = ini_error(&pos, value,
                                      "\"#\" starts a comment only at the start of a line; after a value, use \";\" "
                                      "(\"Key=value   ; comment\").");
                return 1;
        }
        r = k->parse(&pos, value, k, (uint8_t *) st->section_data + k->offset);
        if (r < 0)
                st->error = r;
        /* Always 1: errors are ours to report, and every bad line should be reported. */
        return 1;
}

/*
 * The file's bytes, read whole: opened O_NONBLOCK (a FIFO never blocks) and refused unless it is a
 * regular file of at most INI_FILE_MAX bytes; with trusted, also unless root (or peltd's user) owns
 * it and nobody else may write it (fs-util.h). A symlink is followed; the file it reaches is checked.
 */
static int read_checked(const char *path, bool trusted, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -1;
        const char *why = "is not a regular file";
        struct stat sb;
        int r;

        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT)
                        return -ENOENT;
                return log_error_errno(errno, "Failed to open %s: %m", path);
        }
        if (trusted)
                r = fd_check_trusted(fd, false, INI_FILE_MAX, &why);
        else if (fstat(fd, &sb) < 0)
                r = negative_errno();
        else if (!S_ISREG(sb.st_mode))
                r = -EPERM;
        else if ((uint64_t) sb.st_size > INI_FILE_MAX)
                r = -EPERM, why = "is too large";
        else
                r = 0;
        if (r == -EPERM)
                return log_error_errno(r, "Refusing %s: it %s (it must be a regular file of at most 1 MiB%s).", path, why,
                                       trusted ? ", root's, and not writable by group or others" : "");
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", path);
        r = read_full_fd(fd, ret, ret_size);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", path);
        /* Grown since the check (read_full_fd reads to EOF): still too large. */
        if (*ret_size > INI_FILE_MAX) {
                free(*ret);
                return log_error_errno(EPERM, "Refusing %s: it is too large (at most 1 MiB).", path);
        }
        return 0;
}

static int load(const char *path, bool trusted, const IniSchema *schema, void *userdata) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *text = NULL;
        IniState st = { .path = path, .schema = schema, .userdata = userdata };
        size_t size;
        int r;

        r = read_checked(path, trusted, &text, &size);
        if (r < 0)
                return r;
        /* fmemopen() of an empty buffer fails: an empty file is an empty stream all the same. */
        f = size > 0 ? fmemopen(text, size, "r") : fopen("/dev/null", "re");
        if (!f)
                return log_error_errno(errno, "Failed to parse %s: %m", path);
        st.f = f;

        r = ini_parse_stream(reader, &st, handler, &st);
        if (r > 0) {
                /* A line inih could not parse: no '=' (or ':'), or a broken section header. */
                IniPos pos = { .file = path, .line = (unsigned) r };

                if ((size_t) r >= st.n_lines || !(st.lines[r] & LINE_REPORTED))
                        st.error = ini_error(&pos, NULL, "Syntax error: expected \"Key=Value\", \"[Section]\" or a comment.");
        } else if (r < 0 && st.error == 0)
                st.error = log_error_errno(ENOMEM, "Failed to parse %s: out of memory", path);

        if (ferror(f) && st.error == 0)
                st.error = log_error_errno(EIO, "Failed to read %s: I/O error", path);

        free(st.lines);
        free(st.section_raw);
        return st.error < 0 ? st.error : 0;
}

int ini_load(const char *path, const IniSchema *schema, void *userdata) {
        return load(path, false, schema, userdata);
}

int ini_load_trusted(const char *path, const IniSchema *schema, void *userdata) {
        return load(path, true, schema, userdata);
}

/* ---- Parsers ---------------------------------------------------------------------------------- */

int ini_parse_u64(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        uint64_t v;
        int r = safe_atou64(value, &v);

        if (r < 0 || v < (uint64_t) key->min || v > (uint64_t) key->max)
                return ini_error(pos, value, "Expected an integer from %" PRIi64 " to %" PRIi64 ".", key->min, key->max);
        *(uint64_t *) data = v;
        return 0;
}

int ini_parse_unsigned(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        uint64_t v;
        int r = ini_parse_u64(pos, value, key, &v);

        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return ini_error(pos, value, "Value too large.");
        *(unsigned *) data = (unsigned) v;
        return 0;
}

int ini_parse_bool(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        int b = parse_boolean(value);

        if (b < 0)
                return ini_error(pos, value, "Expected a boolean (yes/no/true/false/1/0).");
        *(bool *) data = b;
        return 0;
}

int ini_parse_tristate(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        int b = parse_boolean(value);

        if (b < 0)
                return ini_error(pos, value, "Expected a boolean (yes/no/true/false/1/0).");
        *(int *) data = b;
        return 0;
}

int ini_parse_double(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        double v;

        if (safe_atod(value, &v) < 0 || v < (double) key->min || v > (double) key->max)
                return ini_error(pos, value, "Expected a number from %" PRIi64 " to %" PRIi64 ".", key->min, key->max);
        *(double *) data = v;
        return 0;
}

int ini_parse_msec(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        uint64_t v;
        int r = ini_parse_u64(pos, value, key, &v);

        if (r < 0)
                return r;
        *(usec_t *) data = v * USEC_PER_MSEC;
        return 0;
}

int ini_parse_cpulist(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        CpuMask m;
        int r = cpumask_parse_list(value, &m);

        if (r == -ERANGE)
                return ini_error(pos, value, "CPU number too large (at most %d).", CPUMASK_MAX - 1);
        if (r < 0)
                return ini_error(pos, value, "Expected a CPU list such as 0-3,8.");
        if (cpumask_empty(&m))
                return ini_error(pos, value, "Empty CPU list.");
        *(CpuMask *) data = m;
        return 0;
}

int ini_parse_policy(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        Policy p = policy_from_string(value);

        if (p < 0)
                return ini_error(pos, value, "Unknown policy: use power, performance or balanced.");
        *(Policy *) data = p;
        return 0;
}

/* A path or a pattern as text names it: each "\xNN" is the byte it stands for (utf8.h). */
static int unescape(const IniPos *pos, const char *value, const char *what, char **ret) {
        int r = utf8_unescape(value, ret);

        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return ini_error(pos, value, "%s: a backslash starts \\xNN (two hex digits, not 00); write a backslash as \\x5c.",
                                 what);
        return 0;
}

int ini_group_section_path(const IniPos *pos, const char *arg, char **ret) {
        _cleanup_free_ char *raw = NULL;
        char *path;
        int r = unescape(pos, arg, "[Group]", &raw);

        if (r < 0)
                return r;
        r = cgroup_path_normalize(raw, &path);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return ini_error(pos, NULL, "[Group %s]: expected an absolute cgroup path without \".\" or \"..\".", arg);
        if (streq(path, "/")) {
                free(path);
                return ini_error(pos, NULL, "[Group /]: the root cgroup cannot be managed.");
        }
        *ret = path;
        return 0;
}

int ini_parse_cgroup_path(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        _cleanup_free_ char *raw = NULL;
        char *p;
        int r = unescape(pos, value, key->key, &raw);

        if (r < 0)
                return r;
        r = cgroup_path_normalize(raw, &p);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return ini_error(pos, value, "Expected an absolute cgroup path without \".\" or \"..\" components.");
        free(*(char **) data);
        *(char **) data = p;
        return 0;
}

int ini_parse_abs_path(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        char *p;

        _cleanup_free_ char *norm = NULL;

        /* The same rules as cgroup paths: absolute, no "." or ".." components. */
        if (cgroup_path_normalize(value, &norm) < 0 || streq(norm, "/"))
                return ini_error(pos, value, "Expected an absolute file path without \".\" or \"..\" components.");
        p = strdup(value);
        if (!p)
                return log_oom();
        free(*(char **) data);
        *(char **) data = p;
        return 0;
}

int ini_parse_globs(const IniPos *pos, const char *value, _unused_ const IniKey *key, void *data) {
        _cleanup_strv_free_ char **add = NULL;
        char ***list = data;
        size_t n, m;
        char **nl;

        add = strv_split_whitespace(value);
        if (!add)
                return log_oom();
        for (char **g = add; *g; g++) {
                _cleanup_free_ char *norm = NULL;
                char *raw;
                int r = unescape(pos, *g, "Groups=", &raw);

                if (r < 0)
                        return r;
                free(*g);
                *g = raw;
                if (cgroup_path_normalize(*g, &norm) < 0)
                        return ini_error(pos, value, "\"%s\" is not an absolute cgroup path pattern.", *g);
                if (!streq(norm, *g))
                        return ini_error(pos, value, "\"%s\" is not normalised (write it as \"%s\").", *g, norm);
        }

        /* Continuation lines and repeated keys in one file append; a later file replaces (config.c). */
        n = strv_length(*list);
        m = strv_length(add);
        nl = realloc(*list, sizeof(char *) * (n + m + 1));
        if (!nl)
                return log_oom();
        for (size_t i = 0; i < m; i++)
                nl[n + i] = add[i];
        nl[n + m] = NULL;
        *list = nl;
        free(TAKE_PTR(add)); /* the strings moved into the list */
        return 0;
}
