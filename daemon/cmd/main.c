/* SPDX-License-Identifier: GPL-2.0-only */
#include <getopt.h>
#include <math.h>
#include <signal.h>

#include "build-config.h"
#include "peltd/commands.h"
#include "peltd/log.h"
#include "peltd/parse.h"

#define EXIT_USAGE 2

static void help(void) {
        printf("peltd " PELTD_VERSION " - power-aware placement of cgroups on CPUs\n\n"
               "Usage:\n"
               "  peltd [--config FILE | --config-dir DIR] [--policy P] [--dry-run]\n"
               "                                                       run the daemon\n"
               "  peltd --once SECONDS [--interval MSEC] [--backend bpf|proc] [--json]\n"
               "                                                       sample and print load tracking\n"
               "  peltd --print-topology [--sysfs-root DIR] [--json]  print the CPU topology\n"
               "  peltd --plan GROUPS.ini [--policy P] [--sysfs-root DIR] [--json]\n"
               "                                                       what-if placement\n"
               "  peltd --restore [--config FILE]                     put back recorded originals\n\n"
               "Options:\n"
               "  -c --config FILE     read this configuration file alone\n"
               "     --config-dir DIR  read DIR/peltd.conf and DIR/peltd.conf.d/ instead of /etc/peltd\n"
               "  -p --policy P        power, performance or balanced\n"
               "  -n --dry-run         decide and log, write nothing\n"
               "     --json            print JSON\n"
               "     --log-level L     err, warning, notice, info or debug (also PELTD_LOG_LEVEL)\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n\n"
               "See peltd(8) and peltd.conf(5).\n");
}

static bool policy_name_valid(const char *s) {
        return streq(s, "power") || streq(s, "performance") || streq(s, "balanced");
}

static int set_mode(Args *a, Mode m, const char *name) {
        if (a->mode != MODE_DAEMON && a->mode != m) {
                log_error("%s cannot be combined with another mode option.", name);
                return -EINVAL;
        }
        a->mode = m;
        return 0;
}

enum {
        ARG_ONCE = 0x100,
        ARG_INTERVAL,
        ARG_JSON,
        ARG_PRINT_TOPOLOGY,
        ARG_SYSFS_ROOT,
        ARG_PLAN,
        ARG_RESTORE,
        ARG_LOG_LEVEL,
        ARG_VERSION,
        ARG_CONFIG_DIR,
        ARG_BACKEND,
};

static const struct option options[] = {
        { "config", required_argument, NULL, 'c' },
        { "config-dir", required_argument, NULL, ARG_CONFIG_DIR },
        { "policy", required_argument, NULL, 'p' },
        { "dry-run", no_argument, NULL, 'n' },
        { "once", required_argument, NULL, ARG_ONCE },
        { "interval", required_argument, NULL, ARG_INTERVAL },
        { "backend", required_argument, NULL, ARG_BACKEND },
        { "json", no_argument, NULL, ARG_JSON },
        { "print-topology", no_argument, NULL, ARG_PRINT_TOPOLOGY },
        { "sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT },
        { "plan", required_argument, NULL, ARG_PLAN },
        { "restore", no_argument, NULL, ARG_RESTORE },
        { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        {},
};

/* A directory option: an empty one is a mistake, not the current directory. */
static int parse_path_option(const char *option, const char *s, const char **ret) {
        if (isempty(s)) {
                log_error("Invalid %s: empty path.", option);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

static int parse_policy(const char *s, const char **ret) {
        if (!policy_name_valid(s)) {
                log_error("Unknown policy \"%s\" for --policy: use power, performance or balanced.", s);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

/* --once SECONDS: a positive number, at most a year; it is a mode of its own. */
static int parse_once(const char *s, Args *a) {
        double sec;
        int r;

        if (safe_atod(s, &sec) < 0 || !(sec > 0) || sec > 86400.0 * 365) {
                log_error("Invalid --once \"%s\": a positive number of seconds.", s);
                return -EINVAL;
        }
        r = set_mode(a, MODE_ONCE, "--once");
        if (r < 0)
                return r;
        a->once_usec = (usec_t) llround(sec * (double) USEC_PER_SEC);
        return 0;
}

/* --interval MSEC: 1 ms to an hour. */
static int parse_interval(const char *s, usec_t *ret) {
        unsigned ms;

        if (safe_atou(s, &ms) < 0 || ms < 1 || ms > 3600 * 1000) {
                log_error("Invalid --interval \"%s\": milliseconds, 1 to 3600000.", s);
                return -EINVAL;
        }
        *ret = (usec_t) ms * USEC_PER_MSEC;
        return 0;
}

static int parse_backend(const char *s, const char **ret) {
        if (!streq(s, "bpf") && !streq(s, "proc")) {
                log_error("Invalid --backend \"%s\": bpf or proc.", s);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

/* --log-level takes effect at once: what parsing the rest logs is already at that level. */
static int parse_log_level(const char *s) {
        int r;

        r = log_level_from_string(s);
        if (r < 0) {
                log_error("Invalid --log-level \"%s\".", s);
                return -EINVAL;
        }
        log_set_max_level(r);
        return 0;
}

/* One option from getopt_long(). Returns 1 to go on, 0 to exit successfully (--help, --version), -EINVAL. */
static int parse_option(int c, const char *arg, Args *a) {
        int r = 0;

        switch (c) {
        case 'c':
                a->config_file = arg;
                break;
        case ARG_CONFIG_DIR:
                r = parse_path_option("--config-dir", arg, &a->config_dir);
                break;
        case 'p':
                r = parse_policy(arg, &a->policy);
                break;
        case 'n':
                a->dry_run = true;
                break;
        case ARG_ONCE:
                r = parse_once(arg, a);
                break;
        case ARG_INTERVAL:
                r = parse_interval(arg, &a->interval_usec);
                break;
        case ARG_BACKEND:
                r = parse_backend(arg, &a->backend);
                break;
        case ARG_JSON:
                a->json = true;
                break;
        case ARG_PRINT_TOPOLOGY:
                r = set_mode(a, MODE_PRINT_TOPOLOGY, "--print-topology");
                break;
        case ARG_SYSFS_ROOT:
                r = parse_path_option("--sysfs-root", arg, &a->sysfs_root);
                break;
        case ARG_PLAN:
                r = set_mode(a, MODE_PLAN, "--plan");
                if (r >= 0)
                        a->plan_file = arg;
                break;
        case ARG_RESTORE:
                r = set_mode(a, MODE_RESTORE, "--restore");
                break;
        case ARG_LOG_LEVEL:
                r = parse_log_level(arg);
                break;
        case 'h':
                help();
                return 0;
        case ARG_VERSION:
                printf("peltd " PELTD_VERSION "\n");
                return 0;
        case '?':
                /* getopt printed what was wrong; where to look is ours to say. */
                log_error("Try 'peltd --help'.");
                return -EINVAL;
        default:
                return -EINVAL;
        }
        return r < 0 ? r : 1;
}

/*
 * Options that apply to some modes only are refused with any other, and the configuration is
 * named one way: an option that would be ignored is a mistake the operator should hear of.
 */
static int check_combinations(const Args *a) {
        if (a->config_file && a->config_dir) {
                log_error("--config and --config-dir cannot be combined.");
                return -EINVAL;
        }
        if (a->config_dir && a->mode == MODE_PRINT_TOPOLOGY) {
                log_error("--config-dir does not apply to --print-topology.");
                return -EINVAL;
        }
        if (a->interval_usec && a->mode != MODE_ONCE) {
                log_error("--interval only applies to --once.");
                return -EINVAL;
        }
        if (a->backend && a->mode != MODE_ONCE) {
                log_error("--backend only applies to --once.");
                return -EINVAL;
        }
        if (a->dry_run && a->mode != MODE_DAEMON) {
                log_error("--dry-run only applies to the daemon.");
                return -EINVAL;
        }
        if (a->policy && a->mode != MODE_DAEMON && a->mode != MODE_PLAN) {
                log_error("--policy only applies to the daemon and --plan.");
                return -EINVAL;
        }
        if (a->json && (a->mode == MODE_DAEMON || a->mode == MODE_RESTORE)) {
                log_error("--json only applies to --once, --print-topology and --plan.");
                return -EINVAL;
        }
        if (!streq(a->sysfs_root, "/") && a->mode != MODE_PRINT_TOPOLOGY && a->mode != MODE_PLAN) {
                log_error("--sysfs-root only applies to --print-topology and --plan.");
                return -EINVAL;
        }
        return 0;
}

/* Returns 1 to run, 0 to exit successfully (--help), -EINVAL on bad usage. */
static int parse_argv(int argc, char *argv[], Args *a) {
        int c, r;

        *a = (Args){ .mode = MODE_DAEMON, .sysfs_root = "/" };

        while ((c = getopt_long(argc, argv, "c:p:nh", options, NULL)) >= 0) {
                r = parse_option(c, optarg, a);
                if (r <= 0)
                        return r;
        }

        if (optind < argc) {
                log_error("Unexpected argument \"%s\". Try 'peltd --help'.", argv[optind]);
                return -EINVAL;
        }
        r = check_combinations(a);
        if (r < 0)
                return r;
        return 1;
}

/*
 * Before anything else: the signals the daemon handles (SIGTERM, SIGINT: restore and exit; SIGHUP:
 * reload) are blocked, so one that comes while the configuration is read or a crash restore runs
 * waits for the loop instead of killing peltd without restoring. Signals with no job whose default
 * is to terminate are ignored: SIGPIPE (a write to a closed pipe or socket fails with EPIPE instead),
 * SIGUSR1, SIGUSR2, SIGALRM and the like. The commands that are not the daemon take SIGTERM and
 * SIGINT as usual (returns the mask to put back for them).
 */
static sigset_t signals_setup(void) {
        static const int ignored[] = { SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSTKFLT };
        sigset_t ss, old;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &ss, &old);

        for (size_t i = 0; i < ELEMENTSOF(ignored); i++)
                (void) signal(ignored[i], SIG_IGN);
        for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
                (void) signal(sig, SIG_IGN);
        return old;
}

int main(int argc, char *argv[]) {
        sigset_t old_mask = signals_setup();
        Args args;
        int r;

        log_parse_environment();

        r = parse_argv(argc, argv, &args);
        if (r < 0)
                return EXIT_USAGE;
        if (r == 0)
                return EXIT_SUCCESS;
        if (args.mode != MODE_DAEMON)
                (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);

        switch (args.mode) {
        case MODE_ONCE:
                return cmd_once(&args);
        case MODE_PRINT_TOPOLOGY:
                return cmd_print_topology(&args);
        case MODE_PLAN:
                return cmd_plan(&args);
        case MODE_RESTORE:
                return cmd_restore(&args);
        case MODE_DAEMON:
                return cmd_daemon(&args);
        }
        return EXIT_FAILURE;
}
