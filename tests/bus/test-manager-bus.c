/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The D-Bus API's ListGroupDetails on a private bus, from a Manager built in memory: a group peltd
 * places (its path not UTF-8) and one another owner places, each dictionary's keys, types and
 * values; ListGroups beside it unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "peltd/macro.h"
#include "peltd/manager-bus.h"
#include "../../daemon/manager/manager-internal.h"
#include "private-bus.h"
#include "test-cleanup.h"

static PrivateBus pbus;

static int setup(_unused_ void **state) {
        return private_bus_start(&pbus) < 0 ? -1 : 0;
}

static int teardown(_unused_ void **state) {
        private_bus_stop(&pbus);
        return 0;
}

/*
 * The reply of a call made on the loop the daemon's side runs on, run until the reply is in (not
 * left with sd_event_exit(): that would close both connections).
 */
static int on_reply(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *error) {
        *(sd_bus_message **) userdata = sd_bus_message_ref(m);
        return 0;
}

static sd_bus_message *call(sd_event *e, sd_bus *client, const char *method) {
        sd_bus_message *reply = NULL;

        assert_true(sd_bus_call_method_async(client, NULL, "org.peltd1", "/org/peltd1", "org.peltd1.Manager", method,
                                             on_reply, &reply, NULL) >= 0);
        for (int i = 0; i < 100 && !reply; i++)
                assert_true(sd_event_run(e, 100 * 1000) >= 0);
        assert_non_null(reply);
        assert_null(sd_bus_message_get_error(reply));
        return reply;
}

/* The next entry of a dictionary: its key, and its value of the type wanted into ret. */
static void entry(sd_bus_message *m, const char *key, char type, void *ret) {
        const char *k, *contents;
        char t[2] = { type, 0 };

        assert_int_equal(sd_bus_message_enter_container(m, 'e', "sv"), 1);
        assert_int_equal(sd_bus_message_read_basic(m, 's', &k), 1);
        assert_string_equal(k, key);
        assert_int_equal(sd_bus_message_peek_type(m, NULL, &contents), 1);
        assert_string_equal(contents, t);
        assert_int_equal(sd_bus_message_read(m, "v", t, ret), 1);
        assert_int_equal(sd_bus_message_exit_container(m), 1);
}

typedef struct Details {
        const char *path, *cpus, *policy, *reason, *owner;
        double util, runnable, load;
        uint64_t shares, pressure_usec, changes, last_change_usec;
} Details;

static void read_details(sd_bus_message *m, Details *d) {
        assert_int_equal(sd_bus_message_enter_container(m, 'a', "{sv}"), 1);
        entry(m, "path", 's', &d->path);
        entry(m, "util", 'd', &d->util);
        entry(m, "runnable", 'd', &d->runnable);
        entry(m, "load", 'd', &d->load);
        entry(m, "shares", 't', &d->shares);
        entry(m, "cpus", 's', &d->cpus);
        entry(m, "policy", 's', &d->policy);
        entry(m, "reason", 's', &d->reason);
        entry(m, "owner", 's', &d->owner);
        entry(m, "pressure_usec", 't', &d->pressure_usec);
        entry(m, "changes", 't', &d->changes);
        entry(m, "last_change_usec", 't', &d->last_change_usec);
        assert_int_equal(sd_bus_message_at_end(m, false), 1);
        assert_int_equal(sd_bus_message_exit_container(m), 1);
}

static void test_list_group_details(_unused_ void **state) {
        ManagedGroup groups[] = {
                { .path = (char *) "/peltd/caf\xe9", .planned = true, .util = 512, .runnable = 600, .load = 600,
                  .shares = 1024, .placed_policy = POLICY_POWER, .reason = "power: packed", .n_placements = 3,
                  .last_change_usec = 123456789, .pressure_usec = 4500 },
                { .path = (char *) "/kubepods.slice/pod1", .util = 2048, .shares = 2048, .owner = OWNER_KUBELET,
                  .owner_reason = "kubelet owns its cpuset", .pressure_usec = 7 },
        };
        Config config = {};
        CgroupFs fs = { .mode = CGROUP_MODE_V1 };
        Manager m = { .config = &config, .fs = &fs, .groups = groups, .n_groups = ELEMENTSOF(groups) };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *client = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *rows = NULL;
        ManagerBus *b = NULL;
        Details d;

        assert_int_equal(cpumask_parse_list("0", &groups[0].cpus), 0);
        assert_int_equal(cpumask_parse_list("2-3", &groups[1].cpus), 0);
        assert_int_equal(sd_event_new(&m.event), 0);
        assert_int_equal(manager_bus_start(&m, &b), 0);
        assert_int_equal(sd_bus_open_system(&client), 0);
        assert_int_equal(sd_bus_attach_event(client, m.event, 0), 0);

        reply = call(m.event, client, "ListGroupDetails");
        assert_string_equal(sd_bus_message_get_signature(reply, true), "aa{sv}");
        assert_int_equal(sd_bus_message_enter_container(reply, 'a', "a{sv}"), 1);

        /* peltd's: the path's byte that is not UTF-8 as \xe9, no owner, its figures. */
        read_details(reply, &d);
        assert_string_equal(d.path, "/peltd/caf\\xe9");
        assert_true(d.util == 512 && d.runnable == 600 && d.load == 600);
        assert_int_equal(d.shares, 1024);
        assert_string_equal(d.cpus, "0");
        assert_string_equal(d.policy, "power");
        assert_string_equal(d.reason, "power: packed");
        assert_string_equal(d.owner, "");
        assert_int_equal(d.pressure_usec, 4500);
        assert_int_equal(d.changes, 3);
        assert_int_equal(d.last_change_usec, 123456789);

        /* kubelet's: policy "none", its owner, why it is left alone. */
        read_details(reply, &d);
        assert_string_equal(d.path, "/kubepods.slice/pod1");
        assert_string_equal(d.cpus, "2-3");
        assert_string_equal(d.policy, "none");
        assert_string_equal(d.owner, "kubelet");
        assert_string_equal(d.reason, "kubelet owns its cpuset");
        assert_int_equal(d.pressure_usec, 7);
        assert_int_equal(d.changes, 0);
        assert_int_equal(d.last_change_usec, 0);
        assert_int_equal(sd_bus_message_exit_container(reply), 1);

        /* ListGroups as it was: its signature, the same two groups. */
        rows = call(m.event, client, "ListGroups");
        assert_string_equal(sd_bus_message_get_signature(rows, true), "a(sdddtsss)");

        manager_bus_free(b);
        sd_event_unref(m.event);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_list_group_details),
        };

        test_cleanup_install();
        return cmocka_run_group_tests(tests, setup, teardown);
}
