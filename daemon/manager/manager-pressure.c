/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "peltd/alloc-util.h"
#include "peltd/log.h"
#include "peltd/sample-pressure.h"

#include "manager-internal.h"

/*
 * The pressure guard on packing (DESIGN.md, "Policies" -> "Pressure"): for every packed group,
 * whether its threads stall for CPU. What it finds goes to the planner (PolicyGroup.stall_usec),
 * which widens the group at once and holds it wide.
 *
 *   v1: each group round, for every packed group that ran in the last round (its usage counter
 *       moved: a packed group that did not run costs nothing), its threads' run_delay growth
 *       (sample-pressure.c), whatever TaskTracking= says. The growth per round is kept with its
 *       time in a ring; the guard fires when the growth over the last PressureWindowMSec reaches
 *       PressureStallMSec times the group's CPUs (run_delay counts each waiting thread; PSI's
 *       "some" counts the time any waited, so this is the same bar where one thread waits).
 *   v2: a PSI trigger on the group's cpu.pressure, its fd an sd-event I/O source for POLLPRI; it
 *       is removed when the group is no longer packed. The fired flag is taken by the next group
 *       round.
 * ManagedGroup.pressure_usec: the run_delay sum (v1) or cpu.pressure's "some" total (v2).
 */

/* Enough rounds for the default 1 s window at 100 ms rounds, several times over. */
#define PRESSURE_RING 64

typedef struct PressureEntry {
        char *path;
        uint64_t id;
        bool packed;
        RunDelays delays;
        bool have_usage;
        uint64_t usage_ns;
        struct {
                usec_t at;
                uint64_t cum_ns;     /* growth summed since it was packed, at that round */
        } ring[PRESSURE_RING];
        size_t ring_n;               /* samples taken (the ring holds the last PRESSURE_RING) */
        uint64_t cum_ns;
        int psi_fd;
        sd_event_source *psi_source;
        bool psi_fired;
        usec_t stall_usec;           /* the guard fired this round: the stall it saw; 0: no */
} PressureEntry;

struct Pressure {
        PressureEntry **e;           /* lined up with m->groups */
        size_t n;
};

/* What packing left: the ring, the thread table, the trigger. */
static void entry_unpack(PressureEntry *e) {
        run_delays_done(&e->delays);
        e->have_usage = false;
        e->ring_n = 0;
        e->cum_ns = 0;
        e->psi_source = sd_event_source_disable_unref(e->psi_source);
        if (e->psi_fd >= 0)
                close(e->psi_fd);
        e->psi_fd = -1;
        e->psi_fired = false;
        e->packed = false;
}

static void entry_free(PressureEntry *e) {
        if (!e)
                return;
        entry_unpack(e);
        free(e->path);
        free(e);
}

void pressure_free(Pressure *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n; i++)
                entry_free(p->e[i]);
        free(p->e);
        free(p);
}

static bool lined_up(const Manager *m) {
        const Pressure *p = m->pressure;

        if (!p || p->n != m->n_groups)
                return false;
        for (size_t i = 0; i < p->n; i++)
                if (p->e[i]->id != m->groups[i].id || !streq(p->e[i]->path, m->groups[i].path))
                        return false;
        return true;
}

/* Lines the entries up with m->groups (both sorted by path): kept where the group is, made where new. */
static int sync_entries(Manager *m) {
        Pressure *p = m->pressure;
        _cleanup_free_ PressureEntry **ne = NULL;
        size_t j = 0;

        if (!p) {
                p = m->pressure = new0(Pressure, 1);
                if (!p)
                        return -ENOMEM;
        }
        if (lined_up(m))
                return 0;
        ne = new0(PressureEntry *, MAX(m->n_groups, 1u));
        if (!ne)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_groups; i++) {
                /* (TAKE_PTR() names its argument twice: no j++ inside it.) */
                for (; j < p->n && strcmp(p->e[j]->path, m->groups[i].path) < 0; j++)
                        entry_free(TAKE_PTR(p->e[j]));
                if (j < p->n && streq(p->e[j]->path, m->groups[i].path) && p->e[j]->id == m->groups[i].id) {
                        ne[i] = TAKE_PTR(p->e[j]);
                        j++;
                        continue;
                }
                ne[i] = new0(PressureEntry, 1);
                if (!ne[i] || !(ne[i]->path = strdup(m->groups[i].path))) {
                        for (size_t k = 0; k <= i; k++)
                                entry_free(ne[k]);
                        return -ENOMEM;
                }
                ne[i]->id = m->groups[i].id;
                ne[i]->psi_fd = -1;
        }
        for (; j < p->n; j++)
                entry_free(p->e[j]);
        free(p->e);
        p->e = TAKE_PTR(ne);
        p->n = m->n_groups;
        return 0;
}

/* Packed: peltd placed it on fewer CPUs than it may use. */
static bool is_packed(const Manager *m, const ManagedGroup *g) {
        CpuMask usable;

        if (!g->applied || g->owner != OWNER_NONE || !m->topology)
                return false;
        cpumask_andnot(&usable, &m->topology->online, &m->topology->isolated);
        if (g->has_allowed)
                cpumask_and(&usable, &usable, &g->allowed);
        return cpumask_subset(&g->applied_cpus, &usable) && cpumask_count(&g->applied_cpus) < cpumask_count(&usable);
}

/*
 * The kernel reports POLLPRI once per firing. A trigger whose group was removed reports POLLERR
 * (with POLLPRI) on every poll: its source is turned off, so the loop does not spin until the next
 * round lets the group go.
 */
static int on_psi(sd_event_source *s, _unused_ int fd, uint32_t revents, void *userdata) {
        PressureEntry *e = userdata;

        if (revents & EPOLLERR) {
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                return 0;
        }
        e->psi_fired = true;
        return 0;
}

/* v2: the trigger in place (said once where it cannot be), its firing taken, the total read. */
static void round_v2(Manager *m, ManagedGroup *g, PressureEntry *e) {
        const Config *c = m->config;
        int r;

        if (e->psi_fd < 0) {
                r = psi_trigger_open(m->fs->unified, g->path, c->pressure_stall_usec, c->pressure_window_usec);
                if (r < 0) {
                        log_debug_errno(r, "%s: no pressure trigger on its cpu.pressure, ignoring: %m", g->path);
                        return;
                }
                e->psi_fd = r;
                r = sd_event_add_io(m->event, &e->psi_source, e->psi_fd, EPOLLPRI, on_psi, e);
                if (r < 0) {
                        log_debug_errno(r, "%s: cannot watch its pressure trigger, ignoring: %m", g->path);
                        entry_unpack(e);
                        return;
                }
                (void) sd_event_source_set_description(e->psi_source, "pressure-trigger");
        }
        (void) psi_read_some_total(e->psi_fd, &g->pressure_usec);
        if (e->psi_fired) {
                e->psi_fired = false;
                e->stall_usec = c->pressure_stall_usec;
        }
}

/* The growth over the last window: now's sum less the sum at the newest sample at least a window old. */
static uint64_t window_growth(const PressureEntry *e, usec_t now, usec_t window) {
        size_t kept = MIN(e->ring_n, (size_t) PRESSURE_RING);
        uint64_t base = 0;

        for (size_t k = 1; k <= kept; k++) {
                size_t at = (e->ring_n - k) % PRESSURE_RING;

                base = e->ring[at].cum_ns;
                if (now - e->ring[at].at >= window)
                        break;
        }
        return e->cum_ns - (kept > 0 ? base : e->cum_ns);
}

/* v1: the threads' run_delay growth, read where the group ran. */
static void round_v1(Manager *m, ManagedGroup *g, PressureEntry *e, const SampledGroup *sg, usec_t now) {
        const Config *c = m->config;
        uint64_t growth = 0, sum = 0, over;
        bool ran = !e->have_usage || sg->usage_ns != e->usage_ns;

        e->have_usage = true;
        e->usage_ns = sg->usage_ns;
        if (ran && run_delays_read(cgroup_fs_usage_root(m->fs), cgroup_fs_threads_file(m->fs), g->path, m->proc,
                                   &e->delays, &growth, &sum) >= 0)
                g->pressure_usec = sum / NSEC_PER_USEC;
        if (e->ring_n == 0)
                e->ring[e->ring_n++ % PRESSURE_RING] = (typeof(e->ring[0])){ .at = now, .cum_ns = 0 };
        e->cum_ns += growth;
        e->ring[e->ring_n++ % PRESSURE_RING] = (typeof(e->ring[0])){ .at = now, .cum_ns = e->cum_ns };

        over = window_growth(e, now, c->pressure_window_usec) / NSEC_PER_USEC;
        log_debug("%s: ran %d, run_delay grew %" PRIu64 " µs, %" PRIu64 " µs in the window", g->path, ran, growth / NSEC_PER_USEC, over);
        if (over >= c->pressure_stall_usec * (usec_t) MAX(cpumask_count(&g->applied_cpus), 1))
                e->stall_usec = over;
}

int manager_pressure_round(Manager *m, const SampledGroup *sg, size_t n) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        r = sync_entries(m);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_groups && i < n; i++) {
                ManagedGroup *g = &m->groups[i];
                PressureEntry *e = m->pressure->e[i];

                e->stall_usec = 0;
                if (m->config->pressure_stall_usec == 0 || !is_packed(m, g)) {
                        if (e->packed)
                                entry_unpack(e);
                        continue;
                }
                e->packed = true;
                if (m->fs->mode == CGROUP_MODE_V2)
                        round_v2(m, g, e);
                else
                        round_v1(m, g, e, &sg[i], now);
        }
        return 0;
}

void manager_pressure_input(const Manager *m, size_t group_index, PolicyGroup *pg) {
        const PressureEntry *e;

        if (!m->pressure || group_index >= m->pressure->n)
                return;
        e = m->pressure->e[group_index];
        pg->stall_usec = e->stall_usec;
        pg->stall_window_usec = m->config->pressure_window_usec;
}

void manager_pressure_reset(Manager *m) {
        for (size_t i = 0; i < m->n_groups; i++)
                m->histories[i].stalls = 0;
}
