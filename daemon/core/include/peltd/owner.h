/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/*
 * Who else places a group, or holds CPUs: the owners peltd yields to (README, "Running beside
 * kubelet, container runtimes and systemd"). A group owned elsewhere is never written; CPUs held
 * exclusively by an owner are in no set peltd writes.
 */
typedef enum GroupOwner {
        OWNER_NONE,                  /* peltd places it */
        OWNER_KUBELET,               /* under the kubepods hierarchy, or given CPUs by kubelet's checkpoint */
        OWNER_RUNTIME,               /* a container runtime's group: docker, podman/libpod, containerd, CRI-O, runc */
        OWNER_SYSTEMD,               /* a unit whose AllowedCPUs= comes from its unit file or drop-ins */
        OWNER_PARTITION,             /* a v2 partition (root, isolated) or a v1 cpu_exclusive cpuset */
        OWNER_AFFINITY,              /* threads pinned narrower than their group (sched_setaffinity) */
        OWNER_OTHER,                 /* set by someone else before peltd, or written while it ran */
        _OWNER_MAX,
        OWNER_INVALID = -1,
} GroupOwner;

/* "" for OWNER_NONE, else the name the metrics and D-Bus use ("kubelet", "runtime", ...). */
const char *group_owner_to_string(GroupOwner o);
/* The owner a name gives ("kubelet", ...; "" is OWNER_NONE), or OWNER_INVALID. */
GroupOwner group_owner_from_string(const char *s);

/*
 * The owner a group's path names: OWNER_KUBELET under a kubepods hierarchy (a path component
 * "kubepods" or "kubepods.slice", those included), OWNER_RUNTIME for the last component as the
 * container runtimes name theirs (docker-ID.scope, docker/ID, libpod-ID.scope, libpod-conmon-*,
 * crio-ID.scope, cri-containerd-ID.scope, a 64-hex-digit runc/containerd ID), else OWNER_NONE.
 */
GroupOwner group_owner_of_path(const char *path);
