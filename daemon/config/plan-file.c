/* SPDX-License-Identifier: GPL-2.0-only */
#include <math.h>

#include "peltd/config-file.h"
#include "peltd/ini.h"
#include "peltd/log.h"
#include "peltd/plan-file.h"

PlanFile *plan_file_free(PlanFile *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_groups; i++)
                free(p->groups[i].path);
        free(p->groups);
        free(p);
        return NULL;
}

static int open_group(void *userdata, const IniPos *pos, const char *arg, void **ret) {
        PlanFile *f = userdata;
        _cleanup_free_ char *path = NULL;
        PlanGroup *n;
        int r;

        r = ini_group_section_path(pos, arg, &path);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_groups; i++)
                if (streq(f->groups[i].path, path))
                        return ini_error(pos, NULL, "[Group %s] appears twice (first at line %u).", path,
                                         f->groups[i].line);

        n = realloc(f->groups, sizeof(PlanGroup) * (f->n_groups + 1));
        if (!n)
                return log_oom();
        f->groups = n;
        n = &f->groups[f->n_groups++];
        *n = (PlanGroup){
                .path = TAKE_PTR(path),
                .line = pos->line,
                .util = NAN,
                .max_task_util = -1,
                .config = GROUP_CONFIG_UNSET,
        };
        *ret = n;
        return 0;
}

static int parse_max_task_util(const IniPos *pos, const char *value, const IniKey *key, void *data) {
        PlanGroup *g = (PlanGroup *) ((uint8_t *) data - offsetof(PlanGroup, max_task_util));
        int r = ini_parse_double(pos, value, key, data);

        if (r >= 0)
                g->max_task_util_line = pos->line;
        return r;
}

/* A group's util may exceed one CPU: up to every CPU a mask can name. */
#define PLAN_UTIL_MAX ((int64_t) CPUMASK_MAX * 1024)

static const IniSection plan_sections[] = {
        { "Group", true, open_group },
        {},
};

static const IniKey plan_keys[] = {
        { "Group", "Util", ini_parse_double, offsetof(PlanGroup, util), 0, PLAN_UTIL_MAX },
        { "Group", "Tasks", ini_parse_unsigned, offsetof(PlanGroup, tasks), 1, 1000000 },
        /* One thread runs on one CPU: its util is at most 1024. */
        { "Group", "MaxTaskUtil", parse_max_task_util, offsetof(PlanGroup, max_task_util), 0, 1024 },
        { "Group", "AvgSliceUSec", ini_parse_u64, offsetof(PlanGroup, avg_slice_usec), 1, 3600 * USEC_PER_SEC },
        { "Group", "Shares", ini_parse_u64, offsetof(PlanGroup, config.shares), 2, 262144 },
        { "Group", "AllowedCPUs", config_parse_allowed_cpus, offsetof(PlanGroup, config.allowed_cpus) },
        { "Group", "MinCPUs", ini_parse_unsigned, offsetof(PlanGroup, config.min_cpus), 1, CPUMASK_MAX },
        { "Group", "Policy", ini_parse_policy, offsetof(PlanGroup, config.policy) },
        { "Group", "Manage", ini_parse_tristate, offsetof(PlanGroup, config.manage) },
        {},
};

static const IniSchema plan_schema = { plan_sections, plan_keys };

int plan_file_load(const char *path, PlanFile **ret) {
        _cleanup_plan_file_ PlanFile *f = NULL;
        int r, error = 0;

        f = new0(PlanFile, 1);
        if (!f)
                return log_oom();

        r = ini_load(path, &plan_schema, f);
        if (r == -ENOENT)
                return log_error_errno(r, "Failed to open %s: %m", path);
        if (r < 0)
                error = r;

        /* What the INI layer cannot see: required keys and keys that contradict each other. */
        for (size_t i = 0; i < f->n_groups; i++) {
                const PlanGroup *g = &f->groups[i];
                IniPos pos = { .file = path, .line = g->line };

                if (isnan(g->util))
                        error = ini_error(&pos, NULL, "[Group %s]: Util= is required.", g->path);
                else if (g->max_task_util > g->util) {
                        char v[32];

                        pos = (IniPos){ .file = path, .line = g->max_task_util_line, .key = "MaxTaskUtil" };
                        snprintf(v, sizeof v, "%g", g->max_task_util);
                        error = ini_error(&pos, v, "A task's util cannot exceed its group's Util=%g.", g->util);
                }
        }
        if (error < 0)
                return error;

        *ret = TAKE_PTR(f);
        return 0;
}

void plan_group_merge(const PlanGroup *g, const GroupConfig *config, GroupConfig *ret) {
        const GroupConfig *p = &g->config;

        *ret = config ? *config : (GroupConfig) GROUP_CONFIG_UNSET;
        ret->path = g->path;
        ret->source_file = NULL;
        ret->source_line = g->line;
        if (p->shares > 0)
                ret->shares = p->shares;
        if (p->policy >= 0)
                ret->policy = p->policy;
        if (p->has_allowed_cpus) {
                ret->allowed_cpus = p->allowed_cpus;
                ret->has_allowed_cpus = true;
        }
        if (p->min_cpus > 0)
                ret->min_cpus = p->min_cpus;
        if (p->manage >= 0)
                ret->manage = p->manage;
}
