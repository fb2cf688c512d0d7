/* SPDX-License-Identifier: GPL-2.0-only */
/* The node's energy meter: RAPL zones of the powercap tree (energy-meter.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "peltd/alloc-util.h"
#include "peltd/energy-meter.h"
#include "peltd/log.h"
#include "peltd/parse.h"

/* The RAPL control types, in the order a name two of them give is taken from. */
static const char *const control_types[] = { "intel-rapl", "intel-rapl-tpmi", "intel-rapl-mmio" };

/* The file the emulated meter (tools/emulated-meter.c) keeps at the top of its tree. */
#define EMULATED_MARKER "peltd-emulated"

typedef struct MeterKind MeterKind;

struct EnergyMeter {
        const RootDir *root;
        char *dir;
        const MeterKind *kind;       /* NULL: no meter */
        bool emulated;
        EnergyZone *zones;
        size_t n_zones;
        void (*notify)(void *userdata, const char *message);
        void *userdata;
};

/*
 * A meter kind: probe finds its zones (again, at a rescan: it keeps the zones it finds, marks them
 * seen, and adds new ones) and returns how many are readable, 0 for none, or -errno with *reason;
 * read gives a zone's counter in µJ.
 */
struct MeterKind {
        const char *name;
        EnergyMeterSetting setting;  /* the EnergyMeter= value that asks for this kind alone */
        int (*probe)(EnergyMeter *m, const char **reason);
        int (*read)(EnergyMeter *m, EnergyZone *z, uint64_t *ret_uj);
};

static void say(EnergyMeter *m, const char *format, ...) _printf_(2, 3);
static void say(EnergyMeter *m, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&s, format, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                return;
        if (m->notify)
                m->notify(m->userdata, s);
        else
                log_notice("%s", s);
}

static int parse_hex_id(const char *s, size_t n, unsigned *ret) {
        unsigned v = 0;

        /* Ids are the kernel's "%x" of an int: 1 to 8 lower-case hex digits, no sign, no "0x". */
        if (n == 0 || n > 8)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c >= '0' && c <= '9')
                        v = v * 16 + (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v = v * 16 + (unsigned) (c - 'a' + 10);
                else
                        return -EINVAL;
        }
        *ret = v;
        return 0;
}

int energy_zone_parse_dirname(const char *s, unsigned *ret_type, unsigned *ret_id, int *ret_subid) {
        const char *colon = strchr(s, ':'), *second;
        unsigned id, sub;
        size_t t;

        if (!colon)
                return -EINVAL;
        for (t = 0; t < ELEMENTSOF(control_types); t++)
                if (strlen(control_types[t]) == (size_t) (colon - s) && strneq(s, control_types[t], colon - s))
                        break;
        if (t == ELEMENTSOF(control_types))
                return -EINVAL;
        second = strchr(colon + 1, ':');
        if (parse_hex_id(colon + 1, second ? (size_t) (second - colon - 1) : strlen(colon + 1), &id) < 0)
                return -EINVAL;
        if (second && (parse_hex_id(second + 1, strlen(second + 1), &sub) < 0 || sub > INT32_MAX))
                return -EINVAL;
        *ret_type = (unsigned) t;
        *ret_id = id;
        *ret_subid = second ? (int) sub : -1;
        return 0;
}

/* A decimal number of at most 4 digits (packages and dies are counted in tens, not thousands). */
static int parse_small(const char *s, size_t n, int *ret) {
        int v = 0;

        if (n == 0 || n > 4 || (n > 1 && s[0] == '0'))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return 0;
}

EnergyZoneRole energy_zone_role(const char *name, int *ret_package, int *ret_die) {
        const char *p, *die;
        int package = -1, d = -1;

        *ret_package = *ret_die = -1;
        if (streq(name, "psys"))
                return ENERGY_ZONE_PSYS;
        if (streq(name, "dram"))
                return ENERGY_ZONE_DRAM;
        if (streq(name, "core") || streq(name, "uncore"))
                return ENERGY_ZONE_PART;
        p = startswith(name, "package-");
        if (!p)
                return ENERGY_ZONE_OTHER;
        die = strstr(p, "-die-");
        if (parse_small(p, die ? (size_t) (die - p) : strlen(p), &package) < 0 ||
            (die && parse_small(die + 5, strlen(die + 5), &d) < 0))
                return ENERGY_ZONE_OTHER;
        *ret_package = package;
        *ret_die = d;
        return ENERGY_ZONE_PACKAGE;
}

/* Closes a zone's counter file and marks it closed. */
static void zone_close(EnergyZone *z) {
        closep(&z->fd);
        z->fd = -1;
}

static EnergyZone *find_zone(EnergyMeter *m, const char *name) {
        for (size_t i = 0; i < m->n_zones; i++)
                if (streq(m->zones[i].name, name))
                        return &m->zones[i];
        return NULL;
}

/* A zone's "name" file; a subzone's name is its package's, "/", its own. */
static int zone_name(EnergyMeter *m, const char *entry, unsigned type, unsigned id, int subid, char **ret) {
        _cleanup_free_ char *path = NULL, *name = NULL, *parent_path = NULL, *parent = NULL;
        int r;

        if (asprintf(&path, "%s/%s/name", m->dir, entry) < 0)
                return -ENOMEM;
        r = rootdir_read_string(m->root, path, &name);
        if (r < 0)
                return r;
        if (isempty(name) || strchr(name, '/'))
                return -EINVAL;
        if (subid < 0) {
                *ret = TAKE_PTR(name);
                return 0;
        }
        if (asprintf(&parent_path, "%s/%s:%x/name", m->dir, control_types[type], id) < 0)
                return -ENOMEM;
        r = rootdir_read_string(m->root, parent_path, &parent);
        if (r < 0)
                return r;
        if (isempty(parent) || strchr(parent, '/'))
                return -EINVAL;
        if (asprintf(ret, "%s/%s", parent, name) < 0)
                return -ENOMEM;
        return 0;
}

/* Opens the zone's energy_uj and reads its range; the zone is present from its next read. */
static int zone_open(EnergyMeter *m, EnergyZone *z) {
        _cleanup_free_ char *path = NULL, *range = NULL;
        int fd;

        if (asprintf(&path, "%s/energy_uj", z->path) < 0 || asprintf(&range, "%s/max_energy_range_uj", z->path) < 0)
                return -ENOMEM;
        fd = rootdir_open_file(m->root, path, O_RDONLY);
        if (fd < 0)
                return fd;
        zone_close(z);
        z->fd = fd;
        if (rootdir_read_u64(m->root, range, &z->max_range_uj) < 0)
                z->max_range_uj = 0;
        z->have_prev = false;
        z->still = (EnergyStill){};
        return 0;
}

/* A zone's role and package: a subzone ("package-0/core") is a part of its package, whatever its own name. */
static void zone_classify(EnergyZone *z) {
        const char *slash = strchr(z->name, '/');
        _cleanup_free_ char *parent = NULL;
        int die;

        if (!slash) {
                z->role = energy_zone_role(z->name, &z->package, &z->die);
                return;
        }
        z->role = energy_zone_role(slash + 1, &z->package, &z->die);
        if (z->role == ENERGY_ZONE_PACKAGE || z->role == ENERGY_ZONE_PSYS)
                z->role = ENERGY_ZONE_OTHER;
        parent = strndup(z->name, (size_t) (slash - z->name));
        if (!parent || energy_zone_role(parent, &z->package, &die) != ENERGY_ZONE_PACKAGE)
                z->package = -1;
        z->die = -1;
}

static int zone_add(EnergyMeter *m, char **name, const char *entry, unsigned type, EnergyZone **ret) {
        EnergyZone *n, *z;

        n = reallocarray(m->zones, m->n_zones + 1, sizeof(EnergyZone));
        if (!n)
                return -ENOMEM;
        m->zones = n;
        z = &m->zones[m->n_zones];
        *z = (EnergyZone){ .fd = -1, .type = type, .seen = true };
        if (asprintf(&z->path, "%s/%s", m->dir, entry) < 0)
                return -ENOMEM;
        z->name = TAKE_PTR(*name);
        zone_classify(z);
        m->n_zones++;
        *ret = z;
        return 0;
}

typedef struct Candidate {
        unsigned type, id;
        int subid;
        char *name;
        char *entry;
} Candidate;

static int candidate_cmp(const void *a, const void *b) {
        const Candidate *x = a, *y = b;

        if (x->type != y->type)
                return x->type < y->type ? -1 : 1;
        if (x->id != y->id)
                return x->id < y->id ? -1 : 1;
        return x->subid < y->subid ? -1 : x->subid > y->subid;
}

static void candidates_free(Candidate *c, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(c[i].name);
                free(c[i].entry);
        }
        free(c);
}

/* The zone directories under the meter's dir, sorted by control type, id and subid. */
static int list_candidates(EnergyMeter *m, Candidate **ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        Candidate *c = NULL;
        size_t n = 0;
        struct dirent *de;
        int r;

        r = rootdir_opendir(m->root, m->dir, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                Candidate x = {};
                Candidate *grown;

                if (energy_zone_parse_dirname(de->d_name, &x.type, &x.id, &x.subid) < 0 ||
                    zone_name(m, de->d_name, x.type, x.id, x.subid, &x.name) < 0)
                        continue;     /* not a RAPL zone, or one without a readable name */
                x.entry = strdup(de->d_name);
                grown = reallocarray(c, n + 1, sizeof(Candidate));
                if (!x.entry || !grown) {
                        free(x.name);
                        free(x.entry);
                        candidates_free(grown ? grown : c, n);
                        return -ENOMEM;
                }
                c = grown;
                c[n++] = x;
        }
        if (n > 0)
                qsort(c, n, sizeof(Candidate), candidate_cmp);
        *ret = c;
        *ret_n = n;
        return 0;
}

/* One zone the scan found: a new one, one that moved to another control type, or one back. */
static int scan_zone(EnergyMeter *m, Candidate *c, int *ret_error) {
        _cleanup_free_ char *path = NULL;
        EnergyZone *z = find_zone(m, c->name);
        int r;

        if (z && z->seen)
                return 0;     /* given by an earlier control type: counted once */
        if (asprintf(&path, "%s/%s", m->dir, c->entry) < 0)
                return -ENOMEM;
        if (!z) {
                r = zone_add(m, &c->name, c->entry, c->type, &z);
                if (r < 0)
                        return r;
        } else if (z->fd >= 0 && streq(z->path, path)) {
                z->seen = true;
                return 0;
        } else {
                free(z->path);
                z->path = TAKE_PTR(path);
                z->type = c->type;
                z->seen = true;
        }
        r = zone_open(m, z);
        if (r < 0) {
                zone_close(z);
                *ret_error = r;
        }
        return 0;
}

/* Zones a scan did not find are gone; returns how many zones are open. */
static size_t scan_finish(EnergyMeter *m) {
        size_t n = 0;

        for (size_t i = 0; i < m->n_zones; i++) {
                EnergyZone *z = &m->zones[i];

                if (!z->seen && z->fd >= 0) {
                        zone_close(z);
                        if (z->present && !z->said_gone)
                                say(m, "Energy zone %s is gone from %s, left out until it returns.", z->name, m->dir);
                        z->said_gone = true;
                        z->present = false;
                        z->last_ok = false;
                }
                n += z->fd >= 0;
        }
        return n;
}

static bool has_marker(EnergyMeter *m) {
        _cleanup_free_ char *marker = NULL;

        return asprintf(&marker, "%s/" EMULATED_MARKER, m->dir) >= 0 && rootdir_exists(m->root, marker);
}

static int powercap_probe(EnergyMeter *m, const char **reason) {
        Candidate *c = NULL;
        size_t n = 0, open;
        int r, error = 0;

        for (size_t i = 0; i < m->n_zones; i++)
                m->zones[i].seen = false;
        r = list_candidates(m, &c, &n);
        if (r < 0) {
                *reason = "its directory cannot be read";
                return r == -ENOMEM ? r : 0;
        }
        for (size_t i = 0; i < n && r >= 0; i++)
                r = scan_zone(m, &c[i], &error);
        candidates_free(c, n);
        if (r < 0)
                return r;
        open = scan_finish(m);
        if (open == 0)
                *reason = error == -EACCES || error == -EPERM ? "energy_uj is readable by root only" :
                          n > 0                               ? "its zones cannot be read" :
                                                                "it has no RAPL zone";
        m->emulated = has_marker(m);
        return (int) open;
}

/* energy_uj by pread on the kept fd; a file removed under it (link count 0) is -ENODEV, as sysfs says. */
static int powercap_read(_unused_ EnergyMeter *m, EnergyZone *z, uint64_t *ret_uj) {
        char buf[32];           /* a u64 in decimal is 20 digits */
        struct stat st;
        ssize_t n;

        if (z->fd < 0)
                return -ENODEV;
        n = pread_string(z->fd, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        if (fstat(z->fd, &st) < 0)
                return -errno;
        if (st.st_nlink == 0)
                return -ENODEV;
        return safe_atou64(strstrip_trailing(buf), ret_uj);
}

static const MeterKind meter_kinds[] = {
        { "powercap", ENERGY_METER_SETTING_POWERCAP, powercap_probe, powercap_read },
};

static void zones_clear(EnergyMeter *m) {
        for (size_t i = 0; i < m->n_zones; i++) {
                zone_close(&m->zones[i]);
                free(m->zones[i].name);
                free(m->zones[i].path);
        }
        free(m->zones);
        m->zones = NULL;
        m->n_zones = 0;
}

int energy_meter_new(const RootDir *root, const char *dir, EnergyMeterSetting setting,
                     void (*notify)(void *userdata, const char *message), void *userdata, EnergyMeter **ret) {
        _cleanup_energy_meter_ EnergyMeter *m = NULL;
        const char *reason = "EnergyMeter=none";
        int r;

        m = new0(EnergyMeter, 1);
        if (!m)
                return -ENOMEM;
        *m = (EnergyMeter){ .root = root, .notify = notify, .userdata = userdata };
        m->dir = strdup(dir);
        if (!m->dir)
                return -ENOMEM;
        for (size_t i = 0; setting != ENERGY_METER_SETTING_NONE && i < ELEMENTSOF(meter_kinds); i++) {
                if (setting != ENERGY_METER_SETTING_AUTO && setting != meter_kinds[i].setting)
                        continue;
                r = meter_kinds[i].probe(m, &reason);
                if (r < 0)
                        return r;
                if (r > 0) {
                        m->kind = &meter_kinds[i];
                        break;
                }
                zones_clear(m);     /* what a kind found but could not read is not the next kind's */
        }
        if (!m->kind)
                say(m, "no energy meter: figures are estimates (%s: %s).", dir, reason);
        *ret = TAKE_PTR(m);
        return 0;
}

EnergyMeter *energy_meter_free(EnergyMeter *m) {
        if (!m)
                return NULL;
        zones_clear(m);
        free(m->dir);
        free(m);
        return NULL;
}

const char *energy_meter_kind(const EnergyMeter *m) {
        if (!m->kind)
                return "none";
        return m->emulated ? "emulated" : m->kind->name;
}

bool energy_meter_measures(const EnergyMeter *m) {
        return m->kind;
}

static bool zone_busy(const EnergyZone *z, const bool *package_busy, size_t n_busy) {
        if (!package_busy)
                return false;
        if (z->package >= 0)
                return (size_t) z->package < n_busy && package_busy[z->package];
        for (size_t i = 0; i < n_busy; i++)
                if (package_busy[i])
                        return true;
        return false;
}

/* The counter read at now: the interval's energy, or why it was dropped. */
static void zone_account(EnergyZone *z, uint64_t value, usec_t now) {
        uint64_t delta;

        z->last_ok = false;
        if (z->have_prev && now >= z->prev_usec) {
                if (energy_counter_delta(z->prev_uj, value, z->max_range_uj, now - z->prev_usec, &delta) == ENERGY_DELTA_OK) {
                        z->total_uj += delta;
                        z->last_delta_uj = delta;
                        z->last_ok = true;
                } else
                        z->n_dropped++;
        }
        z->have_prev = true;
        z->prev_uj = value;
        z->prev_usec = now;
}

/* Reads one zone; returns whether it read, and false after the meter found it is no meter. */
static bool zone_read(EnergyMeter *m, EnergyZone *z, usec_t now, bool busy) {
        uint64_t value;
        int r;

        r = m->kind->read(m, z, &value);
        if (r < 0) {
                if (!z->said_gone)
                        say(m, "Energy zone %s cannot be read (%s), left out until it returns.", z->name, strerror(-r));
                z->said_gone = true;
                z->present = z->last_ok = false;
                if (r == -ENODEV)
                        zone_close(z);     /* gone for good: a rescan opens it again if it returns */
                return false;
        }
        if (!z->present) {
                if (z->said_gone)
                        say(m, "Energy zone %s reads again.", z->name);
                z->said_gone = false;
                z->present = true;
                z->have_prev = false;
        }
        zone_account(z, value, now);
        if (z->role == ENERGY_ZONE_PACKAGE && energy_still_update(&z->still, value, busy, now)) {
                say(m, "Energy zone %s has not moved for %u s while its CPUs were busy: no energy meter: figures are estimates.",
                    z->name, (unsigned) (ENERGY_STILL_USEC / USEC_PER_SEC));
                m->kind = NULL;
        }
        return true;
}

int energy_meter_read(EnergyMeter *m, usec_t now, const bool *package_busy, size_t n_busy) {
        int n = 0;

        for (size_t i = 0; m->kind && i < m->n_zones; i++) {
                EnergyZone *z = &m->zones[i];

                if (z->fd < 0)
                        continue;
                n += zone_read(m, z, now, zone_busy(z, package_busy, n_busy));
        }
        return m->kind ? n : 0;
}

int energy_meter_rescan(EnergyMeter *m) {
        const char *reason = NULL;
        int r;

        /* No meter at all (none configured, or a counter that never moved) stays none. */
        if (!m->kind)
                return 0;
        r = m->kind->probe(m, &reason);
        return r < 0 ? r : 0;
}

const EnergyZone *energy_meter_zones(const EnergyMeter *m, size_t *ret_n) {
        *ret_n = m->n_zones;
        return m->zones;
}

uint64_t energy_meter_node_uj(const EnergyMeter *m) {
        uint64_t sum = 0;

        for (size_t i = 0; i < m->n_zones; i++)
                if (m->zones[i].role == ENERGY_ZONE_PACKAGE)
                        sum += m->zones[i].total_uj;
        return sum;
}

bool energy_meter_node_delta(const EnergyMeter *m, uint64_t *ret_uj) {
        uint64_t sum = 0;
        bool any = false;

        for (size_t i = 0; i < m->n_zones; i++) {
                const EnergyZone *z = &m->zones[i];

                if (z->role != ENERGY_ZONE_PACKAGE)
                        continue;
                if (!z->present || !z->last_ok)
                        return false;
                sum += z->last_delta_uj;
                any = true;
        }
        if (!any || !m->kind)
                return false;
        *ret_uj = sum;
        return true;
}
