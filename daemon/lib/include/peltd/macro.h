/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _unused_ __attribute__((__unused__))
#define _cleanup_(f) __attribute__((__cleanup__(f)))
#define _printf_(a, b) __attribute__((__format__(printf, a, b)))
#define _pure_ __attribute__((__pure__))
#define _const_ __attribute__((__const__))
#define _warn_unused_result_ __attribute__((__warn_unused_result__))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
/*
 * MIN, MAX and CLAMP evaluate each argument once (an argument may be a call that opens a file);
 * the temporaries get names of their own, so that nested uses do not shadow each other.
 */
#define PELTD_CONCAT_(a, b) a##b
#define PELTD_CONCAT(a, b) PELTD_CONCAT_(a, b)
#define PELTD_UNIQ(name, n) PELTD_CONCAT(peltd_uniq_, PELTD_CONCAT(name, n))
#define PELTD_MIN(n, a, b)                                                              \
        ({                                                                              \
                const __typeof__(a) PELTD_UNIQ(a_, n) = (a);                            \
                const __typeof__(b) PELTD_UNIQ(b_, n) = (b);                            \
                PELTD_UNIQ(a_, n) < PELTD_UNIQ(b_, n) ? PELTD_UNIQ(a_, n) : PELTD_UNIQ(b_, n); \
        })
#define PELTD_MAX(n, a, b)                                                              \
        ({                                                                              \
                const __typeof__(a) PELTD_UNIQ(a_, n) = (a);                            \
                const __typeof__(b) PELTD_UNIQ(b_, n) = (b);                            \
                PELTD_UNIQ(a_, n) > PELTD_UNIQ(b_, n) ? PELTD_UNIQ(a_, n) : PELTD_UNIQ(b_, n); \
        })
#define MIN(a, b) PELTD_MIN(__COUNTER__, a, b)
#define MAX(a, b) PELTD_MAX(__COUNTER__, a, b)
#define CLAMP(x, lo, hi) MIN(MAX(x, lo), hi)

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)

/* "." and "..": the only directory entries a walk skips (a name may well begin with a dot). */
static inline bool dot_or_dot_dot(const char *name) {
        return name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0));
}

/* Returns the tail of s after prefix, or NULL when s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

static inline bool isempty(const char *s) {
        return !s || !*s;
}

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

/* Cleanup helpers: every one is NULL-/negative-safe, so half-built objects can be freed. */
static inline void freep(void *p) {
        free(*(void **) p);
}

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

static inline void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}

static inline void strv_freep(char ***l) {
        strv_free(*l);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Defines a cleanup function for a type with a NULL-safe *_free() that returns NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p) {                   \
                if (*p)                                         \
                        *p = func(*p);                          \
        }

/* Moves ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                             \
        ({                                                      \
                __typeof__(p) _ptr_ = (p);                      \
                (p) = NULL;                                     \
                _ptr_;                                          \
        })

#define TAKE_FD(fd)                                             \
        ({                                                      \
                int _fd_ = (fd);                                \
                (fd) = -1;                                      \
                _fd_;                                           \
        })

#define ERRNO_VALUE(e) (abs(e))

/* Returns 0 on success, -errno otherwise: glibc sets errno on failure. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

#define newa(type, n) ((type *) alloca(sizeof(type) * (n)))
#define new0(type, n) ((type *) calloc((n), sizeof(type)))
