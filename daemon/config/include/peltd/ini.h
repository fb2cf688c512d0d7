/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "peltd/macro.h"
#include "peltd/parse.h"

/*
 * A strict, table-driven INI layer on inih. The syntax is inih's: "[Section]" or "[Section ARG]",
 * "Key=Value", comments are lines starting with '#' or ';', and ';' after whitespace starts a
 * comment inside a line; an indented line continues the previous value. On top of it:
 *
 *   - every key has a type and a range; values that do not parse are errors;
 *   - unknown sections and keys are errors, as are keys outside a section and lines over
 *     INI_LINE_MAX characters (inih would silently split them);
 *   - every error is logged once as "FILE:LINE: ..." naming the key and the value.
 *
 * The whole file is read before anything is reported back as success, so a caller that parses
 * into a fresh struct never sees a half-applied file.
 */

typedef struct IniPos {
        const char *file;
        unsigned line;
        const char *section;         /* the section name, without its argument */
        const char *key;
        bool continuation;           /* an indented line continuing the key's value */
} IniPos;

typedef struct IniKey IniKey;

/* Parses value into data (the section's struct + key->offset). Logs its own error; -EINVAL. */
typedef int (*IniParser)(const IniPos *pos, const char *value, const IniKey *key, void *data);

struct IniKey {
        const char *section;
        const char *key;
        IniParser parse;
        size_t offset;
        int64_t min, max;            /* for the integer and number parsers */
        bool multiline;              /* continuation lines append (lists); else they are errors */
        bool empty_ok;               /* an empty value is passed to parse (it means "none"); else an error */
};

typedef struct IniSection {
        const char *name;
        bool has_argument;           /* "[Group PATH]": the argument is required; else forbidden */
        /*
         * Returns (in ret_data) the struct this section's keys write into. The argument is the
         * section's argument (NULL without one). Logs its own error.
         */
        int (*open)(void *userdata, const IniPos *pos, const char *argument, void **ret_data);
} IniSection;

typedef struct IniSchema {
        const IniSection *sections;  /* terminated by { NULL } */
        const IniKey *keys;          /* terminated by { NULL } */
} IniSchema;

/*
 * Parses path by schema. Returns 0, -ENOENT when the file does not exist (not logged), another
 * -errno when it cannot be read (logged), or -EINVAL after logging every bad line.
 */
int ini_load(const char *path, const IniSchema *schema, void *userdata);
/*
 * Configuration files (peltd.conf(5)): as ini_load(), but the file must also be
 * root's (or peltd's own user's) and not writable by group or others; otherwise refused (-EPERM,
 * logged with FILE and the reason).
 */
int ini_load_trusted(const char *path, const IniSchema *schema, void *userdata);

/* Logs "FILE:LINE: Key=Value: <message>" at error level and returns -EINVAL. */
int ini_error(const IniPos *pos, const char *value, const char *format, ...) _printf_(3, 4);

/* Parsers. Each writes the type named into data; ranges come from the key's min/max. */
int ini_parse_u64(const IniPos *pos, const char *value, const IniKey *key, void *data);        /* uint64_t */
int ini_parse_unsigned(const IniPos *pos, const char *value, const IniKey *key, void *data);   /* unsigned */
int ini_parse_bool(const IniPos *pos, const char *value, const IniKey *key, void *data);       /* bool */
int ini_parse_tristate(const IniPos *pos, const char *value, const IniKey *key, void *data);   /* int: 0/1 */
int ini_parse_double(const IniPos *pos, const char *value, const IniKey *key, void *data);     /* double */
int ini_parse_msec(const IniPos *pos, const char *value, const IniKey *key, void *data);       /* usec_t, given in ms */
int ini_parse_cpulist(const IniPos *pos, const char *value, const IniKey *key, void *data);    /* CpuMask, non-empty */
int ini_parse_policy(const IniPos *pos, const char *value, const IniKey *key, void *data);     /* Policy */
int ini_parse_cgroup_path(const IniPos *pos, const char *value, const IniKey *key, void *data);/* char *, normalised */
int ini_parse_abs_path(const IniPos *pos, const char *value, const IniKey *key, void *data);   /* char * */
int ini_parse_globs(const IniPos *pos, const char *value, const IniKey *key, void *data);      /* char **, appended */

/*
 * The PATH of a "[Group PATH]" section, normalised; an error (logged at the section's line) when it
 * is not a cgroup path or is the root cgroup, which nothing manages.
 */
int ini_group_section_path(const IniPos *pos, const char *arg, char **ret);
