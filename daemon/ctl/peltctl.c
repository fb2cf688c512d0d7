/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * peltctl, the operator's command: a client of peltd's D-Bus API (peltd(8), "D-BUS INTERFACE", and
 * "peltctl"). It links sd-bus, json-c and the shared helpers, none of the daemon's sampling,
 * planning or applying. This file reads the command line and runs the command; the commands are in
 * peltctl-commands.c and peltctl-monitor.c, the calls they make in peltctl-bus.c, what they print
 * in peltctl-output.c, and persisting a change in peltctl-persist.c.
 *
 * Exit status: 0 success; 1 the call was refused or failed (the bus error's message on stderr),
 * peltd is not running, or a setting could not be persisted; 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-bus.h>

#include "build-config.h"
#include "peltd/log.h"
#include "peltd/parse.h"
#include "peltd/peltctl-bus.h"
#include "peltd/peltctl-commands.h"
#include "peltd/peltctl-monitor.h"
#include "peltd/peltctl-top.h"

#define CONFIG_DIR "/etc/peltd"

#define EXIT_USAGE 2

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
               "  monitor                   print each placement change as it happens\n"
               "  top [--once]              a live view of the groups, busiest first (q quits)\n\n"
               "Options:\n"
               "     --json            print JSON (one document; one per line for monitor)\n"
               "     --runtime         change the running daemon only; do not persist\n"
               "     --config-dir DIR  persist into DIR/peltd.conf.d/ instead of " CONFIG_DIR "/peltd.conf.d/\n"
               "     --once            top: print one frame and exit (as when stdout is not a terminal)\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n\n"
               "See peltctl(1) and peltd(8).\n");
}

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args;
        bool runtime;                /* takes --runtime (with its full arguments) */
        int (*run)(sd_bus *bus, char **args, const CtlOptions *opt);
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
        { "top", 0, 0, false, cmd_top },
};

/* The options into *opt: 1 to go on, 0 after --help/--version (exit 0), -EINVAL on bad usage. */
static int parse_options(int argc, char *argv[], CtlOptions *opt) {
        enum {
                ARG_JSON = 0x100,
                ARG_RUNTIME,
                ARG_CONFIG_DIR,
                ARG_ONCE,
                ARG_VERSION,
        };
        static const struct option options[] = {
                { "json", no_argument, NULL, ARG_JSON },
                { "runtime", no_argument, NULL, ARG_RUNTIME },
                { "config-dir", required_argument, NULL, ARG_CONFIG_DIR },
                { "once", no_argument, NULL, ARG_ONCE },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_JSON:
                        opt->json = true;
                        break;
                case ARG_RUNTIME:
                        opt->runtime = true;
                        break;
                case ARG_ONCE:
                        opt->once = true;
                        break;
                case ARG_CONFIG_DIR:
                        if (isempty(optarg)) {
                                log_error("Invalid --config-dir: empty path.");
                                return -EINVAL;
                        }
                        opt->config_dir = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        puts("peltctl " PELTD_VERSION);
                        return 0;
                default:
                        /* getopt said what was wrong. */
                        log_error("See peltctl --help.");
                        return -EINVAL;
                }
        return 1;
}

/*
 * The command after the options, with its arguments (*ret_args) checked against the table (and
 * set-shares' N into opt->shares); NULL on bad usage.
 */
static const Verb *parse_verb(int argc, char *argv[], CtlOptions *opt, char ***ret_args) {
        const Verb *v = NULL;
        unsigned n;

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
        if (v->run == cmd_set_shares && safe_atou64(argv[optind + 2], &opt->shares) < 0) {
                log_error("Invalid shares \"%s\": a number, 2 to 262144, or 0 for the configured value.", argv[optind + 2]);
                return NULL;
        }
        /* --runtime goes with what would be persisted: "policy NAME" and "set-shares PATH N". */
        if (opt->runtime && (!v->runtime || n < v->max_args)) {
                log_error("--runtime only applies to \"policy NAME\" and \"set-shares PATH N\".");
                return NULL;
        }
        if (opt->once && v->run != cmd_top) {
                log_error("--once only applies to \"top\".");
                return NULL;
        }
        *ret_args = argv + optind + 1;
        return v;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        CtlOptions opt = { .config_dir = CONFIG_DIR };
        const Verb *v;
        char **args = NULL;
        int r;

        /* Display widths of UTF-8 text (peltctl-text.h); numbers stay in the C locale. */
        (void) setlocale(LC_CTYPE, "C.UTF-8");
        log_parse_environment();

        r = parse_options(argc, argv, &opt);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        v = parse_verb(argc, argv, &opt, &args);
        if (!v)
                return EXIT_USAGE;

        r = bus_connect(&bus);
        if (r != 0)
                return r;
        r = v->run(bus, args, &opt);
        if (fflush(stdout) != 0 || ferror(stdout)) {
                log_error_errno(errno > 0 ? errno : EIO, "Failed to write the output: %m");
                return EXIT_FAILURE;
        }
        return r;
}
