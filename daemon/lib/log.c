/* SPDX-License-Identifier: GPL-2.0-only */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <systemd/sd-journal.h>

#include "peltd/log.h"
#include "peltd/utf8.h"

static int max_level = LOG_INFO;
static int journal_stream = -1; /* -1: not checked yet */

void log_set_max_level(int level) {
        max_level = CLAMP(level, LOG_EMERG, LOG_DEBUG);
}

int log_get_max_level(void) {
        return max_level;
}

int log_level_from_string(const char *s) {
        static const char *const names[] = {
                [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",     [LOG_CRIT] = "crit",
                [LOG_ERR] = "err",     [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
                [LOG_INFO] = "info",   [LOG_DEBUG] = "debug",
        };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(s, names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == 0)
                return s[0] - '0';
        return -EINVAL;
}

void log_parse_environment(void) {
        const char *e = getenv("PELTD_LOG_LEVEL");
        int l;

        if (!e)
                return;
        l = log_level_from_string(e);
        if (l >= 0)
                log_set_max_level(l);
}

/* JOURNAL_STREAM=dev:ino names the stream systemd connected stderr to. */
static bool stderr_is_journal(void) {
        unsigned long long dev, ino;
        struct stat st;
        const char *e;

        if (journal_stream >= 0)
                return journal_stream;

        journal_stream = 0;
        e = getenv("JOURNAL_STREAM");
        if (e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) >= 0 &&
            (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino)
                journal_stream = 1;
        return journal_stream;
}

static bool stderr_is_terminal(void) {
        static int tty = -1;

        if (tty < 0)
                tty = isatty(STDERR_FILENO) > 0;
        return tty;
}

static bool has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

static char last_error[1024];

const char *log_last_error(void) {
        return last_error[0] ? last_error : NULL;
}

void log_forget_last_error(void) {
        last_error[0] = 0;
}

static void write_line(int level, const char *text) {
        int saved = errno;

        if (level <= LOG_ERR)
                (void) snprintf(last_error, sizeof last_error, "%s", text);

        if (stderr_is_journal())
                fprintf(stderr, "<%d>%s\n", level, text);
        else if (stderr_is_terminal()) {
                /* In the foreground: when, to the millisecond (the journal keeps its own time). */
                struct timespec ts;
                struct tm tm;
                char stamp[16] = "";

                if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && localtime_r(&ts.tv_sec, &tm))
                        strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
                fprintf(stderr, "%s.%03ld %s\n", stamp, ts.tv_nsec / 1000000, text);
        } else
                fprintf(stderr, "%s\n", text);
        fflush(stderr);
        errno = saved;
}

int log_internal(int level, int error, _unused_ const char *file, _unused_ int line,
                 _unused_ const char *func, const char *format, ...) {
        char buf[2048];
        va_list ap;

        /* %m formats the error passed in, not whatever errno happens to be. */
        errno = ERRNO_VALUE(error);
        va_start(ap, format);
        (void) vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);

        /*
         * Group paths and thread names are bytes: every line is valid UTF-8 without control
         * characters (utf8.h); a line that would not be is written escaped whole.
         */
        if (utf8_is_valid(buf) && !has_control(buf))
                write_line(level, buf);
        else {
                char escaped[sizeof buf * 4];

                (void) utf8_escape_to(buf, escaped, sizeof escaped);
                write_line(level, escaped);
        }
        return -ERRNO_VALUE(error);
}

static void free_all(char **l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i]);
}

int log_struct_internal(int level, const char *const *fields, const char *format, ...) {
        _cleanup_free_ char *raw = NULL, *escaped = NULL;
        struct iovec iov[34];
        char *field_alloc[ELEMENTSOF(iov) - 2] = {};
        const char *message;
        size_t n = 0;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&raw, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        /* The message and every field valid UTF-8, as in log_internal(). */
        message = utf8_escape(raw, &escaped);
        if (!message)
                return -ENOMEM;

        if (!stderr_is_journal()) {
                write_line(level, message);
                return 0;
        }

        _cleanup_free_ char *msgfield = NULL;
        char prio[] = "PRIORITY=0";

        if (asprintf(&msgfield, "MESSAGE=%s", message) < 0)
                return -ENOMEM;
        prio[strlen(prio) - 1] = (char) ('0' + CLAMP(level, 0, 7));
        iov[n++] = (struct iovec){ .iov_base = msgfield, .iov_len = strlen(msgfield) };
        iov[n++] = (struct iovec){ .iov_base = prio, .iov_len = strlen(prio) };
        for (const char *const *f = fields; f && *f && n < ELEMENTSOF(iov); f++) {
                const char *t = utf8_escape(*f, &field_alloc[n - 2]);

                if (t) /* out of memory: the field is left out, the message still goes */
                        iov[n++] = (struct iovec){ .iov_base = (void *) t, .iov_len = strlen(t) };
        }

        r = sd_journal_sendv(iov, (int) n);
        free_all(field_alloc, ELEMENTSOF(field_alloc));
        if (r < 0)
                write_line(level, message);
        return 0;
}
