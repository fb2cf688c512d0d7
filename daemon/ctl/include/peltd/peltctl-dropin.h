/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdint.h>

/*
 * peltctl's drop-in, CONFIG_DIR/peltd.conf.d/90-peltctl.conf (peltctl(1)): the settings
 * "peltctl policy NAME" and "peltctl set-shares PATH N" persist. These functions edit its text as
 * peltd reads it (peltd.conf(5), inih's rules): a section starts at a '[' in the first column, a
 * key line is "Key=Value" (or "Key: Value") from the first column, an indented line continues the
 * key above it, '#' and ';' start comment lines. Every other line is kept as it is, in its place.
 * The result always starts with DROPIN_HEADER and ends in a newline.
 *
 * Pure: text in, text out; no I/O, no logging. Errors: -EINVAL (a value or path that cannot be
 * written), -ENOMEM.
 */

#define DROPIN_NAME "90-peltctl.conf"
#define DROPIN_HEADER                                                                      \
        "# This file is managed by peltctl(1): \"peltctl policy NAME\" and \"peltctl\n"    \
        "# set-shares PATH N\" write their settings here and keep the others.\n"

/*
 * text with [Daemon] Policy=policy: every Policy= line of every [Daemon] section goes, the new
 * one takes the place of the first (or ends the first [Daemon] section, or a new [Daemon] section
 * at the end of the file).
 */
int dropin_set_policy(const char *text, const char *policy, char **ret);

/*
 * text with [Group PATH] Shares=shares (2..262144), as dropin_set_policy() does for Policy=; a
 * section names the group when its path normalises to the same one ("/a//b/" is "/a/b"). shares 0
 * removes the group's Shares= lines, and a section left with neither keys nor comments goes too.
 */
int dropin_set_shares(const char *text, const char *path, uint64_t shares, char **ret);

/*
 * Whether "[Group path]" makes peltd read path back as it is: a normalised absolute cgroup path
 * below "/" (cgroup-path.h), without ']', without " ;" (an inline comment to inih), without
 * trailing whitespace, short enough for a line of peltd.conf, and without "\x80".."\xff" in
 * lower case: peltd's text for a byte that is not UTF-8, which cannot be told from those four
 * characters ("\x2d", as in systemd's unit names, or "\xC3" is only ever the characters).
 * Returns 0, or -EINVAL with *ret_reason a phrase for the message ("contains ']'").
 */
int dropin_check_group_path(const char *path, const char **ret_reason);
