/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "peltd/macro.h"
#include "peltd/parse.h"

static const char *skip_space(const char *s) {
        while (isspace((unsigned char) *s))
                s++;
        return s;
}

static bool only_space(const char *s) {
        return *skip_space(s) == 0;
}

int safe_atou64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s)
                return -EINVAL;
        s = skip_space(s);
        /* strtoull accepts "-1" and wraps it: refuse signs. */
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (end == s || !only_space(end))
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi64(const char *s, int64_t *ret) {
        long long v;
        char *end;

        if (!s)
                return -EINVAL;
        s = skip_space(s);
        if (!isdigit((unsigned char) *s) && !((*s == '-' || *s == '+') && isdigit((unsigned char) s[1])))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (end == s || !only_space(end))
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        uint64_t v;
        int r = safe_atou64(s, &v);

        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r = safe_atoi64(s, &v);

        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int) v;
        return 0;
}

int safe_atod(const char *s, double *ret) {
        const char *p;
        char *end;
        double v;
        bool digits = false;

        if (!s)
                return -EINVAL;
        s = skip_space(s);
        /* Only [+-]digits[.digits]: strtod would also take hex, exponents, inf and nan. */
        p = s;
        if (*p == '-' || *p == '+')
                p++;
        for (; isdigit((unsigned char) *p); p++)
                digits = true;
        if (*p == '.')
                for (p++; isdigit((unsigned char) *p); p++)
                        digits = true;
        if (!digits || !only_space(p))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno == ERANGE)
                return -ERANGE;
        if (end != p)
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

char **strv_split_whitespace(const char *s) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        l = new0(char *, 1);
        if (!l)
                return NULL;
        for (const char *p = skip_space(s); *p; p = skip_space(p)) {
                size_t len = 0;
                char **nl;

                while (p[len] && !isspace((unsigned char) p[len]))
                        len++;
                nl = realloc(l, sizeof(char *) * (n + 2));
                if (!nl)
                        return NULL;
                l = nl;
                l[n] = strndup(p, len);
                if (!l[n])
                        return NULL;
                l[++n] = NULL;
                p += len;
        }
        return TAKE_PTR(l);
}

char *strstrip_trailing(char *s) {
        size_t n = strlen(s);

        while (n > 0 && isspace((unsigned char) s[n - 1]))
                s[--n] = 0;
        return s;
}

size_t ini_find_chars_or_comment(const char *s, size_t n, const char *chars) {
        bool was_space = false;

        for (size_t i = 0; i < n; i++) {
                if (strchr(chars, s[i]) || (was_space && s[i] == ';'))
                        return i;
                was_space = isspace((unsigned char) s[i]);
        }
        return n;
}
