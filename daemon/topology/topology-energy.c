/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel's Energy Model, read from debugfs beside the topology; energy.c only gets the tables. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "peltd/energy.h"
#include "peltd/macro.h"
#include "peltd/parse.h"
#include "peltd/rootdir.h"
#include "peltd/topology-energy.h"

#define ENERGY_MODEL_DIR "sys/kernel/debug/energy_model"

/* Unreadable debugfs (not mounted, not root, no EAS) means "no model", not an error. */
static int not_readable(int r) {
        if (r == -ENOENT || r == -ENOTDIR || r == -EACCES || r == -EPERM)
                return -ENOENT;
        return r;
}

static int load_domain(const RootDir *root, const char *name, EnergyPerfDomain *ret) {
        _cleanup_free_ char *dir = NULL, *cpus = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        EnergyPerfDomain pd = {};
        bool have_cost = true;
        struct dirent *de;
        int r;

        if (asprintf(&dir, ENERGY_MODEL_DIR "/%s", name) < 0)
                return -ENOMEM;
        if (asprintf(&cpus, "%s/cpus", dir) < 0)
                return -ENOMEM;
        r = rootdir_read_cpulist(root, cpus, &pd.cpus);
        if (r < 0)
                return not_readable(r);
        if (cpumask_empty(&pd.cpus))
                return -EINVAL;

        r = rootdir_opendir(root, dir, &d);
        if (r < 0)
                return not_readable(r);
        while ((de = readdir(d))) {
                EnergyPerfState ps = {}, *n;
                char path[PATH_MAX];
                int cr;

                if (!startswith(de->d_name, "ps:"))
                        continue;
                snprintf(path, sizeof path, "%s/%s/frequency", dir, de->d_name);
                r = rootdir_read_u64(root, path, &ps.frequency_khz);
                if (r >= 0) {
                        snprintf(path, sizeof path, "%s/%s/power", dir, de->d_name);
                        r = rootdir_read_u64(root, path, &ps.power);
                }
                if (r < 0) {
                        free(pd.states);
                        return not_readable(r);
                }
                snprintf(path, sizeof path, "%s/%s/cost", dir, de->d_name);
                cr = rootdir_read_u64(root, path, &ps.cost);
                if (cr < 0)
                        have_cost = false;
                if (ps.frequency_khz == 0) {
                        free(pd.states);
                        return -EINVAL;
                }

                n = realloc(pd.states, sizeof(EnergyPerfState) * (pd.n_states + 1));
                if (!n) {
                        free(pd.states);
                        return -ENOMEM;
                }
                pd.states = n;
                pd.states[pd.n_states++] = ps;
        }
        if (pd.n_states == 0)
                return -ENOENT;
        if (!have_cost) /* energy_model_new() computes them all, as the kernel does */
                for (size_t s = 0; s < pd.n_states; s++)
                        pd.states[s].cost = 0;
        *ret = pd;
        return 0;
}

static void domains_free(EnergyPerfDomain *domains, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(domains[i].states);
        free(domains);
}

int energy_model_load(const RootDir *root, EnergyModel **ret) {
        _cleanup_closedir_ DIR *d = NULL;
        EnergyPerfDomain *domains = NULL;
        size_t n_domains = 0;
        struct dirent *de;
        int r;

        r = rootdir_opendir(root, ENERGY_MODEL_DIR, &d);
        if (r < 0)
                return not_readable(r);

        while ((de = readdir(d))) {
                EnergyPerfDomain *n;
                unsigned id;

                if (!startswith(de->d_name, "pd") || safe_atou(de->d_name + 2, &id) < 0)
                        continue;
                n = realloc(domains, sizeof(EnergyPerfDomain) * (n_domains + 1));
                if (!n) {
                        domains_free(domains, n_domains);
                        return -ENOMEM;
                }
                domains = n;
                r = load_domain(root, de->d_name, &domains[n_domains]);
                if (r < 0) {
                        domains_free(domains, n_domains);
                        return r;
                }
                n_domains++;
        }
        if (n_domains == 0) {
                free(domains);
                return -ENOENT;
        }
        return energy_model_new(domains, n_domains, ret); /* it owns them now */
}
