/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kubelet's CPU manager checkpoint, from its bytes (kubelet-checkpoint.h). Strict: what kubelet
 * writes parses, anything else is refused with a sentence that names the field, so that the
 * operator sees which part of the file is wrong.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "peltd/json-util.h"
#include "peltd/kubelet-checkpoint.h"
#include "peltd/macro.h"
#include "peltd/utf8.h"

/* Names and values quoted in an error are cut at this many bytes (a CPU list is short; a broken one need not be). */
#define QUOTE_MAX 64

KubeletCheckpoint *kubelet_checkpoint_free(KubeletCheckpoint *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_entries; i++) {
                free(c->entries[i].pod);
                free(c->entries[i].container);
        }
        free(c->entries);
        free(c->policy);
        free(c);
        return NULL;
}

/* s escaped (utf8.h) into buf, "..." in place of what did not fit. */
static const char *quote(const char *s, char *buf, size_t size) {
        size_t n = utf8_escape_to(s, buf, size - 3);

        if (n < utf8_escaped_length(s))
                strcpy(buf + n, "...");
        return buf;
}

/* *ret_error = the formatted sentence; returns -EINVAL (or -ENOMEM when it cannot be made). */
_printf_(2, 3) static int fail(char **ret_error, const char *format, ...) {
        va_list ap;
        int r;

        if (!ret_error)
                return -EINVAL;
        va_start(ap, format);
        r = vasprintf(ret_error, format, ap);
        va_end(ap);
        if (r < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

static json_tokener *json_tokener_free_null(json_tokener *t) {
        json_tokener_free(t);
        return NULL;
}

/* A JSON string holding no NUL (json-c keeps "\u0000" inside strings), or NULL. */
static const char *get_text(json_object *o) {
        const char *s;

        if (!json_object_is_type(o, json_type_string))
                return NULL;
        s = json_object_get_string(o);
        return strlen(s) == (size_t) json_object_get_string_len(o) ? s : NULL;
}

/* A field's CPU list into *ret; where names the field for the error ("defaultCpuSet", "entries.P.C"). */
static int parse_cpus(json_object *o, const char *where, CpuMask *ret, char **ret_error) {
        char q[QUOTE_MAX];
        const char *s = get_text(o);
        int r;

        if (!s)
                return fail(ret_error, "%s: expected a CPU list as a string", where);
        r = cpumask_parse_list(s, ret);
        if (r == -ERANGE)
                return fail(ret_error, "%s: \"%s\" names a CPU above %d", where, quote(s, q, sizeof q), CPUMASK_MAX - 1);
        if (r < 0)
                return fail(ret_error, "%s: \"%s\" is not a CPU list", where, quote(s, q, sizeof q));
        return 0;
}

static int add_entry(KubeletCheckpoint *c, const char *pod, const char *container, const CpuMask *cpus) {
        KubeletEntry *n = reallocarray(c->entries, c->n_entries + 1, sizeof *n);
        KubeletEntry e = { .pod = strdup(pod), .container = strdup(container), .cpus = *cpus };

        if (n)
                c->entries = n;
        if (!n || !e.pod || !e.container) {
                free(e.pod);
                free(e.container);
                return -ENOMEM;
        }
        c->entries[c->n_entries++] = e;
        return 0;
}

/* One pod's {"CONTAINER": "CPUS", ...}. */
static int parse_pod(KubeletCheckpoint *c, const char *pod, json_object *o, char **ret_error) {
        char qp[QUOTE_MAX], qc[QUOTE_MAX];
        int r;

        quote(pod, qp, sizeof qp);
        if (!json_object_is_type(o, json_type_object))
                return fail(ret_error, "entries.%s: expected an object of containers and their CPUs", qp);
        json_object_object_foreach(o, container, cpus) {
                _cleanup_free_ char *where = NULL;
                CpuMask m;

                if (asprintf(&where, "entries.%s.%s", qp, quote(container, qc, sizeof qc)) < 0)
                        return -ENOMEM;
                if (isempty(container))
                        return fail(ret_error, "%s: a container without a name", where);
                r = parse_cpus(cpus, where, &m, ret_error);
                if (r < 0)
                        return r;
                r = add_entry(c, pod, container, &m);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_entries(KubeletCheckpoint *c, json_object *o, char **ret_error) {
        int r;

        if (!o || json_object_is_type(o, json_type_null))
                return 0;
        if (!json_object_is_type(o, json_type_object))
                return fail(ret_error, "entries: expected an object of pods");
        json_object_object_foreach(o, pod, containers) {
                if (isempty(pod))
                        return fail(ret_error, "entries: a pod without a UID");
                r = parse_pod(c, pod, containers, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The fields of the top-level object: policyName (required), defaultCpuSet, entries, checksum. */
static int parse_fields(KubeletCheckpoint *c, json_object *root, char **ret_error) {
        json_object *policy = NULL, *def = NULL, *entries = NULL, *sum = NULL;
        const char *s;
        int r;

        if (!json_object_object_get_ex(root, "policyName", &policy))
                return fail(ret_error, "policyName: missing");
        s = get_text(policy);
        if (isempty(s))
                return fail(ret_error, "policyName: expected a policy's name as a string");
        c->policy = strdup(s);
        if (!c->policy)
                return -ENOMEM;
        c->is_static = streq(s, "static");

        if (json_object_object_get_ex(root, "defaultCpuSet", &def)) {
                r = parse_cpus(def, "defaultCpuSet", &c->default_cpus, ret_error);
                if (r < 0)
                        return r;
        }
        (void) json_object_object_get_ex(root, "entries", &entries);
        r = parse_entries(c, entries, ret_error);
        if (r < 0)
                return r;
        /* Not verified (kubelet's own hash of its Go structures), but a number when it is there. */
        if (json_object_object_get_ex(root, "checksum", &sum) && !json_object_is_type(sum, json_type_int))
                return fail(ret_error, "checksum: expected an integer");

        if (c->is_static)
                for (size_t i = 0; i < c->n_entries; i++)
                        cpumask_or(&c->exclusive, &c->exclusive, &c->entries[i].cpus);
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(json_tokener *, json_tokener_free_null);

/* The JSON document of size bytes: one value and nothing after it but white space. */
static int parse_json(const char *data, size_t size, json_object **ret, char **ret_error) {
        _cleanup_(json_tokener_free_nullp) json_tokener *tok = NULL;
        enum json_tokener_error e;
        json_object *o;
        size_t end;

        if (size > INT32_MAX)
                return fail(ret_error, "too large");
        if (memchr(data, '\0', size))
                return fail(ret_error, "not JSON: it holds a NUL byte");
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        o = json_tokener_parse_ex(tok, data, (int) size);
        e = json_tokener_get_error(tok);
        if (!o && e == json_tokener_continue)
                return fail(ret_error, "not JSON: it ends early");
        if (!o && e == json_tokener_success)
                return fail(ret_error, "not JSON: no value");
        if (!o)
                return fail(ret_error, "not JSON: %s at byte %zu", json_tokener_error_desc(e), json_tokener_get_parse_end(tok));
        /* data need not end in a NUL: no str*() past size. */
        for (end = json_tokener_get_parse_end(tok); end < size && strchr(" \t\r\n", data[end]); end++)
                ;
        if (end < size) {
                json_object_put(o);
                return fail(ret_error, "not JSON: something follows the object at byte %zu", end);
        }
        *ret = o;
        return 0;
}

int kubelet_checkpoint_parse(const char *data, size_t size, KubeletCheckpoint **ret, char **ret_error) {
        _cleanup_kubelet_checkpoint_ KubeletCheckpoint *c = NULL;
        _cleanup_json_ json_object *root = NULL;
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = parse_json(data, size, &root, ret_error);
        if (r < 0)
                return r;
        if (!json_object_is_type(root, json_type_object))
                return fail(ret_error, "expected a JSON object");
        c = new0(KubeletCheckpoint, 1);
        if (!c)
                return -ENOMEM;
        r = parse_fields(c, root, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}
