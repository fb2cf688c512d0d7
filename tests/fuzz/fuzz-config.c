/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The configuration: the INI layer (ini.c, on inih) with the daemon's schema (config.c), through
 * config_load_files() on real files. The input is split at the byte 0x01 into the main file and
 * up to two drop-ins (10-a.conf, 20-b.conf), written with mode 0600 into a private 0700 directory.
 * A configuration that loads is one the daemon can use: every value in its range, paths
 * normalised, groups below CgroupRoot.
 */
#include "fuzz-util.h"
#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/ini.h"
#include "peltd/macro.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        fuzz_log_setup();
        return 0;
}

static void check_normalised(const char *path) {
        _cleanup_free_ char *n = NULL;

        FUZZ_CHECK(cgroup_path_normalize(path, &n) == 0);
        FUZZ_CHECK(streq(n, path));
}

static void check_config(const Config *c) {
        FUZZ_CHECK(c->policy >= 0 && c->policy < _POLICY_MAX);
        FUZZ_CHECK(c->sample_interval_usec >= 10 * USEC_PER_MSEC && c->sample_interval_usec <= 60000 * USEC_PER_MSEC);
        FUZZ_CHECK(c->task_sample_interval_usec >= 10 * USEC_PER_MSEC &&
                   c->task_sample_interval_usec <= 600000 * USEC_PER_MSEC);
        FUZZ_CHECK(c->state_file && c->state_file[0] == '/');
        check_normalised(c->cgroup_root);
        FUZZ_CHECK(!c->groups_file);
        for (char **g = c->groups; g && *g; g++) {
                check_normalised(*g);
                FUZZ_CHECK(cgroup_path_under(*g, c->cgroup_root) && !streq(*g, c->cgroup_root));
        }
        for (size_t i = 0; i < c->n_group_configs; i++) {
                const GroupConfig *g = &c->group_configs[i];

                check_normalised(g->path);
                FUZZ_CHECK(cgroup_path_under(g->path, c->cgroup_root) && !streq(g->path, c->cgroup_root));
                FUZZ_CHECK(config_find_group(c, g->path) == g);
                FUZZ_CHECK(g->shares == 0 || (g->shares >= 2 && g->shares <= 262144));
                FUZZ_CHECK(g->policy >= POLICY_INVALID && g->policy < _POLICY_MAX);
                FUZZ_CHECK(g->min_cpus <= CPUMASK_MAX);
                FUZZ_CHECK(g->manage >= -1 && g->manage <= 1);
                FUZZ_CHECK(!g->has_allowed_cpus || !cpumask_empty(&g->allowed_cpus));
                FUZZ_CHECK(g->source_file && g->source_line > 0);
                (void) config_selects_group(c, g->path);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const names[] = { "peltd.conf", "peltd.conf.d/10-a.conf", "peltd.conf.d/20-b.conf" };
        const char *dir = fuzz_private_dir();
        _cleanup_free_ char *main_file = NULL, *dropins = NULL;
        _cleanup_config_ Config *c = NULL;
        FuzzPiece p[ELEMENTSOF(names)];
        size_t n = fuzz_split(data, size, 0x01, p, ELEMENTSOF(names));
        int r;

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char path[4096];

                snprintf(path, sizeof path, "%s/%s", dir, names[i]);
                if (i < n)
                        fuzz_write_file(dir, names[i], p[i].data, p[i].size, 0600);
                else
                        FUZZ_CHECK(unlink(path) == 0 || errno == ENOENT);
        }
        FUZZ_CHECK(asprintf(&main_file, "%s/peltd.conf", dir) > 0);
        FUZZ_CHECK(asprintf(&dropins, "%s/peltd.conf.d", dir) > 0);

        r = config_load_files(main_file, dropins, &c);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r == 0)
                check_config(c);
        return 0;
}
