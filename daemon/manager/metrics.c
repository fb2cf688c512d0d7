/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The metrics file: rendering (pure) and the atomic replacement of the file. The format is
 * Prometheus' text exposition format 0.0.4: for each family a "# HELP name text" line, a
 * "# TYPE name counter|gauge" line, then its samples, "name{label="value"} number", one per
 * line, every sample of a family together. Label values escape \, " and newline; HELP text
 * escapes \ and newline (the texts below hold neither).
 */
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

#include "peltd/fs-util.h"
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

/* ---- Values ----------------------------------------------------------------------------------- */

/*
 * Most of the file is integers: written by hand, as printf takes several times as long, and the
 * file is rendered every second.
 */
static void put_u64(Buf *b, uint64_t v) {
        char d[20];
        size_t n = sizeof d;

        do {
                d[--n] = (char) ('0' + v % 10);
                v /= 10;
        } while (v > 0);
        buf_putn(b, d + n, sizeof d - n);
}

/*
 * whole.frac with frac < 10^digits (digits <= 19) written with `digits` digits, trailing zeros
 * (and a bare point) dropped: exact, where a double would round ("0.2939453125", "12.000381", "3").
 */
static void put_fixed(Buf *b, uint64_t whole, uint64_t frac, unsigned digits) {
        char f[20];
        size_t n = digits;

        put_u64(b, whole);
        if (frac == 0)
                return;
        for (size_t i = digits; i > 0; i--) {
                f[i - 1] = (char) ('0' + frac % 10);
                frac /= 10;
        }
        while (n > 0 && f[n - 1] == '0')
                n--;
        buf_putc(b, '.');
        buf_putn(b, f, n);
}

/* util-like values in 1/1024: k/1024 = k × 9765625 / 10^10, so ten decimal digits are exact. */
static void put_per_1024(Buf *b, uint64_t v) {
        put_fixed(b, v >> 10, (v & 1023) * UINT64_C(9765625), 10);
}

static void put_seconds(Buf *b, uint64_t ns) {
        put_fixed(b, ns / UINT64_C(1000000000), ns % UINT64_C(1000000000), 9);
}

static void put_double(Buf *b, double v) {
        char d[32];

        if (isnan(v))
                buf_puts(b, "NaN");
        else if (isinf(v))
                buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        else {
                /* 15 significant digits: what came from a shorter decimal reads back as it was. */
                (void) snprintf(d, sizeof d, "%.15g", v);
                buf_puts(b, d);
        }
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
        buf_puts(b, "# HELP ");
        buf_puts(b, name);
        buf_putc(b, ' ');
        buf_puts(b, help);
        buf_puts(b, "\n# TYPE ");
        buf_puts(b, name);
        buf_putc(b, ' ');
        buf_puts(b, type);
        buf_putc(b, '\n');
}

/* One sample's start: "name{label="value"} " (no label when label is NULL). */
static void sample(Buf *b, const char *name, const char *label, const char *value) {
        buf_puts(b, name);
        if (label) {
                buf_putc(b, '{');
                buf_puts(b, label);
                buf_puts(b, "=\"");
                put_label_value(b, value);
                buf_puts(b, "\"}");
        }
        buf_putc(b, ' ');
}

static void u64_family(Buf *b, const char *name, const char *type, const char *help, uint64_t v) {
        family(b, name, type, help);
        sample(b, name, NULL, NULL);
        put_u64(b, v);
        buf_putc(b, '\n');
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
        GV_FOREIGN_WRITES,
        GV_PRESSURE,
        _GV_MAX,
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
        [GV_FOREIGN_WRITES] = { "peltd_group_foreign_writes_total", "counter",
                                "Writes by others to the group's files that peltd placed; peltd yielded to each." },
        [GV_PRESSURE] = { "peltd_group_cpu_pressure_seconds_total", "counter",
                          "Time the group's threads waited for a CPU: cgroup v2 cpu.pressure some total; v1 their run_delay." },
};

static bool group_has(const MetricsGroup *g, GroupValue v) {
        switch (v) {
        case GV_CPUS:
                return g->cpus >= 0;
        case GV_FOREIGN_WRITES:
        case GV_PRESSURE:
                return g->managed;
        default:
                return true;
        }
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
                put_u64(b, g->load);
                break;
        case GV_CPUS:
                put_u64(b, (uint64_t) g->cpus); /* >= 0: group_has() */
                break;
        case GV_SHARES:
                put_u64(b, g->shares);
                break;
        case GV_PLACEMENT_CHANGES:
                put_u64(b, g->placement_changes);
                break;
        case GV_THROTTLED:
                put_seconds(b, g->throttled_ns);
                break;
        case GV_FOREIGN_WRITES:
                put_u64(b, g->foreign_writes);
                break;
        case GV_PRESSURE:
                put_fixed(b, g->pressure_usec / UINT64_C(1000000), g->pressure_usec % UINT64_C(1000000), 6);
                break;
        case _GV_MAX:
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

/* "name{group="path",owner="name"} 1" for each group owned elsewhere. */
static void owner_family(Buf *b, const MetricsSnapshot *s) {
        const char *name = "peltd_group_owner_info";
        bool any = false;

        for (size_t i = 0; i < s->n_groups; i++) {
                const MetricsGroup *g = &s->groups[i];

                if (!g->owner || !g->owner[0])
                        continue;
                if (!any)
                        family(b, name, "gauge",
                               "A group peltd leaves alone because another owner places it, as the label owner (always 1).");
                any = true;
                buf_puts(b, name);
                buf_puts(b, "{group=\"");
                put_label_value(b, g->path);
                buf_puts(b, "\",owner=\"");
                put_label_value(b, g->owner);
                buf_puts(b, "\"} 1\n");
        }
}

/* The CPUs each owner holds exclusively, every owner that may hold any, 0 included. */
static void held_family(Buf *b, const MetricsSnapshot *s) {
        if (s->n_held == 0)
                return;
        family(b, "peltd_cpus_held", "gauge",
               "CPUs another owner holds exclusively (kubelet's static CPUs, partitions, exclusive cpusets): in no set peltd writes.");
        for (size_t i = 0; i < s->n_held; i++) {
                sample(b, "peltd_cpus_held", "owner", s->held[i].owner);
                put_u64(b, s->held[i].cpus);
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
        put_u64(&b, s->group_rounds);
        buf_putc(&b, '\n');
        sample(&b, "peltd_rounds_total", "kind", "task");
        put_u64(&b, s->task_rounds);
        buf_putc(&b, '\n');

        u64_family(&b, "peltd_threads_tracked", "gauge", "Threads whose load peltd tracks (0 while it tracks none).",
                   s->threads_tracked);
        u64_family(&b, "peltd_groups_managed", "gauge", "Cgroups peltd manages.", s->groups_managed);

        family(&b, "peltd_sampling_cpu_seconds_total", "counter", "CPU time peltd itself spent sampling threads and groups.");
        sample(&b, "peltd_sampling_cpu_seconds_total", NULL, NULL);
        put_seconds(&b, s->sampling_cpu_ns);
        buf_putc(&b, '\n');
        family(&b, "peltd_metrics_cpu_seconds_total", "counter",
               "CPU time peltd itself spent on this file (taking its figures, rendering, writing), up to its last write.");
        sample(&b, "peltd_metrics_cpu_seconds_total", NULL, NULL);
        put_seconds(&b, s->metrics_cpu_ns);
        buf_putc(&b, '\n');

        double_family(&b, "peltd_energy_estimate",
                      "Energy estimate of the managed groups' load on the CPUs each may use now, in the energy model's units.",
                      s->energy_estimate);
        double_family(&b, "peltd_energy_estimate_spread",
                      "Energy estimate of the same load with every group on every online CPU, in the same units.",
                      s->energy_estimate_spread);

        u64_family(&b, "peltd_placement_errors_total", "counter",
                   "Placement writes that failed (cpuset.cpus, cpu.shares, cpu.weight, systemd properties), or were not made as the state file could not record them.",
                   s->placement_errors);
        held_family(&b, s);

        for (GroupValue v = GV_UTIL; v < _GV_MAX; v++)
                group_family(&b, s, v);
        owner_family(&b, s);

        if (b.oom || !buf_reserve(&b, 0)) {
                free(b.data);
                return -ENOMEM;
        }
        *ret = b.data;
        *ret_size = b.len;
        return 0;
}

/* ---- The file --------------------------------------------------------------------------------- */

int metrics_write_file(const char *path, const char *text, size_t size, const char **ret_reason) {
        _cleanup_free_ char *dir = strdup(path);
        _cleanup_close_ int dfd = -1;
        char *slash = dir ? strrchr(dir, '/') : NULL;

        if (!dir)
                return -ENOMEM;
        if (!slash || !slash[1])
                return -EINVAL;
        *slash = 0;
        /*
         * The directory without a symlink another user could have planted (node_exporter's textfile
         * directory may be its own user's: the files are made in it O_EXCL|O_NOFOLLOW, never
         * through a name someone else chose).
         */
        dfd = open_dir_safely(dir[0] ? dir : "/", ret_reason);
        if (dfd < 0)
                return dfd;
        /*
         * 0644 though the unit's UMask=0077: node_exporter runs as another user. Not durable: the
         * file describes the running daemon and is written again within a second; it lives in /run
         * by default, which no crash of the machine keeps anyway. The temporary file, "NAME.tmp",
         * is not read: node_exporter reads only names ending in ".prom".
         */
        return write_file_atomic_at(dfd, slash + 1, text, size, 0644, false);
}
