/* SPDX-License-Identifier: GPL-2.0-only */
#include <stdbool.h>
#include <string.h>

#include "peltd/macro.h"
#include "peltd/owner.h"

static const char *const owner_names[_OWNER_MAX] = {
        [OWNER_NONE] = "",
        [OWNER_KUBELET] = "kubelet",
        [OWNER_RUNTIME] = "runtime",
        [OWNER_SYSTEMD] = "systemd",
        [OWNER_PARTITION] = "partition",
        [OWNER_AFFINITY] = "affinity",
        [OWNER_OTHER] = "other",
};

const char *group_owner_to_string(GroupOwner o) {
        return o >= 0 && o < _OWNER_MAX ? owner_names[o] : NULL;
}

GroupOwner group_owner_from_string(const char *s) {
        for (int o = 0; o < _OWNER_MAX; o++)
                if (strcmp(owner_names[o], s) == 0)
                        return o;
        return OWNER_INVALID;
}

static bool all_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] == '\0' || !strchr("0123456789abcdef", s[i]))
                        return false;
        return true;
}

/* A component as a container runtime names its groups. */
static bool runtime_name(const char *c, size_t n) {
        static const char *const prefixes[] = { "docker-", "libpod-", "crio-", "cri-containerd-" };

        if (n == 64 && all_hex(c, n))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
                size_t p = strlen(prefixes[i]);

                if (n > p && strncmp(c, prefixes[i], p) == 0)
                        return true;
        }
        return false;
}

GroupOwner group_owner_of_path(const char *path) {
        const char *c = path, *last = NULL, *parent = NULL;
        size_t last_n = 0, parent_n = 0;

        while (*c) {
                size_t n;

                c += strspn(c, "/");
                n = strcspn(c, "/");
                if (n == 0)
                        break;
                if ((n == 8 && strncmp(c, "kubepods", 8) == 0) || (n == 14 && strncmp(c, "kubepods.slice", 14) == 0))
                        return OWNER_KUBELET;
                parent = last, parent_n = last_n;
                last = c, last_n = n;
                c += n;
        }
        if (last && runtime_name(last, last_n))
                return OWNER_RUNTIME;
        /* docker's cgroupfs driver: /docker/ID. */
        if (last && parent && parent_n == 6 && strncmp(parent, "docker", 6) == 0 && last_n >= 12 && all_hex(last, last_n))
                return OWNER_RUNTIME;
        return OWNER_NONE;
}
