/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's D-Bus API (DESIGN.md, "D-Bus"): org.peltd1 on the system bus, object /org/peltd1,
 * interface org.peltd1.Manager — its properties, methods and the PlacementChanged signal, who may
 * change what, and the connection's life.
 *
 * Readers are open to everyone. A change (SetPolicy, SetGroupShares, Reload) is checked first (a
 * bad argument is InvalidArgs, whoever asks), then allowed at once for EUID 0, else polkit is
 * asked for org.peltd1.manage without waiting: the call is answered when polkit answers (or after
 * 10 s, AccessDenied), and is checked again then, since the daemon went on meanwhile. A refused or
 * failed call changes nothing.
 *
 * Each change method has one handler: it checks the call and asks the Manager for the change
 * (peltd/manager.h); what changes comes back through the Manager's hooks (PlacementChanged, and
 * PropertiesChanged for Policy, whatever changed it).
 *
 * The name is owned before READY=1. Without a bus the daemon places on, says so once, and tries
 * again every few seconds; when the bus goes away it does the same, and owns the name again when
 * the bus is back.
 */
#include <json-c/json.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "build-config.h"
#include "peltd/cgroup-util.h"
#include "peltd/json-util.h"
#include "peltd/log.h"
#include "peltd/manager-bus.h"
#include "peltd/utf8.h"

#include "manager-internal.h"

#define BUS_NAME "org.peltd1"
#define BUS_PATH "/org/peltd1"
#define BUS_INTERFACE "org.peltd1.Manager"
#define POLKIT_ACTION "org.peltd1.manage"
#define POLKIT_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define BUS_RETRY_USEC (2 * USEC_PER_SEC)

typedef enum BusCall {
        CALL_SET_POLICY,
        CALL_SET_GROUP_SHARES,
        CALL_RELOAD,
        _CALL_MAX,
} BusCall;

/* Who asks for a change, once allowed: for the log. */
typedef struct Caller {
        uid_t uid;
        pid_t pid;
} Caller;

typedef struct AuthQuery AuthQuery;

/* Calls one caller (uid) may have waiting for polkit; more are refused at once. */
#define AUTH_PENDING_MAX 16
/* polkit's failures are said at most once a minute per caller, for this many callers. */
#define AUTH_WARNED_MAX 16
#define AUTH_WARN_INTERVAL_USEC (60 * USEC_PER_SEC)

/* The API's side of the daemon: the Manager it shows, and the connection. */
struct ManagerBus {
        Manager *manager;
        sd_bus *bus;                 /* org.peltd1's connection; NULL while there is none */
        sd_event_source *retry;      /* connects again while there is none */
        bool owned;                  /* the name is ours */
        bool said;                   /* "running without the bus" said (once per episode) */
        AuthQuery *auth_queries;     /* calls waiting for polkit */
        struct {
                uid_t uid;
                usec_t usec;             /* when polkit's failure for this caller was last said */
        } warned[AUTH_WARNED_MAX];       /* a ring: at most a line a minute per caller */
        size_t n_warned;
};

/* A change waiting for polkit's answer. */
struct AuthQuery {
        ManagerBus *b;
        sd_bus_message *call;        /* the caller's, answered when polkit has */
        sd_bus_slot *slot;           /* polkit's reply */
        BusCall kind;
        Caller caller;
        AuthQuery *next, *prev;
};

static AuthQuery *auth_query_free(AuthQuery *q) {
        if (!q)
                return NULL;
        if (q->prev)
                q->prev->next = q->next;
        else if (q->b->auth_queries == q)
                q->b->auth_queries = q->next;
        if (q->next)
                q->next->prev = q->prev;
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->call);
        free(q);
        return NULL;
}

/* ---- Groups as the bus shows them ------------------------------------------------------------- */

/* The group a caller names, in the form peltd writes paths in ("\xNN" for the bytes that need it). */
static ManagedGroup *find_group(Manager *m, const char *path) {
        _cleanup_free_ char *raw = NULL;

        if (utf8_unescape(path, &raw) < 0)
                return NULL;
        return manager_find_group(m, raw);
}

/* InvalidArgs for a path that names no managed group, named as peltd writes paths. */
static int not_managed(sd_bus_error *error, const char *path) {
        _cleanup_free_ char *raw = NULL, *alloc = NULL;
        const char *text;

        if (utf8_unescape(path, &raw) < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%s: a backslash in a path starts \\xNN (two hex digits, not 00).",
                                         strna(utf8_escape(path, &alloc)));
        text = utf8_escape(raw, &alloc);
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s is not a group peltd manages.", strna(text));
}

/* One row of ListGroups: (path, util, runnable, load, shares, cpus, policy, reason). */
static int append_group(sd_bus_message *reply, const ManagedGroup *g) {
        _cleanup_free_ char *path_alloc = NULL, *reason_alloc = NULL, *cpus = cpumask_to_list(&g->cpus);
        const char *path = utf8_escape(g->path, &path_alloc),
                   *reason = g->planned ? utf8_escape(g->reason, &reason_alloc) : "not planned yet",
                   *policy = g->planned ? policy_to_string(g->placed_policy) : "";

        if (!path || !reason || !cpus)
                return -ENOMEM;
        return sd_bus_message_append(reply, "(sdddtsss)", path, g->util, g->runnable, g->load, g->shares, cpus,
                                     policy ? policy : "", reason);
}

/* One "{sv}" entry of a group's dictionary. */
static int dict_string(sd_bus_message *reply, const char *key, const char *value) {
        return sd_bus_message_append(reply, "{sv}", key, "s", value);
}

static int dict_double(sd_bus_message *reply, const char *key, double value) {
        return sd_bus_message_append(reply, "{sv}", key, "d", value);
}

static int dict_u64(sd_bus_message *reply, const char *key, uint64_t value) {
        return sd_bus_message_append(reply, "{sv}", key, "t", value);
}

/*
 * What ListGroupDetails says of a group's placement: who places it ("" for peltd, else the owner's
 * name), the policy ("none" when owned elsewhere) and the reason (why it is left alone, then).
 */
static void group_placement(const ManagedGroup *g, const char **ret_owner, const char **ret_policy,
                            const char **ret_reason) {
        if (g->owner != OWNER_NONE) {
                *ret_owner = group_owner_to_string(g->owner) ?: "other";
                *ret_policy = "none";
                *ret_reason = !isempty(g->owner_reason) ? g->owner_reason : g->reason;
                return;
        }
        *ret_owner = "";
        *ret_policy = g->planned ? policy_to_string(g->placed_policy) ?: "" : "";
        *ret_reason = g->planned ? g->reason : "not planned yet";
}

/*
 * One dictionary of ListGroupDetails: the row of ListGroups and who owns the group, its pressure
 * total and its changes. Clients ignore keys they do not know, so keys may be added.
 */
static int append_group_details(sd_bus_message *reply, const ManagedGroup *g) {
        _cleanup_free_ char *path_alloc = NULL, *reason_alloc = NULL, *cpus = cpumask_to_list(&g->cpus);
        const char *owner, *policy, *reason, *path = utf8_escape(g->path, &path_alloc);
        int r;

        group_placement(g, &owner, &policy, &reason);
        reason = utf8_escape(reason, &reason_alloc);
        if (!path || !reason || !cpus)
                return -ENOMEM;
        r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r >= 0)
                r = dict_string(reply, "path", path);
        if (r >= 0)
                r = dict_double(reply, "util", g->util);
        if (r >= 0)
                r = dict_double(reply, "runnable", g->runnable);
        if (r >= 0)
                r = dict_double(reply, "load", g->load);
        if (r >= 0)
                r = dict_u64(reply, "shares", g->shares);
        if (r >= 0)
                r = dict_string(reply, "cpus", cpus);
        if (r >= 0)
                r = dict_string(reply, "policy", policy);
        if (r >= 0)
                r = dict_string(reply, "reason", reason);
        if (r >= 0)
                r = dict_string(reply, "owner", owner);
        if (r >= 0)
                r = dict_u64(reply, "pressure_usec", g->pressure_usec);
        if (r >= 0)
                r = dict_u64(reply, "changes", g->n_placements);
        if (r >= 0)
                r = dict_u64(reply, "last_change_usec", g->last_change_usec);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

/* ---- Properties ------------------------------------------------------------------------------- */

static int property_policy(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *interface,
                           _unused_ const char *property, sd_bus_message *reply, void *userdata,
                           _unused_ sd_bus_error *error) {
        Manager *m = ((ManagerBus *) userdata)->manager;

        return sd_bus_message_append(reply, "s", policy_to_string(m->policy));
}

static int property_policies(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *interface,
                             _unused_ const char *property, sd_bus_message *reply, _unused_ void *userdata,
                             _unused_ sd_bus_error *error) {
        return sd_bus_message_append(reply, "as", 3, "power", "performance", "balanced");
}

static int property_string(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *interface,
                           const char *property, sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *error) {
        Manager *m = ((ManagerBus *) userdata)->manager;
        _cleanup_free_ char *alloc = NULL;
        const char *v = NULL;

        if (streq(property, "Version"))
                v = PELTD_VERSION;
        else if (streq(property, "CgroupRoot"))
                v = utf8_escape(m->config->cgroup_root, &alloc);
        else if (streq(property, "CgroupMode"))
                v = m->fs->mode == CGROUP_MODE_V2 ? "v2" : "v1";
        else if (streq(property, "Backend")) {
                v = m->config->backend == BACKEND_SYSTEMD ? "systemd" : "cgroupfs";
                if (m->config->backend == BACKEND_AUTO)
                        for (size_t i = 0; i < m->n_groups; i++)
                                if (m->groups[i].target_known && m->groups[i].target == APPLY_SYSTEMD)
                                        v = "systemd";
        } else if (streq(property, "SamplingBackend"))
                v = sampling_backend_to_string(sampling_backend(m->sampling));
        if (!v)
                return -ENOMEM;
        return sd_bus_message_append(reply, "s", v);
}

static int property_u64(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *interface,
                        const char *property, sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *error) {
        Manager *m = ((ManagerBus *) userdata)->manager;
        uint64_t v = 0;

        if (streq(property, "SampleIntervalUSec"))
                v = m->config->sample_interval_usec;
        else if (streq(property, "TaskSampleIntervalUSec"))
                v = m->config->task_sample_interval_usec;
        else if (streq(property, "Rounds"))
                v = m->n_rounds;
        else if (streq(property, "Changes"))
                v = m->n_changes;
        return sd_bus_message_append(reply, "t", v);
}

static int property_dry_run(_unused_ sd_bus *bus, _unused_ const char *path, _unused_ const char *interface,
                            _unused_ const char *property, sd_bus_message *reply, void *userdata,
                            _unused_ sd_bus_error *error) {
        Manager *m = ((ManagerBus *) userdata)->manager;

        return sd_bus_message_append(reply, "b", m->dry_run);
}

/* ---- Readers ---------------------------------------------------------------------------------- */

static int method_list_groups(sd_bus_message *msg, void *userdata, _unused_ sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = ((ManagerBus *) userdata)->manager;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sdddtsss)");
        for (size_t i = 0; r >= 0 && i < m->n_groups; i++)
                r = append_group(reply, &m->groups[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_group_details(sd_bus_message *msg, void *userdata, _unused_ sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = ((ManagerBus *) userdata)->manager;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "a{sv}");
        for (size_t i = 0; r >= 0 && i < m->n_groups; i++)
                r = append_group_details(reply, &m->groups[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_get_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = ((ManagerBus *) userdata)->manager;
        const ManagedGroup *g;
        const char *path;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        g = find_group(m, path);
        if (!g)
                return not_managed(error, path);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = append_group(reply, g); /* one row of ListGroups */
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_get_topology(sd_bus_message *msg, void *userdata, _unused_ sd_bus_error *error) {
        _cleanup_json_ json_object *o = NULL;
        Manager *m = ((ManagerBus *) userdata)->manager;
        const char *s;
        int r;

        r = topology_to_json(m->topology, &o);
        if (r < 0)
                return r;
        s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;
        return sd_bus_reply_method_return(msg, "s", s);
}

/* ---- Changes ---------------------------------------------------------------------------------- */

/*
 * The change methods, one handler each: it checks the call's arguments (caller NULL), or checks
 * them again and asks the Manager for the change (caller: the one allowed). Errors go into error;
 * returns < 0 then.
 */
typedef int (*ChangeHandler)(Manager *m, sd_bus_message *msg, const Caller *caller, sd_bus_error *error);

static int change_set_policy(Manager *m, sd_bus_message *msg, const Caller *caller, sd_bus_error *error) {
        const char *name;
        Policy p;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        p = policy_from_string(name);
        if (p == POLICY_INVALID) {
                _cleanup_free_ char *alloc = NULL;

                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown policy \"%s\": use power, performance or balanced.",
                                         strna(utf8_escape(name, &alloc)));
        }
        if (!caller)
                return 0;
        log_info("SetPolicy(\"%s\") by uid %u, pid %d: policy %s -> %s from the next round.", name, (unsigned) caller->uid,
                 (int) caller->pid, policy_to_string(m->policy), name);
        return manager_set_policy(m, p);
}

static int change_set_group_shares(Manager *m, sd_bus_message *msg, const Caller *caller, sd_bus_error *error) {
        const char *path;
        uint64_t shares;
        const ManagedGroup *g;
        int r;

        r = sd_bus_message_read(msg, "st", &path, &shares);
        if (r < 0)
                return r;
        g = find_group(m, path);
        if (!g)
                return not_managed(error, path);
        if (shares != 0 && (shares < MANAGER_SHARES_MIN || shares > MANAGER_SHARES_MAX))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Shares %" PRIu64 " out of range: 2 to 262144 (cpu.shares), or 0 for the configured value.",
                                         shares);
        if (!caller)
                return 0;

        r = manager_set_group_shares(m, g->path, shares);
        if (r < 0)
                return r;
        log_info("SetGroupShares(\"%s\", %" PRIu64 ") by uid %u, pid %d: %s from the next round.", g->path, shares,
                 (unsigned) caller->uid, (int) caller->pid, shares == 0 ? "the configured shares again" : "new shares");
        return 0;
}

static int change_reload(Manager *m, _unused_ sd_bus_message *msg, const Caller *caller, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        int r;

        if (!caller)
                return 0;
        log_info("Reload() by uid %u, pid %d.", (unsigned) caller->uid, (int) caller->pid);
        r = manager_reload(m, &why);
        if (r < 0) {
                _cleanup_free_ char *alloc = NULL;

                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The configuration was not reloaded; the old settings stay: %s",
                                         why ? strna(utf8_escape(why, &alloc)) : "see the log.");
        }
        return 0;
}

static const struct {
        const char *name;
        ChangeHandler handler;
} changes[_CALL_MAX] = {
        [CALL_SET_POLICY] = { "SetPolicy", change_set_policy },
        [CALL_SET_GROUP_SHARES] = { "SetGroupShares", change_set_group_shares },
        [CALL_RELOAD] = { "Reload", change_reload },
};

/* A change's arguments checked (caller NULL), or checked again and the change made. */
static int run_change(Manager *m, sd_bus_message *msg, BusCall kind, const Caller *caller, sd_bus_error *error) {
        int r;

        r = sd_bus_message_rewind(msg, true);
        if (r < 0)
                return r;
        return changes[kind].handler(m, msg, caller, error);
}

static void reply_change(Manager *m, sd_bus_message *msg, BusCall kind, const Caller *caller) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = run_change(m, msg, kind, caller, &error);

        if (r < 0 && !sd_bus_error_is_set(&error))
                sd_bus_error_set_errno(&error, r);
        r = sd_bus_error_is_set(&error) ? sd_bus_reply_method_error(msg, &error) : sd_bus_reply_method_return(msg, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to answer %s: %m", changes[kind].name);
}

static void reply_denied(sd_bus_message *msg, BusCall kind, const char *why) {
        int r = sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_ACCESS_DENIED, "%s is not allowed: %s", changes[kind].name, why);

        if (r < 0)
                log_debug_errno(r, "Failed to answer %s: %m", changes[kind].name);
}

/* Whether polkit's failure for uid may be said now: once a minute per caller, so no caller floods the journal. */
static bool may_warn(ManagerBus *b, uid_t uid) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        size_t i;

        for (i = 0; i < MIN(b->n_warned, (size_t) AUTH_WARNED_MAX); i++)
                if (b->warned[i].uid == uid) {
                        if (now - b->warned[i].usec < AUTH_WARN_INTERVAL_USEC)
                                return false;
                        b->warned[i].usec = now;
                        return true;
                }
        i = b->n_warned++ % AUTH_WARNED_MAX;
        b->warned[i].uid = uid;
        b->warned[i].usec = now;
        return true;
}

static size_t pending_of(const ManagerBus *b, uid_t uid) {
        size_t n = 0;

        for (const AuthQuery *q = b->auth_queries; q; q = q->next)
                n += q->caller.uid == uid;
        return n;
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        AuthQuery *q = userdata;
        const sd_bus_error *e;
        int authorized = 0, challenge = 0, r;

        e = sd_bus_message_get_error(reply);
        if (e) {
                if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                        reply_denied(q->call, q->kind, "only root may change peltd's settings (no polkit on this bus).");
                else if (sd_bus_error_has_names(e, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT))
                        reply_denied(q->call, q->kind, "polkit did not answer within 10 s.");
                else {
                        if (may_warn(q->b, q->caller.uid))
                                log_warning("polkit failed to check %s for uid %u: %s (said at most once a minute per caller)",
                                            changes[q->kind].name, (unsigned) q->caller.uid, strna(e->message));
                        reply_denied(q->call, q->kind, "polkit could not check the caller.");
                }
                auth_query_free(q);
                return 0;
        }

        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0)
                reply_denied(q->call, q->kind, "polkit's answer did not parse.");
        else if (authorized)
                reply_change(q->b->manager, q->call, q->kind, &q->caller);
        else if (challenge)
                reply_denied(q->call, q->kind,
                             "authentication is required for org.peltd1.manage (allow interactive authorization, e.g. run peltctl in a terminal).");
        else
                reply_denied(q->call, q->kind, "polkit does not grant the caller org.peltd1.manage.");
        auth_query_free(q);
        return 0;
}

/*
 * A change: arguments checked, then the caller authorized — root at once, anyone else by polkit,
 * asked without waiting (the call is answered from on_polkit_reply()).
 */
static int method_change(sd_bus_message *msg, ManagerBus *b, BusCall kind, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *check = NULL;
        AuthQuery *q;
        Caller caller = { .uid = (uid_t) -1 };
        const char *sender;
        int r;

        r = run_change(b->manager, msg, kind, NULL, error);
        if (r < 0)
                return r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &caller.uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s is not allowed: the caller is unknown.",
                                         changes[kind].name);
        (void) sd_bus_creds_get_pid(creds, &caller.pid);
        if (caller.uid == 0) {
                reply_change(b->manager, msg, kind, &caller);
                return 1;
        }

        sender = sd_bus_message_get_sender(msg);
        if (!sender)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s is not allowed: the caller is unknown.",
                                         changes[kind].name);
        if (pending_of(b, caller.uid) >= AUTH_PENDING_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "%s is not allowed now: too many pending requests (%d waiting for polkit).",
                                         changes[kind].name, AUTH_PENDING_MAX);
        q = new0(AuthQuery, 1);
        if (!q)
                return -ENOMEM;
        *q = (AuthQuery){ .b = b, .call = sd_bus_message_ref(msg), .kind = kind, .caller = caller };
        q->next = b->auth_queries;
        if (q->next)
                q->next->prev = q;
        b->auth_queries = q;

        r = sd_bus_message_new_method_call(sd_bus_message_get_bus(msg), &check, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority", "org.freedesktop.PolicyKit1.Authority",
                                           "CheckAuthorization");
        if (r >= 0)
                /* subject ("system-bus-name", {"name": sender}), action, details {}, flags (1: interactive), cancellation id */
                r = sd_bus_message_append(check, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", sender, POLKIT_ACTION,
                                          0, (uint32_t) (sd_bus_message_get_allow_interactive_authorization(msg) > 0), "");
        if (r >= 0)
                r = sd_bus_call_async(sd_bus_message_get_bus(msg), &q->slot, check, on_polkit_reply, q, POLKIT_TIMEOUT_USEC);
        if (r < 0) {
                auth_query_free(q);
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s is not allowed: polkit could not be asked.",
                                         changes[kind].name);
        }
        return 1;
}

static int method_set_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_change(msg, userdata, CALL_SET_POLICY, error);
}

static int method_set_group_shares(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_change(msg, userdata, CALL_SET_GROUP_SHARES, error);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_change(msg, userdata, CALL_RELOAD, error);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Policy", "s", property_policy, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Policies", "as", property_policies, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("DryRun", "b", property_dry_run, 0, 0),
        SD_BUS_PROPERTY("Version", "s", property_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CgroupRoot", "s", property_string, 0, 0),
        SD_BUS_PROPERTY("CgroupMode", "s", property_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", property_string, 0, 0),
        SD_BUS_PROPERTY("SamplingBackend", "s", property_string, 0, 0),
        SD_BUS_PROPERTY("SampleIntervalUSec", "t", property_u64, 0, 0),
        SD_BUS_PROPERTY("TaskSampleIntervalUSec", "t", property_u64, 0, 0),
        SD_BUS_PROPERTY("Rounds", "t", property_u64, 0, 0),
        SD_BUS_PROPERTY("Changes", "t", property_u64, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("SetPolicy", SD_BUS_ARGS("s", policy), SD_BUS_NO_RESULT, method_set_policy,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetGroupShares", SD_BUS_ARGS("s", path, "t", shares), SD_BUS_NO_RESULT,
                                method_set_group_shares, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroups", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sdddtsss)", groups), method_list_groups,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroupDetails", SD_BUS_NO_ARGS, SD_BUS_RESULT("aa{sv}", groups),
                                method_list_group_details, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetTopology", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", topology), method_get_topology,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetGroup", SD_BUS_ARGS("s", path), SD_BUS_RESULT("(sdddtsss)", group), method_get_group,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("PlacementChanged",
                                SD_BUS_ARGS("s", path, "s", old_cpus, "s", cpus, "t", old_shares, "t", shares, "s",
                                            policy, "s", reason),
                                0),
        SD_BUS_VTABLE_END,
};

/* ---- Signals: the Manager's hooks ------------------------------------------------------------- */

static bool bus_up(const ManagerBus *b) {
        return b->bus && b->owned && sd_bus_is_open(b->bus) > 0;
}

/* PropertiesChanged for Policy. */
static void on_policy_changed(_unused_ Policy policy, void *userdata) {
        ManagerBus *b = userdata;
        int r;

        if (!bus_up(b))
                return;
        r = sd_bus_emit_properties_changed(b->bus, BUS_PATH, BUS_INTERFACE, "Policy", NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to send PropertiesChanged for Policy: %m");
}

/* The PlacementChanged signal of an applied change. */
static void on_placement_changed(const PlacementChange *c, void *userdata) {
        ManagerBus *b = userdata;
        _cleanup_free_ char *pa = NULL, *ra = NULL, *old = NULL, *cpus = NULL;
        const char *path, *reason;
        int r;

        if (!bus_up(b))
                return;
        old = cpumask_to_list(c->old_cpus);
        cpus = cpumask_to_list(c->cpus);
        path = utf8_escape(c->path, &pa);
        reason = utf8_escape(c->reason, &ra);
        if (!old || !cpus || !path || !reason) {
                log_oom();
                return;
        }
        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_INTERFACE, "PlacementChanged", "sssttss", path, old, cpus, c->old_shares,
                               c->shares, policy_to_string(c->policy) ?: "", reason);
        if (r < 0)
                log_debug_errno(r, "Failed to send PlacementChanged for %s: %m", c->path);
}

static const ManagerHooks bus_hooks = {
        .placement_changed = on_placement_changed,
        .policy_changed = on_policy_changed,
};

/* ---- The connection ----------------------------------------------------------------------------- */

static void bus_close(ManagerBus *b) {
        while (b->auth_queries)
                auth_query_free(b->auth_queries); /* their callers went with the bus */
        b->bus = sd_bus_flush_close_unref(b->bus);
        b->owned = false;
}

static int bus_connect(ManagerBus *b, bool at_start);

static void bus_schedule_retry(ManagerBus *b) {
        int r;

        if (!b->retry)
                return; /* said at start */
        r = sd_event_source_set_time(b->retry, now_usec(CLOCK_MONOTONIC) + BUS_RETRY_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(b->retry, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the bus reconnect timer (%m); running without D-Bus until restarted.");
}

static int on_bus_retry(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        ManagerBus *b = userdata;

        bus_close(b);
        if (bus_connect(b, false) < 0)
                bus_schedule_retry(b);
        return 0;
}

static int on_disconnected(_unused_ sd_bus_message *msg, void *userdata, _unused_ sd_bus_error *error) {
        ManagerBus *b = userdata;

        log_warning("Lost the system bus; placing goes on, and org.peltd1 is owned again when the bus is back.");
        b->said = true;
        b->owned = false;
        /* Not closed here, inside its own dispatch: the retry timer does it. */
        bus_schedule_retry(b);
        return 0;
}

static int on_name_acquired(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *error) {
        ManagerBus *b = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e) {
                if (!b->said)
                        log_warning("Failed to own %s on the system bus (%s); running without D-Bus, trying again.", BUS_NAME,
                                    strna(e->message));
                b->said = true;
                bus_schedule_retry(b);
                return 0;
        }
        b->owned = true;
        if (b->said)
                log_info("Connected to the system bus again; %s is ours.", BUS_NAME);
        b->said = false;
        return 0;
}

/*
 * Connects and asks for the name: at start synchronously (owned before READY=1), later without
 * waiting. Logs "without D-Bus" once per episode. Returns < 0 when the connection could not be
 * made (then retry).
 */
static int bus_connect(ManagerBus *b, bool at_start) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, b);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, b);
        if (r >= 0)
                r = sd_bus_attach_event(bus, b->manager->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0) {
                if (!b->said)
                        log_notice_errno(r, "No system bus (%m); running without D-Bus (peltctl cannot reach this daemon), trying again every %u s.",
                                         (unsigned) (BUS_RETRY_USEC / USEC_PER_SEC));
                b->said = true;
                return r;
        }
        b->bus = TAKE_PTR(bus);

        if (at_start) {
                r = sd_bus_request_name(b->bus, BUS_NAME, 0);
                if (r < 0) {
                        log_warning_errno(r, "Failed to own %s on the system bus (%m); running without D-Bus, trying again.",
                                          BUS_NAME);
                        b->said = true;
                        bus_close(b);
                        return r;
                }
                b->owned = true;
                log_info("Owning %s on the system bus.", BUS_NAME);
                return 0;
        }
        r = sd_bus_request_name_async(b->bus, NULL, BUS_NAME, 0, on_name_acquired, b);
        if (r < 0) {
                bus_close(b);
                return r;
        }
        return 0;
}

int manager_bus_start(Manager *m, ManagerBus **ret) {
        _cleanup_manager_bus_ ManagerBus *b = NULL;
        int r;

        b = new0(ManagerBus, 1);
        if (!b)
                return log_oom();
        b->manager = m;
        r = manager_add_hooks(m, &bus_hooks, b);
        if (r < 0)
                return log_error_errno(r, "Failed to register the D-Bus API's hooks: %m");

        r = sd_event_add_time(m->event, &b->retry, CLOCK_MONOTONIC, 0, 0, on_bus_retry, b);
        if (r < 0) {
                log_warning_errno(r, "Failed to add the bus reconnect timer: %m");
                b->retry = NULL;
        } else {
                (void) sd_event_source_set_enabled(b->retry, SD_EVENT_OFF);
                (void) sd_event_source_set_description(b->retry, "bus-retry");
        }
        if (bus_connect(b, true) < 0 && b->retry)
                bus_schedule_retry(b);
        *ret = TAKE_PTR(b);
        return 0;
}

ManagerBus *manager_bus_free(ManagerBus *b) {
        if (!b)
                return NULL;
        b->retry = sd_event_source_disable_unref(b->retry);
        if (bus_up(b))
                (void) sd_bus_release_name(b->bus, BUS_NAME);
        bus_close(b);
        manager_remove_hooks(b->manager, &bus_hooks, b);
        free(b);
        return NULL;
}
