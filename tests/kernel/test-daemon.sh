#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The daemon on the real kernel: a private cgroup subtree with a light group (two threads, 300 µs
# bursts every 5 ms) and a heavier one (one thread at 40%), peltd placing them, and everything put
# back. Removes the subtree and ends only the processes it started, also on failure.
#
#   test-daemon.sh PELTD DUTY_CYCLE
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
duty=$2
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin daemon
workload_pids=()
took_cpu1_offline=0
fail_log_lines=40

cleanup() {
        end_pids TERM "${workload_pids[@]}"
        if ((took_cpu1_offline)); then
                echo 1 > /sys/devices/system/cpu/cpu1/online
        fi
}

cpus_are() { [[ $(cpus_of "$1") == "$2" ]]; }
cpu_count() { # a CPU list's size
        local n=0 part a b
        IFS=, read -ra parts <<<"$1"
        for part in "${parts[@]}"; do
                [[ -z $part ]] && continue
                a=${part%-*} b=${part#*-}
                n=$((n + b - a + 1))
        done
        echo $n
}

make_tree() {
        local g
        cg_create_top "/$id" "$all_cpus"
        for g in light heavy; do
                cg_create "/$id/$g" "$all_cpus"
        done
}

# start_workload GROUP THREADS PERIOD_USEC DUTY
start_workload() {
        local pid
        "$duty" "$2" "$3" "$4" >/dev/null &
        pid=$!
        workload_pids+=("$pid")
        cg_attach "/$id/$1" "$pid"
}

reset_groups() {
        local g
        for g in light heavy; do
                echo "$all_cpus" > "$cpuset_root/$id/$g/cpuset.cpus"
                if [[ $mode == v1 ]]; then echo 1024 > "$cpu_root/$id/$g/cpu.shares"; else echo 100 > "$cpu_root/$id/$g/cpu.weight"; fi
        done
}

make_tree
start_workload light 2 5000 6
start_workload heavy 1 10000 20
orig_shares=$(shares_of light)

# ---- power packs both groups onto the same single CPU -----------------------------------------
write_config power
start_daemon
if wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/light/cpuset.cpus) == \$(cat $cpuset_root/$id/heavy/cpuset.cpus) && \$(cat $cpuset_root/$id/light/cpuset.cpus) =~ ^[0-9]+\$ ]]"; then
        pass "power: light and heavy share CPU $(cpus_of light)"
else
        fail "power: light on $(cpus_of light), heavy on $(cpus_of heavy), expected one same CPU"
fi
grep -q "PELTD\|CPUs $all_cpus -> " "$log" || fail "power: no change logged"
grep -E "^/$id/(light|heavy): CPUs .* -> .* \(power, demand [0-9.]+ CPUs\): " "$log" >/dev/null ||
        fail "power: the change line does not name group, CPUs, policy, demand and reason"

# ---- SIGTERM restores the original cpusets and shares -----------------------------------------
stop_daemon TERM
if [[ $daemon_status -eq 0 && $(cpus_of light) == "$all_cpus" && $(cpus_of heavy) == "$all_cpus" && ! -e $state ]]; then
        pass "SIGTERM: exit 0, originals back, state file removed"
else
        fail "SIGTERM: exit $daemon_status, light $(cpus_of light), heavy $(cpus_of heavy), state file $( [[ -e $state ]] && echo left || echo gone)"
fi

# ---- performance gives both every CPU; Shares= reaches cpu.shares ----------------------------
echo 0 > "$cpuset_root/$id/light/cpuset.cpus"
# light set to 0 before peltd is the operator's: TakeOver=yes places it all the same.
write_config performance "[Group /$id/light]" "Shares=2048" "TakeOver=yes"
start_daemon
want_shares=2048
[[ $mode == v2 ]] && want_shares=200
if wait_for 8 bash -c "[[ \$(cat $cpuset_root/$id/light/cpuset.cpus) == $all_cpus && \$(cat $cpu_root/$id/light/$shares_file) == $want_shares ]]"; then
        pass "performance: light widened to $all_cpus, Shares=2048 written ($shares_file $(shares_of light))"
else
        fail "performance: light on $(cpus_of light) with $shares_file $(shares_of light)"
fi
[[ $(cpus_of heavy) == "$all_cpus" ]] || fail "performance: heavy on $(cpus_of heavy)"
stop_daemon TERM
if [[ $(cpus_of light) == 0 && $(shares_of light) == "$orig_shares" ]]; then
        pass "performance: SIGTERM put back light's cpuset (0) and shares ($orig_shares)"
else
        fail "performance: after SIGTERM light on $(cpus_of light), shares $(shares_of light)"
fi
reset_groups

# ---- SIGKILL, restart, SIGTERM: the originals come back, not peltd's own placement ------------
write_config power
start_daemon
# heavy is the group power surely packs (light, near the threshold on a slow machine, may widen again).
wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/heavy/cpuset.cpus) != $all_cpus ]]" || fail "crash: power never placed heavy"
placed=$(cpus_of heavy)
stop_daemon KILL
[[ -s $state ]] || fail "crash: no state file after SIGKILL"
[[ $(cpus_of heavy) == "$placed" ]] || fail "crash: heavy changed on SIGKILL"
write_config performance
start_daemon
wait_for 5 grep -q "did not stop cleanly" "$log" || fail "crash: restart did not notice the state file"
stop_daemon TERM
if [[ $(cpus_of light) == "$all_cpus" && $(cpus_of heavy) == "$all_cpus" && ! -e $state ]]; then
        pass "crash: after SIGKILL, restart and SIGTERM, the originals are back"
else
        fail "crash: light $(cpus_of light), heavy $(cpus_of heavy)"
fi
reset_groups

# ---- a value changed by someone else meanwhile is left alone ----------------------------------
write_config power
start_daemon
wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/heavy/cpuset.cpus) != $all_cpus ]]" || fail "other: heavy never placed"
stop_daemon KILL
# Someone else moves heavy to another CPU than peltd chose (neither peltd's value nor the original).
other=$(cpus_of heavy)
[[ $other == 0 ]] && someone=1 || someone=0
echo "$someone" > "$cpuset_root/$id/heavy/cpuset.cpus"
"$peltd" --restore --config "$conf" >>"$log" 2>&1
rc=$?
if [[ $rc -eq 0 && $(cpus_of light) == "$all_cpus" && $(cpus_of heavy) == "$someone" ]] &&
        grep -q "cpuset.cpus of /$id/heavy was changed by someone else" "$log"; then
        pass "--restore: light restored, heavy's new value (someone else's) left and logged"
else
        fail "--restore: exit $rc, light $(cpus_of light) (was $other), heavy $(cpus_of heavy)"
fi
reset_groups

# ---- --dry-run writes nothing ------------------------------------------------------------------
write_config power
before_l=$(cpus_of light) before_h=$(cpus_of heavy)
start_daemon --dry-run
if wait_for 8 grep -q "Would set cpuset.cpus of /$id/" "$log"; then
        pass "dry run: intended writes logged"
else
        fail "dry run: no \"Would set\" line"
fi
hold_for 0.5 # rounds that would write, had the dry run a leak
[[ $(cpus_of light) == "$before_l" && $(cpus_of heavy) == "$before_h" && ! -e $state ]] ||
        fail "dry run: something was written (light $(cpus_of light), heavy $(cpus_of heavy))"
stop_daemon TERM
[[ $(cpus_of light) == "$before_l" ]] || fail "dry run: light changed at stop"

# ---- a managed group removed mid-run is dropped cleanly ----------------------------------------
write_config power
cg_create "/$id/gone" "$all_cpus"
start_daemon
wait_for 10 grep -q "Managing /$id/gone" "$log" || fail "removed: gone never managed"
# Placed first, so that its original is recorded when it goes.
wait_for 10 grep -q "^/$id/gone: CPUs " "$log" || fail "removed: gone never placed"
for h in "${hier[@]}"; do rmdir "$h/$id/gone"; done
if wait_for 5 grep -q "/$id/gone is gone" "$log" && kill -0 "$daemon_pid" 2>/dev/null; then
        pass "removed: the group was dropped and peltd runs on"
else
        fail "removed: not dropped, or peltd died"
fi
stop_daemon TERM
[[ $daemon_status -eq 0 ]] || fail "removed: exit $daemon_status after SIGTERM"
reset_groups

# ---- SIGHUP with a broken config keeps the old policy ------------------------------------------
write_config power
start_daemon
wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/heavy/cpuset.cpus) != $all_cpus ]]" || fail "reload: power never placed heavy"
logged=$(wc -l < "$log")
echo "Policy=turbo" >> "$conf"
kill -HUP "$daemon_pid"
if wait_for 5 grep -q "peltd.conf:[0-9]*: Policy=turbo" "$log" && grep -q "keeping the old settings" "$log"; then
        pass "reload: the broken line is named (FILE:LINE) and the old settings kept"
else
        fail "reload: no FILE:LINE error for the broken config"
fi
# Rounds after the broken reload place as power did before it: every change they make is power's
# (power may widen a group whose demand grew meanwhile, on a loaded machine), and heavy holds what
# power last gave it.
hold_for 1
changes=$(tail -n +"$((logged + 1))" "$log" | grep -E "^/$id/(light|heavy): CPUs ")
power_gave=$(grep "^/$id/heavy: CPUs " "$log" | tail -n 1 | sed -n "s|^/$id/heavy: CPUs [^ ]* -> \([^ ,]*\)[ ,].*(power, demand .*|\1|p")
if [[ -n $changes ]] && grep -qv " (power, demand " <<<"$changes"; then
        fail "reload: changes after a broken reload by another policy than power: $changes"
elif [[ $(cpus_of heavy) != "$power_gave" ]]; then
        fail "reload: placement changed after a broken reload (heavy on $(cpus_of heavy), power gave it \"$power_gave\")"
fi
write_config performance
kill -HUP "$daemon_pid"
if wait_for 8 bash -c "[[ \$(cat $cpuset_root/$id/heavy/cpuset.cpus) == $all_cpus ]]"; then
        pass "reload: a good config switches the policy (heavy back on $all_cpus)"
else
        fail "reload: policy performance not applied after SIGHUP (heavy $(cpus_of heavy))"
fi
stop_daemon TERM
reset_groups

# ---- a config error at start names FILE:LINE ---------------------------------------------------
printf '[Daemon]\nPolicy=power\nSampleIntervalMSec=fast\n' > "$conf"
"$peltd" --config "$conf" >"$tmp/out" 2>&1
rc=$?
if [[ $rc -eq 1 ]] && grep -q "$conf:3: SampleIntervalMSec=fast" "$tmp/out"; then
        pass "config error: exit 1 naming $conf:3"
else
        fail "config error: exit $rc: $(cat "$tmp/out")"
fi

# ---- a group on CPU 1 only, CPU 1 offline and back: placed again on online CPUs ----------------
# v1 empties a cpuset whose CPUs all go offline (and moves its tasks up): peltd must place the group
# on the CPUs that are left at once, and keep it on online CPUs when CPU 1 returns.
if [[ $(cpu_count "$all_cpus") -ge 2 && -w /sys/devices/system/cpu/cpu1/online ]]; then
        write_config performance "[Group /$id/light]" "AllowedCPUs=1"
        start_daemon
        wait_for 10 cpus_are light 1 || fail "hotplug: light never placed on CPU 1"
        took_cpu1_offline=1
        echo 0 > /sys/devices/system/cpu/cpu1/online
        if wait_for 5 cpus_are light 0; then
                pass "hotplug: CPU 1 offline, light moved to CPU 0 at once"
        else
                fail "hotplug: with CPU 1 offline light is on \"$(cpus_of light)\""
        fi
        echo 1 > /sys/devices/system/cpu/cpu1/online
        took_cpu1_offline=0
        wait_for 5 grep -q "online CPUs now $all_cpus" "$log" || fail "hotplug: CPU 1's return not seen"
        # The round that follows the event: light on CPUs, whichever.
        wait_for 5 bash -c "[[ -n \$(cat $cpuset_root/$id/light/cpuset.cpus) ]]"
        c=$(cpus_of light)
        if [[ -n $c ]] && kill -0 "$daemon_pid" 2>/dev/null; then
                pass "hotplug: CPU 1 back, light on online CPUs ($c)"
        else
                fail "hotplug: after CPU 1 came back light is on \"$c\""
        fi
        stop_daemon TERM
        [[ $daemon_status -eq 0 ]] || fail "hotplug: exit $daemon_status after SIGTERM"
fi

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all daemon checks passed ($mode)"
