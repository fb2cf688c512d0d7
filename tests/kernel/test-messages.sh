#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What peltd tells the operator, on the real kernel: a bad option points at --help, another user
# hears that the daemon needs root (before any lock file is touched), the number of groups managed
# (at start and when it changes), Groups= globs that match nothing (once, and again when they match),
# a dry run's stop, a run-time policy that outlives a reload, advice with late rounds, and threads
# the BPF iterator cannot see only at debug level when they are PID 1's alone. Each check prints
# "ok:" or "FAIL:". Removes its subtree and files, also on failure.
#
#   test-messages.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"
. "$here/../lib/dbus-lib.sh"

daemon_test_begin messages
fail_log_lines=30
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

cleanup() {
        end_pids TERM "${sibling_pid:-}"
        dbus_cleanup
}

# count PATTERN: the lines of the log matching the extended regular expression PATTERN.
count() { grep -c -E "$1" "$log" 2>/dev/null; }
# logged N PATTERN: the log holds exactly N lines matching PATTERN.
logged() { [[ $(count "$2") -eq $1 ]]; }

# ---- usage and root -------------------------------------------------------------------------------
out=$("$peltd" --frobnicate 2>&1)
rc=$?
check "usage: an unknown option exits 2 (exit $rc)" [ "$rc" -eq 2 ]
check "usage: an unknown option points at --help: $(tail -n1 <<<"$out")" grep -qxF "Try 'peltd --help'." <<<"$out"

write_config power
mkdir -p "$tmp/state"
chmod 0755 "$tmp" "$tmp/state"
chmod 0644 "$conf"
out=$("${nobody[@]}" "$peltd" --config "$conf" 2>&1)
rc=$?
check "root: another user's daemon exits 1 (exit $rc)" [ "$rc" -eq 1 ]
check "root: it says it needs root: $out" grep -q "peltd needs root" <<<"$out"
check "root: no lock file met first" bash -c '! grep -qi "permission denied" <<<"$1"' _ "$out"
check "root: nothing made in the state directory" [ -z "$(ls -A "$tmp/state")" ]

# ---- the groups managed, and Groups= that match nothing ------------------------------------------
cg_create_top "/$id" "$all_cpus"
cg_create "/$id/a1" "$all_cpus"
cg_create "/$id/a2" "$all_cpus"
cg_create "/$id/other" "$all_cpus"
write_config power "Groups=/$id/a*"
start_daemon --dry-run
wait_for 10 running || fail "start: peltd never ran"
check "start: the start line counts the groups: $(grep '^peltd running' "$log")" \
        grep -qE "^peltd running: .*, 2 groups managed, " "$log"
cg_create "/$id/a3" "$all_cpus"
check "count: a third group is said" wait_for 5 logged 1 '^3 groups managed\.$'
# Removed while the daemon is stopped: its next round sees none, not three counts on the way down.
kill -STOP "$daemon_pid"
cg_remove "/$id/a1"
cg_remove "/$id/a2"
cg_remove "/$id/a3"
kill -CONT "$daemon_pid"
unmatched="^Groups=/$id/a\\* matches nothing under CgroupRoot=/$id; managing nothing until a group matches\\.$"
check "nothing matched: said" wait_for 5 logged 1 "$unmatched"
sleep 1
check "nothing matched: said once ($(count "$unmatched") lines)" logged 1 "$unmatched"
cg_create "/$id/a4" "$all_cpus"
check "matched again: said with the count" \
        wait_for 5 logged 1 "^Groups=/$id/a\\* matches again under CgroupRoot=/$id: 1 group managed\\.$"
check "count: no bare count line besides ($(grep -E '^[0-9]+ groups? managed' "$log" | tr '\n' ' '))" \
        logged 1 '^[0-9]+ groups? managed\.$'

# ---- late rounds: advice ---------------------------------------------------------------------------
kill -STOP "$daemon_pid"
sleep 0.5
kill -CONT "$daemon_pid"
check "late: the line gives advice" wait_for 5 grep -qE \
        "^A round took longer than its interval \([0-9]+ ms\); the next starts an interval later\. If this recurs, raise (Task)?SampleIntervalMSec= or the machine is overloaded\.$" "$log"

# ---- a dry run stops -------------------------------------------------------------------------------
stop_daemon TERM
check "dry run: stops with exit 0 (exit $daemon_status)" [ "$daemon_status" -eq 0 ]
check "dry run: says it writes nothing back" \
        grep -qx "Received SIGTERM, exiting; a dry run wrote nothing, so it writes nothing back." "$log"
check "dry run: no word of restoring" bash -c '! grep -qi "restoring" "$1"' _ "$log"

# ---- the BPF iterator's hidden threads, when they are PID 1's only ----------------------------------
hidden=$(grep '^The BPF task iterator does not show' "$log")
if "$peltd" --once 0.2 --log-level debug 2>&1 >/dev/null | grep -q '^The BPF task iterator does not show [0-9]* of the [0-9]* threads /proc lists, of 1 process (1 "'; then
        check "hidden: PID 1's threads alone are not said at the default level ($hidden)" [ -z "$hidden" ]
else
        pass "hidden: this machine hides more than PID 1's threads from the iterator, or none (nothing to check)"
fi

# ---- a CgroupRoot= that is not there: said as such, not as a root without groups ------------------
: > "$log"
write_config power "CgroupRoot=/$id/missing"
start_daemon --dry-run
wait_for 10 running || fail "missing root: peltd never ran"
stop_daemon TERM
check "missing root: said to be not there" grep -qx "CgroupRoot=/$id/missing is not there; managing nothing until it is." "$log"
check "missing root: not said to have no groups" bash -c '! grep -q "has no child groups" "$1"' _ "$log"

# Live: it holds only the root's ancestors, so a daemon on a sibling subtree starts beside it; it
# takes the root when the root is made, and places what is in it.
: > "$log"
write_config power "CgroupRoot=/$id/missing"
start_daemon
wait_for 10 running || fail "missing root, live: peltd never ran"
sed -e "s|^CgroupRoot=.*|CgroupRoot=/$id/other|" -e "s|^StateFile=.*|StateFile=$tmp/sibling.state|" "$conf" > "$tmp/sibling.conf"
"$peltd" --config "$tmp/sibling.conf" >"$tmp/sibling.log" 2>&1 &
sibling_pid=$!
wait_for 10 grep -q '^peltd running' "$tmp/sibling.log"
check "missing root, live: a daemon on a sibling subtree starts beside it ($(head -n 1 "$tmp/sibling.log"))" \
        kill -0 "$sibling_pid"
end_pids TERM "$sibling_pid"
sibling_pid=
cg_create "/$id/missing" "$all_cpus"
cg_create "/$id/missing/g" "$all_cpus"
check "missing root, live: the root taken when made, its group managed" \
        wait_for 10 grep -qx "Managing /$id/missing/g." "$log"
stop_daemon TERM
check "missing root, live: exit $daemon_status at SIGTERM" [ "$daemon_status" -eq 0 ]

# ---- a run-time policy across a reload ---------------------------------------------------------------
dbus_start "$tmp"
: > "$log"
write_config power
start_daemon
wait_for 10 grep -q '^Owning org.peltd1' "$log" || fail "bus: org.peltd1 never owned"
dbus-send --system --print-reply --dest=org.peltd1 /org/peltd1 org.peltd1.Manager.SetPolicy string:performance >/dev/null 2>&1 ||
        fail "bus: SetPolicy performance failed"
reload_daemon || fail "reload: no reload line"
check "reload: the line says SetPolicy overrides Policy=: $(grep '^Configuration reloaded' "$log")" grep -q \
        "^Configuration reloaded: policy performance (set at run time by SetPolicy, over Policy=power), " "$log"
write_config performance
reload_daemon || fail "reload: no second reload line"
check "reload: nothing said where they agree" bash -c '[[ $(grep "^Configuration reloaded" "$1" | tail -n1) == "Configuration reloaded: policy performance, "* ]]' _ "$log"
stop_daemon TERM

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all message checks passed ($mode)"
