#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The daemon's rounds on the real kernel: the state file written once for a round that places
# many groups, not at all in rounds that change nothing, once when someone else's value becomes a
# file's original, once at the stop; and a cpuset someone else writes while peltd runs placed
# again within a task interval, said once however often it recurs, and that value put back at
# SIGTERM. The state file's writes are counted by an LD_PRELOAD library (tests/lib/count-io.c).
# Removes the subtree and ends only the processes it started, also on failure.
#
#   test-daemon-rounds.sh PELTD COUNT_IO_SO
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
count_so=$2
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin rounds
saves=$tmp/saves
sleepers=()
fail_log_lines=40
groups=(g01 g02 g03 g04 g05 g06 g07 g08 g09 g10 g11 g12)

cleanup() {
        end_pids TERM "${sleepers[@]}"
}

all_placed() {
        local g
        for g in "${groups[@]}"; do placed "$g" || return 1; done
}
# saves_are N: the state file was written or removed N times
saves_are() { [[ $(wc -l < "$saves" 2>/dev/null || echo 0) -eq $1 ]]; }
n_saves() { wc -l < "$saves" 2>/dev/null || echo 0; }
said() { grep -c "$1" "$log"; }

if [[ $(cat /sys/devices/system/cpu/online) != *[-,]* ]]; then
        echo "one CPU online: nothing to place"
        exit 77
fi

cg_create_top "/$id" "$all_cpus"
for g in "${groups[@]}"; do
        cg_create "/$id/$g" "$all_cpus"
        sleep 1000 &
        sleepers+=($!)
        cg_attach "/$id/$g" $!
done

{
        echo "[Daemon]"
        echo "Policy=power"
        echo "CgroupRoot=/$id"
        echo "SampleIntervalMSec=100"
        echo "TaskSampleIntervalMSec=500"
        echo "StateFile=$state"
        echo "MetricsFile="
} > "$conf"
# Under ASan the sanitizer's runtime must come first in the preload list.
preload=$count_so
asan_lib=$(ldd "$peltd" | awk '/libasan/ { print $3 }')
[[ -n $asan_lib ]] && preload="$asan_lib $count_so"
LD_PRELOAD=$preload PELTD_COUNT_PATH=$state PELTD_COUNT_FILE=$saves "$peltd" --config "$conf" >>"$log" 2>&1 &
daemon_pid=$!

# ---- one write of the state file for the round that places every group -----------------------
# The change lines follow the writes: all of them said, and the state file written no more.
changes_said() { [[ $(said ": CPUs $all_cpus -> ") -ge ${#groups[@]} ]]; }
if wait_for 10 all_placed; then
        wait_for 2 changes_said
        if saves_are 1 && [[ $(said ": CPUs $all_cpus -> ") -eq ${#groups[@]} ]]; then
                pass "${#groups[@]} groups placed in one round, the state file written once"
        else
                fail "placing: $(n_saves) writes of the state file, $(said ": CPUs $all_cpus -> ") change lines"
        fi
else
        fail "the groups were never all placed"
fi
placed_cpu=$(cpus_of g05)

# ---- rounds that change nothing write nothing ------------------------------------------------
hold_for 2 # 20 rounds, four of them task rounds (their drift checks)
if saves_are 1; then
        pass "20 steady rounds: the state file not written again"
else
        fail "steady rounds wrote the state file $(($(n_saves) - 1)) more times"
fi

# ---- someone else writes a placed cpuset: placed again, said once, and its value is the original ----
other=$(( placed_cpu == 0 ? 1 : 0 ))
echo "$other" > "$cpuset_root/$id/g05/cpuset.cpus"
if wait_for 1 bash -c "[[ \$(cat $cpuset_root/$id/g05/cpuset.cpus) == $placed_cpu ]]"; then
        pass "someone else's cpuset on g05 ($other): placed again on $placed_cpu within a task interval"
else
        fail "g05 holds $(cpus_of g05) a task interval after someone else wrote $other"
fi
# The drift's line and its save come with the write that undoes it, or just after.
drift_said() { [[ $(said "was changed by someone else") -ge 1 && $(n_saves) -ge 2 ]]; }
wait_for 2 drift_said
if [[ $(said "cpuset.cpus of /$id/g05 was changed by someone else (\"$other\", peltd wrote \"$placed_cpu\")") -eq 1 ]] && saves_are 2; then
        pass "the drift said once, the state file written once for it"
else
        fail "drift: said $(said 'was changed by someone else') times, state file written $(n_saves) times"
fi
for _ in 1 2 3; do
        echo "$other" > "$cpuset_root/$id/g05/cpuset.cpus"
        wait_for 1 bash -c "[[ \$(cat $cpuset_root/$id/g05/cpuset.cpus) == $placed_cpu ]]" ||
                fail "g05 not placed again after someone else wrote it again"
done
if [[ $(said "was changed by someone else") -eq 1 ]] && saves_are 2 && [[ $(said ": CPUs") -eq ${#groups[@]} ]]; then
        pass "the other writer at it again: placed again each time, nothing more said or saved"
else
        fail "drift again: said $(said 'was changed by someone else') times, saved $(n_saves) times, $(said ': CPUs') change lines"
fi

# ---- the stop: every original back, g05's the other writer's; the state file removed once -----
hold_for 0.6 # a task round more: nothing said or saved for the writes undone before it
stop_daemon TERM
ok=1
for g in "${groups[@]}"; do
        want=$all_cpus
        [[ $g == g05 ]] && want=$other
        [[ $(cpus_of "$g") == "$want" ]] || { ok=0; fail "after SIGTERM $g holds $(cpus_of "$g"), not $want"; }
done
if ((ok)) && [[ $daemon_status -eq 0 && ! -e $state ]] && saves_are 3 && [[ $(tail -n 1 "$saves") == unlink ]]; then
        pass "SIGTERM: originals back (g05: the other writer's $other), the state file removed with one write"
else
        fail "SIGTERM: exit $daemon_status, state file $( [[ -e $state ]] && echo left || echo gone), $(n_saves) writes"
fi

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all round checks passed ($mode)"
