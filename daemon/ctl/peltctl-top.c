/* SPDX-License-Identifier: GPL-2.0-only */
/* "peltctl top" (peltctl-top.h): the frame from peltctl-table.c, on a terminal with ncurses. */
#include <curses.h>
#include <term.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/peltctl-bus.h"
#include "peltd/peltctl-output.h"
#include "peltd/peltctl-table.h"
#include "peltd/peltctl-top.h"

/* The refresh: the daemon's metrics file is written at most once a second too. */
#define TOP_REFRESH_MSEC 1000

/* One frame's figures: the properties and the groups (their strings live in reply). */
typedef struct Frame {
        json_object *props;
        sd_bus_message *reply;
        Row *rows;
        size_t n;
} Frame;

static void frame_done(Frame *f) {
        json_object_put(f->props);
        f->props = NULL;
        f->reply = sd_bus_message_unref(f->reply);
        free(f->rows);
        f->rows = NULL;
        f->n = 0;
}

/* 0, or 1 after logging (the daemon went away, or its answer did not parse). */
static int frame_get(sd_bus *bus, Frame *f) {
        int r;

        frame_done(f);
        r = get_properties(bus, &f->props);
        if (r == 0)
                r = list_groups(bus, &f->reply, &f->rows, &f->n);
        return r;
}

/* The frame as text of width columns and at most height lines (0: all), into *ret. */
static int frame_text(Frame *f, size_t width, size_t height, char **ret) {
        TopHeader h = { .policy = prop_string(f->props, "policy"), .backend = prop_string(f->props, "backend"),
                        .rounds = prop_u64(f->props, "rounds"), .changes = prop_u64(f->props, "changes") };
        size_t size = 0;
        FILE *out = open_memstream(ret, &size);
        int r;

        if (!out)
                return log_oom();
        r = top_print(out, &h, f->rows, f->n, width, height);
        if (fclose(out) != 0 || r < 0) {
                free(*ret);
                *ret = NULL;
                return log_oom();
        }
        return 0;
}

static int print_json(Frame *f) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *groups;
        char *text = NULL;

        /* Sorted as on the terminal: top_print() sorts the rows. */
        if (frame_text(f, 80, 0, &text) < 0)
                return EXIT_FAILURE;
        free(text);
        groups = rows_to_json(f->rows, f->n);
        if (!o || json_add(o, "policy", json_object_new_string(prop_string(f->props, "policy"))) < 0 ||
            json_add(o, "backend", json_object_new_string(prop_string(f->props, "backend"))) < 0 ||
            json_add(o, "rounds", json_object_new_uint64(prop_u64(f->props, "rounds"))) < 0 ||
            json_add(o, "changes", json_object_new_uint64(prop_u64(f->props, "changes"))) < 0 ||
            json_add(o, "groups", groups) < 0)
                return log_oom(), EXIT_FAILURE;
        return json_print(o, false) < 0 ? EXIT_FAILURE : 0;
}

static int print_once(Frame *f, const CtlOptions *opt) {
        _cleanup_free_ char *text = NULL;

        if (opt->json)
                return print_json(f);
        if (frame_text(f, text_width_of_stdout(), 0, &text) < 0)
                return EXIT_FAILURE;
        fputs(text, stdout);
        return 0;
}

/* Draws one frame on the screen, a line at a time (a line wider than the screen is cut by it). */
static int draw(Frame *f) {
        _cleanup_free_ char *text = NULL;
        int rows, cols, y = 0;

        getmaxyx(stdscr, rows, cols);
        if (frame_text(f, (size_t) MAX(cols, 1), (size_t) MAX(rows - 1, 1), &text) < 0)
                return EXIT_FAILURE;
        erase();
        for (char *line = text, *nl; line && *line && y < rows - 1; line = nl ? nl + 1 : NULL, y++) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                mvaddstr(y, 0, line);
        }
        mvaddstr(rows - 1, 0, "q: quit");
        refresh();
        return 0;
}

/* The live view until q, or until the daemon goes away (exit 1, said after the screen is put back). */
static int run_live(sd_bus *bus, Frame *f) {
        int r = 0, ch, err = 0, level = log_get_max_level();
        SCREEN *screen;

        /*
         * Not initscr(): it exits the program when the terminal is unknown. The terminal looked up
         * first: a newterm() that fails leaves what it allocated behind.
         */
        if (setupterm(NULL, STDOUT_FILENO, &err) != OK) {
                log_error("Cannot drive the terminal \"%s\" for top; peltctl top --once prints one frame.",
                          strna(getenv("TERM")));
                return EXIT_FAILURE;
        }
        (void) del_curterm(cur_term);
        screen = newterm(NULL, stdout, stdin);
        if (!screen) {
                log_error("Cannot drive the terminal \"%s\" for top; peltctl top --once prints one frame.",
                          strna(getenv("TERM")));
                return EXIT_FAILURE;
        }
        cbreak();
        noecho();
        keypad(stdscr, TRUE);
        curs_set(0);
        timeout(TOP_REFRESH_MSEC);
        for (;;) {
                r = draw(f);
                if (r != 0)
                        break;
                ch = getch();
                if (ch == 'q' || ch == 'Q')
                        break;
                if (ch == KEY_RESIZE)
                        continue; /* drawn again at the new size, with the same figures */
                /* Quietly: a failure is said once the screen is put back. */
                log_set_max_level(LOG_EMERG);
                r = frame_get(bus, f);
                log_set_max_level(level);
                if (r != 0)
                        break;
        }
        endwin();
        delscreen(screen);
        /* Said now, on the terminal again: why, asked once more (or that it was lost for a moment). */
        if (r != 0 && frame_get(bus, f) == 0)
                log_error("Lost peltd's answers for a moment; top stopped.");
        return r;
}

int cmd_top(sd_bus *bus, _unused_ char **args, const CtlOptions *opt) {
        Frame f = {};
        int r;

        r = frame_get(bus, &f);
        if (r == 0)
                r = opt->once || opt->json || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO) ? print_once(&f, opt)
                                                                                             : run_live(bus, &f);
        frame_done(&f);
        return r;
}
