/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * peltd --plan GROUPS.ini: what the planner would do with the groups a file describes, on this
 * machine's topology (or the one under --sysfs-root), with no history and touching nothing.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>

#include "peltd/commands.h"
#include "peltd/config-file.h"
#include "peltd/config.h"
#include "peltd/energy.h"
#include "peltd/topology-energy.h"
#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/pelt.h"
#include "peltd/plan-file.h"
#include "peltd/policy.h"
#include "peltd/rootdir.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"
#include "peltd/utf8.h"

static int print_json(Policy policy, const PlanFile *f, const PolicyResult *res, double energy) {
        _cleanup_json_ struct json_object *root = json_object_new_object();
        struct json_object *groups = json_object_new_array();

        if (!root || !groups)
                return log_oom();
        json_object_object_add(root, "policy", json_object_new_string(policy_to_string(policy)));
        json_object_object_add(root, "groups", groups);
        for (size_t i = 0; i < f->n_groups; i++) {
                struct json_object *g = json_object_new_object(), *cpus = json_object_new_array();

                if (!g || !cpus)
                        return log_oom();
                json_object_array_add(groups, g);
                json_object_object_add(g, "path", json_object_new_text(f->groups[i].path));
                CPUMASK_FOREACH(cpu, &res[i].cpus)
                        json_object_array_add(cpus, json_object_new_int(cpu));
                json_object_object_add(g, "cpus", cpus);
                json_object_object_add(g, "shares", json_object_new_int64((int64_t) res[i].shares));
                json_object_object_add(g, "reason", json_object_new_text(res[i].reason));
        }
        /* One decimal: the model's units are coarse, and stable output diffs well. */
        json_object_object_add(root, "energy_estimate", json_object_new_double(round(energy * 10) / 10));

        printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                    JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

/* text after prefix, wrapped at spaces to fit 80 columns, later lines indented as far as the prefix. */
static void print_wrapped(const char *prefix, const char *text) {
        const size_t width = 80, indent = strlen(prefix);
        size_t col = indent;

        fputs(prefix, stdout);
        while (*text) {
                size_t word = strcspn(text, " ");

                if (col > indent && col + 1 + word > width) {
                        printf("\n%*s", (int) indent, "");
                        col = indent;
                } else if (col > indent) {
                        putchar(' ');
                        col++;
                }
                fwrite(text, 1, word, stdout);
                col += word;
                text += word;
                text += strspn(text, " ");
        }
        putchar('\n');
}

static int print_text(Policy policy, const PlanFile *f, const PolicyResult *res, double energy, bool kernel_model) {
        printf("Policy: %s\n", policy_to_string(policy));
        for (size_t i = 0; i < f->n_groups; i++) {
                _cleanup_free_ char *a = NULL, *b = NULL;
                const char *path = utf8_escape(f->groups[i].path, &a), *reason = utf8_escape(res[i].reason, &b);
                /* Whole: a list of 8,192 CPUs can take 20 KB ("0,2,4,...,8190"). */
                _cleanup_free_ char *cpus = cpumask_to_list(&res[i].cpus);

                if (!cpus)
                        return log_oom();
                printf("\n[Group %s]\n", strna(path));
                printf("  CPUs:   %s\n", cpus);
                printf("  Shares: %" PRIu64 "\n", res[i].shares);
                print_wrapped("  Reason: ", strna(reason));
        }
        printf("\nEnergy estimate: %.1f (%s)\n", energy,
               kernel_model ? "the kernel's Energy Model" : "built-in model, arbitrary units");
        return 0;
}

/*
 * The machine under --sysfs-root: its topology, and the kernel's Energy Model where there is one
 * that covers every online CPU (else NULL: the built-in model). Returns 0 or -errno (logged).
 */
static int load_machine(const char *sysfs_root, Topology **ret_topology, EnergyModel **ret_model) {
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_energy_model_ EnergyModel *em = NULL;
        _cleanup_topology_ Topology *t = NULL;
        int r;

        r = rootdir_open(sysfs_root, &root);
        if (r < 0)
                return log_error_errno(r, "Failed to open --sysfs-root %s: %m", sysfs_root);
        r = topology_load(root, &t);
        if (r < 0)
                return log_error_errno(r, "Failed to read the CPU topology under %s: %m", sysfs_root);
        r = energy_model_load(root, &em);
        if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Failed to read the kernel's Energy Model, using the built-in one: %m");
        if (em && !energy_model_covers(em, t)) {
                log_warning("The kernel's Energy Model does not cover every online CPU, using the built-in one.");
                em = energy_model_free(em);
        }
        *ret_topology = TAKE_PTR(t);
        *ret_model = TAKE_PTR(em);
        return 0;
}

/*
 * The planner's view of the file's groups: each one's settings merged with its [Group] section
 * of the configuration (config may be NULL), into merged[i], which groups[i] points at.
 */
static void plan_groups(const PlanFile *f, const Config *config, const Topology *t, PolicyGroup *groups, GroupConfig *merged) {
        for (size_t i = 0; i < f->n_groups; i++) {
                const PlanGroup *pg = &f->groups[i];

                plan_group_merge(pg, config ? config_find_group(config, pg->path) : NULL, &merged[i]);
                /* Shares= defaults to 1024 (nice 0) in a plan file; the result shows what it would be. */
                if (merged[i].shares == 0)
                        merged[i].shares = 1024;
                groups[i] = (PolicyGroup){
                        .path = pg->path,
                        .util = pg->util,
                        .runnable = pg->util,
                        .load = (double) pelt_group_load(merged[i].shares, (uint64_t) llround(pg->util)),
                        /* Unset (0, < 0): the planner takes 1 thread, and Util / Tasks for the biggest. */
                        .nr_threads = pg->tasks,
                        .max_task_util = pg->max_task_util,
                        .avg_slice_usec = pg->avg_slice_usec,
                        .shares = merged[i].shares,
                        /* A what-if group has every online CPU now and no parent to stay inside. */
                        .cpus = t->online,
                        .config = &merged[i],
                };
        }
}

int cmd_plan(const Args *args) {
        _cleanup_plan_file_ PlanFile *f = NULL;
        _cleanup_config_ Config *config = NULL;
        _cleanup_energy_model_ EnergyModel *em = NULL;
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_free_ PolicyGroup *groups = NULL;
        _cleanup_free_ GroupConfig *merged = NULL;
        _cleanup_free_ PolicyResult *res = NULL;
        PolicyParams params = {};
        double energy;
        int r;

        /* The file first: a bad file is reported the same on every machine. */
        r = plan_file_load(args->plan_file, &f);
        if (r < 0)
                return EXIT_FAILURE;

        if (args->config_file || args->config_dir) {
                r = config_load_from(args->config_file, args->config_dir, &config);
                if (r < 0)
                        return EXIT_FAILURE;
        }

        r = load_machine(args->sysfs_root, &t, &em);
        if (r < 0)
                return EXIT_FAILURE;

        params.policy = args->policy ? policy_from_string(args->policy) : config ? config->policy : POLICY_BALANCED;
        params.energy_model = em;

        groups = new0(PolicyGroup, MAX(f->n_groups, 1u));
        merged = new0(GroupConfig, MAX(f->n_groups, 1u));
        res = new0(PolicyResult, MAX(f->n_groups, 1u));
        if (!groups || !merged || !res)
                return log_oom(), EXIT_FAILURE;
        plan_groups(f, config, t, groups, merged);

        r = policy_plan(t, groups, f->n_groups, &params, NULL, 0, res);
        if (r >= 0)
                r = policy_plan_energy(t, em, groups, res, f->n_groups, &energy);
        if (r < 0)
                return log_oom(), EXIT_FAILURE;

        if (args->json) {
                if (print_json(params.policy, f, res, energy) < 0)
                        return EXIT_FAILURE;
        } else if (print_text(params.policy, f, res, energy, em) < 0)
                return EXIT_FAILURE;
        return EXIT_SUCCESS;
}
