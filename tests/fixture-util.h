/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* Fixture trees (tests/fixtures/) copied to a scratch directory that a test may change. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FIXTURES
#error "FIXTURES must name tests/fixtures"
#endif

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

/* Copies FIXTURES/name into a new scratch directory; returns its path (free it with fx_remove). */
static inline char *fx_copy(const char *name) {
        char tmpl[] = "/tmp/peltd-fixture-XXXXXX";
        char *dir = mkdtemp(tmpl), *ret;

        if (!dir)
                abort();
        fx_sh("cp -a '%s/%s/.' '%s/'", FIXTURES, name, dir);
        ret = strdup(dir);
        if (!ret)
                abort();
        return ret;
}

static inline void fx_remove(char *dir) {
        if (dir && strncmp(dir, "/tmp/peltd-fixture-", 19) == 0)
                fx_sh("rm -rf '%s'", dir);
        free(dir);
}

/* Writes s to dir/path (creating it), replacing what was there. */
static inline void fx_write(const char *dir, const char *path, const char *fmt, ...) {
        char p[1024];
        FILE *f;
        va_list ap;

        snprintf(p, sizeof p, "%s/%s", dir, path);
        f = fopen(p, "we");
        if (!f) {
                fprintf(stderr, "cannot write %s\n", p);
                abort();
        }
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        fclose(f);
}
