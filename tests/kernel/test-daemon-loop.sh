#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The daemon's loop on the real kernel: groups made after start (or made again) are placed with
# threads not tracked, a group whose name begins with '.' is managed, signals with no job do not
# kill it, a SIGHUP at start does not kill it, rounds go on through failed allocations and a
# failed timer re-arm (the watchdog fed only while rounds complete), and everything is put back at
# SIGTERM. Removes the subtree and ends only the processes it started, also on failure.
#
#   test-daemon-loop.sh PELTD DUTY_CYCLE FAULT_INJECT_SO
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
duty=$2
fault_so=$3
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin loop
listener_pid=
declare -A workload_pid=()
fail_log_lines=40

stop_workload() { # GROUP
        local p=${workload_pid[$1]:-}
        [[ -n $p ]] || return 0
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
        unset "workload_pid[$1]"
}

cleanup() {
        local g
        end_pids TERM "$listener_pid"
        for g in "${!workload_pid[@]}"; do
                stop_workload "$g"
        done
}

alive() { [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; }

# start_workload GROUP: one thread at 10% in GROUP (four of them fill one CPU by less than the 60%
# packing line, with their 3-round maxima: power packs them all)
start_workload() {
        "$duty" 1 10000 10 >/dev/null &
        workload_pid[$1]=$!
        cg_attach "/$id/$1" "${workload_pid[$1]}"
}

if [[ $(cat /sys/devices/system/cpu/online) == 0 ]]; then
        echo "FAIL: power packs onto one CPU of several: this machine has one CPU online"
        exit 1
fi

cg_create_top "/$id" "$all_cpus"
for g in early again; do
        cg_create "/$id/$g" "$all_cpus"
        start_workload "$g"
done

# ---- groups made after start, made again, and named .hidden: placed with threads not tracked ----
write_config power TaskTracking=no
start_daemon
wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/again/cpuset.cpus) =~ ^[0-9]+\$ ]]" || fail "late: power never placed again"
grep -q "threads not tracked" "$log" || fail "late: threads are tracked; the check needs them not tracked"

for g in late .hidden; do
        cg_create "/$id/$g" "$all_cpus"
        start_workload "$g"
done
# again: its service restarted (the group removed and made again, on all CPUs).
stop_workload again
cg_remove "/$id/again"
cg_create "/$id/again" "$all_cpus"
start_workload again

for g in late .hidden again; do
        if wait_for 10 placed "$g"; then
                pass "late: /$id/$g placed on CPU $(cpus_of "$g") with threads not tracked"
        else
                fail "late: /$id/$g on $(cpus_of "$g"), never placed"
        fi
done
grep -q "/$id/again was made again" "$log" || grep -q "/$id/again is gone" "$log" ||
        fail "late: again made again without a word"
alive || fail "late: peltd died"

# ---- signals with no job: ignored; SIGTERM still restores -------------------------------------
for sig in PIPE USR1 USR2 ALRM; do
        kill -"$sig" "$daemon_pid" 2>/dev/null
done
# A reload after them: once it is logged, the signals before it have been delivered.
kill -HUP "$daemon_pid"
if wait_for 5 grep -q "Configuration reloaded" "$log" && alive; then
        pass "signals: SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM left peltd running"
else
        fail "signals: peltd did not survive SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM"
fi

# expect_all_restored WHAT GROUPS: after stop_daemon, exit 0, the four groups back on every CPU
# and the state file gone.
expect_all_restored() {
        local g restored=1
        for g in early again late .hidden; do
                [[ $(cpus_of "$g") == "$all_cpus" ]] || restored=0
        done
        if [[ $daemon_status -eq 0 && $restored -eq 1 && ! -e $state ]]; then
                pass "$1: exit 0, $2 back on $all_cpus"
        else
                fail "$1: exit $daemon_status; early $(cpus_of early), again $(cpus_of again), late $(cpus_of late), .hidden $(cpus_of .hidden)"
        fi
}

stop_daemon TERM
expect_all_restored "SIGTERM" "every group (made late, made again, .hidden)"

# ---- SIGHUP at once at start: blocked before the configuration is read ------------------------
# The configuration at a FIFO: reading it waits for a writer, the window before the handlers
# are in place. SIGHUP must be blocked there already (or the FIFO refused outright).
fifo=$tmp/fifo.conf
mkfifo -m 0600 "$fifo"
"$peltd" --config "$fifo" >>"$log" 2>&1 &
daemon_pid=$!
waiting_at_open() { [[ $(cut -d' ' -f1 "/proc/$daemon_pid/syscall" 2>/dev/null) == 257 ]]; }
wait_for 5 bash -c "! kill -0 $daemon_pid 2>/dev/null || [[ \$(cut -d' ' -f1 /proc/$daemon_pid/syscall) == 257 ]]"
if waiting_at_open; then
        blocked=$(awk '/^SigBlk:/ { print $2 }' "/proc/$daemon_pid/status")
        if (((16#$blocked >> 0) & 1)); then
                pass "SIGHUP: blocked while the configuration is read (SigBlk $blocked)"
        else
                fail "SIGHUP: not blocked while the configuration is read (SigBlk $blocked)"
        fi
fi
stop_daemon KILL

write_config power TaskTracking=no
log=$tmp/peltd-hup.log
start_daemon
# As soon as it runs peltd's code (signals blocked first thing): a SIGHUP, then it must run on.
wait_for 5 bash -c "(( (16#\$(awk '/^SigBlk:/ { print \$2 }' /proc/$daemon_pid/status) >> 0) & 1 ))"
kill -HUP "$daemon_pid"
if wait_for 10 grep -q "Configuration reloaded" "$log" && alive; then
        pass "SIGHUP at start: handled as a reload once the loop runs"
else
        fail "SIGHUP at start: peltd died or never reloaded"
fi
stop_daemon TERM
[[ $daemon_status -eq 0 ]] || fail "SIGHUP at start: exit $daemon_status after SIGTERM"

# ---- faults: failed allocations and a failed timer re-arm; the watchdog ------------------------
# peltd under the fault shim, its notifications on a socket read here, WATCHDOG_USEC 400 ms for its
# own pid: WATCHDOG=1 at most every 200 ms while rounds complete, none while they fail. Each line
# of $notes carries the time its datagram was sent (the kernel's SO_TIMESTAMPNS, 35, which python
# does not name), not the time the listener, late on a loaded machine, got to it.
notify=$tmp/notify.sock
notes=$tmp/notify.log
malloc_fault=$tmp/fault-malloc
timer_fault=$tmp/fault-timer
python3 -c '
import socket, struct, sys, time
SO_TIMESTAMPNS = 35
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
s.bind(sys.argv[1])
out = open(sys.argv[2], "a", buffering=1)
while True:
    data, ancillary, _, _ = s.recvmsg(4096, 64)
    sent = time.time()
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
            sec, nsec = struct.unpack("qq", value[:16])
            sent = sec + nsec / 1e9
    for line in data.decode(errors="replace").splitlines():
        out.write("%.3f %s\n" % (sent, line))
' "$notify" "$notes" &
listener_pid=$!
wait_for 5 test -S "$notify" || fail "faults: the notify listener did not start"
watchdogs() { grep -c " WATCHDOG=1$" "$notes"; }
# notes_drained: a datagram of the test's own through the socket, waited for in $notes: the
# listener has written down everything peltd sent before it.
marks=0
notes_drained() {
        marks=$((marks + 1))
        python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(sys.argv[2].encode(), sys.argv[1])' \
                "$notify" "TEST_MARK=$marks"
        wait_for 5 grep -q " TEST_MARK=$marks\$" "$notes" || fail "faults: the listener did not read the test's mark $marks"
}

# Under ASan the sanitizer's runtime must come first (and its malloc would win): no shim there.
asan=0
ldd "$peltd" | grep -q libasan && asan=1
preload=$fault_so
((asan)) && preload=

log=$tmp/peltd-faults.log
write_config power TaskTracking=no
# Two busy groups at most from here on.
for g in late .hidden early; do
        stop_workload "$g"
done
cg_remove "/$id/late"
(
        export NOTIFY_SOCKET=$notify WATCHDOG_USEC=400000 WATCHDOG_PID=$BASHPID
        export LD_PRELOAD=$preload PELTD_FAULT_MALLOC_FILE=$malloc_fault PELTD_FAULT_SET_TIME_FILE=$timer_fault
        exec "$peltd" --config "$conf" >>"$log" 2>&1
) &
daemon_pid=$!
wait_for 10 grep -q "^[0-9.]* READY=1" "$notes" || fail "faults: no READY=1"
wait_for 10 bash -c "(( \$(grep -c ' WATCHDOG=1\$' $notes) >= 3 ))" || fail "faults: no WATCHDOG=1 while rounds complete"
# At most one every WATCHDOG_USEC/2 (a little slack for the listener's clock).
awk '/ WATCHDOG=1$/ { if (last && $1 - last < 0.19) bad = 1; last = $1 } END { exit bad }' "$notes" ||
        fail "faults: WATCHDOG=1 more often than every 200 ms"

if ((asan)); then
        echo "note: peltd is built with ASan: no faults injected, the watchdog checked alone"
        cg_create "/$id/late" "$all_cpus"
        start_workload late
        wait_for 10 placed late || fail "faults: /$id/late on $(cpus_of late), never placed"
else
        touch "$malloc_fault"
        wait_for 10 grep -q "A round failed" "$log" || fail "faults: no failed round logged with allocations failing"
        # A round under way when the file appeared may have completed before that one failed: its
        # WATCHDOG=1 may still be on its way to the listener. Counted from what was sent before now.
        notes_drained
        before=$(watchdogs)
        # The group made now is found once allocations work again.
        cg_create "/$id/late" "$all_cpus"
        start_workload late
        hold_for 1.2 # three WATCHDOG_USEC/2 at least: none of them may see a WATCHDOG=1
        notes_drained
        after=$(watchdogs)
        ((after == before)) || fail "faults: WATCHDOG=1 sent ($before -> $after) while rounds fail"
        alive || fail "faults: peltd died with allocations failing"
        rm -f "$malloc_fault"
        if wait_for 10 grep -q "Rounds complete again, after [0-9]* failed" "$log" && alive; then
                pass "faults: rounds failed while allocations did (one line, no WATCHDOG=1), then complete again"
        else
                fail "faults: rounds did not recover after allocations work again"
        fi
        [[ $(grep -c "A round failed" "$log") == 1 ]] || fail "faults: the failed rounds logged more than once"
        wait_for 10 bash -c "(( \$(grep -c ' WATCHDOG=1\$' $notes) > $after ))" || fail "faults: WATCHDOG=1 not sent again"
        if wait_for 10 placed late; then
                pass "faults: a group made while allocations failed placed afterwards (CPU $(cpus_of late))"
        else
                fail "faults: /$id/late on $(cpus_of late), never placed after the allocation failures"
        fi
fi

# One failed re-arm of a round timer: the other timer arms it again, rounds go on.
if ((!asan)); then
        touch "$timer_fault"
        wait_for 5 bash -c "[[ ! -e $timer_fault ]]" || fail "faults: the timer fault was never hit"
        if wait_for 5 grep -q "Failed to re-arm a round timer" "$log" && wait_for 5 grep -q "A round timer is armed again" "$log"; then
                pass "faults: a timer that failed to re-arm is armed again by the other"
        else
                fail "faults: a failed timer re-arm was not logged and recovered"
        fi
fi
stop_workload again
cg_remove "/$id/again"
cg_create "/$id/again" "$all_cpus"
start_workload again
wait_for 10 placed again || fail "faults: after the failed re-arm, a group made again is not placed"
alive || fail "faults: peltd died"
stop_daemon TERM
expect_all_restored "faults: SIGTERM" "every group"

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all loop checks passed ($mode)"
