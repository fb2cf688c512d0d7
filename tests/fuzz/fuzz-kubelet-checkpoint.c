/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kubelet's CPU manager checkpoint (kubelet-checkpoint.c) from arbitrary bytes. A checkpoint that
 * parses has a policy name, is static exactly when that name is "static", holds as exclusive the
 * union of its entries' CPUs (nothing when not static), and names every pod and container; one that
 * does not parse says why.
 */
#include "fuzz-util.h"
#include "peltd/kubelet-checkpoint.h"
#include "peltd/macro.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

static void check_checkpoint(const KubeletCheckpoint *c) {
        CpuMask all;

        cpumask_zero(&all);
        FUZZ_CHECK(c->policy && c->policy[0]);
        FUZZ_CHECK(c->is_static == streq(c->policy, "static"));
        for (size_t i = 0; i < c->n_entries; i++) {
                FUZZ_CHECK(c->entries[i].pod && c->entries[i].pod[0]);
                FUZZ_CHECK(c->entries[i].container && c->entries[i].container[0]);
                cpumask_or(&all, &all, &c->entries[i].cpus);
        }
        if (c->is_static)
                FUZZ_CHECK(cpumask_equal(&all, &c->exclusive));
        else
                FUZZ_CHECK(cpumask_empty(&c->exclusive));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = kubelet_checkpoint_parse((const char *) data, size, &c, &error);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r == 0) {
                FUZZ_CHECK(c && !error);
                check_checkpoint(c);
        } else
                FUZZ_CHECK(!c && error && error[0]);
        return 0;
}
