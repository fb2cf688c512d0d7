/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The what-if files of peltd --plan (plan-file.c on the INI layer), through plan_file_load() on a
 * real file written with mode 0600 into a private 0700 directory. A plan that loads has every
 * group's Util=, values in range, distinct normalised paths; merging with a configuration's
 * [Group] gives the plan's values.
 */
#include <math.h>

#include "fuzz-util.h"
#include "peltd/ini.h"
#include "peltd/macro.h"
#include "peltd/plan-file.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

static void check_plan(const PlanFile *f) {
        for (size_t i = 0; i < f->n_groups; i++) {
                const PlanGroup *g = &f->groups[i];
                _cleanup_free_ char *n = NULL;
                GroupConfig base = GROUP_CONFIG_UNSET, merged;

                FUZZ_CHECK(cgroup_path_normalize(g->path, &n) == 0 && streq(n, g->path) && !streq(n, "/"));
                for (size_t k = 0; k < i; k++)
                        FUZZ_CHECK(!streq(f->groups[k].path, g->path));
                FUZZ_CHECK(!isnan(g->util) && g->util >= 0 && g->util <= (double) CPUMASK_MAX * 1024);
                FUZZ_CHECK(g->tasks <= 1000000);
                FUZZ_CHECK(g->max_task_util < 0 || (g->max_task_util <= 1024 && g->max_task_util <= g->util));
                FUZZ_CHECK(g->avg_slice_usec <= 3600 * USEC_PER_SEC);
                FUZZ_CHECK(g->config.shares == 0 || (g->config.shares >= 2 && g->config.shares <= 262144));
                FUZZ_CHECK(g->config.min_cpus <= CPUMASK_MAX);
                FUZZ_CHECK(g->line > 0);

                base.shares = 77;
                base.min_cpus = 3;
                plan_group_merge(g, &base, &merged);
                FUZZ_CHECK(merged.path == g->path && !merged.source_file && merged.source_line == g->line);
                FUZZ_CHECK(merged.shares == (g->config.shares ? g->config.shares : 77));
                FUZZ_CHECK(merged.min_cpus == (g->config.min_cpus ? g->config.min_cpus : 3));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *dir = fuzz_private_dir();
        _cleanup_plan_file_ PlanFile *f = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        fuzz_write_file(dir, "plan.ini", data, size, 0600);
        FUZZ_CHECK(asprintf(&path, "%s/plan.ini", dir) > 0);
        r = plan_file_load(path, &f);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r == 0)
                check_plan(f);
        return 0;
}
