#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Groups owned elsewhere, on the real kernel (about 15 s):
#  - performance: a group whose cpuset was set narrower before peltd started is never written
#    (inotifywait sees no write) and holds its value at SIGTERM; TakeOver=yes places one anyway;
#  - power: the same, and a parent with such a descendant is not narrowed; threads pinned by
#    taskset -c 1 in a group on all CPUs leave that group alone (owner affinity) and keep their
#    affinity; a single foreign write to a placed cpuset is yielded to (said once, never written
#    again, its record dropped); SIGHUP takes the group back; the counts of groups owned elsewhere
#    are said at start and when they change.
# Removes the subtree and ends only the processes it started, also on failure.
#
#   test-owners.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin owners
fail_log_lines=40
sleepers=()
watcher=

cleanup() {
        end_pids TERM "$watcher" "${sleepers[@]}"
}

if [[ $mode != v1 ]]; then
        echo "cgroup v1 only: the v2 paths are covered by the fixture tests and the guest"
        exit 77
fi
if [[ $all_cpus != 0-1 ]]; then
        echo "needs CPUs 0-1 online, not $all_cpus"
        exit 77
fi

said() { grep -c -F -- "$1" "$log"; }
# group NAME CPUS: a group with a sleeping process of its own (last_pid)
group() {
        cg_create "/$id/$1" "$2"
        sleep 1000 &
        last_pid=$!
        sleepers+=($last_pid)
        cg_attach "/$id/$1" $last_pid
}
# watch FILE...: every write to the files, one line each, into $tmp/writes
watch_writes() {
        : > "$tmp/writes"
        inotifywait -q -m -e modify --format '%w' "$@" >> "$tmp/writes" 2>/dev/null &
        watcher=$!
        sleep 0.3 # its watches in place before the daemon starts
}
writes_to() { grep -c -F -- "$1" "$tmp/writes"; }

cg_create_top "/$id" "$all_cpus"

# ---- performance: set before peltd, and TakeOver=yes --------------------------------------------
group set 1
group take 1
take_pid=$last_pid
write_config performance "[Group /$id/take]" "TakeOver=yes"
watch_writes "$cpuset_root/$id/set/cpuset.cpus"
start_daemon
wait_for 5 running || fail "performance: never running"
check "performance: the start line counts the group set before peltd" \
        grep -q -F "2 groups managed, 1 owned elsewhere: other 1;" "$log"
check "performance: TakeOver=yes places a group set before peltd (1 -> 0-1)" \
        wait_for 5 bash -c "[[ \$(cat $cpuset_root/$id/take/cpuset.cpus) == 0-1 ]]"
hold_for 1
check "performance: the group set before peltd is never written, and said so once" \
        bash -c "[[ $(writes_to set) -eq 0 && \$(cat $cpuset_root/$id/set/cpuset.cpus) == 1 &&
                   $(said "Leaving /$id/set alone: owned elsewhere (other): cpuset 1 set by someone else before peltd (parent 0-1).") -eq 1 ]]"
stop_daemon TERM
end_pids TERM "$watcher"
watcher=
check "performance: SIGTERM leaves set at 1, puts take back to 1" \
        bash -c "[[ \$(cat $cpuset_root/$id/set/cpuset.cpus) == 1 && \$(cat $cpuset_root/$id/take/cpuset.cpus) == 1 && $daemon_status -eq 0 ]]"
end_pids TERM "$take_pid"
cg_remove "/$id/take"

# ---- power: set before, a descendant set before, pinned threads, a foreign write ---------------
: > "$log"
group parent 0-1
group parent/kid 1
group pinned 0-1
for _ in 1 2; do
        sleep 1000 &
        sleepers+=($!)
        cg_attach "/$id/pinned" $!
        # After the move: moving a task into a v1 cpuset gives it the cpuset's CPUs.
        taskset -p -c 1 $! >/dev/null
done
pinned_pid=$!
group free 0-1
group fw 0-1
write_config power
watch_writes "$cpuset_root/$id/set/cpuset.cpus" "$cpuset_root/$id/parent/cpuset.cpus" \
        "$cpuset_root/$id/parent/kid/cpuset.cpus" "$cpuset_root/$id/pinned/cpuset.cpus"
start_daemon
wait_for 5 running || fail "power: never running"
check "power: the start line counts the groups owned elsewhere, by whom" \
        grep -q -F "5 groups managed, 3 owned elsewhere: affinity 1, other 2;" "$log"
check "power: free and fw placed on one CPU" wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/free/cpuset.cpus) =~ ^[01]$ &&
        \$(cat $cpuset_root/$id/fw/cpuset.cpus) =~ ^[01]$ ]]"
check "power: the parent of a descendant set before peltd is left alone, naming it" \
        grep -q -F "Leaving /$id/parent alone: owned elsewhere (other): its descendant /$id/parent/kid has cpuset 1" "$log"
check "power: threads pinned to CPU 1 leave their group alone (owner affinity)" \
        grep -q -F "Leaving /$id/pinned alone: owned elsewhere (affinity): its threads pin themselves" "$log"

# A single foreign write to fw: yielded, said once, its record dropped, never written again.
placed_cpu=$(cpus_of fw)
echo 0-1 > "$cpuset_root/$id/fw/cpuset.cpus"
check "power: the foreign write to fw said, with both values" wait_for 3 grep -q -F \
        "cpuset.cpus of /$id/fw was written by someone else (\"0-1\", peltd wrote \"$placed_cpu\")" "$log"
hold_for 1.5
check "power: fw not written again, the write said once, its record gone from the state file" \
        bash -c "[[ \$(cat $cpuset_root/$id/fw/cpuset.cpus) == 0-1 && $(said "was written by someone else") -eq 1 ]] &&
                 ! grep -q -F '\"/$id/fw\"' $state"
check "power: the counts said again when fw is yielded" \
        grep -q -F "5 groups managed, 4 owned elsewhere: affinity 1, other 3." "$log"
check "power: set, parent, kid and pinned never written; the pinned threads keep CPU 1" \
        bash -c "[[ \$(wc -l < $tmp/writes) -eq 0 && \$(cat $cpuset_root/$id/set/cpuset.cpus) == 1 &&
                   \$(cat $cpuset_root/$id/parent/cpuset.cpus) == 0-1 && \$(cat $cpuset_root/$id/parent/kid/cpuset.cpus) == 1 &&
                   \$(cat $cpuset_root/$id/pinned/cpuset.cpus) == 0-1 &&
                   \$(taskset -c -p $pinned_pid) == *': 1' ]]"

# SIGHUP takes fw back: placed again like a new group, 0-1 its original now.
reload_daemon || fail "power: no reload"
check "power: SIGHUP takes fw back and places it again" wait_for 10 bash -c \
        "grep -q -F 'Taking /$id/fw back' $log && [[ \$(cat $cpuset_root/$id/fw/cpuset.cpus) =~ ^[01]$ ]]"
check "power: the counts said again after the reload" grep -q -F "5 groups managed, 3 owned elsewhere: affinity 1, other 2." "$log"
check "power: the other groups stay owned elsewhere after the reload" \
        bash -c "[[ \$(wc -l < $tmp/writes) -eq 0 ]]"
# Another writer's value again: yielded again, and it is what stays at SIGTERM.
other=$(( $(cpus_of fw) == 0 ? 1 : 0 ))
echo "$other" > "$cpuset_root/$id/fw/cpuset.cpus"
wait_for 3 bash -c "[[ \$(grep -c -F 'was written by someone else' $log) -eq 2 ]]" || fail "power: the second foreign write not said"
stop_daemon TERM
check "power: SIGTERM leaves fw at the writer's $other, set at 1, kid at 1, free back at 0-1" \
        bash -c "[[ \$(cat $cpuset_root/$id/fw/cpuset.cpus) == $other && \$(cat $cpuset_root/$id/set/cpuset.cpus) == 1 &&
                   \$(cat $cpuset_root/$id/parent/kid/cpuset.cpus) == 1 && \$(cat $cpuset_root/$id/free/cpuset.cpus) == 0-1 &&
                   $daemon_status -eq 0 ]]"

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all owner checks passed"
