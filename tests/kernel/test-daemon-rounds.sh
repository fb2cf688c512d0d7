#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The daemon's rounds on the real kernel: the state file written once for a round that places
# many groups, not at all in rounds that change nothing, once when peltd yields a file someone else
# wrote, once at the stop; and a cpuset someone else writes while peltd runs is theirs: never
# written again, said once however often it recurs, and that value left at SIGTERM. The state file's writes are counted by an LD_PRELOAD library (tests/lib/count-io.c).
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

# ---- someone else writes a placed cpuset: yielded at once, said once, its record dropped ----------
other=$(( placed_cpu == 0 ? 1 : 0 ))
echo "$other" > "$cpuset_root/$id/g05/cpuset.cpus"
# The yield's line and its save come within a task interval.
yield_said() { [[ $(said "was written by someone else") -ge 1 && $(n_saves) -ge 2 ]]; }
wait_for 2 yield_said
if [[ $(said "cpuset.cpus of /$id/g05 was written by someone else (\"$other\", peltd wrote \"$placed_cpu\")") -eq 1 ]] &&
        saves_are 2 && [[ $(cpus_of g05) == "$other" ]] && ! grep -q "\"/$id/g05\"" "$state"; then
        pass "someone else's cpuset on g05 ($other): yielded, said once, its record dropped with one write of the state file"
else
        fail "yield: said $(said 'was written by someone else') times, state file written $(n_saves) times, g05 holds $(cpus_of g05)"
fi
for _ in 1 2 3; do
        echo "$other" > "$cpuset_root/$id/g05/cpuset.cpus"
        hold_for 0.6 # a task round
        [[ $(cpus_of g05) == "$other" ]] || fail "g05 written again after peltd yielded it"
done
if [[ $(said "was written by someone else") -eq 1 ]] && saves_are 2 && [[ $(said ": CPUs") -eq ${#groups[@]} ]]; then
        pass "the other writer at it again: never written, nothing more said or saved"
else
        fail "yield again: said $(said 'was written by someone else') times, saved $(n_saves) times, $(said ': CPUs') change lines"
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
