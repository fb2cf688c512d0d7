/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * peltctl, the operator's command: a client of peltd's D-Bus API (DESIGN.md, "D-Bus" and
 * "peltctl") on the system bus (DBUS_SYSTEM_BUS_ADDRESS honoured). It links sd-bus, json-c and
 * the shared helpers, none of the daemon's sampling, planning or applying.
 *
 * Exit status: 0 success; 1 the call was refused or failed (the bus error's message on stderr),
 * peltd is not running, or a setting could not be persisted; 2 bad usage.
 *
 * Persisting ("policy NAME", "set-shares PATH N" without --runtime) goes in this order: refused
 * at once unless root; the drop-in CONFIG_DIR/peltd.conf.d/90-peltctl.conf read (and its directory
 * locked) to be sure it can be rewritten; then the daemon is called, and only when the call
 * succeeded is the file rewritten (atomically: a temporary file created O_EXCL|O_NOFOLLOW in the
 * same directory, mode 0644, fsynced, renamed over it). A refused call therefore changes nothing.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "build-config.h"
#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/peltctl-dropin.h"
#include "peltd/peltctl-text.h"
#include "peltd/peltctl-topology.h"
#include "peltd/time-util.h"
#include "peltd/utf8.h"

#define BUS_NAME "org.peltd1"
#define BUS_PATH "/org/peltd1"
#define BUS_INTERFACE "org.peltd1.Manager"
#define CONFIG_DIR "/etc/peltd"
#define DROPIN_DIR "peltd.conf.d"

#define EXIT_USAGE 2
/* Tables fit an 80-column terminal; a wider terminal gets wider tables. */
#define TEXT_WIDTH_MIN 80
/* The label column of "status" and "group": "Cgroup mode: " */
#define LABEL_WIDTH 14

static bool arg_json;
static bool arg_runtime;
static const char *arg_config_dir = CONFIG_DIR;
static uint64_t arg_shares;          /* set-shares PATH N: N, parsed with the command line */

static void help(void) {
        printf("peltctl " PELTD_VERSION " - control peltd, the power-aware cgroup placement daemon\n\n"
               "Usage: peltctl [OPTIONS] COMMAND [ARGS]\n\n"
               "Commands:\n"
               "  status                    the daemon's settings, the topology and the managed groups\n"
               "  policy                    print the policy\n"
               "  policy NAME [--runtime]   set the policy: power, performance or balanced\n"
               "  groups                    list the managed groups\n"
               "  group PATH                show one managed group\n"
               "  topology                  print the CPU topology the daemon uses\n"
               "  set-shares PATH N [--runtime]\n"
               "                            set a group's cpu.shares (2..262144; 0: the configured value)\n"
               "  reload                    make the daemon read its configuration again\n"
               "  monitor                   print each placement change as it happens\n\n"
               "Options:\n"
               "     --json            print JSON (one document; one per line for monitor)\n"
               "     --runtime         change the running daemon only; do not persist\n"
               "     --config-dir DIR  persist into DIR/peltd.conf.d/ instead of " CONFIG_DIR "/peltd.conf.d/\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n\n"
               "See peltctl(1) and peltd(8).\n");
}

/* ---- Text output ------------------------------------------------------------------------------ */

static size_t text_width_of_stdout(void) {
        struct winsize ws;

        if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > TEXT_WIDTH_MIN)
                return ws.ws_col;
        return TEXT_WIDTH_MIN;
}

/* "   Label: value", the value sanitized and wrapped under itself. */
static void print_field(const char *label, const char *value, size_t width) {
        _cleanup_free_ char *v = text_sanitize(value);

        printf("%*s: ", LABEL_WIDTH - 2, label);
        text_wrap(stdout, v ?: "", LABEL_WIDTH, LABEL_WIDTH, width);
}

/* ---- JSON ------------------------------------------------------------------------------------- */

/* The shortest decimal that reads back as v (as JSON has no NaN or infinity: null then). */
static json_object *json_double(double v) {
        char buf[32];

        if (!isfinite(v))
                return NULL;
        for (int prec = 1; prec <= 17; prec++) {
                snprintf(buf, sizeof buf, "%.*g", prec, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        return json_object_new_double_s(v, buf);
}

static int json_add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int json_print(json_object *o, bool one_line) {
        const char *s = json_object_to_json_string_ext(
                o, (one_line ? JSON_C_TO_STRING_PLAIN : JSON_C_TO_STRING_PRETTY) | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return log_oom();
        puts(s);
        return 0;
}

/* "SampleIntervalUSec" -> "sample_interval_usec": '_' where a capital follows a small letter or digit. */
static char *snake_case(const char *s) {
        char *out = malloc(strlen(s) * 2 + 1), *o = out;

        if (!out)
                return NULL;
        for (const char *p = s; *p; p++) {
                if (*p >= 'A' && *p <= 'Z') {
                        if (p > s && ((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= '0' && p[-1] <= '9')))
                                *o++ = '_';
                        *o++ = (char) (*p - 'A' + 'a');
                } else
                        *o++ = *p;
        }
        *o = 0;
        return out;
}

/* ---- The bus ---------------------------------------------------------------------------------- */

/* Logs why a call failed: the daemon's own message, or that nobody owns the name. Returns 1. */
static int call_failed(const char *method, const sd_bus_error *e, int r) {
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                log_error("peltd is not running (nobody owns %s on the system bus).", BUS_NAME);
        else if (sd_bus_error_is_set(e) && e->message)
                log_error("%s", e->message);
        else
                log_error_errno(r, "Failed to call %s on %s: %m", method, BUS_NAME);
        return EXIT_FAILURE;
}

static int bus_connect(sd_bus **ret) {
        int r = sd_bus_open_system(ret);

        if (r < 0) {
                log_error_errno(r, "Cannot connect to the system bus: %m");
                return EXIT_FAILURE;
        }
        return 0;
}

/*
 * Calls method with the arguments of types; a change (is_change) lets polkit ask for a password
 * when there is someone at a terminal to type it. Returns 0 with the reply (when ret_reply is
 * given), or 1 after logging why not.
 */
static int callv(sd_bus *bus, const char *method, bool is_change, sd_bus_message **ret_reply, const char *types, va_list ap) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, BUS_INTERFACE, method);
        if (r >= 0 && types)
                r = sd_bus_message_appendv(m, types, ap);
        if (r >= 0 && is_change)
                r = sd_bus_message_set_allow_interactive_authorization(m, isatty(STDIN_FILENO));
        if (r < 0) {
                log_error_errno(r, "Failed to make the %s call: %m", method);
                return EXIT_FAILURE;
        }
        r = sd_bus_call(bus, m, 0, &error, ret_reply);
        if (r < 0)
                return call_failed(method, &error, r);
        return 0;
}

static int call(sd_bus *bus, const char *method, bool is_change, sd_bus_message **ret_reply, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = callv(bus, method, is_change, ret_reply, types, ap);
        va_end(ap);
        return r;
}

/* ---- Groups ----------------------------------------------------------------------------------- */

/* One row of ListGroups / GetGroup; the strings live in the reply. */
typedef struct Row {
        const char *path;
        double util, runnable, load;
        uint64_t shares;
        const char *cpus, *policy, *reason;
} Row;

static int read_row(sd_bus_message *m, Row *ret) {
        return sd_bus_message_read(m, "(sdddtsss)", &ret->path, &ret->util, &ret->runnable, &ret->load, &ret->shares,
                                   &ret->cpus, &ret->policy, &ret->reason);
}

/* Reads the array of ListGroups into *ret (the strings live in m). */
static int read_rows(sd_bus_message *m, Row **ret, size_t *ret_n) {
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sdddtsss)");
        if (r < 0)
                return r;
        for (;;) {
                Row row;
                Row *nr;

                r = read_row(m, &row);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                nr = reallocarray(rows, n + 1, sizeof *rows);
                if (!nr)
                        return -ENOMEM;
                rows = nr;
                rows[n++] = row;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(rows);
        *ret_n = n;
        return 0;
}

static json_object *row_to_json(const Row *row) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o || json_add(o, "path", json_object_new_string(row->path)) < 0 ||
            json_add(o, "util", json_double(row->util)) < 0 || json_add(o, "runnable", json_double(row->runnable)) < 0 ||
            json_add(o, "load", json_double(row->load)) < 0 || json_add(o, "shares", json_object_new_uint64(row->shares)) < 0 ||
            json_add(o, "cpus", json_object_new_string(row->cpus)) < 0 ||
            json_add(o, "policy", json_object_new_string(row->policy)) < 0 ||
            json_add(o, "reason", json_object_new_string(row->reason)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static json_object *rows_to_json(const Row *rows, size_t n) {
        _cleanup_json_ json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_object *o = row_to_json(&rows[i]);

                if (!o || json_object_array_add(a, o) < 0) {
                        json_object_put(o);
                        return NULL;
                }
        }
        return TAKE_PTR(a);
}

/*
 * The groups as a table of width columns: path, util and runnable in CPUs, shares, CPUs, policy;
 * each group's reason on a line of its own below it. A path too long keeps its end, CPUs and the
 * reason their start, each with "…" (--json has every value whole).
 */
#define COL_UTIL 6
#define COL_RUNNABLE 8
#define COL_SHARES 6
#define COL_POLICY 11
#define COL_CPUS_MAX 16
#define COL_GAP 2
#define REASON_INDENT 4

static int print_table(const Row *rows, size_t n, size_t width) {
        size_t path_w = strlen("GROUP"), cpus_w = strlen("CPUS"), fixed;

        if (n == 0) {
                puts("No managed groups.");
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = text_sanitize(rows[i].path), *c = text_sanitize(rows[i].cpus);

                if (!p || !c)
                        return log_oom();
                path_w = MAX(path_w, text_width(p));
                cpus_w = MAX(cpus_w, text_width(c));
        }
        cpus_w = MIN(cpus_w, (size_t) COL_CPUS_MAX);
        fixed = COL_UTIL + COL_RUNNABLE + COL_SHARES + cpus_w + COL_POLICY + 5 * COL_GAP;
        path_w = MIN(path_w, width - fixed);

        text_pad(stdout, "GROUP", path_w);
        printf("%*s%*s%*s%*s", COL_GAP + COL_UTIL, "UTIL", COL_GAP + COL_RUNNABLE, "RUNNABLE", COL_GAP + COL_SHARES,
               "SHARES", COL_GAP, "");
        text_pad(stdout, "CPUS", cpus_w);
        printf("%*sPOLICY\n", COL_GAP, "");

        for (size_t i = 0; i < n; i++) {
                const Row *row = &rows[i];
                _cleanup_free_ char *p = text_sanitize(row->path), *c = text_sanitize(row->cpus),
                                    *pol = text_sanitize(isempty(row->policy) ? "-" : row->policy),
                                    *why = text_sanitize(row->reason), *p_cut = NULL, *c_cut = NULL, *why_cut = NULL;

                if (!p || !c || !pol || !why)
                        return log_oom();
                p_cut = text_ellipsize(p, path_w, true);
                c_cut = text_ellipsize(c, cpus_w, false);
                why_cut = text_ellipsize(why, width - REASON_INDENT, false);
                if (!p_cut || !c_cut || !why_cut)
                        return log_oom();

                text_pad(stdout, p_cut, path_w);
                printf("%*.2f%*.2f%*" PRIu64 "%*s", COL_GAP + COL_UTIL, row->util / 1024.0, COL_GAP + COL_RUNNABLE,
                       row->runnable / 1024.0, COL_GAP + COL_SHARES, row->shares, COL_GAP, "");
                text_pad(stdout, c_cut, cpus_w);
                printf("%*s%s\n", COL_GAP, "", pol);
                if (!isempty(why_cut))
                        printf("%*s%s\n", REASON_INDENT, "", why_cut);
        }
        return 0;
}

/* ---- Properties ------------------------------------------------------------------------------- */

/* One property's value as JSON: s, b, t, u, i, x, d and as; anything else is skipped (*ret NULL). */
static int variant_to_json(sd_bus_message *m, json_object **ret) {
        const char *contents;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0)
                return r;
        *ret = NULL;
        if (streq(contents, "s")) {
                const char *s;

                if ((r = sd_bus_message_read_basic(m, 's', &s)) >= 0 && !(*ret = json_object_new_string(s)))
                        r = -ENOMEM;
        } else if (streq(contents, "b")) {
                int b;

                if ((r = sd_bus_message_read_basic(m, 'b', &b)) >= 0 && !(*ret = json_object_new_boolean(b)))
                        r = -ENOMEM;
        } else if (streq(contents, "t") || streq(contents, "u")) {
                uint64_t t = 0;
                uint32_t u;

                r = contents[0] == 't' ? sd_bus_message_read_basic(m, 't', &t) : sd_bus_message_read_basic(m, 'u', &u);
                if (contents[0] == 'u')
                        t = u;
                if (r >= 0 && !(*ret = json_object_new_uint64(t)))
                        r = -ENOMEM;
        } else if (streq(contents, "x") || streq(contents, "i")) {
                int64_t x = 0;
                int32_t i;

                r = contents[0] == 'x' ? sd_bus_message_read_basic(m, 'x', &x) : sd_bus_message_read_basic(m, 'i', &i);
                if (contents[0] == 'i')
                        x = i;
                if (r >= 0 && !(*ret = json_object_new_int64(x)))
                        r = -ENOMEM;
        } else if (streq(contents, "d")) {
                double d;

                if ((r = sd_bus_message_read_basic(m, 'd', &d)) >= 0)
                        *ret = json_double(d) ?: json_object_new_null();
        } else if (streq(contents, "as")) {
                _cleanup_strv_free_ char **l = NULL;

                r = sd_bus_message_read_strv(m, &l);
                if (r >= 0 && !(*ret = json_object_new_array()))
                        r = -ENOMEM;
                for (char **s = l; r >= 0 && s && *s; s++)
                        if (json_object_array_add(*ret, json_object_new_string(*s)) < 0)
                                r = -ENOMEM;
        } else
                r = sd_bus_message_skip(m, contents);
        if (r < 0) {
                json_object_put(*ret);
                *ret = NULL;
                return r;
        }
        return sd_bus_message_exit_container(m);
}

/* Every property of org.peltd1.Manager, by its name in snake_case ("dry_run"). */
static int get_properties(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return log_oom(), EXIT_FAILURE;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s",
                               BUS_INTERFACE);
        if (r < 0)
                return call_failed("GetAll", &error, r);

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                _cleanup_free_ char *key = NULL;
                json_object *v = NULL;
                const char *name;

                r = sd_bus_message_read_basic(reply, 's', &name);
                if (r >= 0)
                        r = variant_to_json(reply, &v);
                if (r >= 0 && v && (!(key = snake_case(name)) || json_add(o, key, v) < 0))
                        r = -ENOMEM;
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                log_error_errno(r, "Failed to read peltd's properties: %m");
                return EXIT_FAILURE;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static const char *prop_string(json_object *props, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(props, key, &v) || !json_object_is_type(v, json_type_string))
                return "?";
        return json_object_get_string(v);
}

static uint64_t prop_u64(json_object *props, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(props, key, &v))
                return 0;
        return json_object_get_uint64(v);
}

/* GetTopology's document, parsed. */
static int get_topology(sd_bus *bus, const char **ret_text, sd_bus_message **ret_reply, json_object **ret_doc) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *s;
        int r;

        r = call(bus, "GetTopology", false, &reply, NULL);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "s", &s);
        if (r < 0) {
                log_error_errno(r, "Failed to read GetTopology's answer: %m");
                return EXIT_FAILURE;
        }
        if (ret_doc) {
                *ret_doc = json_tokener_parse(s);
                if (!*ret_doc) {
                        log_error("GetTopology's answer is not JSON.");
                        return EXIT_FAILURE;
                }
        }
        if (ret_text)
                *ret_text = s;
        if (ret_reply)
                *ret_reply = TAKE_PTR(reply);
        return 0;
}

/* ---- Commands --------------------------------------------------------------------------------- */

static int cmd_status(sd_bus *bus, _unused_ char **args) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *groups = NULL;
        _cleanup_json_ json_object *props = NULL, *topo = NULL;
        _cleanup_free_ char *summary = NULL, *text = NULL;
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0, width = text_width_of_stdout();
        int r;

        if ((r = get_properties(bus, &props)) != 0 || (r = get_topology(bus, NULL, NULL, &topo)) != 0 ||
            (r = call(bus, "ListGroups", false, &groups, NULL)) != 0)
                return r;
        r = read_rows(groups, &rows, &n);
        if (r < 0) {
                log_error_errno(r, "Failed to read ListGroups' answer: %m");
                return EXIT_FAILURE;
        }

        if (arg_json) {
                json_object *a = rows_to_json(rows, n);

                if (json_add(props, "topology", json_object_get(topo)) < 0 || json_add(props, "groups", a) < 0)
                        return log_oom(), EXIT_FAILURE;
                return json_print(props, false) < 0 ? EXIT_FAILURE : 0;
        }

        r = topology_json_summary(topo, &summary);
        if (r < 0) {
                log_error_errno(r, "GetTopology's document is not as peltd writes it: %m");
                return EXIT_FAILURE;
        }
        if (asprintf(&text, "%s, root %s", prop_string(props, "cgroup_mode"), prop_string(props, "cgroup_root")) < 0)
                return log_oom(), EXIT_FAILURE;

        print_field("Policy", prop_string(props, "policy"), width);
        print_field("Backend", prop_string(props, "backend"), width);
        print_field("Cgroup mode", text, width);
        free(text);
        if (asprintf(&text, "%s; groups every %" PRIu64 " ms, threads every %" PRIu64 " ms",
                     prop_string(props, "sampling_backend"), prop_u64(props, "sample_interval_usec") / 1000,
                     prop_u64(props, "task_sample_interval_usec") / 1000) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Sampling", text, width);
        {
                json_object *v;

                print_field("Dry run",
                            json_object_object_get_ex(props, "dry_run", &v) && json_object_get_boolean(v) ? "yes" : "no",
                            width);
        }
        print_field("Topology", summary, width);
        free(text);
        if (asprintf(&text, "%" PRIu64 ", %" PRIu64 " placement change%s", prop_u64(props, "rounds"),
                     prop_u64(props, "changes"), prop_u64(props, "changes") == 1 ? "" : "s") < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Rounds", text, width);
        print_field("Version", prop_string(props, "version"), width);
        putchar('\n');
        return print_table(rows, n, width) < 0 ? EXIT_FAILURE : 0;
}

static int cmd_groups(sd_bus *bus, _unused_ char **args) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ Row *rows = NULL;
        size_t n = 0;
        int r;

        r = call(bus, "ListGroups", false, &reply, NULL);
        if (r != 0)
                return r;
        r = read_rows(reply, &rows, &n);
        if (r < 0) {
                log_error_errno(r, "Failed to read ListGroups' answer: %m");
                return EXIT_FAILURE;
        }
        if (arg_json) {
                _cleanup_json_ json_object *a = rows_to_json(rows, n);

                if (!a)
                        return log_oom(), EXIT_FAILURE;
                return json_print(a, false) < 0 ? EXIT_FAILURE : 0;
        }
        return print_table(rows, n, text_width_of_stdout()) < 0 ? EXIT_FAILURE : 0;
}

/*
 * A group path from the command line, passed as it is; only bytes that are not UTF-8 (which a
 * D-Bus string cannot carry) become "\xNN", as peltd names such groups.
 */
static const char *path_arg(const char *arg, char **ret_alloc) {
        const char *p = utf8_escape(arg, ret_alloc);

        if (!p)
                log_oom();
        return p;
}

static int cmd_group(sd_bus *bus, char **args) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *alloc = NULL, *text = NULL;
        const char *path = path_arg(args[0], &alloc);
        size_t width = text_width_of_stdout();
        Row row;
        int r;

        if (!path)
                return EXIT_FAILURE;
        r = call(bus, "GetGroup", false, &reply, "s", path);
        if (r != 0)
                return r;
        r = read_row(reply, &row);
        if (r <= 0) {
                log_error_errno(r < 0 ? r : EBADMSG, "Failed to read GetGroup's answer: %m");
                return EXIT_FAILURE;
        }
        if (arg_json) {
                _cleanup_json_ json_object *o = row_to_json(&row);

                if (!o)
                        return log_oom(), EXIT_FAILURE;
                return json_print(o, false) < 0 ? EXIT_FAILURE : 0;
        }

        print_field("Group", row.path, width);
        if (asprintf(&text, "%.2f CPUs", row.util / 1024.0) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Util", text, width);
        free(text);
        if (asprintf(&text, "%.2f CPUs", row.runnable / 1024.0) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Runnable", text, width);
        free(text);
        if (asprintf(&text, "%.0f", row.load) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Load", text, width);
        free(text);
        if (asprintf(&text, "%" PRIu64, row.shares) < 0)
                return log_oom(), EXIT_FAILURE;
        print_field("Shares", text, width);
        print_field("CPUs", row.cpus, width);
        print_field("Policy", isempty(row.policy) ? "-" : row.policy, width);
        print_field("Reason", row.reason, width);
        return 0;
}

static int cmd_topology(sd_bus *bus, _unused_ char **args) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_json_ json_object *doc = NULL;
        _cleanup_free_ char *text = NULL;
        const char *s;
        int r;

        r = get_topology(bus, &s, &reply, &doc);
        if (r != 0)
                return r;
        if (arg_json) {
                /* The document as the daemon wrote it: peltd --print-topology --json's. */
                fputs(s, stdout);
                putchar('\n');
                return 0;
        }
        r = topology_json_to_text(doc, &text);
        if (r < 0) {
                log_error_errno(r, "GetTopology's document is not as peltd writes it: %m");
                return EXIT_FAILURE;
        }
        fputs(text, stdout);
        return 0;
}

static int cmd_reload(sd_bus *bus, _unused_ char **args) {
        return call(bus, "Reload", true, NULL, NULL);
}

/* ---- Persisting: the drop-in ------------------------------------------------------------------ */

/* What is persisted: the policy, or a group's shares (0: its line removed). */
typedef struct Setting {
        const char *policy;
        const char *path;
        uint64_t shares;
} Setting;

typedef struct Dropin {
        int config_fd;               /* CONFIG_DIR */
        int dir_fd;                  /* CONFIG_DIR/peltd.conf.d, flocked; -1 while it is not there */
        char *dir, *file;            /* their paths, for messages */
} Dropin;

static void dropin_done(Dropin *d) {
        closep(&d->config_fd);
        closep(&d->dir_fd);
        free(d->dir);
        free(d->file);
}

/* The drop-in's text ("" when there is none); logs why not. */
static int dropin_read(const Dropin *d, char **ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t size;
        ssize_t n = 0;

        if (d->dir_fd < 0)
                return (*ret = strdup("")) ? 0 : log_oom();
        fd = openat(d->dir_fd, DROPIN_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return (*ret = strdup("")) ? 0 : log_oom();
        if (fd < 0 && errno == ELOOP)
                return log_error_errno(ELOOP, "Refusing %s: it is a symbolic link; peltctl writes a file of its own there.",
                                       d->file);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open %s: %m", d->file);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Failed to read %s: %m", d->file);
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size > INI_FILE_MAX)
                return log_error_errno(EPERM, "Refusing %s: it is not a regular file of at most 1 MiB.", d->file);
        /* Read to the end, at most 1 MiB: one byte more says it grew meanwhile. */
        text = malloc(INI_FILE_MAX + 2);
        if (!text)
                return log_oom();
        for (size = 0; size <= INI_FILE_MAX; size += (size_t) n) {
                n = read(fd, text + size, INI_FILE_MAX + 1 - size);
                if (n < 0 && errno == EINTR)
                        n = 0;
                else if (n < 0)
                        return log_error_errno(errno, "Failed to read %s: %m", d->file);
                else if (n == 0)
                        break;
        }
        if (size > INI_FILE_MAX)
                return log_error_errno(EPERM, "Refusing %s: it is larger than 1 MiB.", d->file);
        text[size] = 0;
        if (strlen(text) != size)
                return log_error_errno(EINVAL, "Refusing %s: it holds a NUL byte.", d->file);
        *ret = TAKE_PTR(text);
        return 0;
}

/* Opens (with create, makes: mode 0755) CONFIG_DIR/peltd.conf.d and locks it against another peltctl. */
static int dropin_open_dir(Dropin *d, bool create) {
        bool made = false;

        if (create && mkdirat(d->config_fd, DROPIN_DIR, 0755) == 0)
                made = true;
        else if (create && errno != EEXIST)
                return log_error_errno(errno, "Failed to make %s: %m", d->dir);
        d->dir_fd = openat(d->config_fd, DROPIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d->dir_fd < 0 && errno == ENOENT && !create)
                return 0;
        if (d->dir_fd < 0)
                return log_error_errno(errno, "Failed to open %s: %m", d->dir);
        /* 0755 whatever the umask: peltd reads it as root, but operators read what is there. */
        if (made && fchmod(d->dir_fd, 0755) < 0)
                return log_error_errno(errno, "Failed to make %s mode 0755: %m", d->dir);
        if (flock(d->dir_fd, LOCK_EX) < 0)
                return log_error_errno(errno, "Failed to lock %s: %m", d->dir);
        return 0;
}

/*
 * Before the call: refused unless root; CONFIG_DIR must be there; the drop-in read as it will be
 * rewritten (a file that cannot be is said now, before anything changes). Returns 0 or 1.
 */
static int dropin_begin(Dropin *d, const Setting *s) {
        _cleanup_free_ char *text = NULL;
        const char *why;

        *d = (Dropin){ .config_fd = -1, .dir_fd = -1 };
        if (geteuid() != 0) {
                log_error("Persisting needs root; use --runtime to change the running daemon only.");
                return EXIT_FAILURE;
        }
        if (s->path && dropin_check_group_path(s->path, &why) < 0) {
                log_error("Cannot persist the shares of %s: a [Group] section of peltd.conf cannot name it (it %s); use --runtime.",
                          s->path, why);
                return EXIT_FAILURE;
        }
        if (asprintf(&d->dir, "%s/" DROPIN_DIR, arg_config_dir) < 0 ||
            asprintf(&d->file, "%s/" DROPIN_DIR "/" DROPIN_NAME, arg_config_dir) < 0)
                return log_oom(), EXIT_FAILURE;
        d->config_fd = open(arg_config_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d->config_fd < 0) {
                log_error_errno(errno, "Cannot persist into the configuration directory %s: %m", arg_config_dir);
                return EXIT_FAILURE;
        }
        if (dropin_open_dir(d, false) < 0 || dropin_read(d, &text) < 0)
                return EXIT_FAILURE;
        return 0;
}

/* Writes text as the drop-in: a temporary file beside it, mode 0644, fsynced, renamed over it. */
static int dropin_write(const Dropin *d, const char *text) {
        _cleanup_close_ int fd = -1;
        char tmp[64];
        size_t len = strlen(text);
        int r = 0;

        for (int attempt = 0; fd < 0; attempt++) {
                uint64_t rnd;

                if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
                        rnd = (uint64_t) now_usec(CLOCK_MONOTONIC) ^ ((uint64_t) getpid() << 32);
                /* Not ending in ".conf": peltd never reads it half-written. */
                snprintf(tmp, sizeof tmp, "." DROPIN_NAME ".%016" PRIx64, rnd);
                fd = openat(d->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 && (errno != EEXIST || attempt >= 16))
                        return log_error_errno(errno, "Failed to create a temporary file in %s: %m", d->dir);
        }
        /* 0644 whatever the umask; root's, not writable by others: what peltd reads. */
        if (fchmod(fd, 0644) < 0)
                r = negative_errno();
        for (size_t done = 0; r >= 0 && done < len;) {
                ssize_t n = write(fd, text + done, len - done);

                if (n < 0)
                        r = negative_errno();
                else
                        done += (size_t) n;
        }
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(d->dir_fd, tmp, d->dir_fd, DROPIN_NAME) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(d->dir_fd, tmp, 0);
                return log_error_errno(r, "Failed to write %s: %m", d->file);
        }
        (void) fsync(d->dir_fd);
        return 0;
}

/* After the call succeeded: the setting written into the drop-in. Returns 0 or 1. */
static int dropin_commit(Dropin *d, const Setting *s) {
        _cleanup_free_ char *text = NULL, *edited = NULL;
        int r;

        if (d->dir_fd < 0 && dropin_open_dir(d, true) < 0)
                goto failed;
        /* Read again under the lock: the directory may have been made meanwhile. */
        if (dropin_read(d, &text) < 0)
                goto failed;
        r = s->policy ? dropin_set_policy(text, s->policy, &edited) : dropin_set_shares(text, s->path, s->shares, &edited);
        if (r < 0) {
                log_error_errno(r, "Failed to edit %s: %m", d->file);
                goto failed;
        }
        if (dropin_write(d, edited) < 0)
                goto failed;
        return 0;

failed:
        log_error("The running daemon has the new setting, but it was not persisted.");
        return EXIT_FAILURE;
}

/* A change, persisted unless --runtime: see the top of this file for the order. */
static int change(sd_bus *bus, const Setting *s, const char *method, const char *types, ...) {
        _cleanup_(dropin_done) Dropin d = { .config_fd = -1, .dir_fd = -1 };
        va_list ap;
        int r;

        if (!arg_runtime && (r = dropin_begin(&d, s)) != 0)
                return r;
        va_start(ap, types);
        r = callv(bus, method, true, NULL, types, ap);
        va_end(ap);
        if (r != 0 || arg_runtime)
                return r;
        return dropin_commit(&d, s);
}

static int cmd_policy(sd_bus *bus, char **args) {
        _cleanup_json_ json_object *props = NULL;
        int r;

        if (args[0])
                return change(bus, &(Setting){ .policy = args[0] }, "SetPolicy", "s", args[0]);

        r = get_properties(bus, &props);
        if (r != 0)
                return r;
        if (arg_json) {
                _cleanup_json_ json_object *o = json_object_new_object();
                json_object *v;

                if (!o || json_add(o, "policy", json_object_new_string(prop_string(props, "policy"))) < 0 ||
                    !json_object_object_get_ex(props, "policies", &v) || json_add(o, "policies", json_object_get(v)) < 0)
                        return log_oom(), EXIT_FAILURE;
                return json_print(o, false) < 0 ? EXIT_FAILURE : 0;
        }
        puts(prop_string(props, "policy"));
        return 0;
}

static int cmd_set_shares(sd_bus *bus, char **args) {
        _cleanup_free_ char *alloc = NULL;
        const char *path = path_arg(args[0], &alloc);

        if (!path)
                return EXIT_FAILURE;
        return change(bus, &(Setting){ .path = path, .shares = arg_shares }, "SetGroupShares", "st", path, arg_shares);
}

/* ---- monitor ---------------------------------------------------------------------------------- */

static int on_placement_changed(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        const char *path, *old_cpus, *cpus, *policy, *reason;
        uint64_t old_shares, shares;
        int r;

        r = sd_bus_message_read(m, "sssttss", &path, &old_cpus, &cpus, &old_shares, &shares, &policy, &reason);
        if (r < 0) {
                log_warning_errno(r, "A PlacementChanged signal did not parse, ignoring: %m");
                return 0;
        }
        if (arg_json) {
                _cleanup_json_ json_object *o = json_object_new_object();

                if (!o || json_add(o, "path", json_object_new_string(path)) < 0 ||
                    json_add(o, "old_cpus", json_object_new_string(old_cpus)) < 0 ||
                    json_add(o, "cpus", json_object_new_string(cpus)) < 0 ||
                    json_add(o, "old_shares", json_object_new_uint64(old_shares)) < 0 ||
                    json_add(o, "shares", json_object_new_uint64(shares)) < 0 ||
                    json_add(o, "policy", json_object_new_string(policy)) < 0 ||
                    json_add(o, "reason", json_object_new_string(reason)) < 0 || json_print(o, true) < 0)
                        return log_oom(), 0;
        } else {
                _cleanup_free_ char *p = text_sanitize(path), *oc = text_sanitize(old_cpus), *c = text_sanitize(cpus),
                                    *pol = text_sanitize(policy), *why = text_sanitize(reason);
                char stamp[16] = "";
                time_t now = time(NULL);
                struct tm tm;

                if (!p || !oc || !c || !pol || !why)
                        return log_oom(), 0;
                if (localtime_r(&now, &tm))
                        strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
                printf("%s %s: CPUs %s -> %s, shares %" PRIu64 " -> %" PRIu64 ", %s: %s\n", stamp, p, oc, c, old_shares,
                       shares, isempty(pol) ? "-" : pol, why);
        }
        fflush(stdout);
        return 0;
}

static int on_owner_changed(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 || !streq(name, BUS_NAME) ||
            !isempty(new_owner))
                return 0;
        log_error("peltd stopped (%s has no owner any more).", BUS_NAME);
        return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), EXIT_FAILURE);
}

static int on_disconnected(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        log_error("Lost the system bus.");
        return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), EXIT_FAILURE);
}

static int on_signal(sd_event_source *s, _unused_ const struct signalfd_siginfo *si, _unused_ void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), EXIT_SUCCESS);
}

/*
 * Every PlacementChanged until SIGINT or SIGTERM (exit 0). The daemon must be there at the start,
 * and when it stops (its name loses its owner) or the bus goes away, monitor exits 1 saying so.
 */
static int cmd_monitor(sd_bus *bus, _unused_ char **args) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT | SD_EVENT_SIGNAL_PROCMASK, on_signal, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, on_signal, NULL);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
        /* Matched by the bus on the sender's name: only the daemon's signals, also after a restart. */
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, BUS_NAME, BUS_PATH, BUS_INTERFACE, "PlacementChanged",
                                        on_placement_changed, NULL);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                     "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" BUS_NAME "'",
                                     on_owner_changed, NULL);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, NULL);
        if (r < 0) {
                log_error_errno(r, "Failed to listen for PlacementChanged: %m");
                return EXIT_FAILURE;
        }

        /* Now that nothing is missed: is the daemon there? */
        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetNameOwner", &error, &reply, "s", BUS_NAME);
        if (r < 0)
                return call_failed("GetNameOwner", &error, r);
        log_info("Monitoring peltd's placement changes; press Ctrl-C to stop.");

        r = sd_event_loop(event);
        if (r < 0) {
                log_error_errno(r, "The event loop failed: %m");
                return EXIT_FAILURE;
        }
        return r;
}

/* ---- The command line ------------------------------------------------------------------------- */

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args;
        bool runtime;                /* takes --runtime (with its full arguments) */
        int (*run)(sd_bus *bus, char **args);
} Verb;

static const Verb verbs[] = {
        { "status", 0, 0, false, cmd_status },
        { "policy", 0, 1, true, cmd_policy },
        { "groups", 0, 0, false, cmd_groups },
        { "group", 1, 1, false, cmd_group },
        { "topology", 0, 0, false, cmd_topology },
        { "set-shares", 2, 2, true, cmd_set_shares },
        { "reload", 0, 0, false, cmd_reload },
        { "monitor", 0, 0, false, cmd_monitor },
};

/* Returns the verb to run, NULL after --help/--version (exit 0), or sets *ret_usage on bad usage. */
static const Verb *parse_argv(int argc, char *argv[], char ***ret_args, bool *ret_usage) {
        enum {
                ARG_JSON = 0x100,
                ARG_RUNTIME,
                ARG_CONFIG_DIR,
                ARG_VERSION,
        };
        static const struct option options[] = {
                { "json", no_argument, NULL, ARG_JSON },
                { "runtime", no_argument, NULL, ARG_RUNTIME },
                { "config-dir", required_argument, NULL, ARG_CONFIG_DIR },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {},
        };
        const Verb *v = NULL;
        unsigned n;
        int c;

        *ret_usage = true;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_RUNTIME:
                        arg_runtime = true;
                        break;
                case ARG_CONFIG_DIR:
                        if (isempty(optarg)) {
                                log_error("Invalid --config-dir: empty path.");
                                return NULL;
                        }
                        arg_config_dir = optarg;
                        break;
                case 'h':
                        help();
                        *ret_usage = false;
                        return NULL;
                case ARG_VERSION:
                        puts("peltctl " PELTD_VERSION);
                        *ret_usage = false;
                        return NULL;
                default:
                        /* getopt said what was wrong. */
                        log_error("See peltctl --help.");
                        return NULL;
                }

        if (optind >= argc) {
                log_error("No command given; see peltctl --help.");
                return NULL;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs) && !v; i++)
                if (streq(argv[optind], verbs[i].name))
                        v = &verbs[i];
        if (!v) {
                log_error("Unknown command \"%s\"; see peltctl --help.", argv[optind]);
                return NULL;
        }
        n = (unsigned) (argc - optind - 1);
        if (n < v->min_args || n > v->max_args) {
                log_error("%s takes %s%u argument%s, got %u; see peltctl --help.", v->name,
                          v->min_args == v->max_args ? "" : "at most ", v->max_args, v->max_args == 1 ? "" : "s", n);
                return NULL;
        }
        if (v->run == cmd_set_shares && safe_atou64(argv[optind + 2], &arg_shares) < 0) {
                log_error("Invalid shares \"%s\": a number, 2 to 262144, or 0 for the configured value.", argv[optind + 2]);
                return NULL;
        }
        /* --runtime goes with what would be persisted: "policy NAME" and "set-shares PATH N". */
        if (arg_runtime && (!v->runtime || n < v->max_args)) {
                log_error("--runtime only applies to \"policy NAME\" and \"set-shares PATH N\".");
                return NULL;
        }
        *ret_args = argv + optind + 1;
        *ret_usage = false;
        return v;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const Verb *v;
        char **args = NULL;
        bool usage;
        int r;

        /* Display widths of UTF-8 text (peltctl-text.h); numbers stay in the C locale. */
        (void) setlocale(LC_CTYPE, "C.UTF-8");
        log_parse_environment();

        v = parse_argv(argc, argv, &args, &usage);
        if (!v)
                return usage ? EXIT_USAGE : EXIT_SUCCESS;

        r = bus_connect(&bus);
        if (r != 0)
                return r;
        r = v->run(bus, args);
        if (fflush(stdout) != 0 || ferror(stdout)) {
                log_error_errno(errno > 0 ? errno : EIO, "Failed to write the output: %m");
                return EXIT_FAILURE;
        }
        return r;
}
