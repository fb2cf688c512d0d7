/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <syslog.h>

#include "peltd/macro.h"

/*
 * Logging. Everything goes to stderr (stdout carries only the results of the one-shot modes). When
 * stderr is connected to the journal, lines carry a "<N>" priority prefix and log_struct() sends its
 * fields as structured journal fields; elsewhere only the MESSAGE= text is printed. Messages and
 * fields are written as valid UTF-8: bytes that are not (a group path, a thread name) as "\xNN"
 * (utf8.h); a message that is valid already is written without a copy.
 *
 * Helpers below the decision point log at debug at most; the caller logs once and returns.
 */

void log_set_max_level(int level);
int log_get_max_level(void);
/* Parses "err", "warning", "notice", "info", "debug" or a number 0..7. */
int log_level_from_string(const char *s);
/* Reads PELTD_LOG_LEVEL from the environment; ignores a value that does not parse. */
void log_parse_environment(void);

/*
 * The text of the last message logged at LOG_ERR or worse (valid UTF-8, cut at 1 KiB), NULL after
 * log_forget_last_error(): what a D-Bus error reply says of a failure that was logged below it.
 */
const char *log_last_error(void);
void log_forget_last_error(void);

/* Returns -ERRNO_VALUE(error) (or 0 when error is 0), so "return log_error_errno(r, ...)" works. */
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
        _printf_(6, 7);

/*
 * A message with structured journal fields: fields is a NULL-terminated list of "KEY=value" strings
 * (e.g. "PELTD_GROUP=/web"); the message is a printf format. Off the journal only the message is
 * printed.
 */
int log_struct_internal(int level, const char *const *fields, const char *format, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...)                                                     \
        ({                                                                                    \
                int _l = (level), _e = (error);                                               \
                (log_get_max_level() >= _l) ?                                                 \
                        log_internal(_l, _e, __FILE__, __LINE__, __func__, __VA_ARGS__) :     \
                        -ERRNO_VALUE(_e);                                                     \
        })

#define log_full(level, ...) (void) log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, error, __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, error, __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, error, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, error, __VA_ARGS__)

#define log_struct(level, fields, ...)                                                        \
        ({                                                                                    \
                int _l = (level);                                                             \
                if (log_get_max_level() >= _l)                                                \
                        (void) log_struct_internal(_l, (fields), __VA_ARGS__);                \
        })

/* Oom is logged at error and returned as -ENOMEM. */
#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
