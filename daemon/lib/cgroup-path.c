/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peltd/cgroup-path.h"
#include "peltd/macro.h"

int cgroup_path_normalize(const char *in, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0;

        if (!in || in[0] != '/')
                return -EINVAL;
        out = malloc(strlen(in) + 2);
        if (!out)
                return -ENOMEM;
        for (const char *p = in; *p;) {
                const char *e;
                size_t len;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                e = strchrnul(p, '/');
                len = (size_t) (e - p);
                if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
                        return -EINVAL;
                out[n++] = '/';
                memcpy(out + n, p, len);
                n += len;
                p = e;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

bool cgroup_path_under(const char *path, const char *root) {
        size_t l = strlen(root);

        if (streq(root, "/"))
                return path[0] == '/';
        return strncmp(path, root, l) == 0 && (path[l] == 0 || path[l] == '/');
}

char *cgroup_file_path(const char *group, const char *file) {
        char *p;

        while (*group == '/')
                group++;
        if (asprintf(&p, "%s%s%s", group, *group ? "/" : "", file) < 0)
                return NULL;
        return p;
}

char *cgroup_child_path(const char *group, const char *name) {
        char *p;

        if (asprintf(&p, "%s/%s", streq(group, "/") ? "" : group, name) < 0)
                return NULL;
        return p;
}

char *cgroup_parent_path(const char *group) {
        const char *slash = strrchr(group, '/');

        if (!slash || slash == group)
                return strdup("/");
        return strndup(group, (size_t) (slash - group));
}
