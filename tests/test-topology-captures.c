/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The real sysfs captures of ../shared/topology/captures.tar.gz (19 machines from the hwloc and
 * util-linux test suites): unpacks them into a temporary directory, runs topology detection on
 * each, and checks every fact its EXPECTED.json lists.
 *
 * EXPECTED.json gives groups as bare CPU lists; peltd's JSON wraps packages, dies, clusters and
 * NUMA nodes as {"id", "cpus"} objects, so their "cpus" are compared. Facts checked: online_cpus,
 * packages, smt_groups (those of two or more threads, and all of them), clusters, capacity_classes
 * in order, llc_groups, numa_nodes, dies; and for the Intel hybrid captures, P-cores above
 * E-cores.
 *
 * Usage: test-topology-captures CAPTURES.tar.gz
 * Exit: 0 all agree, 1 a fact differs, 77 the tarball does not exist (skip).
 */
#include <dirent.h>
#include <ftw.h>
#include <json-c/json.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "peltd/macro.h"
#include "peltd/topology-sysfs.h"
#include "peltd/topology.h"
#include "test-cleanup.h"

#define EXPECTED_CAPTURES 19
#define EXIT_SKIP 77

extern char **environ;

static int failures;

static void fail(const char *capture, const char *fact, json_object *got, json_object *want) {
        failures++;
        printf("FAIL %s: %s\n  peltd:    %s\n  expected: %s\n", capture, fact,
               json_object_to_json_string_ext(got, JSON_C_TO_STRING_PLAIN),
               json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
}

/* [{"id", "cpus"}, ...] -> [cpus, ...]; a new reference. null stays null. */
static json_object *cpus_of(json_object *groups) {
        json_object *a;

        if (!groups || json_object_get_type(groups) != json_type_array)
                return NULL;
        a = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(groups); i++) {
                json_object *cpus = NULL;

                json_object_object_get_ex(json_object_array_get_idx(groups, i), "cpus", &cpus);
                json_object_array_add(a, json_object_get(cpus));
        }
        return a;
}

/* Only the groups with two or more CPUs; a new reference. */
static json_object *multi(json_object *groups) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; i < json_object_array_length(groups); i++) {
                json_object *g = json_object_array_get_idx(groups, i);

                if (json_object_array_length(g) >= 2)
                        json_object_array_add(a, json_object_get(g));
        }
        return a;
}

static json_object *field(json_object *o, const char *key) {
        json_object *v = NULL;

        json_object_object_get_ex(o, key, &v);
        return v;
}

static void check(const char *capture, const char *fact, json_object *got, json_object *want, bool *ok) {
        if (!json_object_equal(got, want)) {
                fail(capture, fact, got, want);
                *ok = false;
        }
}

static void check_owned(const char *capture, const char *fact, json_object *got, json_object *want, bool *ok) {
        check(capture, fact, got, want, ok);
        json_object_put(got);
        json_object_put(want);
}

/*
 * Dies: non-x86 kernels write die_id -1 with a die_cpus_list of the CPU alone, a placeholder that
 * says nothing about dies; peltd reads that as no die information (one die per package), as the
 * captures' convention does, so every capture's dies are checked as they stand.
 */
static void check_dies(const char *capture, json_object *got, json_object *want, bool *ok) {
        check_owned(capture, "dies", cpus_of(field(got, "dies")), json_object_get(want), ok);
}

/* Intel hybrid: every P-core ("core") must have a higher capacity than every E-core ("atom"). */
static void check_hybrid(const char *capture, const Topology *t, json_object *hybrid, bool *ok) {
        json_object *core = field(hybrid, "core"), *atom = field(hybrid, "atom");
        unsigned pmin = UINT32_MAX, emax = 0;

        if (!core || !atom)
                return;
        for (size_t i = 0; i < json_object_array_length(core); i++) {
                const TopoCpu *c = topology_cpu(t, json_object_get_int(json_object_array_get_idx(core, i)));

                pmin = MIN(pmin, c ? c->capacity : 0);
        }
        for (size_t i = 0; i < json_object_array_length(atom); i++) {
                const TopoCpu *c = topology_cpu(t, json_object_get_int(json_object_array_get_idx(atom, i)));

                emax = MAX(emax, c ? c->capacity : UINT32_MAX);
        }
        const TopoCpu *p = topology_cpu(t, json_object_get_int(json_object_array_get_idx(core, 0)));
        const TopoCpu *e = topology_cpu(t, json_object_get_int(json_object_array_get_idx(atom, 0)));

        /* Above in capacity, and in a higher capacity class. */
        if (!(pmin > emax) || !p || !e || p->class_index <= e->class_index) {
                failures++;
                *ok = false;
                printf("FAIL %s: hybrid: P-cores (lowest capacity %u) not above E-cores (highest %u)\n", capture,
                       pmin, emax);
        }
}

static void check_capture(const char *base, const char *name) {
        _cleanup_rootdir_ RootDir *root = NULL;
        _cleanup_topology_ Topology *t = NULL;
        json_object *want = NULL, *got = NULL;
        char dir[PATH_MAX], path[PATH_MAX + 16];
        bool ok = true;
        int r;

        if (snprintf(dir, sizeof dir, "%s/%s", base, name) >= (int) sizeof dir) {
                printf("FAIL %s: path too long\n", name);
                failures++;
                return;
        }
        (void) snprintf(path, sizeof path, "%s/EXPECTED.json", dir);
        want = json_object_from_file(path);
        if (!want) {
                printf("FAIL %s: cannot read %s\n", name, path);
                failures++;
                return;
        }
        r = rootdir_open(dir, &root);
        if (r >= 0)
                r = topology_load(root, &t);
        if (r >= 0)
                r = topology_to_json(t, &got);
        if (r < 0) {
                printf("FAIL %s: topology detection failed: %s\n", name, strerror(-r));
                failures++;
                json_object_put(want);
                return;
        }

        check(name, "online_cpus", field(got, "online_cpus"), field(want, "online_cpus"), &ok);
        check_owned(name, "packages", cpus_of(field(got, "packages")), json_object_get(field(want, "packages")), &ok);
        check_owned(name, "smt_groups (2+ threads)", multi(field(got, "smt_groups")), multi(field(want, "smt_groups")), &ok);
        check(name, "smt_groups", field(got, "smt_groups"), field(want, "smt_groups"), &ok);
        check_owned(name, "clusters", cpus_of(field(got, "clusters")), json_object_get(field(want, "clusters")), &ok);
        check(name, "capacity_classes", field(got, "capacity_classes"), field(want, "capacity_classes"), &ok);
        check(name, "llc_groups", field(got, "llc_groups"), field(want, "llc_groups"), &ok);
        check_owned(name, "numa_nodes", cpus_of(field(got, "numa_nodes")), json_object_get(field(want, "numa_nodes")), &ok);
        check_dies(name, got, field(want, "dies"), &ok);
        if (field(want, "hybrid"))
                check_hybrid(name, t, field(want, "hybrid"), &ok);

        if (ok)
                printf("ok   %s (%zu CPUs, %zu packages, %zu classes)\n", name, t->n_cpus, t->n_packages, t->n_classes);
        json_object_put(got);
        json_object_put(want);
}

static int rm_entry(const char *path, _unused_ const struct stat *st, _unused_ int flag, _unused_ struct FTW *ftw) {
        return remove(path);
}

static int run_tar(const char *tarball, const char *dir) {
        char *argv[] = { (char *) "tar", (char *) "-xzf", (char *) tarball, (char *) "-C", (char *) dir, NULL };
        pid_t pid;
        int status, r;

        r = posix_spawnp(&pid, "tar", NULL, NULL, argv, environ);
        if (r != 0)
                return -r;
        if (waitpid(pid, &status, 0) < 0)
                return negative_errno();
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int main(int argc, char *argv[]) {
        char tmp[256];
        char *names[64];
        size_t n = 0;
        struct stat st;
        DIR *d;
        struct dirent *de;

        if (argc != 2) {
                fprintf(stderr, "Usage: %s CAPTURES.tar.gz\n", argv[0]);
                return 2;
        }
        if (stat(argv[1], &st) < 0) {
                printf("SKIP: %s does not exist (the shared captures are not beside this checkout)\n", argv[1]);
                return EXIT_SKIP;
        }
        /*
         * About 60,000 small files: on tmpfs they unpack in a second, on a disk under load it can take
         * a minute. $TMPDIR wins, then /dev/shm, then /tmp.
         */
        if (snprintf(tmp, sizeof tmp, "%s/peltd-captures-XXXXXX",
                     getenv("TMPDIR") ?: access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") >= (int) sizeof tmp) {
                fprintf(stderr, "$TMPDIR is too long\n");
                return 1;
        }
        if (!test_mkdtemp(tmp)) {
                perror("mkdtemp");
                return 1;
        }
        if (run_tar(argv[1], tmp) < 0) {
                fprintf(stderr, "Cannot unpack %s into %s\n", argv[1], tmp);
                (void) nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
                return 1;
        }

        d = opendir(tmp);
        if (!d) {
                perror(tmp);
                return 1;
        }
        while ((de = readdir(d)) && n < ELEMENTSOF(names)) {
                char path[PATH_MAX + 256];

                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(path, sizeof path, "%s/%s/EXPECTED.json", tmp, de->d_name);
                if (stat(path, &st) == 0 && (names[n] = strdup(de->d_name)))
                        n++;
        }
        closedir(d);
        qsort(names, n, sizeof *names, name_cmp);

        for (size_t i = 0; i < n; i++) {
                check_capture(tmp, names[i]);
                free(names[i]);
        }
        (void) nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);

        if (n != EXPECTED_CAPTURES) {
                printf("FAIL: %zu captures with EXPECTED.json, expected %d\n", n, EXPECTED_CAPTURES);
                failures++;
        }
        printf("%zu captures, %d failed checks\n", n, failures);
        return failures ? 1 : 0;
}
