#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The pressure guard on packing, on the real kernel (v1 here: the threads' run_delay). A light
# group (one thread at 45%) is packed by power onto one CPU; four busy threads in a group peltd
# does not manage, with 8 times its shares, are then pinned to that CPU. With PressureStallMSec=0
# the group stays packed (threads are not tracked under power: nothing else sees it wait); with
# the guard on it is widened (within 5 s, scaled by load; about 0.5 s on an idle machine), the log
# naming the stall, and it stays wide past the 10 s a widening otherwise holds. About 25 s.
# Removes the subtree and ends only the processes it started, also on failure.
#
#   test-pressure.sh PELTD DUTY_CYCLE
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
duty=$2
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin pressure
fail_log_lines=30
light_pid=
hogs=()

cleanup() {
        end_pids TERM "$light_pid" "${hogs[@]}"
}

stop_hogs() {
        end_pids TERM "${hogs[@]}"
        hogs=()
}

# start_hogs CPU: four busy threads pinned to CPU in /$id/hogs, a group peltd does not manage
# (Groups= names only light) whose cpu.shares (8192) leave light a ninth of that CPU, less than its 45%
start_hogs() {
        local k
        for k in 1 2 3 4; do
                taskset -c "$1" bash -c 'while :; do :; done' &
                hogs+=($!)
                cg_attach "/$id/hogs" "$!"
        done
}

if [[ $all_cpus == 0 ]]; then
        echo "FAIL: packing needs more than one CPU online"
        exit 1
fi

cg_create_top "/$id" "$all_cpus"
cg_create "/$id/light" "$all_cpus"
cg_create "/$id/hogs" "$all_cpus"
if [[ $shares_file == cpu.weight ]]; then echo 800; else echo 8192; fi >"$cpu_root/$id/hogs/$shares_file"
"$duty" 1 10000 45 >/dev/null &
light_pid=$!
cg_attach "/$id/light" "$light_pid"

# ---- guard off: packed beside the busy threads, it stays packed ----
write_config power "Groups=/$id/light" PressureStallMSec=0
start_daemon ${PELTD_TEST_LOG_LEVEL:+--log-level $PELTD_TEST_LOG_LEVEL}
wait_for 10 placed light || fail "off: power never packed /$id/light ($(cpus_of light))"
cpu=$(cpus_of light)
start_hogs "$cpu"
hold_for 3
check "off: with PressureStallMSec=0 the starved group stays on CPU $cpu" [ "$(cpus_of light)" == "$cpu" ]
stop_hogs
stop_daemon
check "off: everything put back at SIGTERM" [ "$(cpus_of light)" == "$all_cpus" ]

# ---- guard on: widened at once, with the reason, and kept wide ----
write_config power "Groups=/$id/light" PressureStallMSec=100 PressureWindowMSec=1000
: >"$log"
start_daemon ${PELTD_TEST_LOG_LEVEL:+--log-level $PELTD_TEST_LOG_LEVEL}
wait_for 10 placed light || fail "on: power never packed /$id/light ($(cpus_of light))"
cpu=$(cpus_of light)
start=$(date +%s%N)
start_hogs "$cpu"
if wait_for 5 bash -c "[[ \$(cat $cpuset_root/$id/light/cpuset.cpus) == $all_cpus ]]"; then
        pass "on: widened to $all_cpus $((($(date +%s%N) - start) / 1000000)) ms after the busy threads started"
else
        fail "on: /$id/light still on $(cpus_of light) 5 s after the busy threads started"
fi
check "on: the log says why (pressure: N ms stalled in the last 1000 ms)" \
        grep -Eq "pressure: [0-9]+ ms stalled in the last 1000 ms" "$log"
stop_hogs
# Without the busy threads it would pack again after the 10 s hold; the guard holds it 10 min.
sleep 12 # the daemon's hold is wall-clock time: no scaling by load
check "on: kept wide 12 s later (packing stalled it)" [ "$(cpus_of light)" == "$all_cpus" ]
stop_daemon
check "on: exit 0 and put back" [ "$daemon_status" -eq 0 ] && [ "$(cpus_of light)" == "$all_cpus" ]

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all pressure checks passed ($mode)"
