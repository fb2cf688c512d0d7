/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "peltd/originals.h"
#include "peltd/rootdir.h"

static void original_done(Original *e) {
        free(e->hierarchy);
        free(e->group);
        free(e->file);
        free(e->original);
        free(e->written);
}

Originals *originals_free(Originals *o) {
        if (!o)
                return NULL;
        for (size_t i = 0; i < o->n_entries; i++)
                original_done(&o->entries[i]);
        free(o->entries);
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

int originals_lock(const char *path) {
        _cleanup_free_ char *lock = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        r = make_parent(path);
        if (r < 0)
                return r;
        if (asprintf(&lock, "%s.lock", path) < 0)
                return -ENOMEM;
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return negative_errno();
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : negative_errno();
        return TAKE_FD(fd);
}

static int dup_field(json_object *e, const char *key, char **ret) {
        json_object *v;

        if (!json_object_object_get_ex(e, key, &v) || !json_object_is_type(v, json_type_string))
                return -EBADMSG;
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

int originals_load(const char *path, Originals **ret) {
        _cleanup_originals_ Originals *o = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        json_object *root, *entries, *version;
        json_tokener *tok;
        size_t n;
        int r = 0;

        o = new0(Originals, 1);
        if (!o)
                return -ENOMEM;
        o->path = strdup(path);
        if (!o->path)
                return -ENOMEM;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT) {
                        *ret = TAKE_PTR(o);
                        return 0;
                }
                return negative_errno();
        }
        r = read_full_fd(fd, &text, &n);
        if (r < 0)
                return r;

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        root = json_tokener_parse_ex(tok, text, (int) n);
        if (!root || json_tokener_get_error(tok) != json_tokener_success ||
            json_tokener_get_parse_end(tok) != n) {
                /* A trailing newline is fine; anything else is not ours. */
                size_t end = json_tokener_get_parse_end(tok);

                if (!root || strspn(text + end, " \t\n") != n - end) {
                        json_object_put(root);
                        json_tokener_free(tok);
                        return -EBADMSG;
                }
        }
        json_tokener_free(tok);

        if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "version", &version) ||
            json_object_get_int(version) != 1 || !json_object_object_get_ex(root, "entries", &entries) ||
            !json_object_is_type(entries, json_type_array)) {
                json_object_put(root);
                return -EBADMSG;
        }

        n = json_object_array_length(entries);
        o->entries = new0(Original, MAX(n, 1u));
        if (!o->entries) {
                json_object_put(root);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                json_object *e = json_object_array_get_idx(entries, i);
                Original *d = &o->entries[o->n_entries];

                if (!json_object_is_type(e, json_type_object)) {
                        r = -EBADMSG;
                        break;
                }
                if ((r = dup_field(e, "hierarchy", &d->hierarchy)) >= 0 && (r = dup_field(e, "group", &d->group)) >= 0 &&
                    (r = dup_field(e, "file", &d->file)) >= 0 && (r = dup_field(e, "original", &d->original)) >= 0)
                        r = dup_field(e, "written", &d->written);
                o->n_entries++; /* counted even when partial, so that it is freed */
        }
        json_object_put(root);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

const Original *originals_find(const Originals *o, const char *hierarchy, const char *group, const char *file) {
        for (size_t i = 0; i < o->n_entries; i++) {
                const Original *e = &o->entries[i];

                if (streq(e->hierarchy, hierarchy) && streq(e->group, group) && streq(e->file, file))
                        return e;
        }
        return NULL;
}

static json_object *to_json(const Originals *o) {
        json_object *root = json_object_new_object(), *entries = json_object_new_array();

        if (!root || !entries) {
                json_object_put(root);
                json_object_put(entries);
                return NULL;
        }
        json_object_object_add(root, "version", json_object_new_int(1));
        json_object_object_add(root, "entries", entries);
        for (size_t i = 0; i < o->n_entries; i++) {
                const Original *e = &o->entries[i];
                json_object *j = json_object_new_object();

                if (!j) {
                        json_object_put(root);
                        return NULL;
                }
                json_object_object_add(j, "hierarchy", json_object_new_string(e->hierarchy));
                json_object_object_add(j, "group", json_object_new_string(e->group));
                json_object_object_add(j, "file", json_object_new_string(e->file));
                json_object_object_add(j, "original", json_object_new_string(e->original));
                json_object_object_add(j, "written", json_object_new_string(e->written));
                json_object_array_add(entries, j);
        }
        return root;
}

int originals_save(const Originals *o) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1, dfd = -1;
        _cleanup_free_ char *dircopy = NULL;
        json_object *root;
        const char *text;
        size_t len;
        int r;

        if (o->n_entries == 0) {
                if (unlink(o->path) < 0 && errno != ENOENT)
                        return negative_errno();
                return 0;
        }

        r = make_parent(o->path);
        if (r < 0)
                return r;
        root = to_json(o);
        if (!root)
                return -ENOMEM;
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || asprintf(&tmp, "%s.tmp", o->path) < 0) {
                json_object_put(root);
                return -ENOMEM;
        }

        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0) {
                json_object_put(root);
                return negative_errno();
        }
        len = strlen(text);
        if (write(fd, text, len) != (ssize_t) len || write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
                r = errno > 0 ? -errno : -EIO;
                json_object_put(root);
                (void) unlink(tmp);
                return r;
        }
        json_object_put(root);
        if (rename(tmp, o->path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }

        /* The rename itself must reach the disk too. */
        dircopy = strdup(o->path);
        if (dircopy) {
                dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd >= 0)
                        (void) fsync(dfd);
        }
        return 0;
}

int originals_record(Originals *o, const char *hierarchy, const char *group, const char *file, const char *original,
                     const char *written) {
        Original *e = (Original *) originals_find(o, hierarchy, group, file);
        int r;

        if (e) {
                char *w, *old = e->written;

                if (streq(old, written))
                        return 0; /* saved already */
                w = strdup(written);
                if (!w)
                        return -ENOMEM;
                e->written = w;
                r = originals_save(o);
                if (r < 0) {
                        e->written = old;
                        free(w);
                        return r;
                }
                free(old);
                return 0;
        }

        Original *n = realloc(o->entries, sizeof(Original) * (o->n_entries + 1));
        if (!n)
                return -ENOMEM;
        o->entries = n;
        e = &o->entries[o->n_entries];
        *e = (Original){
                .hierarchy = strdup(hierarchy),
                .group = strdup(group),
                .file = strdup(file),
                .original = strdup(original),
                .written = strdup(written),
        };
        if (!e->hierarchy || !e->group || !e->file || !e->original || !e->written) {
                original_done(e);
                return -ENOMEM;
        }
        o->n_entries++;
        r = originals_save(o);
        if (r < 0) {
                o->n_entries--;
                original_done(e);
                return r;
        }
        return 0;
}

int originals_forget(Originals *o, const char *hierarchy, const char *group, const char *file) {
        Original *e = (Original *) originals_find(o, hierarchy, group, file);
        size_t i;

        if (!e)
                return 0;
        i = (size_t) (e - o->entries);
        original_done(e);
        memmove(e, e + 1, sizeof(Original) * (o->n_entries - i - 1));
        o->n_entries--;
        return originals_save(o);
}
