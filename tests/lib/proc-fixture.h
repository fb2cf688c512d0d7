/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The /proc sampler on a scratch tree: what tests of its rounds share (each opens it its own way). */
#include "peltd/rootdir.h"
#include "peltd/sample-proc.h"
#include "fixture-util.h"

typedef struct Fx {
        char *dir;
        RootDir *root;
        ProcSampler *s;
} Fx;

static inline void fx_close(Fx *f) {
        proc_sampler_free(f->s);
        rootdir_free(f->root);
        fx_remove(f->dir);
}

/* The thread's slot, or NULL where the sampler does not know it. */
static inline ProcThread *thread(Fx *f, pid_t tid) {
        ssize_t i = proc_sampler_find(f->s, tid);

        return i < 0 ? NULL : proc_sampler_slot(f->s, (size_t) i);
}
