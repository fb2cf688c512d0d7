/* SPDX-License-Identifier: GPL-2.0-only */
/* Persisting into peltctl's drop-in (peltctl-persist.h): the file, its directory and its lock. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peltd/fs-util.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/peltctl-dropin.h"
#include "peltd/peltctl-persist.h"
#include "peltd/time-util.h"

#define DROPIN_DIR "peltd.conf.d"

void dropin_done(Dropin *d) {
        closep(&d->config_fd);
        closep(&d->dir_fd);
        free(d->dir);
        free(d->file);
}

/* The drop-in's text ("" when there is none); logs why not. */
static int dropin_read(const Dropin *d, char **ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t size;
        ssize_t n = 0;

        if (d->dir_fd < 0)
                return (*ret = strdup("")) ? 0 : log_oom();
        fd = openat(d->dir_fd, DROPIN_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return (*ret = strdup("")) ? 0 : log_oom();
        if (fd < 0 && errno == ELOOP)
                return log_error_errno(ELOOP, "Refusing %s: it is a symbolic link; peltctl writes a file of its own there.",
                                       d->file);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open %s: %m", d->file);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Failed to read %s: %m", d->file);
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size > INI_FILE_MAX)
                return log_error_errno(EPERM, "Refusing %s: it is not a regular file of at most 1 MiB.", d->file);
        /* Read to the end, at most 1 MiB: one byte more says it grew meanwhile. */
        text = malloc(INI_FILE_MAX + 2);
        if (!text)
                return log_oom();
        for (size = 0; size <= INI_FILE_MAX; size += (size_t) n) {
                n = read(fd, text + size, INI_FILE_MAX + 1 - size);
                if (n < 0 && errno == EINTR)
                        n = 0;
                else if (n < 0)
                        return log_error_errno(errno, "Failed to read %s: %m", d->file);
                else if (n == 0)
                        break;
        }
        if (size > INI_FILE_MAX)
                return log_error_errno(EPERM, "Refusing %s: it is larger than 1 MiB.", d->file);
        text[size] = 0;
        if (strlen(text) != size)
                return log_error_errno(EINVAL, "Refusing %s: it holds a NUL byte.", d->file);
        *ret = TAKE_PTR(text);
        return 0;
}

/* Opens (with create, makes: mode 0755) CONFIG_DIR/peltd.conf.d and locks it against another peltctl. */
static int dropin_open_dir(Dropin *d, bool create) {
        const char *why = NULL;
        bool made = false;

        if (create && mkdirat(d->config_fd, DROPIN_DIR, 0755) == 0)
                made = true;
        else if (create && errno != EEXIST)
                return log_error_errno(errno, "Failed to make %s: %m", d->dir);
        /* Never through a symlink, and only a directory peltd would read (root's, nobody else's to write). */
        d->dir_fd = openat(d->config_fd, DROPIN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d->dir_fd < 0 && errno == ENOENT && !create)
                return 0;
        if (d->dir_fd < 0 && (errno == ELOOP || errno == ENOTDIR))
                return log_error_errno(errno, "Refusing %s: it is a symbolic link or not a directory.", d->dir);
        if (d->dir_fd < 0)
                return log_error_errno(errno, "Failed to open %s: %m", d->dir);
        if (fd_check_trusted(d->dir_fd, true, 0, &why) < 0)
                return log_error_errno(EPERM, "Refusing %s: it %s (peltd reads only a directory that is root's and not writable by group or others).",
                                       d->dir, why);
        /* 0755 whatever the umask: peltd reads it as root, but operators read what is there. */
        if (made && fchmod(d->dir_fd, 0755) < 0)
                return log_error_errno(errno, "Failed to make %s mode 0755: %m", d->dir);
        if (flock(d->dir_fd, LOCK_EX) < 0)
                return log_error_errno(errno, "Failed to lock %s: %m", d->dir);
        return 0;
}

/*
 * Before the call: refused unless root; CONFIG_DIR must be there; the drop-in read as it will be
 * rewritten (a file that cannot be is said now, before anything changes). Returns 0 or 1.
 */
int dropin_begin(Dropin *d, const char *config_dir, const Setting *s) {
        _cleanup_free_ char *text = NULL;
        const char *why;

        *d = (Dropin){ .config_fd = -1, .dir_fd = -1 };
        if (geteuid() != 0) {
                log_error("Persisting needs root; use --runtime to change the running daemon only.");
                return EXIT_FAILURE;
        }
        if (s->path && dropin_check_group_path(s->path, &why) < 0) {
                log_error("Cannot persist the shares of %s: a [Group] section of peltd.conf cannot name it (it %s); use --runtime.",
                          s->path, why);
                return EXIT_FAILURE;
        }
        if (asprintf(&d->dir, "%s/" DROPIN_DIR, config_dir) < 0 ||
            asprintf(&d->file, "%s/" DROPIN_DIR "/" DROPIN_NAME, config_dir) < 0)
                return log_oom(), EXIT_FAILURE;
        d->config_fd = open(config_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d->config_fd < 0) {
                log_error_errno(errno, "Cannot persist into the configuration directory %s: %m", config_dir);
                return EXIT_FAILURE;
        }
        if (dropin_open_dir(d, false) < 0 || dropin_read(d, &text) < 0)
                return EXIT_FAILURE;
        return 0;
}

/* Writes text as the drop-in: a temporary file beside it, mode 0644, fsynced, renamed over it. */
static int dropin_write(const Dropin *d, const char *text) {
        _cleanup_close_ int fd = -1;
        char tmp[64];
        size_t len = strlen(text);
        int r = 0;

        for (int attempt = 0; fd < 0; attempt++) {
                uint64_t rnd;

                if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
                        rnd = (uint64_t) now_usec(CLOCK_MONOTONIC) ^ ((uint64_t) getpid() << 32);
                /* Not ending in ".conf": peltd never reads it half-written. */
                snprintf(tmp, sizeof tmp, "." DROPIN_NAME ".%016" PRIx64, rnd);
                fd = openat(d->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 && (errno != EEXIST || attempt >= 16))
                        return log_error_errno(errno, "Failed to create a temporary file in %s: %m", d->dir);
        }
        /* 0644 whatever the umask; root's, not writable by others: what peltd reads. */
        if (fchmod(fd, 0644) < 0)
                r = negative_errno();
        for (size_t done = 0; r >= 0 && done < len;) {
                ssize_t n = write(fd, text + done, len - done);

                if (n < 0)
                        r = negative_errno();
                else
                        done += (size_t) n;
        }
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(d->dir_fd, tmp, d->dir_fd, DROPIN_NAME) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(d->dir_fd, tmp, 0);
                return log_error_errno(r, "Failed to write %s: %m", d->file);
        }
        (void) fsync(d->dir_fd);
        return 0;
}

/* After the call succeeded: the setting written into the drop-in. Returns 0 or 1. */
int dropin_commit(Dropin *d, const Setting *s) {
        _cleanup_free_ char *text = NULL, *edited = NULL;
        int r;

        if (d->dir_fd < 0 && dropin_open_dir(d, true) < 0)
                goto failed;
        /* Read again under the lock: the directory may have been made meanwhile. */
        if (dropin_read(d, &text) < 0)
                goto failed;
        r = s->policy ? dropin_set_policy(text, s->policy, &edited) : dropin_set_shares(text, s->path, s->shares, &edited);
        if (r < 0) {
                log_error_errno(r, "Failed to edit %s: %m", d->file);
                goto failed;
        }
        if (dropin_write(d, edited) < 0)
                goto failed;
        return 0;

failed:
        log_error("The running daemon has the new setting, but it was not persisted.");
        return EXIT_FAILURE;
}
