/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * Fixture trees (tests/fixtures/) copied to a scratch directory that a test may change, and files
 * written and read in such a directory.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-cleanup.h"

static inline void fx_sh(const char *fmt, ...) {
        char cmd[2048];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        if (system(cmd) != 0) {
                fprintf(stderr, "command failed: %s\n", cmd);
                abort();
        }
}

#ifdef FIXTURES
/* Copies FIXTURES/name into a new scratch directory; returns its path (free it with fx_remove). */
static inline char *fx_copy(const char *name) {
        char tmpl[] = "/tmp/peltd-fixture-XXXXXX";
        char *dir = test_mkdtemp(tmpl), *ret;

        if (!dir)
                abort();
        fx_sh("cp -a '%s/%s/.' '%s/'", FIXTURES, name, dir);
        ret = strdup(dir);
        if (!ret)
                abort();
        return ret;
}
#endif

static inline void fx_remove(char *dir) {
        if (dir && strncmp(dir, "/tmp/peltd-fixture-", 19) == 0)
                fx_sh("rm -rf '%s'", dir);
        free(dir);
}

/* Writes fmt to dir/path (creating it and the directories above it, below dir), replacing what was there. */
static inline void fx_write(const char *dir, const char *path, const char *fmt, ...) {
        char p[1024];
        FILE *f;
        va_list ap;

        snprintf(p, sizeof p, "%s/%s", dir, path);
        for (char *slash = strchr(p + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                        fprintf(stderr, "cannot create %s\n", p);
                        abort();
                }
                *slash = '/';
        }
        f = fopen(p, "we");
        if (!f) {
                fprintf(stderr, "cannot write %s\n", p);
                abort();
        }
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        if (fclose(f) != 0) {
                fprintf(stderr, "cannot write %s\n", p);
                abort();
        }
}

/* What dir/path holds, without trailing whitespace (as cgroupfs shows a value), in a static buffer. */
static inline const char *fx_read(const char *dir, const char *path) {
        static char buf[4096];
        char p[1024];
        FILE *f;
        size_t n;

        snprintf(p, sizeof p, "%s/%s", dir, path);
        f = fopen(p, "re");
        if (!f) {
                fprintf(stderr, "cannot read %s\n", p);
                abort();
        }
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        while (n > 0 && isspace((unsigned char) buf[n - 1]))
                n--;
        buf[n] = 0;
        return buf;
}
