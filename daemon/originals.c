/* SPDX-License-Identifier: GPL-2.0-only */
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "peltd/cgroup-path.h"
#include "peltd/fs-util.h"
#include "peltd/originals.h"
#include "peltd/rootdir.h"

/*
 * 16 MiB: an entry is about 150 bytes, so this holds some 100,000 recorded files, far more than
 * any machine's placed groups; a bigger file is not one peltd wrote.
 */
#define STATE_FILE_MAX (16U * 1024 * 1024)
#define EMPTY_STATE "{\"version\": 1, \"entries\": []}"

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
        strv_free(o->refused);
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

int originals_lock(const char *path) {
        return originals_lock_checked(path, NULL);
}

static int dup_field(json_object *e, const char *key, char **ret) {
        json_object *v;

        if (!json_object_object_get_ex(e, key, &v) || !json_object_is_type(v, json_type_string))
                return -EBADMSG;
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
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
        /* The files peltd places, per hierarchy (DESIGN.md, "cgroups"); nothing else is ever written. */
        static const char *const cpuset_files[] = { "cpuset.cpus", NULL };
        static const char *const cpu_files[] = { "cpu.shares", NULL };
        static const char *const unified_files[] = { "cpuset.cpus", "cpu.weight", "cgroup.subtree_control", NULL };
        static const char *const unit_properties[] = { "AllowedCPUs", "CPUWeight", NULL };
        _cleanup_free_ char *norm = NULL;
        const char *const *files;

        if (streq(e->hierarchy, "systemd")) {
                if (!valid_unit_name(e->group))
                        return "not a systemd unit name";
                return is_one_of(e->file, unit_properties) ? NULL : "not a property peltd sets";
        }
        if (streq(e->hierarchy, "cpuset"))
                files = cpuset_files;
        else if (streq(e->hierarchy, "cpu"))
                files = cpu_files;
        else if (streq(e->hierarchy, "unified"))
                files = unified_files;
        else
                return "not a hierarchy peltd writes";
        if (!is_one_of(e->file, files))
                return "not a file peltd places";
        /* Normalised already: absolute, no ".", "..", empty or control-character component. */
        if (cgroup_path_normalize(e->group, &norm) < 0 || !streq(norm, e->group))
                return "not a normalized cgroup path";
        return NULL;
}

/* Keeps a refused entry's description (for the caller's log) and drops the entry. */
static int refuse(Originals *o, const Original *d, const char *why) {
        char **n = realloc(o->refused, sizeof(char *) * (o->n_refused + 2));
        char *line = NULL;

        if (!n)
                return -ENOMEM;
        o->refused = n;
        if (asprintf(&line, "hierarchy \"%s\", group \"%s\", file \"%s\": %s", d->hierarchy, d->group, d->file, why) < 0)
                return -ENOMEM;
        o->refused[o->n_refused++] = line;
        o->refused[o->n_refused] = NULL;
        return 0;
}

/* text need not be NUL-terminated: n bytes, no more. */
static bool only_whitespace(const char *text, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\n", text[i]) || text[i] == 0)
                        return false;
        return true;
}

int originals_parse(const char *path, const char *text, size_t n, Originals **ret) {
        _cleanup_originals_ Originals *o = NULL;
        json_object *root, *entries, *version;
        json_tokener *tok;
        int r = 0;

        o = new0(Originals, 1);
        if (!o)
                return -ENOMEM;
        o->path = strdup(path);
        if (!o->path)
                return -ENOMEM;
        if (n > INT32_MAX)
                return -EFBIG;

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        root = json_tokener_parse_ex(tok, text, (int) n);
        if (!root || json_tokener_get_error(tok) != json_tokener_success ||
            json_tokener_get_parse_end(tok) != n) {
                /* A trailing newline is fine; anything else is not ours. */
                size_t end = json_tokener_get_parse_end(tok);

                if (!root || end > n || !only_whitespace(text + end, n - end)) {
                        json_object_put(root);
                        json_tokener_free(tok);
                        return -EBADMSG;
                }
        }
        json_tokener_free(tok);

        if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "version", &version) ||
            !json_object_is_type(version, json_type_int) || json_object_get_int(version) != 1 ||
            !json_object_object_get_ex(root, "entries", &entries) || !json_object_is_type(entries, json_type_array)) {
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
                const char *why;

                if (!json_object_is_type(e, json_type_object)) {
                        r = -EBADMSG;
                        break;
                }
                if ((r = dup_field(e, "hierarchy", &d->hierarchy)) >= 0 && (r = dup_field(e, "group", &d->group)) >= 0 &&
                    (r = dup_field(e, "file", &d->file)) >= 0 && (r = dup_field(e, "original", &d->original)) >= 0)
                        r = dup_field(e, "written", &d->written);
                if (r < 0) {
                        o->n_entries++; /* counted when partial, so that it is freed */
                        break;
                }
                /* Confinement: an entry that names anything but a placed file is never written. */
                why = original_check(d);
                if (why) {
                        r = refuse(o, d, why);
                        original_done(d);
                        *d = (Original){};
                        continue;
                }
                o->n_entries++;
        }
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
        r = read_full_fd(fd, &text, &n);
        if (r < 0)
                return r;
        return originals_parse(path, text, n, ret);
}

int originals_load(const char *path, Originals **ret) {
        return originals_load_checked(path, ret, NULL);
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

        /*
         * A fresh file, never through a link: one left by a crash (or a link planted there) is
         * removed first (unlink removes a link, not its target), then O_EXCL|O_NOFOLLOW.
         */
        if (unlink(tmp) < 0 && errno != ENOENT) {
                json_object_put(root);
                return negative_errno();
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
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
