/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "peltd/cpumask.h"
#include "peltd/macro.h"

/*
 * kubelet's CPU manager checkpoint (/var/lib/kubelet/cpu_manager_state, written by kubelet's
 * pkg/kubelet/cm/cpumanager/state/checkpoint.go), one JSON object:
 *
 *   {"policyName":"static","defaultCpuSet":"0,3-7",
 *    "entries":{"POD_UID":{"CONTAINER":"1-2"}},"checksum":1234}
 *
 * entries may be absent or null; CPU lists are as sysfs writes them. Under the static policy the
 * CPUs of entries belong to those containers alone (the shared pool is defaultCpuSet); with
 * policyName "none" nothing is exclusive. The checksum is kubelet's own and is not verified.
 * Pure: no I/O, no logging.
 */

typedef struct KubeletEntry {
        char *pod;                   /* the pod's UID */
        char *container;             /* the container's name in the pod */
        CpuMask cpus;
} KubeletEntry;

typedef struct KubeletCheckpoint {
        char *policy;                /* policyName: "static", "none", ... */
        bool is_static;              /* policyName is "static": the entries' CPUs are exclusive */
        CpuMask default_cpus;        /* defaultCpuSet: the shared pool (empty when absent) */
        CpuMask exclusive;           /* the union of the entries' CPUs when static, else empty */
        KubeletEntry *entries;       /* in the file's order */
        size_t n_entries;
} KubeletCheckpoint;

/*
 * Parses size bytes of a checkpoint (no NUL needed). Returns 0 with *ret, -EINVAL with
 * *ret_error (when ret_error is not NULL) a sentence saying what is wrong, e.g.
 * `entries.POD.CONTAINER: "1-" is not a CPU list` (names and values escaped as utf8.h does, long
 * ones cut), or -ENOMEM.
 */
int kubelet_checkpoint_parse(const char *data, size_t size, KubeletCheckpoint **ret, char **ret_error);

KubeletCheckpoint *kubelet_checkpoint_free(KubeletCheckpoint *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeletCheckpoint *, kubelet_checkpoint_free);
#define _cleanup_kubelet_checkpoint_ _cleanup_(kubelet_checkpoint_freep)
