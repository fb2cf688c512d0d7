/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The metrics file: rendering (pure) and the atomic replacement of the file. The format is
 * Prometheus' text exposition format 0.0.4: for each family a "# HELP name text" line, a
 * "# TYPE name counter|gauge" line, then its samples, "name{label="value"} number", one per
 * line, every sample of a family together. Label values escape \, " and newline; HELP text
 * escapes \ and newline (the texts below hold neither).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "peltd/macro.h"
#include "peltd/metrics.h"
#include "peltd/utf8.h"

/* ---- A growing buffer ------------------------------------------------------------------------- */

typedef struct Buf {
        char *data;
        size_t len, size;
        bool oom;                    /* sticky: every later append is a no-op */
} Buf;

static bool buf_reserve(Buf *b, size_t more) {
        char *p;
        size_t size;

        if (b->oom)
                return false;
        if (b->len + more + 1 <= b->size)
                return true;
        size = MAX(b->size * 2, b->len + more + 1);
        size = MAX(size, (size_t) 4096);
        p = realloc(b->data, size);
        if (!p) {
                b->oom = true;
                return false;
        }
        b->data = p;
        b->size = size;
        return true;
}

static void buf_putn(Buf *b, const char *s, size_t n) {
        if (!buf_reserve(b, n))
                return;
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = 0;
}

static void buf_puts(Buf *b, const char *s) {
        buf_putn(b, s, strlen(s));
}

static void buf_putc(Buf *b, char c) {
        buf_putn(b, &c, 1);
}

_printf_(2, 3) static void buf_printf(Buf *b, const char *fmt, ...) {
        va_list ap;
        int n;

        /* Numbers and short names only: 64 bytes hold any of them. */
        if (!buf_reserve(b, 64))
                return;
        va_start(ap, fmt);
        n = vsnprintf(b->data + b->len, b->size - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
                b->oom = true;
                return;
        }
        if ((size_t) n >= b->size - b->len) {
                /* Longer than it had room for: again, with room for all of it. */
                if (!buf_reserve(b, (size_t) n))
                        return;
                va_start(ap, fmt);
                (void) vsnprintf(b->data + b->len, b->size - b->len, fmt, ap);
                va_end(ap);
        }
        b->len += (size_t) n;
}

/* ---- Values ----------------------------------------------------------------------------------- */

/*
 * whole.frac with frac < 10^digits written with `digits` digits, trailing zeros (and a bare
 * point) dropped: exact, where a double would round ("0.2939453125", "12.000381", "3").
 */
static void put_fixed(Buf *b, uint64_t whole, uint64_t frac, unsigned digits) {
        char f[24];
        int n;

        buf_printf(b, "%" PRIu64, whole);
        if (frac == 0)
                return;
        n = snprintf(f, sizeof f, "%0*" PRIu64, (int) digits, frac);
        while (n > 0 && f[n - 1] == '0')
                n--;
        buf_putc(b, '.');
        buf_putn(b, f, (size_t) n);
}

/* util-like values in 1/1024: k/1024 = k × 9765625 / 10^10, so ten decimal digits are exact. */
static void put_per_1024(Buf *b, uint64_t v) {
        put_fixed(b, v >> 10, (v & 1023) * UINT64_C(9765625), 10);
}

static void put_seconds(Buf *b, uint64_t ns) {
        put_fixed(b, ns / UINT64_C(1000000000), ns % UINT64_C(1000000000), 9);
}

static void put_double(Buf *b, double v) {
        if (isnan(v))
                buf_puts(b, "NaN");
        else if (isinf(v))
                buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        else
                /* 15 significant digits: what came from a shorter decimal reads back as it was. */
                buf_printf(b, "%.15g", v);
}

/* A label value: not-UTF-8 bytes as \xNN, then \ " and newline escaped as the format wants. */
static void put_label_value(Buf *b, const char *value) {
        _cleanup_free_ char *alloc = NULL;
        const char *s = utf8_escape(value, &alloc);

        if (!s) {
                b->oom = true;
                return;
        }
        for (const char *p = s; *p;) {
                size_t plain = strcspn(p, "\\\"\n");

                buf_putn(b, p, plain);
                p += plain;
                if (!*p)
                        break;
                buf_puts(b, *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : "\\n");
                p++;
        }
}

/* ---- Families --------------------------------------------------------------------------------- */

static void family(Buf *b, const char *name, const char *type, const char *help) {
        buf_printf(b, "# HELP %s ", name);
        buf_puts(b, help);
        buf_printf(b, "\n# TYPE %s %s\n", name, type);
}

/* One sample's start: "name{label="value"} " (no label when label is NULL). */
static void sample(Buf *b, const char *name, const char *label, const char *value) {
        buf_puts(b, name);
        if (label) {
                buf_printf(b, "{%s=\"", label);
                put_label_value(b, value);
                buf_puts(b, "\"}");
        }
        buf_putc(b, ' ');
}

static void u64_family(Buf *b, const char *name, const char *type, const char *help, uint64_t v) {
        family(b, name, type, help);
        sample(b, name, NULL, NULL);
        buf_printf(b, "%" PRIu64 "\n", v);
}

static void double_family(Buf *b, const char *name, const char *help, double v) {
        family(b, name, "gauge", help);
        sample(b, name, NULL, NULL);
        put_double(b, v);
        buf_putc(b, '\n');
}

/* What a per-group family writes of a group. */
typedef enum GroupValue {
        GV_UTIL,
        GV_RUNNABLE,
        GV_LOAD,
        GV_CPUS,
        GV_SHARES,
        GV_PLACEMENT_CHANGES,
        GV_THROTTLED,
} GroupValue;

static const struct {
        const char *name;
        const char *type;
        const char *help;
} group_families[] = {
        [GV_UTIL] = { "peltd_group_util_cpus", "gauge",
                      "CPU the group's threads use: PELT util_avg of its usage, in CPUs (util/1024)." },
        [GV_RUNNABLE] = { "peltd_group_runnable_cpus", "gauge",
                          "CPU the group's threads want: PELT runnable_avg (running or waiting), in CPUs." },
        [GV_LOAD] = { "peltd_group_load", "gauge",
                      "The group's shares-weighted demand: shares x min(runnable/1024, 1), in weight units." },
        [GV_CPUS] = { "peltd_group_cpus", "gauge", "Number of CPUs the group may use now (its cpuset)." },
        [GV_SHARES] = { "peltd_group_shares", "gauge", "The group's cpu.shares (cgroup v2: cpu.weight converted)." },
        [GV_PLACEMENT_CHANGES] = { "peltd_group_placement_changes_total", "counter",
                                   "Placement changes (CPUs or shares) peltd applied to the group since it found it." },
        [GV_THROTTLED] = { "peltd_group_throttled_seconds_total", "counter",
                           "Growth of the group's throttled time counter since peltd found it, as the kernel counts it." },
};

static bool group_has(const MetricsGroup *g, GroupValue v) {
        return v != GV_CPUS || g->cpus >= 0;
}

static void put_group_value(Buf *b, const MetricsGroup *g, GroupValue v) {
        switch (v) {
        case GV_UTIL:
                put_per_1024(b, g->util);
                break;
        case GV_RUNNABLE:
                put_per_1024(b, g->runnable);
                break;
        case GV_LOAD:
                buf_printf(b, "%" PRIu64, g->load);
                break;
        case GV_CPUS:
                buf_printf(b, "%d", g->cpus);
                break;
        case GV_SHARES:
                buf_printf(b, "%" PRIu64, g->shares);
                break;
        case GV_PLACEMENT_CHANGES:
                buf_printf(b, "%" PRIu64, g->placement_changes);
                break;
        case GV_THROTTLED:
                put_seconds(b, g->throttled_ns);
                break;
        }
}

static void group_family(Buf *b, const MetricsSnapshot *s, GroupValue v) {
        bool any = false;

        for (size_t i = 0; i < s->n_groups; i++) {
                const MetricsGroup *g = &s->groups[i];

                if (!group_has(g, v))
                        continue;
                if (!any)
                        family(b, group_families[v].name, group_families[v].type, group_families[v].help);
                any = true;
                sample(b, group_families[v].name, "group", g->path);
                put_group_value(b, g, v);
                buf_putc(b, '\n');
        }
}

int metrics_render(const MetricsSnapshot *s, char **ret, size_t *ret_size) {
        Buf b = {};

        family(&b, "peltd_build_info", "gauge", "peltd's version, as the label version (always 1).");
        sample(&b, "peltd_build_info", "version", s->version);
        buf_puts(&b, "1\n");
        family(&b, "peltd_policy_info", "gauge", "The daemon's placement policy, as the label policy (always 1).");
        sample(&b, "peltd_policy_info", "policy", s->policy);
        buf_puts(&b, "1\n");

        family(&b, "peltd_rounds_total", "counter",
               "Sampling rounds run: kind=\"task\" read every thread and group, kind=\"group\" the groups only.");
        sample(&b, "peltd_rounds_total", "kind", "group");
        buf_printf(&b, "%" PRIu64 "\n", s->group_rounds);
        sample(&b, "peltd_rounds_total", "kind", "task");
        buf_printf(&b, "%" PRIu64 "\n", s->task_rounds);

        u64_family(&b, "peltd_threads_tracked", "gauge", "Threads whose load peltd tracks (0 while it tracks none).",
                   s->threads_tracked);
        u64_family(&b, "peltd_groups_managed", "gauge", "Cgroups peltd manages.", s->groups_managed);

        family(&b, "peltd_sampling_cpu_seconds_total", "counter", "CPU time peltd itself spent sampling threads and groups.");
        sample(&b, "peltd_sampling_cpu_seconds_total", NULL, NULL);
        put_seconds(&b, s->sampling_cpu_ns);
        buf_putc(&b, '\n');

        double_family(&b, "peltd_energy_estimate",
                      "Energy estimate of the managed groups' load on the CPUs each may use now, in the energy model's units.",
                      s->energy_estimate);
        double_family(&b, "peltd_energy_estimate_spread",
                      "Energy estimate of the same load with every group on every online CPU, in the same units.",
                      s->energy_estimate_spread);

        for (GroupValue v = GV_UTIL; v <= GV_THROTTLED; v++)
                group_family(&b, s, v);

        if (b.oom || !buf_reserve(&b, 0)) {
                free(b.data);
                return -ENOMEM;
        }
        *ret = b.data;
        *ret_size = b.len;
        return 0;
}

/* ---- The file --------------------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int metrics_write_file(const char *path, const char *text, size_t size) {
        _cleanup_free_ char *tmp = NULL;
        int fd, r;

        /* "NAME.tmp": node_exporter reads only names ending in ".prom". */
        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        /*
         * One left by a crash (or planted: unlink removes a link, not its target) goes first; then
         * O_EXCL|O_NOFOLLOW creates a new file or fails, whatever was put there meanwhile.
         */
        if (unlink(tmp) < 0 && errno != ENOENT)
                return negative_errno();
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return negative_errno();
        /* The unit's UMask=0077 took the read bits away: node_exporter runs as another user. */
        r = fchmod(fd, 0644) < 0 ? negative_errno() : 0;
        if (r == 0)
                r = write_all(fd, text, size);
        /*
         * No fsync: the file describes the running daemon and is written again within a second;
         * it lives in /run by default, which no crash of the machine keeps anyway.
         */
        if (close(fd) < 0 && r == 0)
                r = negative_errno();
        if (r == 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlink(tmp);
        return r;
}
