/* SPDX-License-Identifier: GPL-2.0-only */
/* One daemon per cgroup subtree: flocks on CgroupRoot and its ancestors, in every hierarchy. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "peltd/cgroup-path.h"
#include "peltd/log.h"
#include "peltd/rootdir.h"
#include "peltd/subtree-lock.h"

/* One locked directory. */
typedef struct Held {
        int fd;
        dev_t dev;
        ino_t ino;
        bool exclusive;
        char *path; /* in the hierarchy: "/", "/a" */
} Held;

/* One hierarchy (a directory: co-mounted controllers share it). */
typedef struct Tree {
        const RootDir *rd;
        Held *held; /* top-down; the exclusive one last, when CgroupRoot is there */
        size_t n_held;
        bool missing; /* CgroupRoot is not there (yet): its ancestors held shared, none exclusive */
} Tree;

struct SubtreeLock {
        char *root;
        Tree trees[4];
        size_t n_trees;
};

static void held_done(Held *h) {
        if (h->fd >= 0)
                close(h->fd);
        free(h->path);
        *h = (Held){ .fd = -1 };
}

static void held_array_free(Held *a, size_t n) {
        for (size_t i = 0; i < n; i++)
                held_done(&a[i]);
        free(a);
}

pid_t proc_locks_find_holder(const char *s, dev_t dev, ino_t ino) {
        /* "1: FLOCK  ADVISORY  WRITE 1234 00:1c:5678 0 EOF"; waiters' lines have "->" after the number. */
        while (s && *s) {
                const char *eol = strchrnul(s, '\n');
                char line[256], kind[16];
                unsigned maj, min;
                unsigned long long in;
                int pid, n = 0;
                size_t len = (size_t) (eol - s);

                if (len < sizeof line) {
                        memcpy(line, s, len);
                        line[len] = '\0';
                        if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%llu%n", kind, &pid, &maj, &min, &in, &n) == 5 && n > 0 &&
                            streq(kind, "FLOCK") && pid > 0 && maj == major(dev) && min == minor(dev) && in == (unsigned long long) ino)
                                return pid;
                }
                s = *eol ? eol + 1 : eol;
        }
        return 0;
}

static pid_t find_holder(int fd) {
        _cleanup_rootdir_ RootDir *proc = NULL;
        _cleanup_free_ char *s = NULL;
        struct stat st;

        if (fstat(fd, &st) < 0 || rootdir_open("/proc", &proc) < 0 || rootdir_read_string(proc, "locks", &s) < 0)
                return 0;
        return proc_locks_find_holder(s, st.st_dev, st.st_ino);
}

static int log_busy(const SubtreeLock *l, const Tree *t, const char *path, int fd) {
        pid_t pid = find_holder(fd);
        char who[32] = "another process";

        if (pid > 0)
                (void) snprintf(who, sizeof who, "pid %d", (int) pid);
        return log_error_errno(-EBUSY,
                               "%s%s is locked by %s: another peltd manages a cgroup subtree that overlaps CgroupRoot=%s; "
                               "one daemon per subtree.",
                               t->rd->path, streq(path, "/") ? "" : path, who, l->root);
}

static int open_dir(const Tree *t, const char *path, Held *ret) {
        struct stat st;
        int fd;

        if (streq(path, "/"))
                fd = openat(t->rd->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        else
                fd = rootdir_open_beneath(t->rd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return streq(path, "/") ? negative_errno() : fd;
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();

                close(fd);
                return r;
        }
        *ret = (Held){ .fd = fd, .dev = st.st_dev, .ino = st.st_ino };
        return 0;
}

static Held *find_held(Tree *t, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < t->n_held; i++)
                if (t->held[i].dev == dev && t->held[i].ino == ino)
                        return &t->held[i];
        return NULL;
}

/* "/", "/a", "/a/b" for root "/a/b" (normalized). Returns how many, or -ENOMEM. */
static int list_prefixes(const char *root, char ***ret) {
        char **v;
        size_t n = 0;

        v = new0(char *, strlen(root) + 2);
        if (!v)
                return -ENOMEM;
        v[n++] = strdup("/");
        if (!streq(root, "/")) {
                for (const char *p = strchr(root + 1, '/'); p; p = strchr(p + 1, '/'))
                        v[n++] = strndup(root, (size_t) (p - root));
                v[n++] = strdup(root);
        }
        for (size_t i = 0; i < n; i++)
                if (!v[i]) {
                        for (size_t j = 0; j < n; j++)
                                free(v[j]);
                        free(v);
                        return -ENOMEM;
                }
        *ret = v;
        return (int) n;
}

/*
 * Opens the prefixes of root that exist into next, top-down, taking their paths; stops at the
 * first missing component ("/" must exist). root itself, when it is there, is the one to lock
 * exclusive; a root not there yet has only its ancestors, shared (a daemon on a sibling subtree
 * starts; one above it does not). *n_next counts what next holds, also on failure. Returns 0 or
 * -errno (logged).
 */
static int open_prefixes(const Tree *t, char **prefixes, size_t n_prefixes, Held *next, size_t *n_next) {
        for (size_t i = 0; i < n_prefixes; i++) {
                Held h;
                int r;

                r = open_dir(t, prefixes[i], &h);
                if (r == -ENOENT && i > 0)
                        break;
                if (r < 0)
                        return log_error_errno(r, "Failed to open %s%s to lock it: %m", t->rd->path, prefixes[i]);
                h.path = TAKE_PTR(prefixes[i]);
                next[(*n_next)++] = h;
        }
        for (size_t i = 0; i < *n_next; i++)
                next[i].exclusive = i + 1 == n_prefixes;
        return 0;
}

/* Right after a flock() on path failed: -EBUSY, logged with the holder, when another holds it; else -errno (logged). */
static int log_lock_failure(const SubtreeLock *l, const Tree *t, const char *path, int fd) {
        if (errno == EWOULDBLOCK)
                return log_busy(l, t, path, fd);
        return log_error_errno(errno, "Failed to lock %s%s: %m", t->rd->path, path);
}

/* Locks the directories not held yet, first: a failure there leaves every held lock as it was. */
static int lock_new(const SubtreeLock *l, Tree *t, const Held *next, size_t n_next, bool *changed) {
        for (size_t i = 0; i < n_next; i++) {
                if (find_held(t, next[i].dev, next[i].ino))
                        continue;
                *changed = true;
                if (flock(next[i].fd, (next[i].exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0)
                        return log_lock_failure(l, t, next[i].path, next[i].fd);
        }
        return 0;
}

/*
 * Converts the mode of the directories held already where it differs. A failed conversion may
 * have dropped the lock: then each of them up to it takes back the mode it had.
 */
static int convert_held(const SubtreeLock *l, Tree *t, const Held *next, size_t n_next, bool *changed) {
        for (size_t i = 0; i < n_next; i++) {
                Held *old = find_held(t, next[i].dev, next[i].ino);
                int r;

                if (!old || old->exclusive == next[i].exclusive)
                        continue;
                *changed = true;
                if (flock(old->fd, (next[i].exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
                        r = log_lock_failure(l, t, next[i].path, old->fd);
                        for (size_t j = 0; j <= i; j++) {
                                Held *o = find_held(t, next[j].dev, next[j].ino);

                                if (o)
                                        (void) flock(o->fd, (o->exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB);
                        }
                        return r;
                }
        }
        return 0;
}

/* The directories held already keep their fds, which hold their locks: next takes those over. */
static void take_over_fds(Tree *t, Held *next, size_t n_next) {
        for (size_t i = 0; i < n_next; i++) {
                Held *old = find_held(t, next[i].dev, next[i].ino);

                if (!old)
                        continue;
                close(next[i].fd);
                next[i].fd = TAKE_FD(old->fd);
        }
}

/*
 * Makes t's locks those of root: every existing prefix shared, the deepest existing one exclusive.
 * Directories already held are kept (their mode converted last); on failure nothing held changes
 * (but for a conversion to exclusive that failed, whose shared lock is taken back). Returns 0, 1
 * when something changed, -EBUSY (logged), or -errno.
 */
static int tree_relock(SubtreeLock *l, Tree *t, const char *root) {
        char **prefixes = NULL;
        Held *next = NULL;
        size_t n_next = 0, n_prefixes;
        bool changed = false;
        int r;

        r = list_prefixes(root, &prefixes);
        if (r < 0)
                return log_oom();
        n_prefixes = (size_t) r;
        next = new0(Held, n_prefixes);
        if (!next) {
                r = log_oom();
                goto out;
        }

        r = open_prefixes(t, prefixes, n_prefixes, next, &n_next);
        if (r < 0)
                goto out;
        if ((n_next < n_prefixes) != t->missing) {
                t->missing = n_next < n_prefixes;
                if (t->missing)
                        log_debug("CgroupRoot=%s is not there yet in %s: its ancestors held shared until it is made; "
                                  "then locked.", root, t->rd->path);
                else
                        log_debug("CgroupRoot=%s is there now in %s.", root, t->rd->path);
        }
        r = lock_new(l, t, next, n_next, &changed);
        if (r < 0)
                goto out;
        r = convert_held(l, t, next, n_next, &changed);
        if (r < 0)
                goto out;
        take_over_fds(t, next, n_next);

        changed = changed || n_next != t->n_held;
        held_array_free(t->held, t->n_held);
        t->held = TAKE_PTR(next);
        t->n_held = n_next;
        n_next = 0;
        r = changed;
out:
        held_array_free(next, n_next);
        for (size_t i = 0; i < n_prefixes; i++)
                free(prefixes[i]);
        free(prefixes);
        return r;
}

int subtree_lock(const CgroupFs *fs, const char *root, SubtreeLock **ret) {
        const RootDir *rds[] = { fs->cpu, fs->cpuacct, fs->cpuset, fs->unified };
        SubtreeLock *l;
        int r;

        l = new0(SubtreeLock, 1);
        if (!l || !(l->root = strdup(root))) {
                free(l);
                return log_oom();
        }
        for (size_t i = 0; i < ELEMENTSOF(rds); i++) {
                struct stat st;
                bool dup = false;

                if (!rds[i])
                        continue;
                if (fstat(rds[i]->fd, &st) < 0) {
                        r = log_error_errno(errno, "Failed to stat %s: %m", rds[i]->path);
                        goto fail;
                }
                for (size_t j = 0; j < l->n_trees; j++)
                        dup = dup || (l->trees[j].n_held > 0 && l->trees[j].held[0].dev == st.st_dev &&
                                      l->trees[j].held[0].ino == st.st_ino);
                if (dup)
                        continue; /* co-mounted: locked already */
                l->trees[l->n_trees] = (Tree){ .rd = rds[i] };
                r = tree_relock(l, &l->trees[l->n_trees++], root);
                if (r < 0)
                        goto fail;
        }
        *ret = l;
        return 0;
fail:
        subtree_lock_free(l);
        return r;
}

int subtree_lock_refresh(SubtreeLock *l) {
        int r, changed = 0;

        for (size_t i = 0; i < l->n_trees; i++) {
                Tree *t = &l->trees[i];
                const Held *last = t->n_held > 0 ? &t->held[t->n_held - 1] : NULL;
                Held now;

                r = open_dir(t, l->root, &now);
                if (r < 0)
                        continue; /* gone (or unreadable): the ancestors' locks keep others out */
                close(now.fd);
                if (last && last->dev == now.dev && last->ino == now.ino)
                        continue;
                r = tree_relock(l, t, l->root);
                if (r < 0)
                        return r;
                if (r > 0) {
                        log_debug("Locked %s%s, CgroupRoot's directory now.", t->rd->path, streq(l->root, "/") ? "" : l->root);
                        changed = 1;
                }
        }
        return changed;
}

int subtree_lock_set_root(SubtreeLock *l, const char *root) {
        _cleanup_free_ char *old = l->root, *new = strdup(root);
        int r = 0;

        if (!new) {
                l->root = TAKE_PTR(old);
                return log_oom();
        }
        l->root = new;
        for (size_t i = 0; i < l->n_trees; i++) {
                r = tree_relock(l, &l->trees[i], root);
                if (r >= 0)
                        continue;
                /* Back to the old root where it moved already (what another daemon cannot hold: we did). */
                for (size_t j = 0; j <= i; j++)
                        if (tree_relock(l, &l->trees[j], old) < 0)
                                log_error("Failed to take back the lock on %s%s.", l->trees[j].rd->path, old);
                l->root = TAKE_PTR(old);
                return r;
        }
        new = NULL; /* l->root */
        return 0;
}

const char *subtree_lock_root(const SubtreeLock *l) {
        return l->root;
}

SubtreeLock *subtree_lock_free(SubtreeLock *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_trees; i++)
                held_array_free(l->trees[i].held, l->trees[i].n_held);
        free(l->root);
        free(l);
        return NULL;
}
