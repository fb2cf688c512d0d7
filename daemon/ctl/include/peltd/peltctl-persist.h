/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdint.h>

/*
 * Persisting a change ("policy NAME", "set-shares PATH N" without --runtime) into peltctl's drop-in,
 * CONFIG_DIR/peltd.conf.d/90-peltctl.conf, whose text peltctl-dropin.h edits. In this order:
 * dropin_begin() refuses at once unless root, and reads the drop-in (its directory locked) to be
 * sure it can be rewritten; then the caller calls the daemon, and only when the call succeeded
 * does dropin_commit() rewrite the file (atomically: a temporary file created O_EXCL|O_NOFOLLOW in
 * the same directory, mode 0644, fsynced, renamed over it). A refused call therefore changes
 * nothing.
 *
 * Both return 0, or 1 (the exit status) after logging why not.
 */

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

/* Before the call, with config_dir the configuration directory (--config-dir). */
int dropin_begin(Dropin *d, const char *config_dir, const Setting *s);
/* After the call succeeded: the setting written into the drop-in. */
int dropin_commit(Dropin *d, const Setting *s);
/* Closes and frees what dropin_begin() opened; { .config_fd = -1, .dir_fd = -1 } is done already. */
void dropin_done(Dropin *d);
