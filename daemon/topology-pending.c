/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Built only while daemon/topology.c is not in the tree (see daemon/meson.build): the modes that
 * need the topology say so instead of failing to link.
 */
#include "peltd/topology.h"

int topology_load(_unused_ const RootDir *root, _unused_ Topology **ret) {
        return -EOPNOTSUPP;
}

Topology *topology_free(Topology *t) {
        free(t);
        return NULL;
}
