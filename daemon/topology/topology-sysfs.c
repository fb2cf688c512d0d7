/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU topology from sysfs, by the rules the README's "Topology" section states.
 *
 * sysfs says the same things differently on every architecture and kernel age, so every level is
 * read from the best file present and falls back step by step:
 *
 *   online      cpu/online → each cpuN/online (absent = online) → proc/cpuinfo "processor" lines
 *               → one CPU
 *   packages    physical_package_id → (when -1) package_cpus_list, core_siblings_list, their hex
 *               maps → (nothing at all) one package for every CPU without information
 *   dies        die_cpus_list/die_id → one die per package
 *   clusters    cluster_cpus_list (null when absent or every cluster_id is -1 or 65535)
 *   cores       thread_siblings_list, core_cpus_list, their hex maps → the CPU alone
 *   LLC         the highest-level Unified cache's shared_cpu_list, else shared_cpu_map
 *   NUMA        nodeN/cpulist → cpumap → cpuM links; no node/ directory: one node
 *   capacity    cpu_capacity → relative cpuinfo_max_freq → Intel hybrid PMU dirs → 1024
 *
 * Groups built from per-CPU masks are made a partition whatever the files say: a CPU joins the
 * group of the lowest online CPU its mask names (itself included), so overlapping or one-sided
 * masks from a broken file can never put a CPU in two groups. Dies, clusters and cores never
 * cross a package.
 *
 * Everything here only logs at debug: the caller decides what a failure means.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>

#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/topology-util.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"

#define CPU_DIR "sys/devices/system/cpu"
#define NODE_DIR "sys/devices/system/node"
#define CPUINFO "proc/cpuinfo"
#define INTEL_CORE_CPUS "sys/devices/cpu_core/cpus"
#define INTEL_ATOM_CPUS "sys/devices/cpu_atom/cpus"

/* The kernel gives E-cores 640 of 1024 where it has no better figure (arch/x86 hybrid scaling). */
#define INTEL_ATOM_CAPACITY 640U

/* cpuidle has at most CPUIDLE_STATE_MAX (10) states; leave room for odd trees. */
#define IDLE_STATES_MAX 64

#define PATH_SIZE 512

/* The lowest CPU of the group names it: used where sysfs gives no id (-1). */
#define ID_LOWEST_CPU (-2)
/* A die without die information takes its package's id. */
#define DIE_ID_OF_PACKAGE INT32_MIN

typedef struct GroupKey {
        int64_t a, b, c;
} GroupKey;

/* What one CPU's files said, while loading. */
typedef struct CpuRaw {
        int cpu;
        GroupKey package_key, die_key, cluster_key, smt_key, llc_key;
        int package_id;   /* or ID_LOWEST_CPU */
        int die_id;       /* or ID_LOWEST_CPU, or DIE_ID_OF_PACKAGE */
        int cluster_id;   /* or ID_LOWEST_CPU */
        bool has_cluster_list;
        bool has_cluster_id, cluster_id_ok;
        bool in_llc;
        unsigned cpu_capacity; /* 0: none or unusable */
} CpuRaw;


static bool cpu_dir_name(const char *name, int *ret) {
        const char *p = startswith(name, "cpu");
        unsigned cpu;

        if (!p || !isdigit((unsigned char) *p))
                return false;
        for (const char *q = p; *q; q++)
                if (!isdigit((unsigned char) *q))
                        return false;
        if (safe_atou(p, &cpu) < 0 || cpu >= CPUMASK_MAX)
                return false;
        *ret = (int) cpu;
        return true;
}

static bool numbered_name(const char *name, const char *prefix, int *ret) {
        const char *p = startswith(name, prefix);
        unsigned n;

        if (!p || !*p)
                return false;
        for (const char *q = p; *q; q++)
                if (!isdigit((unsigned char) *q))
                        return false;
        if (safe_atou(p, &n) < 0 || n > INT32_MAX)
                return false;
        *ret = (int) n;
        return true;
}

/* Formats a path into a PATH_SIZE buffer; -ENAMETOOLONG when it does not fit. */
_printf_(2, 3) static int pathf(char *buf, const char *format, ...) {
        va_list ap;
        int l;

        va_start(ap, format);
        l = vsnprintf(buf, PATH_SIZE, format, ap);
        va_end(ap);
        return l < 0 || l >= PATH_SIZE ? -ENAMETOOLONG : 0;
}

static int cpu_path(char *buf, int cpu, const char *rest) {
        return pathf(buf, CPU_DIR "/cpu%d/%s", cpu, rest);
}

/* A CPU list (relaxed) or, when map is true, a hex map. */
static int read_cpu_set(const RootDir *root, const char *path, bool map, CpuMask *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = rootdir_read_string(root, path, &s);
        if (r < 0)
                return r;
        r = map ? cpumask_parse_hex(s, ret) : parse_cpu_list_relaxed(s, ret);
        if (r < 0)
                return log_debug_errno(r, "Cannot parse %s (\"%s\"), ignoring: %m", path, s);
        return 0;
}

/*
 * The first of a CPU's topology mask files that reads and parses (names ending in _list are lists,
 * others hex maps). Returns 1 when one did, 0 when none is there.
 */
static int read_topology_mask(const RootDir *root, int cpu, const char *const *names, CpuMask *ret) {
        for (const char *const *n = names; *n; n++) {
                char path[PATH_SIZE];
                size_t l = strlen(*n);
                bool is_list = l > 5 && streq(*n + l - 5, "_list");

                if (pathf(path, CPU_DIR "/cpu%d/topology/%s", cpu, *n) < 0)
                        return 0;
                if (read_cpu_set(root, path, !is_list, ret) >= 0)
                        return 1;
        }
        return 0;
}

/* Returns 1 with *ret set when the id file reads and parses, 0 when absent or garbled. */
static int read_topology_id(const RootDir *root, int cpu, const char *name, int *ret) {
        _cleanup_free_ char *s = NULL;
        char path[PATH_SIZE];
        int r;

        if (pathf(path, CPU_DIR "/cpu%d/topology/%s", cpu, name) < 0)
                return 0;
        r = rootdir_read_string(root, path, &s);
        if (r < 0)
                return 0;
        r = parse_topology_id(s, ret);
        if (r < 0) {
                log_debug_errno(r, "Cannot parse %s (\"%s\"), ignoring: %m", path, s);
                return 0;
        }
        return 1;
}

/* The lowest online CPU of mask, counting cpu itself in: a partition whatever the masks say. */
static int mask_rep(const CpuMask *mask, const CpuMask *online, int cpu) {
        CpuMask m;
        int first;

        cpumask_and(&m, mask, online);
        first = cpumask_first(&m);
        return first >= 0 && first < cpu ? first : cpu;
}

int topology_read_online(const RootDir *root, CpuMask *ret) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *cpuinfo = NULL;
        CpuMask m;
        int r, n;

        r = read_cpu_set(root, CPU_DIR "/online", false, &m);
        if (r >= 0 && !cpumask_empty(&m)) {
                *ret = m;
                return 0;
        }
        if (r >= 0)
                log_debug(CPU_DIR "/online is empty, looking at each CPU.");

        /* Old kernels and some dumps: no cpu/online; a cpuN without an online file is online. */
        cpumask_zero(&m);
        if (rootdir_opendir(root, CPU_DIR, &d) >= 0) {
                struct dirent *de;

                while ((de = readdir(d))) {
                        char path[PATH_SIZE];
                        int cpu, v;

                        if (!cpu_dir_name(de->d_name, &cpu))
                                continue;
                        if (cpu_path(path, cpu, "online") < 0)
                                continue;
                        r = rootdir_read_int(root, path, &v);
                        if (r >= 0 && v == 0)
                                continue;
                        if (r < 0 && r != -ENOENT)
                                log_debug_errno(r, "Cannot read %s, taking CPU %d as online: %m", path, cpu);
                        (void) cpumask_set(&m, cpu);
                }
        }
        if (!cpumask_empty(&m)) {
                *ret = m;
                return 0;
        }

        /* No sysfs at all (e.g. a dump with only /proc): one CPU per "processor" entry. */
        r = rootdir_read_string(root, CPUINFO, &cpuinfo);
        if (r < 0)
                return log_debug_errno(r == -ENOENT ? -ENODEV : r, "No CPU under " CPU_DIR " and no " CPUINFO ": %m");
        n = parse_cpuinfo_processors(cpuinfo, &m);
        if (n < 0)
                return log_debug_errno(n, "Cannot parse " CPUINFO ": %m");
        if (n == 0) {
                /* alpha and sparc write no "processor" lines: there is at least the CPU we run on. */
                log_debug(CPUINFO " names no processor, taking one CPU.");
                (void) cpumask_set(&m, 0);
        }
        *ret = m;
        return 0;
}

static int key_cmp(const GroupKey *x, const GroupKey *y) {
        if (x->a != y->a)
                return x->a < y->a ? -1 : 1;
        if (x->b != y->b)
                return x->b < y->b ? -1 : 1;
        if (x->c != y->c)
                return x->c < y->c ? -1 : 1;
        return 0;
}

typedef struct KeyRef {
        GroupKey key;
        size_t index; /* into the CPU array, which is sorted by CPU number */
} KeyRef;

static int keyref_cmp(const void *a, const void *b) {
        const KeyRef *x = a, *y = b;
        int c = key_cmp(&x->key, &y->key);

        return c ? c : (x->index > y->index) - (x->index < y->index);
}

typedef struct GroupFirst {
        size_t first; /* the group's lowest CPU, as an index into the CPU array */
        size_t group;
} GroupFirst;

static int groupfirst_cmp(const void *a, const void *b) {
        const GroupFirst *x = a, *y = b;

        return (x->first > y->first) - (x->first < y->first);
}

/*
 * Groups the CPUs with equal keys (those with member[i] false stay out, with index -1), orders the
 * groups by their lowest CPU, and returns their masks, the per-CPU group index and each group's
 * lowest CPU (as an index into cpus).
 */
static int group_by_key(const TopoCpu *cpus, size_t n, const GroupKey *keys, const bool *member,
                        CpuMask **ret_groups, size_t *ret_n, int *ret_index, size_t **ret_first) {
        _cleanup_free_ KeyRef *refs = NULL;
        _cleanup_free_ GroupFirst *firsts = NULL;
        _cleanup_free_ int *raw_group = NULL;
        _cleanup_free_ size_t *order = NULL, *first = NULL;
        _cleanup_free_ CpuMask *groups = NULL;
        size_t n_refs = 0, n_groups = 0;

        refs = new0(KeyRef, MAX(n, (size_t) 1));
        firsts = new0(GroupFirst, MAX(n, (size_t) 1));
        raw_group = new0(int, MAX(n, (size_t) 1));
        order = new0(size_t, MAX(n, (size_t) 1));
        if (!refs || !firsts || !raw_group || !order)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                raw_group[i] = -1;
                if (!member || member[i])
                        refs[n_refs++] = (KeyRef){ .key = keys[i], .index = i };
        }
        qsort(refs, n_refs, sizeof *refs, keyref_cmp);
        for (size_t i = 0; i < n_refs; i++) {
                if (i == 0 || key_cmp(&refs[i].key, &refs[i - 1].key) != 0) {
                        /* Sorted by index within equal keys: the first is the lowest CPU. */
                        firsts[n_groups] = (GroupFirst){ .first = refs[i].index, .group = n_groups };
                        n_groups++;
                }
                raw_group[refs[i].index] = (int) n_groups - 1;
        }
        qsort(firsts, n_groups, sizeof *firsts, groupfirst_cmp);

        groups = new0(CpuMask, MAX(n_groups, (size_t) 1));
        first = new0(size_t, MAX(n_groups, (size_t) 1));
        if (!groups || !first)
                return -ENOMEM;
        for (size_t g = 0; g < n_groups; g++) {
                order[firsts[g].group] = g;
                first[g] = firsts[g].first;
        }
        for (size_t i = 0; i < n; i++) {
                if (raw_group[i] < 0) {
                        ret_index[i] = -1;
                        continue;
                }
                ret_index[i] = (int) order[raw_group[i]];
                (void) cpumask_set(&groups[ret_index[i]], cpus[i].cpu);
        }

        *ret_groups = TAKE_PTR(groups);
        *ret_n = n_groups;
        if (ret_first)
                *ret_first = TAKE_PTR(first);
        return 0;
}

/* Turns masks + per-group ids into TopoGroups. */
static int make_topo_groups(CpuMask *masks, size_t n, const int *ids, TopoGroup **ret) {
        TopoGroup *g = new0(TopoGroup, MAX(n, (size_t) 1));

        if (!g)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                g[i] = (TopoGroup){ .id = ids[i], .cpus = masks[i] };
        *ret = g;
        return 0;
}

static void read_package(const RootDir *root, const CpuMask *online, CpuRaw *raw) {
        static const char *const lists[] = {
                "package_cpus_list", "core_siblings_list", "package_cpus", "core_siblings", NULL,
        };
        CpuMask m;
        int id;

        if (read_topology_id(root, raw->cpu, "physical_package_id", &id) > 0 && topology_id_valid(id)) {
                raw->package_key = (GroupKey){ 0, id, 0 };
                raw->package_id = id;
                return;
        }
        /* -1 (POWER LPARs, sparc): the package is what the package mask says, named by its lowest CPU. */
        if (read_topology_mask(root, raw->cpu, lists, &m) > 0) {
                raw->package_key = (GroupKey){ 1, mask_rep(&m, online, raw->cpu), 0 };
                raw->package_id = ID_LOWEST_CPU;
                return;
        }
        /* Nothing at all (VMs without topology/): every such CPU in one package. */
        raw->package_key = (GroupKey){ 2, 0, 0 };
        raw->package_id = ID_LOWEST_CPU;
}

static void read_die(const RootDir *root, const CpuMask *online, int package, CpuRaw *raw) {
        static const char *const lists[] = { "die_cpus_list", "die_cpus", NULL };
        CpuMask m;
        bool has_mask;
        int id, k;

        k = read_topology_id(root, raw->cpu, "die_id", &id);
        has_mask = read_topology_mask(root, raw->cpu, lists, &m) > 0;

        if (k > 0 && topology_id_valid(id)) {
                raw->die_key = has_mask ? (GroupKey){ package, 0, mask_rep(&m, online, raw->cpu) } :
                                          (GroupKey){ package, 1, id };
                raw->die_id = id;
        } else if (k > 0 && has_mask && !(cpumask_count(&m) == 1 && cpumask_test(&m, raw->cpu))) {
                /*
                 * die_id -1: as for packages, the die is the mask, named by its lowest CPU. A mask
                 * of the CPU alone is the default of kernels without die support (arm64, POWER):
                 * no die information, so one die per package, below.
                 */
                raw->die_key = (GroupKey){ package, 0, mask_rep(&m, online, raw->cpu) };
                raw->die_id = ID_LOWEST_CPU;
        } else {
                raw->die_key = (GroupKey){ package, 2, 0 };
                raw->die_id = DIE_ID_OF_PACKAGE;
        }
}

static void read_cluster(const RootDir *root, const CpuMask *online, int package, CpuRaw *raw) {
        static const char *const lists[] = { "cluster_cpus_list", "cluster_cpus", NULL };
        CpuMask m;
        int id;

        raw->has_cluster_id = read_topology_id(root, raw->cpu, "cluster_id", &id) > 0;
        raw->cluster_id_ok = raw->has_cluster_id && cluster_id_valid(id);
        raw->cluster_id = raw->cluster_id_ok ? id : ID_LOWEST_CPU;

        if (read_topology_mask(root, raw->cpu, lists, &m) > 0) {
                raw->has_cluster_list = true;
                raw->cluster_key = (GroupKey){ package, 0, mask_rep(&m, online, raw->cpu) };
        } else
                /* On a machine with clusters, a CPU whose list is missing is a cluster of its own. */
                raw->cluster_key = (GroupKey){ package, 1, raw->cpu };
}

static void read_smt(const RootDir *root, const CpuMask *online, int package, CpuRaw *raw) {
        static const char *const lists[] = {
                "thread_siblings_list", "core_cpus_list", "thread_siblings", "core_cpus", NULL,
        };
        CpuMask m;

        if (read_topology_mask(root, raw->cpu, lists, &m) > 0)
                raw->smt_key = (GroupKey){ package, 0, mask_rep(&m, online, raw->cpu) };
        else
                raw->smt_key = (GroupKey){ package, 1, raw->cpu };
}

/* The highest-level Unified cache of a CPU; in_llc false when it has none. */
static void read_llc(const RootDir *root, const CpuMask *online, CpuRaw *raw) {
        _cleanup_closedir_ DIR *d = NULL;
        char dir[PATH_SIZE], best[PATH_SIZE] = "";
        struct dirent *de;
        int best_level = -1;
        CpuMask m;

        raw->in_llc = false;
        if (cpu_path(dir, raw->cpu, "cache") < 0 || rootdir_opendir(root, dir, &d) < 0)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *type = NULL;
                char path[PATH_SIZE];
                int index, level;

                if (!numbered_name(de->d_name, "index", &index))
                        continue;
                (void) pathf(path, "%s/index%d/type", dir, index);
                if (rootdir_read_string(root, path, &type) < 0 || !streq(type, "Unified"))
                        continue;
                (void) pathf(path, "%s/index%d/level", dir, index);
                if (rootdir_read_int(root, path, &level) < 0 || level < 0) {
                        log_debug("Cannot read %s, ignoring that cache.", path);
                        continue;
                }
                if (level > best_level) {
                        best_level = level;
                        (void) pathf(best, "%s/index%d", dir, index);
                }
        }
        if (best_level < 0)
                return;

        raw->in_llc = true;
        {
                char path[PATH_SIZE];

                (void) pathf(path, "%s/shared_cpu_list", best);
                if (read_cpu_set(root, path, false, &m) >= 0) {
                        raw->llc_key = (GroupKey){ 0, mask_rep(&m, online, raw->cpu), 0 };
                        return;
                }
                (void) pathf(path, "%s/shared_cpu_map", best);
                if (read_cpu_set(root, path, true, &m) >= 0) {
                        raw->llc_key = (GroupKey){ 0, mask_rep(&m, online, raw->cpu), 0 };
                        return;
                }
        }
        log_debug("CPU %d: no readable shared_cpu_list/map for its last-level cache, taking it alone.", raw->cpu);
        raw->llc_key = (GroupKey){ 0, raw->cpu, 0 };
}

/* The levels whose groups carry an id: packages, dies, clusters. */
typedef enum Level {
        LEVEL_PACKAGE,
        LEVEL_DIE,
        LEVEL_CLUSTER,
} Level;

static GroupKey level_key(const CpuRaw *r, Level l) {
        return l == LEVEL_PACKAGE ? r->package_key : l == LEVEL_DIE ? r->die_key : r->cluster_key;
}

/* A group's id, from its lowest CPU's: as sysfs gives it, else that CPU (or, for dies, the package). */
static int level_id(const Topology *t, const CpuRaw *raw, size_t lo, Level l) {
        switch (l) {
        case LEVEL_PACKAGE:
                return raw[lo].package_id == ID_LOWEST_CPU ? raw[lo].cpu : raw[lo].package_id;
        case LEVEL_DIE:
                return raw[lo].die_id == DIE_ID_OF_PACKAGE ? t->cpus[lo].package :
                       raw[lo].die_id == ID_LOWEST_CPU     ? raw[lo].cpu :
                                                             raw[lo].die_id;
        case LEVEL_CLUSTER:
                return raw[lo].cluster_id == ID_LOWEST_CPU ? raw[lo].cpu : raw[lo].cluster_id;
        }
        return -1;
}

/*
 * Groups the CPUs of one level by their keys and names each group: the level's groups, and per CPU
 * its group's index and id (package_index and package, die_index and die, or cluster_index and
 * cluster).
 */
static int build_level(Topology *t, const CpuRaw *raw, Level l) {
        _cleanup_free_ GroupKey *keys = new0(GroupKey, t->n_cpus);
        _cleanup_free_ int *index = new0(int, t->n_cpus);
        _cleanup_free_ size_t *first = NULL;
        _cleanup_free_ CpuMask *masks = NULL;
        _cleanup_free_ int *ids = NULL;
        TopoGroup **groups = l == LEVEL_PACKAGE ? &t->packages : l == LEVEL_DIE ? &t->dies : &t->clusters;
        size_t *n_groups = l == LEVEL_PACKAGE ? &t->n_packages : l == LEVEL_DIE ? &t->n_dies : &t->n_clusters;
        size_t n;
        int r;

        if (!keys || !index)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cpus; i++)
                keys[i] = level_key(&raw[i], l);
        r = group_by_key(t->cpus, t->n_cpus, keys, NULL, &masks, &n, index, &first);
        if (r < 0)
                return r;
        ids = new0(int, MAX(n, (size_t) 1));
        if (!ids)
                return -ENOMEM;
        for (size_t g = 0; g < n; g++)
                ids[g] = level_id(t, raw, first[g], l);
        r = make_topo_groups(masks, n, ids, groups);
        if (r < 0)
                return r;
        *n_groups = n;
        for (size_t i = 0; i < t->n_cpus; i++) {
                TopoCpu *c = &t->cpus[i];

                switch (l) {
                case LEVEL_PACKAGE:
                        c->package_index = index[i];
                        c->package = ids[index[i]];
                        break;
                case LEVEL_DIE:
                        c->die_index = index[i];
                        c->die = ids[index[i]];
                        break;
                case LEVEL_CLUSTER:
                        c->cluster_index = index[i];
                        c->cluster = ids[index[i]];
                        break;
                }
        }
        return 0;
}

static int build_clusters(Topology *t, CpuRaw *raw) {
        bool any_list = false, any_id = false, any_valid_id = false;
        int r;

        for (size_t i = 0; i < t->n_cpus; i++) {
                any_list = any_list || raw[i].has_cluster_list;
                any_id = any_id || raw[i].has_cluster_id;
                any_valid_id = any_valid_id || raw[i].cluster_id_ok;
        }
        /* null when there are no cluster lists, or every cluster_id says "none" (-1, 65535). */
        if (!any_list || (any_id && !any_valid_id)) {
                for (size_t i = 0; i < t->n_cpus; i++) {
                        t->cpus[i].cluster = -1;
                        t->cpus[i].cluster_index = -1;
                }
                t->has_clusters = false;
                return 0;
        }

        r = build_level(t, raw, LEVEL_CLUSTER);
        if (r < 0)
                return r;
        t->has_clusters = true;
        return 0;
}

static int build_masks(Topology *t, const GroupKey *keys, const bool *member, CpuMask **ret, size_t *ret_n,
                       int *ret_index) {
        return group_by_key(t->cpus, t->n_cpus, keys, member, ret, ret_n, ret_index, NULL);
}

static int build_smt_llc(Topology *t, CpuRaw *raw) {
        _cleanup_free_ GroupKey *keys = new0(GroupKey, t->n_cpus);
        _cleanup_free_ bool *member = new0(bool, t->n_cpus);
        _cleanup_free_ int *index = new0(int, t->n_cpus);
        int r;

        if (!keys || !member || !index)
                return -ENOMEM;

        for (size_t i = 0; i < t->n_cpus; i++)
                keys[i] = raw[i].smt_key;
        r = build_masks(t, keys, NULL, &t->smt_groups, &t->n_smt_groups, index);
        if (r < 0)
                return r;
        for (size_t i = 0; i < t->n_cpus; i++)
                t->cpus[i].smt_index = index[i];

        for (size_t i = 0; i < t->n_cpus; i++) {
                keys[i] = raw[i].llc_key;
                member[i] = raw[i].in_llc;
        }
        r = build_masks(t, keys, member, &t->llc_groups, &t->n_llc_groups, index);
        if (r < 0)
                return r;
        for (size_t i = 0; i < t->n_cpus; i++)
                t->cpus[i].llc_index = index[i];
        return 0;
}

/* A node's CPUs: cpulist, else cpumap, else its cpuN links. Returns 0, or -ENOENT when none says. */
static int read_node_cpus(const RootDir *root, int node, CpuMask *ret) {
        _cleanup_closedir_ DIR *d = NULL;
        char path[PATH_SIZE];
        struct dirent *de;
        bool any = false;
        CpuMask m;

        (void) pathf(path, NODE_DIR "/node%d/cpulist", node);
        if (read_cpu_set(root, path, false, ret) >= 0)
                return 0;
        (void) pathf(path, NODE_DIR "/node%d/cpumap", node);
        if (read_cpu_set(root, path, true, ret) >= 0)
                return 0;

        (void) pathf(path, NODE_DIR "/node%d", node);
        if (rootdir_opendir(root, path, &d) < 0)
                return -ENOENT;
        cpumask_zero(&m);
        while ((de = readdir(d))) {
                int cpu;

                if (cpu_dir_name(de->d_name, &cpu)) {
                        (void) cpumask_set(&m, cpu);
                        any = true;
                }
        }
        if (!any)
                return -ENOENT;
        *ret = m;
        return 0;
}

static int int_cmp(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;

        return (x > y) - (x < y);
}

static int build_numa(const RootDir *root, Topology *t) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ int *ids = NULL;
        size_t n_ids = 0, allocated = 0;
        struct dirent *de;

        for (size_t i = 0; i < t->n_cpus; i++)
                t->cpus[i].numa_index = -1;

        if (rootdir_opendir(root, NODE_DIR, &d) >= 0)
                while ((de = readdir(d))) {
                        int node;

                        if (!numbered_name(de->d_name, "node", &node))
                                continue;
                        if (n_ids == allocated) {
                                size_t na = allocated ? allocated * 2 : 16;
                                int *ni = realloc(ids, na * sizeof *ids);

                                if (!ni)
                                        return -ENOMEM;
                                ids = ni;
                                allocated = na;
                        }
                        ids[n_ids++] = node;
                }

        if (n_ids == 0) {
                /* No node/ directory (NUMA off, old ARM): one node holding every online CPU. */
                t->numa_nodes = new0(TopoGroup, 1);
                if (!t->numa_nodes)
                        return -ENOMEM;
                t->numa_nodes[0] = (TopoGroup){ .id = 0, .cpus = t->online };
                t->n_numa_nodes = 1;
                for (size_t i = 0; i < t->n_cpus; i++)
                        t->cpus[i].numa_index = 0;
                return 0;
        }

        qsort(ids, n_ids, sizeof *ids, int_cmp);
        t->numa_nodes = new0(TopoGroup, n_ids);
        if (!t->numa_nodes)
                return -ENOMEM;
        for (size_t k = 0; k < n_ids; k++) {
                CpuMask m;

                if (read_node_cpus(root, ids[k], &m) < 0) {
                        log_debug("Node %d names no CPUs, leaving it out.", ids[k]);
                        continue;
                }
                /* Node lists may still name offline or removed CPUs: keep the online ones. */
                cpumask_and(&m, &m, &t->online);
                if (cpumask_empty(&m))
                        continue;
                t->numa_nodes[t->n_numa_nodes] = (TopoGroup){ .id = ids[k], .cpus = m };
                CPUMASK_FOREACH(cpu, &m) {
                        TopoCpu *c = (TopoCpu *) topology_cpu(t, cpu);

                        /* A CPU two nodes claim (a broken tree) belongs to the first. */
                        if (c && c->numa_index < 0)
                                c->numa_index = (int) t->n_numa_nodes;
                }
                t->n_numa_nodes++;
        }
        return 0;
}

typedef struct Policy {
        CpuMask cpus;
        unsigned max_freq_khz;
} Policy;

/* One cpufreq policy directory: its CPUs (related_cpus, else affected_cpus, else self) and max freq. */
static void read_policy(const RootDir *root, const char *dir, int self, Policy *ret) {
        char path[PATH_SIZE];
        uint64_t f;
        int r;

        *ret = (Policy){};
        (void) pathf(path, "%s/related_cpus", dir);
        if (read_cpu_set(root, path, false, &ret->cpus) < 0) {
                (void) pathf(path, "%s/affected_cpus", dir);
                if (read_cpu_set(root, path, false, &ret->cpus) < 0)
                        (void) cpumask_set(&ret->cpus, self);
        }
        (void) pathf(path, "%s/cpuinfo_max_freq", dir);
        r = rootdir_read_u64(root, path, &f);
        if (r < 0 || f == 0 || f > UINT32_MAX)
                log_debug("No usable %s, frequency unknown there.", path);
        else
                ret->max_freq_khz = (unsigned) f;
}

static int add_policy(Topology *t, Policy *p, int *owner, Policy **policies, size_t *n_policies) {
        Policy *np;
        bool any = false;

        cpumask_and(&p->cpus, &p->cpus, &t->online);
        /* Each CPU belongs to the first policy that names it; a later overlapping one gets the rest. */
        CPUMASK_FOREACH(cpu, &p->cpus) {
                const TopoCpu *c = topology_cpu(t, cpu);

                if (c && owner[c - t->cpus] < 0)
                        any = true;
                else
                        cpumask_clear(&p->cpus, cpu);
        }
        if (!any)
                return 0;
        np = realloc(*policies, (*n_policies + 1) * sizeof *np);
        if (!np)
                return -ENOMEM;
        *policies = np;
        np[*n_policies] = *p;
        CPUMASK_FOREACH(cpu, &p->cpus)
                owner[topology_cpu(t, cpu) - t->cpus] = (int) *n_policies;
        (*n_policies)++;
        return 0;
}

/* The N of every cpu/cpufreq/policyN (Linux 4.4+), ascending; none when there is no such directory. */
static int read_policy_numbers(const RootDir *root, int **ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ int *nums = NULL;
        size_t n = 0;

        if (rootdir_opendir(root, CPU_DIR "/cpufreq", &d) >= 0) {
                struct dirent *de;

                while ((de = readdir(d))) {
                        int num;
                        int *nn;

                        if (!numbered_name(de->d_name, "policy", &num))
                                continue;
                        nn = realloc(nums, (n + 1) * sizeof *nn);
                        if (!nn)
                                return -ENOMEM;
                        nums = nn;
                        nums[n++] = num;
                }
        }
        if (n > 0)
                qsort(nums, n, sizeof *nums, int_cmp);
        *ret = TAKE_PTR(nums);
        *ret_n = n;
        return 0;
}

/*
 * The cpufreq policies, each CPU owned by the first that names it (owner[i]: the policy of
 * t->cpus[i], -1 for none): cpu/cpufreq/policyN in policy order, then cpuN/cpufreq for the CPUs no
 * policy named (older kernels: a directory per owner CPU).
 */
static int read_policies(const RootDir *root, Topology *t, int *owner, Policy **ret, size_t *ret_n) {
        _cleanup_free_ Policy *policies = NULL;
        _cleanup_free_ int *policy_nums = NULL;
        size_t n_policies = 0, n_nums = 0;
        int r;

        r = read_policy_numbers(root, &policy_nums, &n_nums);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n_nums; k++) {
                char dir[PATH_SIZE];
                Policy p;

                (void) pathf(dir, CPU_DIR "/cpufreq/policy%d", policy_nums[k]);
                read_policy(root, dir, policy_nums[k], &p);
                r = add_policy(t, &p, owner, &policies, &n_policies);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < t->n_cpus; i++) {
                char dir[PATH_SIZE];
                Policy p;

                if (owner[i] >= 0)
                        continue;
                if (cpu_path(dir, t->cpus[i].cpu, "cpufreq") < 0 || !rootdir_is_dir(root, dir))
                        continue;
                read_policy(root, dir, t->cpus[i].cpu, &p);
                r = add_policy(t, &p, owner, &policies, &n_policies);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(policies);
        *ret_n = n_policies;
        return 0;
}

/* The frequency domains ordered by their lowest CPU, like every other group; each CPU's index into them. */
static int index_freq_domains(Topology *t, const int *owner) {
        _cleanup_free_ GroupKey *keys = new0(GroupKey, t->n_cpus);
        _cleanup_free_ int *index = new0(int, t->n_cpus);
        _cleanup_free_ bool *member = new0(bool, t->n_cpus);
        size_t n;
        int r;

        if (!keys || !index || !member)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cpus; i++) {
                keys[i] = (GroupKey){ owner[i], 0, 0 };
                member[i] = owner[i] >= 0;
        }
        r = build_masks(t, keys, member, &t->freq_domains, &n, index);
        if (r < 0)
                return r;
        t->n_freq_domains = n;
        for (size_t i = 0; i < t->n_cpus; i++)
                t->cpus[i].freq_domain_index = index[i];
        return 0;
}

static int build_freq_domains(const RootDir *root, Topology *t) {
        _cleanup_free_ Policy *policies = NULL;
        _cleanup_free_ int *owner = new0(int, t->n_cpus);
        size_t n_policies = 0;
        int r;

        if (!owner)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cpus; i++)
                owner[i] = -1;

        r = read_policies(root, t, owner, &policies, &n_policies);
        if (r < 0)
                return r;

        for (size_t i = 0; i < t->n_cpus; i++) {
                t->cpus[i].freq_domain_index = -1;
                t->cpus[i].max_freq_khz = owner[i] >= 0 ? policies[owner[i]].max_freq_khz : 0;
        }
        if (n_policies == 0)
                return 0;
        return index_freq_domains(t, owner);
}

static void read_cpu_capacity(const RootDir *root, CpuRaw *raw) {
        char path[PATH_SIZE];
        unsigned v;
        int r;

        raw->cpu_capacity = 0;
        if (cpu_path(path, raw->cpu, "cpu_capacity") < 0)
                return;
        {
                _cleanup_free_ char *s = NULL;

                r = rootdir_read_string(root, path, &s);
                if (r < 0)
                        return;
                r = safe_atou(s, &v);
                if (r < 0 || v == 0 || v > CAPACITY_SCALE) {
                        log_debug("%s holds \"%s\", not a capacity in 1..1024, ignoring.", path, s);
                        return;
                }
        }
        raw->cpu_capacity = v;
}

static int build_capacity(const RootDir *root, Topology *t, const CpuRaw *raw) {
        _cleanup_free_ int *cpus = new0(int, t->n_cpus);
        _cleanup_free_ unsigned *cap = new0(unsigned, t->n_cpus);
        _cleanup_free_ int *class_of = new0(int, t->n_cpus);
        bool all_cpu_capacity = true, all_freq = true, all_hybrid;
        unsigned max_freq = 0;
        CpuMask core, atom;
        int r;

        if (!cpus || !cap || !class_of)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cpus; i++) {
                cpus[i] = t->cpus[i].cpu;
                all_cpu_capacity = all_cpu_capacity && raw[i].cpu_capacity > 0;
                all_freq = all_freq && t->cpus[i].max_freq_khz > 0;
                max_freq = MAX(max_freq, t->cpus[i].max_freq_khz);
        }

        cpumask_zero(&core);
        cpumask_zero(&atom);
        (void) read_cpu_set(root, INTEL_CORE_CPUS, false, &core);
        (void) read_cpu_set(root, INTEL_ATOM_CPUS, false, &atom);
        all_hybrid = !cpumask_empty(&core) || !cpumask_empty(&atom);
        for (size_t i = 0; i < t->n_cpus && all_hybrid; i++)
                all_hybrid = cpumask_test(&core, cpus[i]) || cpumask_test(&atom, cpus[i]);

        if (all_cpu_capacity)
                t->capacity_source = CAPACITY_FROM_CPU_CAPACITY;
        else if (all_freq)
                t->capacity_source = CAPACITY_FROM_MAX_FREQ;
        else if (all_hybrid)
                t->capacity_source = CAPACITY_FROM_INTEL_HYBRID;
        else
                t->capacity_source = CAPACITY_UNIFORM;
        log_debug("Capacities from %s.", capacity_source_to_string(t->capacity_source));

        for (size_t i = 0; i < t->n_cpus; i++) {
                switch (t->capacity_source) {
                case CAPACITY_FROM_CPU_CAPACITY:
                        cap[i] = raw[i].cpu_capacity;
                        break;
                case CAPACITY_FROM_MAX_FREQ:
                        cap[i] = capacity_from_freq(t->cpus[i].max_freq_khz, max_freq);
                        break;
                case CAPACITY_FROM_INTEL_HYBRID:
                        cap[i] = cpumask_test(&core, cpus[i]) ? CAPACITY_SCALE : INTEL_ATOM_CAPACITY;
                        break;
                case CAPACITY_UNIFORM:
                default:
                        cap[i] = CAPACITY_SCALE;
                        break;
                }
                t->cpus[i].capacity = cap[i];
        }

        r = capacity_classes_build(cpus, cap, t->n_cpus, &t->classes, &t->n_classes, class_of);
        if (r < 0)
                return r;
        for (size_t i = 0; i < t->n_cpus; i++)
                t->cpus[i].class_index = class_of[i];
        t->asymmetric = t->n_classes > 1;
        return 0;
}

/* The target residency of the deepest idle state not disabled; 0 when unknown. */
static usec_t read_idle_residency(const RootDir *root, int cpu) {
        usec_t best = 0;

        for (int k = 0; k < IDLE_STATES_MAX; k++) {
                char path[PATH_SIZE];
                uint64_t v;
                int disabled;

                if (pathf(path, CPU_DIR "/cpu%d/cpuidle/state%d", cpu, k) < 0 || !rootdir_is_dir(root, path))
                        break;
                if (pathf(path, CPU_DIR "/cpu%d/cpuidle/state%d/disable", cpu, k) >= 0 &&
                    rootdir_read_int(root, path, &disabled) >= 0 && disabled)
                        continue;
                if (pathf(path, CPU_DIR "/cpu%d/cpuidle/state%d/residency", cpu, k) < 0 ||
                    rootdir_read_u64(root, path, &v) < 0) {
                        log_debug("No usable %s, ignoring that state.", path);
                        continue;
                }
                best = v;
        }
        return best;
}

int topology_load(const RootDir *root, Topology **ret) {
        _cleanup_topology_ Topology *t = NULL;
        _cleanup_free_ CpuRaw *raw = NULL;
        size_t i = 0;
        int r;

        t = new0(Topology, 1);
        if (!t)
                return -ENOMEM;

        r = topology_read_online(root, &t->online);
        if (r < 0)
                return r;
        t->n_cpus = (size_t) cpumask_count(&t->online);
        t->cpus = new0(TopoCpu, t->n_cpus);
        raw = new0(CpuRaw, t->n_cpus);
        if (!t->cpus || !raw)
                return -ENOMEM;
        CPUMASK_FOREACH(cpu, &t->online) {
                t->cpus[i].cpu = cpu;
                raw[i].cpu = cpu;
                i++;
        }

        r = read_cpu_set(root, CPU_DIR "/isolated", false, &t->isolated);
        if (r < 0)
                cpumask_zero(&t->isolated);
        cpumask_and(&t->isolated, &t->isolated, &t->online);

        for (i = 0; i < t->n_cpus; i++) {
                int core;

                read_package(root, &t->online, &raw[i]);
                t->cpus[i].core = read_topology_id(root, raw[i].cpu, "core_id", &core) > 0 && core >= 0 ? core : -1;
                read_llc(root, &t->online, &raw[i]);
                read_cpu_capacity(root, &raw[i]);
                t->cpus[i].idle_residency_usec = read_idle_residency(root, raw[i].cpu);
        }
        r = build_level(t, raw, LEVEL_PACKAGE);
        if (r < 0)
                return r;

        /* Dies, clusters and cores stay inside their package. */
        for (i = 0; i < t->n_cpus; i++) {
                int package = t->cpus[i].package_index;

                read_die(root, &t->online, package, &raw[i]);
                read_cluster(root, &t->online, package, &raw[i]);
                read_smt(root, &t->online, package, &raw[i]);
        }
        r = build_level(t, raw, LEVEL_DIE); /* after the packages: a die may take its package's id */
        if (r < 0)
                return r;
        r = build_clusters(t, raw);
        if (r < 0)
                return r;
        r = build_smt_llc(t, raw);
        if (r < 0)
                return r;
        r = build_numa(root, t);
        if (r < 0)
                return r;
        r = build_freq_domains(root, t);
        if (r < 0)
                return r;
        r = build_capacity(root, t, raw);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(t);
        return 0;
}

int topology_online_changed(const Topology *t, const RootDir *root) {
        CpuMask m;
        int r;

        r = topology_read_online(root, &m);
        if (r < 0)
                return r;
        return !cpumask_equal(&m, &t->online);
}

int topology_refresh(Topology **t, const RootDir *root) {
        _cleanup_topology_ Topology *n = NULL;
        int r;

        r = topology_load(root, &n);
        if (r < 0)
                return r;
        if (topology_equal(*t, n))
                return 0;
        topology_free(*t);
        *t = TAKE_PTR(n);
        return 1;
}
