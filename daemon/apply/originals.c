/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "peltd/alloc-util.h"
#include "peltd/apply-values.h"
#include "peltd/cgroup-path.h"
#include "peltd/fs-util.h"
#include "peltd/originals.h"
#include "peltd/rootdir.h"

#define EMPTY_STATE "{\"version\": 1, \"entries\": []}"

/*
 * A change made in memory since the last save, and how to take it back: an entry ADDED (its key),
 * CHANGED (its key, and the original and written values it had) or DROPPED (all of it).
 */
typedef enum UndoKind {
        UNDO_ADDED,
        UNDO_CHANGED,
        UNDO_DROPPED,
} UndoKind;

struct OriginalUndo {
        UndoKind kind;
        Original e;
};

static void original_done(Original *e) {
        free(e->hierarchy);
        free(e->group);
        free(e->file);
        free(e->original);
        free(e->written);
        *e = (Original){};
}

static void undo_clear(Originals *o) {
        for (size_t i = 0; i < o->n_undo; i++)
                original_done(&o->undo[i].e);
        o->n_undo = 0;
}

Originals *originals_free(Originals *o) {
        if (!o)
                return NULL;
        for (size_t i = 0; i < o->n_entries; i++)
                original_done(&o->entries[i]);
        free(o->entries);
        undo_clear(o);
        free(o->undo);
        free(o->index);
        strv_free(o->refused);
        strv_free(o->refused_json);
        free(o->path);
        free(o);
        return NULL;
}

/* mkdir -p of path's directory. */
static int make_parent(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        char *dir;

        if (!copy)
                return -ENOMEM;
        dir = dirname(copy);
        for (char *p = dir + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                                return negative_errno();
                        *p = '/';
                }
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* The state file's directory must be root's and writable by nobody else (fs-util.h). */
static int check_parent(const char *path, const char **ret_reason) {
        _cleanup_free_ char *copy = strdup(path);

        if (!copy)
                return -ENOMEM;
        return check_trusted_dir(dirname(copy), ret_reason);
}

int originals_lock_checked(const char *path, const char **ret_reason) {
        _cleanup_free_ char *lock = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        r = make_parent(path);
        if (r < 0)
                return r;
        r = check_parent(path, ret_reason);
        if (r < 0)
                return r;
        if (asprintf(&lock, "%s.lock", path) < 0)
                return -ENOMEM;
        /* Never through a link: a symlink planted here would have root create or lock its target. */
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK, 0600);
        if (fd < 0) {
                if (errno == ELOOP && ret_reason)
                        *ret_reason = "is a symbolic link";
                return negative_errno();
        }
        r = fd_check_trusted(fd, false, 0, ret_reason);
        if (r < 0)
                return r;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : negative_errno();
        return TAKE_FD(fd);
}

static bool is_one_of(const char *s, const char *const *list) {
        for (; *list; list++)
                if (streq(s, *list))
                        return true;
        return false;
}

/*
 * A systemd unit name as systemd takes it: NAME.TYPE, of unit name characters, no '/'; TYPE one of
 * those with a cgroup, which apply-systemd.c places (a mount's or a socket's helper runs in one).
 */
static bool valid_unit_name(const char *u) {
        static const char *const types[] = { ".service", ".slice", ".scope", ".socket", ".mount", ".swap", NULL };
        const char *dot = strrchr(u, '.');
        size_t n = strlen(u);

        if (n == 0 || n > 255 || !dot || dot == u || !is_one_of(dot, types))
                return false;
        return strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@") == n;
}

const char *original_check(const Original *e) {
        _cleanup_free_ char *norm = NULL;
        ApplyTarget t;

        /* The files peltd places: the places of the table's values (apply-values.h); nothing else is ever written. */
        if (placed_target_of(e->hierarchy, &t) < 0)
                return "not a hierarchy peltd writes";
        if (t == APPLY_SYSTEMD) {
                if (!valid_unit_name(e->group))
                        return "not a systemd unit name";
                return placed_value_at(e->hierarchy, e->file, NULL) ? NULL : "not a property peltd sets";
        }
        if (!placed_value_at(e->hierarchy, e->file, NULL))
                return "not a file peltd places";
        /* Normalised already: absolute, no ".", "..", empty or control-character component. */
        if (cgroup_path_normalize(e->group, &norm) < 0 || !streq(norm, e->group))
                return "not a normalized cgroup path";
        return NULL;
}

/*
 * Keeps a refused entry: its description for the caller's log, and its bytes as the file had them,
 * saved back with the file (never written to a cgroup), so that nothing recorded is lost.
 */
static int refuse(Originals *o, const char *raw, size_t raw_n, const char *fmt, ...) _printf_(4, 5);
static int refuse(Originals *o, const char *raw, size_t raw_n, const char *fmt, ...) {
        char **a = realloc(o->refused, sizeof(char *) * (o->n_refused + 2)), **b;
        char *line = NULL, *copy;
        va_list ap;
        int r;

        if (!a)
                return -ENOMEM;
        o->refused = a;
        b = realloc(o->refused_json, sizeof(char *) * (o->n_refused + 2));
        if (!b)
                return -ENOMEM;
        o->refused_json = b;
        /* Not strndup(): the file's bytes are not NUL-terminated, and strndup() may look for one past them. */
        copy = malloc(raw_n + 1);
        if (copy) {
                memcpy(copy, raw, raw_n);
                copy[raw_n] = '\0';
        }
        va_start(ap, fmt);
        r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (!copy || r < 0) {
                free(copy);
                return -ENOMEM;
        }
        o->refused[o->n_refused] = line;
        o->refused_json[o->n_refused++] = copy;
        o->refused[o->n_refused] = o->refused_json[o->n_refused] = NULL;
        return 0;
}

/*
 * ---- A scan of the bytes json-c parsed, for what its tree does not keep: a key given twice
 * (json-c keeps the last) and each entry's bytes. The text is JSON already (json-c took it);
 * anything the scan does not expect makes the file not ours.
 */

typedef struct Span {
        const char *p;
        size_t n;
} Span;

static bool is_ws(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const char *skip_ws(const char *p, const char *end) {
        while (p < end && is_ws(*p))
                p++;
        return p;
}

/* Past the string whose opening quote is at p, or NULL. */
static const char *skip_string(const char *p, const char *end) {
        for (p++; p < end; p++) {
                if (*p == '\\')
                        p++;
                else if (*p == '"')
                        return p + 1;
        }
        return NULL;
}

/* Past the value at p (brackets balance outside strings), or NULL. */
static const char *skip_value(const char *p, const char *end) {
        size_t depth = 0;

        while (p < end) {
                if (*p == '"') {
                        p = skip_string(p, end);
                        if (!p || depth == 0)
                                return p;
                        continue;
                }
                if (*p == '{' || *p == '[')
                        depth++;
                else if (*p == '}' || *p == ']') {
                        if (depth == 0)
                                return p;
                        if (--depth == 0)
                                return p + 1;
                } else if (depth == 0 && (*p == ',' || is_ws(*p)))
                        return p;
                p++;
        }
        return depth == 0 ? p : NULL;
}

/*
 * The members of the object at *p (its '{'): their count, and for the first `max` their key and
 * value spans; *p moves past it. -EBADMSG for what is not an object.
 */
static int scan_object(const char **p, const char *end, Span *keys, Span *values, size_t max, size_t *ret_n) {
        const char *q = skip_ws(*p, end);
        size_t n = 0;

        if (q >= end || *q != '{')
                return -EBADMSG;
        q = skip_ws(q + 1, end);
        for (bool first = true; q < end && *q != '}'; first = false) {
                const char *k = q, *v;

                if (!first && (*q != ',' || (q = k = skip_ws(q + 1, end)) >= end))
                        return -EBADMSG;
                if (*k != '"' || !(q = skip_string(k, end)))
                        return -EBADMSG;
                q = skip_ws(q, end);
                if (q >= end || *q != ':')
                        return -EBADMSG;
                v = skip_ws(q + 1, end);
                q = skip_value(v, end);
                if (!q || q == v)
                        return -EBADMSG;
                if (n < max) {
                        keys[n] = (Span){ k, (size_t) (skip_string(k, end) - k) };
                        values[n] = (Span){ v, (size_t) (q - v) };
                }
                n++;
                q = skip_ws(q, end);
        }
        if (q >= end)
                return -EBADMSG;
        *p = q + 1;
        *ret_n = n;
        return 0;
}

/* The elements of the array at p: their spans, n of them (the caller knows n from json-c). */
static int scan_array(const char *p, const char *end, Span *ret, size_t n) {
        p = skip_ws(p, end);
        if (p >= end || *p != '[')
                return -EBADMSG;
        p = skip_ws(p + 1, end);
        for (size_t i = 0; i < n; i++) {
                const char *q;

                if (i > 0 && (*p != ',' || (p = skip_ws(p + 1, end)) >= end))
                        return -EBADMSG;
                q = skip_value(p, end);
                if (!q || q == p)
                        return -EBADMSG;
                ret[i] = (Span){ p, (size_t) (q - p) };
                p = skip_ws(q, end);
                if (p >= end)
                        return -EBADMSG;
        }
        return *p == ']' ? 0 : -EBADMSG;
}

/* Whether the JSON string at key (quotes included) says s; json-c decodes its escapes. */
static bool key_says(Span key, const char *s) {
        json_tokener *tok = json_tokener_new();
        json_object *v = tok ? json_tokener_parse_ex(tok, key.p, (int) key.n) : NULL;
        bool is = v && json_object_is_type(v, json_type_string) && (size_t) json_object_get_string_len(v) == strlen(s) &&
                  memcmp(json_object_get_string(v), s, strlen(s)) == 0;

        json_object_put(v);
        if (tok)
                json_tokener_free(tok);
        return is;
}

/*
 * The bytes of each entry (n of them, as json-c counted), in ret, from the root object's text:
 * -EBADMSG where the root holds a key twice or the text is not as json-c read it.
 */
static int entry_spans(const char *text, size_t size, json_object *root, Span *ret, size_t n) {
        Span keys[2], values[2];
        size_t n_keys;
        const char *p = text;
        int r;

        /* First the count, then the spans: a root holds "version" and "entries", nothing else. */
        r = scan_object(&p, text + size, keys, values, ELEMENTSOF(keys), &n_keys);
        if (r < 0)
                return r;
        if (n_keys != (size_t) json_object_object_length(root) || n_keys > ELEMENTSOF(keys))
                return -EBADMSG;
        for (size_t i = 0; i < n_keys; i++)
                if (key_says(keys[i], "entries"))
                        return scan_array(values[i].p, values[i].p + values[i].n, ret, n);
        return -EBADMSG;
}

/* ---- The entries ------------------------------------------------------------------------------ */

/* A field of an entry: a string, without a NUL (json-c keeps one written "\u0000"); else why not. */
static const char *entry_field(json_object *e, const char *key, char **ret) {
        json_object *v;
        const char *s;

        if (!json_object_object_get_ex(e, key, &v) || !json_object_is_type(v, json_type_string))
                return "a field is missing or not a string";
        s = json_object_get_string(v);
        if (strlen(s) != (size_t) json_object_get_string_len(v))
                return "a field holds a NUL byte";
        *ret = strdup(s);
        return *ret ? NULL : "";
}

/* The entry's five fields into d (freed by the caller either way); NULL, "" (out of memory) or why not. */
static const char *entry_fields(json_object *e, Span raw, Original *d) {
        static const char *const names[] = { "hierarchy", "group", "file", "original", "written" };
        char **fields[] = { &d->hierarchy, &d->group, &d->file, &d->original, &d->written };
        size_t n_keys;
        Span k, v;
        const char *p = raw.p, *why;

        if (!json_object_is_type(e, json_type_object))
                return "not an object";
        if (scan_object(&p, raw.p + raw.n, &k, &v, 0, &n_keys) < 0 || n_keys != (size_t) json_object_object_length(e))
                return "a key given twice";
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                why = entry_field(e, names[i], fields[i]);
                if (why)
                        return why;
        }
        return NULL;
}

/* Entry i of the file: taken, or refused (kept, described); 0 or -ENOMEM. */
static int parse_entry(Originals *o, json_object *e, Span raw, size_t i) {
        Original d = {};
        const char *why;
        int r;

        why = entry_fields(e, raw, &d);
        if (why && !*why) {
                original_done(&d);
                return -ENOMEM;
        }
        if (why) {
                original_done(&d);
                return refuse(o, raw.p, raw.n, "entry %zu: %s", i, why);
        }
        /* Confinement: an entry that names anything but a placed file is never written. */
        why = original_check(&d);
        if (why) {
                r = refuse(o, raw.p, raw.n, "entry %zu, hierarchy \"%s\", group \"%s\", file \"%s\": %s", i, d.hierarchy,
                           d.group, d.file, why);
                original_done(&d);
                return r;
        }
        o->entries[o->n_entries++] = d;
        return 0;
}

/* text need not be NUL-terminated: n bytes, no more. */
static bool only_whitespace(const char *text, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!is_ws(text[i]))
                        return false;
        return true;
}

/* The root object of the text, or NULL: JSON, and nothing after it but white space. */
static json_object *parse_root(const char *text, size_t n) {
        json_tokener *tok = json_tokener_new();
        json_object *root;
        size_t end;

        if (!tok)
                return NULL;
        root = json_tokener_parse_ex(tok, text, (int) n);
        end = json_tokener_get_parse_end(tok);
        if (root && (json_tokener_get_error(tok) != json_tokener_success || end != n) &&
            (end > n || !only_whitespace(text + end, n - end))) {
                json_object_put(root);
                root = NULL;
        }
        json_tokener_free(tok);
        return root;
}

/* The entries array of a root that is a peltd state file's, version 1; NULL else. */
static json_object *root_entries(json_object *root) {
        json_object *entries, *version;

        if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "version", &version) ||
            !json_object_is_type(version, json_type_int) || json_object_get_int(version) != 1 ||
            !json_object_object_get_ex(root, "entries", &entries) || !json_object_is_type(entries, json_type_array))
                return NULL;
        return entries;
}

/* Every entry of the array, each taken or refused on its own. */
static int parse_entries(Originals *o, const char *text, size_t size, json_object *root, json_object *entries) {
        size_t n = json_object_array_length(entries);
        _cleanup_free_ Span *spans = new0(Span, MAX(n, 1u));
        int r;

        o->entries = new0(Original, MAX(n, 1u));
        o->allocated = MAX(n, 1u);
        if (!o->entries || !spans)
                return -ENOMEM;
        r = entry_spans(text, size, root, spans, n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                /* Its bytes are kept, as a string: one with a NUL byte in it is not text peltd wrote. */
                if (memchr(spans[i].p, 0, spans[i].n))
                        return -EBADMSG;
                r = parse_entry(o, json_object_array_get_idx(entries, i), spans[i], i);
                if (r < 0)
                        return r;
        }
        return 0;
}

int originals_parse(const char *path, const char *text, size_t n, Originals **ret) {
        _cleanup_originals_ Originals *o = NULL;
        json_object *root, *entries;
        int r;

        o = new0(Originals, 1);
        if (!o)
                return -ENOMEM;
        o->path = strdup(path);
        if (!o->path)
                return -ENOMEM;
        if (n > INT32_MAX)
                return -EFBIG;

        root = parse_root(text, n);
        entries = root_entries(root);
        r = entries ? parse_entries(o, text, n, root, entries) : -EBADMSG;
        json_object_put(root);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int originals_load_checked(const char *path, Originals **ret, const char **ret_reason) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        size_t n;
        int r;

        r = check_parent(path, ret_reason);
        if (r == -ENOENT)
                return originals_parse(path, EMPTY_STATE, strlen(EMPTY_STATE), ret);
        if (r < 0)
                return r;
        /* Never through a link, never blocking (a FIFO is refused before it is read). */
        fd = open_trusted(path, true, STATE_FILE_MAX, ret_reason);
        if (fd == -ENOENT)
                return originals_parse(path, EMPTY_STATE, strlen(EMPTY_STATE), ret);
        if (fd < 0)
                return fd;
        /* The same bound as the check above and as the writer's (originals_save()). */
        r = read_full_fd_max(fd, STATE_FILE_MAX, &text, &n);
        if (r < 0)
                return r;
        return originals_parse(path, text, n, ret);
}

/* FNV-1a over hierarchy, group and file, each with its NUL. */
static uint32_t key_hash(const char *hierarchy, const char *group, const char *file) {
        uint32_t h = 2166136261u;

        for (const char *parts[] = { hierarchy, group, file }, **p = parts; p < parts + 3; p++)
                for (const unsigned char *c = (const unsigned char *) *p;; c++) {
                        h = (h ^ *c) * 16777619u;
                        if (!*c)
                                break;
                }
        return h;
}

static bool key_is(const Original *e, const char *hierarchy, const char *group, const char *file) {
        return streq(e->group, group) && streq(e->file, file) && streq(e->hierarchy, hierarchy);
}

/* The index slot that holds entry i, or the empty slot where a key would go. */
static size_t slot_of(const Originals *o, const char *hierarchy, const char *group, const char *file) {
        size_t mask = o->index_size - 1, s = key_hash(hierarchy, group, file) & mask;

        while (o->index[s] != 0 && !key_is(&o->entries[o->index[s] - 1], hierarchy, group, file))
                s = (s + 1) & mask;
        return s;
}

/* (Re)builds the index with room for at least `want` entries at half load. */
static int index_build(Originals *o, size_t want) {
        size_t size = 16;
        uint32_t *ix;

        while (size < 2 * want)
                size *= 2;
        if (want > UINT32_MAX - 1)
                return -ENOMEM;
        ix = new0(uint32_t, size);
        if (!ix)
                return -ENOMEM;
        free(o->index);
        o->index = ix;
        o->index_size = size;
        for (size_t i = 0; i < o->n_entries; i++) {
                const Original *e = &o->entries[i];

                o->index[slot_of(o, e->hierarchy, e->group, e->file)] = (uint32_t) i + 1;
        }
        return 0;
}

const Original *originals_find(const Originals *o, const char *hierarchy, const char *group, const char *file) {
        size_t s;

        if (o->n_entries == 0)
                return NULL;
        if (!o->index && index_build((Originals *) o, o->n_entries) < 0) {
                /* Out of memory for the index: look the slow way. */
                for (size_t i = 0; i < o->n_entries; i++)
                        if (key_is(&o->entries[i], hierarchy, group, file))
                                return &o->entries[i];
                return NULL;
        }
        s = slot_of(o, hierarchy, group, file);
        return o->index[s] ? &o->entries[o->index[s] - 1] : NULL;
}

static json_object *entry_to_json(const Original *e) {
        json_object *j = json_object_new_object();

        if (!j)
                return NULL;
        json_object_object_add(j, "hierarchy", json_object_new_string(e->hierarchy));
        json_object_object_add(j, "group", json_object_new_string(e->group));
        json_object_object_add(j, "file", json_object_new_string(e->file));
        json_object_object_add(j, "original", json_object_new_string(e->original));
        json_object_object_add(j, "written", json_object_new_string(e->written));
        return j;
}

/*
 * The file's text: the entries, then the refused ones as the file had them, byte for byte (so a
 * key given twice stays twice, and the entry stays refused).
 */
static int state_text(const Originals *o, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        const char *sep = "";

        if (!f)
                return -ENOMEM;
        fputs("{\n  \"version\": 1,\n  \"entries\": [", f);
        for (size_t i = 0; i < o->n_entries; i++, sep = ",") {
                json_object *j = entry_to_json(&o->entries[i]);
                const char *s = j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;

                if (s)
                        fprintf(f, "%s\n    %s", sep, s);
                json_object_put(j);
                if (!s) {
                        fclose(f);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < o->n_refused; i++, sep = ",")
                fprintf(f, "%s\n    %s", sep, o->refused_json[i]);
        fputs("\n  ]\n}\n", f);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

/*
 * Writes the set to disk (atomically); with no entries (and none refused), removes the file.
 * Uncommitted changes count as saved.
 */
static int originals_save(Originals *o) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        if (o->n_entries == 0 && o->n_refused == 0) {
                if (unlink(o->path) < 0 && errno != ENOENT)
                        return negative_errno();
                undo_clear(o);
                o->n_saves++;
                return 0;
        }

        r = make_parent(o->path);
        if (r < 0)
                return r;
        r = state_text(o, &text, &size);
        if (r < 0)
                return r;
        /* Never a file the loader would refuse: the changes are taken back, and their writes not made. */
        if (size > STATE_FILE_MAX)
                return -EFBIG;
        /* Fsynced, and its directory too: the originals must outlive a crash of the machine. */
        r = write_file_atomic(o->path, text, size, 0600, true);
        if (r < 0)
                return r;
        undo_clear(o);
        o->n_saves++;
        return 0;
}

static int undo_push(Originals *o, UndoKind kind, Original e) {
        if (ARRAY_RESERVE(o->undo, o->allocated_undo, o->n_undo + 1, 16) < 0)
                return -ENOMEM;
        o->undo[o->n_undo++] = (OriginalUndo){ .kind = kind, .e = e };
        return 0;
}

/* Appends e (its strings taken over) and indexes it. */
static int entry_append(Originals *o, Original e) {
        int r;

        if (ARRAY_RESERVE(o->entries, o->allocated, o->n_entries + 1, 16) < 0)
                return -ENOMEM;
        if (!o->index || 2 * (o->n_entries + 1) > o->index_size) {
                r = index_build(o, o->n_entries + 1);
                if (r < 0)
                        return r;
        }
        o->entries[o->n_entries] = e;
        o->index[slot_of(o, e.hierarchy, e.group, e.file)] = (uint32_t) ++o->n_entries;
        return 0;
}

/*
 * Takes entry i out (its strings are the caller's now): the last entry moves into its place, and
 * the index closes the gap (backward-shift deletion, so that no probe sequence is broken).
 */
static Original entry_remove(Originals *o, size_t i) {
        Original e = o->entries[i];
        size_t mask = o->index_size - 1, hole = slot_of(o, e.hierarchy, e.group, e.file), last = o->n_entries - 1;

        for (size_t s = (hole + 1) & mask; o->index[s] != 0; s = (s + 1) & mask) {
                const Original *x = &o->entries[o->index[s] - 1];
                size_t home = key_hash(x->hierarchy, x->group, x->file) & mask;

                /* Moves back into the hole unless its home lies cyclically in (hole, s]. */
                if (hole <= s ? home <= hole || home > s : home <= hole && home > s) {
                        o->index[hole] = o->index[s];
                        hole = s;
                }
        }
        o->index[hole] = 0;
        if (i != last) {
                const Original *m = &o->entries[last];

                o->index[slot_of(o, m->hierarchy, m->group, m->file)] = (uint32_t) i + 1;
                o->entries[i] = *m;
        }
        o->n_entries--;
        return e;
}

static int dup_key(const Original *from, Original *to) {
        *to = (Original){ .hierarchy = strdup(from->hierarchy), .group = strdup(from->group), .file = strdup(from->file) };
        if (!to->hierarchy || !to->group || !to->file) {
                original_done(to);
                return -ENOMEM;
        }
        return 0;
}

/* Sets an existing entry's values (either may be NULL: unchanged), remembering the old ones. */
static int entry_change(Originals *o, Original *e, const char *original, const char *written) {
        Original u;
        char *no = original ? strdup(original) : NULL, *nw = written ? strdup(written) : NULL;
        int r;

        if ((original && !no) || (written && !nw) || dup_key(e, &u) < 0) {
                free(no);
                free(nw);
                return -ENOMEM;
        }
        u.original = original ? e->original : NULL;
        u.written = written ? e->written : NULL;
        r = undo_push(o, UNDO_CHANGED, u);
        if (r < 0) {
                u.original = u.written = NULL;
                original_done(&u);
                free(no);
                free(nw);
                return r;
        }
        if (original)
                e->original = no;
        if (written)
                e->written = nw;
        return 0;
}

int originals_put(Originals *o, const char *hierarchy, const char *group, const char *file, const char *original,
                  const char *written) {
        Original *e = (Original *) originals_find(o, hierarchy, group, file), n, u;
        int r;

        if (e)
                return streq(e->written, written) ? 0 : entry_change(o, e, NULL, written);

        n = (Original){
                .hierarchy = strdup(hierarchy),
                .group = strdup(group),
                .file = strdup(file),
                .original = strdup(original),
                .written = strdup(written),
        };
        if (!n.hierarchy || !n.group || !n.file || !n.original || !n.written || dup_key(&n, &u) < 0) {
                original_done(&n);
                return -ENOMEM;
        }
        r = undo_push(o, UNDO_ADDED, u);
        if (r < 0) {
                original_done(&u);
                original_done(&n);
                return r;
        }
        r = entry_append(o, n);
        if (r < 0) {
                original_done(&o->undo[--o->n_undo].e);
                original_done(&n);
        }
        return r;
}

int originals_set_original(Originals *o, const char *hierarchy, const char *group, const char *file, const char *original) {
        Original *e = (Original *) originals_find(o, hierarchy, group, file);

        if (!e)
                return -ENOENT;
        return streq(e->original, original) ? 0 : entry_change(o, e, original, NULL);
}

int originals_drop(Originals *o, const char *hierarchy, const char *group, const char *file) {
        const Original *e = originals_find(o, hierarchy, group, file);
        int r;

        if (!e)
                return 0;
        /* Room for the undo first: taking the entry out cannot fail then. */
        r = undo_push(o, UNDO_DROPPED, (Original){});
        if (r < 0)
                return r;
        o->undo[o->n_undo - 1].e = entry_remove(o, (size_t) (e - o->entries));
        return 0;
}

bool originals_dirty(const Originals *o) {
        return o->n_undo > 0;
}

/* Takes back the changes since the last save after the first `mark` of them, newest first. */
static void rollback(Originals *o, size_t mark) {
        while (o->n_undo > mark) {
                OriginalUndo *u = &o->undo[--o->n_undo];
                Original *e = (Original *) originals_find(o, u->e.hierarchy, u->e.group, u->e.file);

                switch (u->kind) {
                case UNDO_ADDED:
                        if (e) {
                                Original gone = entry_remove(o, (size_t) (e - o->entries));

                                original_done(&gone);
                        }
                        break;
                case UNDO_CHANGED:
                        if (e && u->e.original) {
                                free(e->original);
                                e->original = TAKE_PTR(u->e.original);
                        }
                        if (e && u->e.written) {
                                free(e->written);
                                e->written = TAKE_PTR(u->e.written);
                        }
                        break;
                case UNDO_DROPPED:
                        /* Its room was there before it was dropped; the index may need to grow. */
                        if (!e && entry_append(o, u->e) >= 0)
                                u->e = (Original){};
                        break;
                }
                original_done(&u->e);
        }
}

void originals_rollback(Originals *o) {
        rollback(o, 0);
}

size_t originals_mark(const Originals *o) {
        return o->n_undo;
}

void originals_rollback_to(Originals *o, size_t mark) {
        rollback(o, mark);
}

int originals_commit(Originals *o) {
        if (!originals_dirty(o))
                return 0;
        /* On failure nothing is taken back: what memory holds is still to be saved, at the next commit. */
        return originals_save(o);
}

/* Whether group is at or below top: its path with top's replaced by to's, in *ret; 0 when it is not. */
static int renamed_path(const char *group, const char *top, const char *to, char **ret) {
        size_t n = strlen(top);

        if (!strneq(group, top, n) || (group[n] != '\0' && group[n] != '/'))
                return 0;
        if (asprintf(ret, "%s%s", to, group + n) < 0)
                return -ENOMEM;
        return 1;
}

/* Moves the entry of (hierarchy, group, file) to (hierarchy, to, file), undoably; -ENOMEM half way. */
static int entry_move(Originals *o, const char *hierarchy, const char *group, const char *file, const char *to) {
        const Original *e = originals_find(o, hierarchy, group, file);
        _cleanup_free_ char *original = NULL, *written = NULL, *h = strdup(hierarchy), *f = strdup(file);
        int r;

        if (!e)
                return 0;
        original = strdup(e->original);
        written = strdup(e->written);
        if (!original || !written || !h || !f)
                return -ENOMEM;
        r = originals_drop(o, h, group, f);
        if (r < 0)
                return r;
        return originals_put(o, h, to, f, original, written);
}

int originals_rename(Originals *o, const char *hierarchy, const char *from, const char *to) {
        _cleanup_strv_free_ char **groups = NULL, **files = NULL, **tos = NULL;
        size_t n = 0, mark = originals_mark(o);
        int r = 0;

        if (streq(from, to))
                return 0;
        groups = new0(char *, o->n_entries + 1);
        files = new0(char *, o->n_entries + 1);
        tos = new0(char *, o->n_entries + 1);
        if (!groups || !files || !tos)
                return -ENOMEM;
        /* The keys first (entries move as others are dropped), and no entry already at a new key. */
        for (size_t i = 0; i < o->n_entries; i++) {
                const Original *e = &o->entries[i];

                if (!streq(e->hierarchy, hierarchy))
                        continue;
                r = renamed_path(e->group, from, to, &tos[n]);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                groups[n] = strdup(e->group);
                files[n] = strdup(e->file);
                if (!groups[n++] || !files[n - 1])
                        return -ENOMEM;
                if (originals_find(o, hierarchy, tos[n - 1], e->file))
                        return -EEXIST;
        }
        for (size_t i = 0; i < n && r >= 0; i++)
                r = entry_move(o, hierarchy, groups[i], files[i], tos[i]);
        if (r < 0) {
                originals_rollback_to(o, mark);
                return r;
        }
        return (int) MIN(n, (size_t) INT_MAX);
}
