/* SPDX-License-Identifier: GPL-2.0-only */
/* The table of what peltd writes (apply-values.h): its rows, and the kinds of text they hold. */
#include <inttypes.h>

#include "peltd/apply-values.h"
#include "peltd/cgroup-util.h"
#include "peltd/macro.h"

#define WORD_SEPARATORS " \t\n"

/* Names of controllers in "+name"/"-name" words are at most this long. */
#define CONTROLLER_NAME_MAX 63

/* The next word of a space-separated list at *p (its start and length), moving *p past it; false at the end. */
static bool next_word(const char **p, const char **ret, size_t *ret_len) {
        const char *w = *p + strspn(*p, WORD_SEPARATORS);

        if (!*w)
                return false;
        *ret = w;
        *ret_len = strcspn(w, WORD_SEPARATORS);
        *p = w + *ret_len;
        return true;
}

/* Whether a space-separated controller list holds the len characters at name as a word. */
static bool list_has_n(const char *list, const char *name, size_t len) {
        const char *w;
        size_t l;

        for (const char *p = list; p && next_word(&p, &w, &l);)
                if (l == len && strneq(w, name, len))
                        return true;
        return false;
}

static bool list_has(const char *list, const char *name) {
        return list_has_n(list, name, strlen(name));
}

/* ---- Kinds ------------------------------------------------------------------------------------ */

static char *record_value(_unused_ const char *recorded, const char *value) {
        return strdup(value);
}

static char *undo_to_old(const char *old, _unused_ const char *value) {
        return strdup(old);
}

static bool text_holds(const char *current, const char *value) {
        return streq(current, value);
}

static bool text_still_written(const char *current, const char *written, _unused_ const CpuMask *online,
                               _unused_ bool empty_ok) {
        return text_holds(current, written);
}

/* Plain text, compared as it is: a number of shares, a weight. */
static const PlacedKind kind_text = {
        .name = "text",
        .holds = text_holds,
        .still_written = text_still_written,
        .record = record_value,
        .undo = undo_to_old,
};

/* Never written empty: an empty cpuset leaves its tasks nowhere to run. */
static bool cpus_valid(const char *value) {
        CpuMask m;

        return cpumask_parse_list(value, &m) >= 0 && !cpumask_empty(&m);
}

static bool cpus_hold(const char *current, const char *value) {
        CpuMask a, b;

        if (cpumask_parse_list(current, &a) < 0 || cpumask_parse_list(value, &b) < 0)
                return false;
        return cpumask_equal(&a, &b);
}

static bool cpus_still_written(const char *current, const char *written, const CpuMask *online, bool empty_ok) {
        CpuMask c, w;

        if (cpus_hold(current, written))
                return true;
        /* The kernel drops offline CPUs from v1 cpusets: our value less those is still ours. */
        if (cpumask_parse_list(current, &c) < 0 || cpumask_parse_list(written, &w) < 0)
                return false;
        cpumask_and(&w, &w, online);
        return cpumask_equal(&c, &w) && (empty_ok || !cpumask_empty(&c));
}

/* A CPU list as sysfs writes it ("0-3,8"), compared as a set. */
static const PlacedKind kind_cpu_list = {
        .name = "CPU list",
        .valid = cpus_valid,
        .holds = cpus_hold,
        .still_written = cpus_still_written,
        .record = record_value,
        .undo = undo_to_old,
};

/* Whether a controller list holds what each of the words "+cpuset -cpu ..." asks for. */
static bool controllers_hold(const char *current, const char *value) {
        const char *w;
        size_t l;

        if (value[0] != '+' && value[0] != '-')
                return streq(current, value);
        for (const char *p = value; next_word(&p, &w, &l);) {
                if ((w[0] != '+' && w[0] != '-') || l < 2 || l - 1 > CONTROLLER_NAME_MAX)
                        return false;
                if (list_has_n(current, w + 1, l - 1) != (w[0] == '+'))
                        return false;
        }
        return true;
}

static bool controllers_still_written(const char *current, const char *written, _unused_ const CpuMask *online,
                                      _unused_ bool empty_ok) {
        return controllers_hold(current, written);
}

/*
 * A group's subtree_control takes one write per controller ("+cpuset", then "+cpu"): the record
 * keeps all that peltd enabled ("+cpuset +cpu"), so that a restore disables each of them.
 */
static char *controllers_record(const char *recorded, const char *value) {
        char *s;

        if (!recorded || recorded[0] != '+' || value[0] != '+')
                return strdup(value);
        if (list_has(recorded, value))
                return strdup(recorded);
        if (asprintf(&s, "%s %s", recorded, value) < 0)
                return NULL;
        return s;
}

/* Written as "+cpuset", read as a list: the opposite word takes it back. */
static char *controllers_undo(const char *old, const char *value) {
        char *s;

        if (value[0] != '+' && value[0] != '-')
                return strdup(old);
        if (asprintf(&s, "%c%s", value[0] == '+' ? '-' : '+', value + 1) < 0)
                return NULL;
        return s;
}

/* Controller words: "+cpuset" turns one on, "-cpu" off; the file lists those that are on. */
static const PlacedKind kind_controllers = {
        .name = "controllers",
        .holds = controllers_hold,
        .still_written = controllers_still_written,
        .record = controllers_record,
        .undo = controllers_undo,
        .change = true,
};

int placed_controllers_off(const char *original, const char *written, char **ret) {
        _cleanup_free_ char *s = strdup("");
        const char *w;
        size_t l;

        *ret = NULL;
        if (!s)
                return -ENOMEM;
        for (const char *p = written; next_word(&p, &w, &l);) {
                char *n;

                if (w[0] != '+' || l < 2 || l - 1 > CONTROLLER_NAME_MAX || list_has_n(original, w + 1, l - 1))
                        continue;
                if (asprintf(&n, "%s%s-%.*s", s, *s ? " " : "", (int) (l - 1), w + 1) < 0)
                        return -ENOMEM;
                free(s);
                s = n;
        }
        if (*s)
                *ret = TAKE_PTR(s);
        return 0;
}

/* ---- Rows ------------------------------------------------------------------------------------- */

static int format_cpus(const Placement *p, _unused_ ApplyTarget t, char **ret) {
        _cleanup_free_ char *s = cpumask_to_list(&p->cpus);

        if (!s)
                return -ENOMEM;
        if (cpumask_empty(&p->cpus))
                return -EINVAL;
        *ret = TAKE_PTR(s);
        return 0;
}

/* v1 takes shares; v2 and systemd a weight, converted as systemd converts it. */
static int format_shares(const Placement *p, ApplyTarget t, char **ret) {
        uint64_t v = t == APPLY_V1 ? p->shares : cgroup_shares_to_weight(p->shares);

        *ret = NULL;
        if (p->shares == 0)
                return 0;
        return asprintf(ret, "%" PRIu64, v) < 0 ? -ENOMEM : 0;
}

const PlacedValue placed_values[_PLACED_VALUE_MAX] = {
        [PLACED_CPUS] = {
                .name = "cpus",
                .place = {
                        [APPLY_V1] = { "cpuset", "cpuset.cpus", PLACED_RESTORE_CPUS, .descendants = true,
                                       .inside_parent = true },
                        [APPLY_V2] = { "unified", "cpuset.cpus", PLACED_RESTORE_CPUS, .descendants = true,
                                       .parent_effective = "cpuset.cpus.effective" },
                        /* systemd leaves offline CPUs out of the cgroup itself: the original goes back as it was. */
                        [APPLY_SYSTEMD] = { "systemd", "AllowedCPUs", PLACED_RESTORE_ORIGINAL, .reset_leaves_file = true },
                },
                .controller = "cpuset",
                .v2_created = "",            /* every CPU of the parent */
                .kind = &kind_cpu_list,
                .format = format_cpus,
                .order = PLACED_ORDER_NESTED,
        },
        [PLACED_SHARES] = {
                .name = "shares",
                .place = {
                        [APPLY_V1] = { "cpu", "cpu.shares", PLACED_RESTORE_ORIGINAL },
                        [APPLY_V2] = { "unified", "cpu.weight", PLACED_RESTORE_ORIGINAL },
                        [APPLY_SYSTEMD] = { "systemd", "CPUWeight", PLACED_RESTORE_ORIGINAL },
                },
                .controller = "cpu",
                .v2_created = "100",         /* the default weight */
                .kind = &kind_text,
                .format = format_shares,
                .order = PLACED_ORDER_FREE,
        },
        /* Written for the parents of a v2 group, by what the other rows need (placement_writes()). */
        [PLACED_CONTROLLERS] = {
                .name = "controllers",
                .place = {
                        [APPLY_V2] = { "unified", "cgroup.subtree_control", PLACED_RESTORE_CONTROLLERS },
                },
                .kind = &kind_controllers,
                .order = PLACED_ORDER_CONTROLLERS,
        },
};

const PlacedValue *placed_value_at(const char *hierarchy, const char *file, ApplyTarget *ret_target) {
        for (size_t i = 0; i < ELEMENTSOF(placed_values); i++)
                for (ApplyTarget t = 0; t < _APPLY_TARGET_MAX; t++) {
                        const PlacedPlace *p = placed_place(&placed_values[i], t);

                        if (p && streq(p->hierarchy, hierarchy) && streq(p->file, file)) {
                                if (ret_target)
                                        *ret_target = t;
                                return &placed_values[i];
                        }
                }
        return NULL;
}

const PlacedValue *placed_value_of_file(const char *file) {
        for (size_t i = 0; i < ELEMENTSOF(placed_values); i++)
                for (ApplyTarget t = 0; t < _APPLY_TARGET_MAX; t++) {
                        const PlacedPlace *p = placed_place(&placed_values[i], t);

                        if (p && streq(p->file, file))
                                return &placed_values[i];
                }
        return NULL;
}

int placed_target_of(const char *hierarchy, ApplyTarget *ret) {
        for (size_t i = 0; i < ELEMENTSOF(placed_values); i++)
                for (ApplyTarget t = 0; t < _APPLY_TARGET_MAX; t++) {
                        const PlacedPlace *p = placed_place(&placed_values[i], t);

                        if (p && streq(p->hierarchy, hierarchy)) {
                                *ret = t;
                                return 0;
                        }
                }
        return -ENOENT;
}
