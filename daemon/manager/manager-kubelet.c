/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kubelet's CPU manager beside peltd (KubeletCpuManagerState=): its checkpoint read at start, at
 * Reload and whenever the file changes (checked at every task round: kubelet replaces the file by
 * rename, so its inode changes; an edit in place changes its mtime). Under the static policy the
 * CPUs of its entries are held by kubelet (in no set peltd writes) and every group under the
 * kubepods hierarchy is kubelet's. A checkpoint that does not parse is said once, and every group
 * under kubepods is left alone until it parses again; the CPUs last known held stay held.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "peltd/kubelet-checkpoint.h"
#include "peltd/kubelet-state.h"
#include "peltd/log.h"
#include "peltd/owner.h"

#include "manager-internal.h"

static void *mfree(void *p) {
        free(p);
        return NULL;
}

struct ManagerKubelet {
        char *path;                  /* the file read: KubeletCpuManagerState= then */
        KubeletStateStamp stamp;     /* of the last read; exists false: no file */
        KubeletCheckpoint *checkpoint; /* the last one that parsed (kept while the file is broken) */
        char *error;                 /* why the file as it is now does not parse; NULL: it does, or no file */
};

static void kubelet_forget(ManagerKubelet *k) {
        k->checkpoint = kubelet_checkpoint_free(k->checkpoint);
        k->error = mfree(k->error);
        k->path = mfree(k->path);
        k->stamp = (KubeletStateStamp){ .exists = false };
}

void manager_kubelet_free(Manager *m) {
        if (!m->kubelet)
                return;
        kubelet_forget(m->kubelet);
        m->kubelet = mfree(m->kubelet);
}

/* held: the union of every owner's held CPUs. Returns whether kubelet's changed. */
static bool set_held(Manager *m, const CpuMask *cpus) {
        bool changed = !cpumask_equal(&m->held_by[OWNER_KUBELET], cpus);

        m->held_by[OWNER_KUBELET] = *cpus;
        (void) manager_held_union(m);
        return changed;
}

/* Whether the groups under kubepods are kubelet's now. */
static bool kubelet_owns_kubepods(const ManagerKubelet *k) {
        return k && (k->error || (k->checkpoint && k->checkpoint->is_static));
}

static bool checkpoint_same(const KubeletCheckpoint *a, const KubeletCheckpoint *b) {
        return a && b && streq(a->policy, b->policy) && a->n_entries == b->n_entries &&
               cpumask_equal(&a->exclusive, &b->exclusive);
}

/* A checkpoint that parsed: said when it says something new (or parses again), then kept. */
static void took_checkpoint(Manager *m, KubeletCheckpoint *c, bool was_broken) {
        ManagerKubelet *k = m->kubelet;
        char b[128];

        if (was_broken || !checkpoint_same(k->checkpoint, c))
                log_info("kubelet's CPU manager checkpoint %s%s: policy %s, %s%s held by %zu container%s.", k->path,
                         was_broken ? " parses again" : "", c->policy,
                         c->is_static ? "CPUs " : "no CPUs ", c->is_static ? fmt_cpus(&c->exclusive, b, sizeof b) : "",
                         c->n_entries, c->n_entries == 1 ? "" : "s");
        kubelet_checkpoint_free(k->checkpoint);
        k->checkpoint = c;
}

/* The file read again (k->path). ENOMEM is the only failure; the rest is said, and kept as state. */
static int kubelet_read(Manager *m) {
        ManagerKubelet *k = m->kubelet;
        KubeletCheckpoint *c = NULL;
        char *error = NULL;
        bool was_broken = k->error, had = k->checkpoint || k->error;
        int r;

        r = kubelet_state_load(k->path, &c, &k->stamp, &error);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT) {
                if (had)
                        log_info("kubelet's CPU manager checkpoint %s is gone: no CPUs are held by kubelet now.", k->path);
                k->checkpoint = kubelet_checkpoint_free(k->checkpoint);
                k->error = mfree(k->error);
                k->stamp = (KubeletStateStamp){ .exists = false };
                return 0;
        }
        if (r < 0 && !error)
                error = strdup(strerror(-r));
        if (r < 0 && !error)
                return -ENOMEM;
        if (r < 0) {
                /* Said once a fault: the same error again (kubelet rewriting a broken file) is not news. */
                if (!k->error || !streq(k->error, error))
                        log_warning("%s: %s; every group under kubepods is left alone until it parses.", k->path, error);
                free(k->error);
                k->error = error;
                /* Refused unread: compare with the file as it is now, so that it is not read again every round. */
                if (r != -EINVAL && kubelet_state_stamp(k->path, &k->stamp) < 0)
                        k->stamp = (KubeletStateStamp){ .exists = false };
                return 0;
        }
        k->error = mfree(k->error);
        took_checkpoint(m, c, was_broken);
        return 0;
}

/* What the groups and the planner see of kubelet changed: returns 1 (plan again), else 0. */
static int kubelet_apply(Manager *m, bool owned_before) {
        const ManagerKubelet *k = m->kubelet;
        CpuMask none;

        cpumask_zero(&none);
        /* While the file does not parse, the CPUs last known held stay held. */
        if (set_held(m, k->checkpoint && k->checkpoint->is_static ? &k->checkpoint->exclusive : &none) ||
            owned_before != kubelet_owns_kubepods(k))
                return 1;
        return 0;
}

int manager_kubelet_load(Manager *m) {
        const char *path = m->config->kubelet_state;
        bool owned_before = kubelet_owns_kubepods(m->kubelet);
        int r;

        if (!m->kubelet) {
                m->kubelet = new0(ManagerKubelet, 1);
                if (!m->kubelet)
                        return -ENOMEM;
        }
        if (!path || !m->kubelet->path || !streq(path, m->kubelet->path))
                kubelet_forget(m->kubelet);
        if (path && !m->kubelet->path) {
                m->kubelet->path = strdup(path);
                if (!m->kubelet->path)
                        return -ENOMEM;
        }
        if (m->kubelet->path) {
                r = kubelet_read(m);
                if (r < 0)
                        return r;
        }
        return kubelet_apply(m, owned_before);
}

int manager_kubelet_check(Manager *m) {
        ManagerKubelet *k = m->kubelet;
        KubeletStateStamp now;
        bool owned_before = kubelet_owns_kubepods(k);
        int r;

        if (!k || !k->path)
                return 0;
        r = kubelet_state_stamp(k->path, &now);
        if (r < 0) {
                log_debug_errno(r, "Failed to look at %s: %m", k->path);
                return 0;
        }
        if (kubelet_state_stamp_equal(&now, &k->stamp))
                return 0;
        r = kubelet_read(m);
        if (r < 0)
                return r;
        return kubelet_apply(m, owned_before);
}

GroupOwner manager_kubelet_owner(const Manager *m, const char *path, char *reason, size_t size) {
        const ManagerKubelet *k = m->kubelet;

        if (!kubelet_owns_kubepods(k) || group_owner_of_path(path) != OWNER_KUBELET)
                return OWNER_NONE;
        if (reason && size > 0) {
                if (k->error)
                        snprintf(reason, size, "under kubepods, and kubelet's CPU manager checkpoint %s does not parse: left alone until it does",
                                 k->path);
                else
                        snprintf(reason, size, "under kubepods: kubelet's CPU manager (policy static) places it");
        }
        return OWNER_KUBELET;
}

void manager_kubelet_judge(Manager *m, ManagedGroup *g) {
        char reason[POLICY_REASON_MAX];
        GroupOwner o = manager_kubelet_owner(m, g->path, reason, sizeof reason);

        /*
         * kubelet's word comes first under kubepods (its containers' cpusets are set before peltd
         * anyway); elsewhere a group owned for another reason (set before peltd, written, pinned)
         * keeps that judgement.
         */
        if (o != OWNER_KUBELET && g->owned_why != OWNED_NOT && g->owned_why != OWNED_KUBELET)
                return;
        if (o == OWNER_KUBELET) {
                /* Said as every group owned elsewhere is, when it is left alone ("Leaving ... alone"). */
                g->owner = OWNER_KUBELET;
                g->owned_why = OWNED_KUBELET;
                memcpy(g->owner_reason, reason, sizeof g->owner_reason);
                return;
        }
        if (g->owned_why == OWNED_KUBELET) {
                log_info("%s is no longer kubelet's: kubelet's CPU manager no longer places it.", g->path);
                g->owner = OWNER_NONE;
                g->owned_why = OWNED_NOT;
                g->owner_reason[0] = '\0';
                g->judge_owner = true; /* whether someone else set its cpuset is judged at its next read */
        }
}
