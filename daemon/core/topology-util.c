/* SPDX-License-Identifier: GPL-2.0-only */
#include <ctype.h>

#include "peltd/macro.h"
#include "peltd/parse.h"
#include "peltd/topology-util.h"

int parse_cpu_list_relaxed(const char *s, CpuMask *ret) {
        _cleanup_free_ char *copy = NULL;
        CpuMask m;
        bool comma = false, space = false;
        const char *p;
        int r;

        r = cpumask_parse_list(s, ret);
        if (r != -EINVAL)
                return r;

        /*
         * Before Linux 4.x cpufreq printed related_cpus/affected_cpus as "0 1 2 3 " (show_cpus()).
         * Accept space-separated items, but not a mix of commas and spaces between items: that is
         * no format the kernel ever wrote.
         */
        p = s;
        while (isspace((unsigned char) *p))
                p++;
        for (const char *q = p; *q; q++) {
                if (*q == ',')
                        comma = true;
                else if (isspace((unsigned char) *q) && q[1] && !isspace((unsigned char) q[1]))
                        space = true;
        }
        if (!space || comma)
                return -EINVAL;

        copy = strdup(p);
        if (!copy)
                return -ENOMEM;
        cpumask_zero(&m);
        for (char *save = NULL, *tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
                CpuMask one;

                r = cpumask_parse_list(tok, &one);
                if (r < 0)
                        return r;
                cpumask_or(&m, &m, &one);
        }
        *ret = m;
        return 0;
}

int parse_topology_id(const char *s, int *ret) {
        return safe_atoi(s, ret);
}

int parse_cpuinfo_processors(const char *text, CpuMask *ret) {
        CpuMask m;
        int n = 0;

        cpumask_zero(&m);
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                const char *p = startswith(line, "processor");

                /* "processor\t: 3"; s390's "processor 0: version = ..." is no CPU number line. */
                if (p) {
                        while (*p == ' ' || *p == '\t')
                                p++;
                        if (*p == ':') {
                                char num[16];
                                size_t len = 0;
                                unsigned cpu;

                                p++;
                                while (*p == ' ' || *p == '\t')
                                        p++;
                                while (isdigit((unsigned char) p[len]) && len < sizeof num - 1) {
                                        num[len] = p[len];
                                        len++;
                                }
                                num[len] = 0;
                                if (len > 0 && safe_atou(num, &cpu) == 0) {
                                        if (cpu >= CPUMASK_MAX)
                                                return -ERANGE;
                                        if (!cpumask_test(&m, (int) cpu))
                                                n++;
                                        (void) cpumask_set(&m, (int) cpu);
                                }
                        }
                }
                line = eol ? eol + 1 : NULL;
        }
        *ret = m;
        return n;
}

unsigned capacity_from_freq(uint64_t freq_khz, uint64_t max_khz) {
        uint64_t c;

        if (freq_khz == 0 || max_khz == 0 || freq_khz > max_khz)
                return 0;
        /* cpuinfo_max_freq is in kHz, well below 2^53: the product cannot overflow. */
        c = freq_khz * CAPACITY_SCALE / max_khz;
        return (unsigned) MAX(c, UINT64_C(1));
}

typedef struct CapEntry {
        unsigned capacity;
        int cpu;
        size_t index;
} CapEntry;

static int cap_entry_cmp(const void *a, const void *b) {
        const CapEntry *x = a, *y = b;

        if (x->capacity != y->capacity)
                return x->capacity < y->capacity ? -1 : 1;
        return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

int capacity_classes_build(const int *cpus, const unsigned *capacity, size_t n, CapacityClass **ret,
                           size_t *ret_n, int *ret_class_of) {
        _cleanup_free_ CapEntry *e = NULL;
        _cleanup_free_ CapacityClass *classes = NULL;
        size_t n_classes = 0;

        if (n == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        e = new0(CapEntry, n);
        classes = new0(CapacityClass, n);
        if (!e || !classes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                e[i] = (CapEntry){ .capacity = capacity[i], .cpu = cpus[i], .index = i };
        qsort(e, n, sizeof *e, cap_entry_cmp);

        for (size_t i = 0; i < n; i++) {
                if (n_classes == 0 || capacity_greater(e[i].capacity, classes[n_classes - 1].capacity)) {
                        cpumask_zero(&classes[n_classes].cpus);
                        classes[n_classes].capacity = e[i].capacity;
                        n_classes++;
                }
                (void) cpumask_set(&classes[n_classes - 1].cpus, e[i].cpu);
                if (ret_class_of)
                        ret_class_of[e[i].index] = (int) n_classes - 1;
        }

        *ret = TAKE_PTR(classes);
        *ret_n = n_classes;
        return 0;
}
