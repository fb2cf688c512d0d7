#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A fighting writer (about 30 s): another process writes a placed group's cpuset.cpus every 200 ms
# for 20 s. peltd yields at the first write and never writes the file again in the episode (its
# change lines for the group are counted, at most one allowed), says the foreign write once, keeps
# the group's record out of the state file, and the file holds the writer's value throughout;
# SIGHUP takes the group back (placed again, the writer's value its original), and SIGTERM puts
# the writer's value back. Prints the count of peltd's writes in the episode.
#
#   test-fighting-writer.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin fight
fail_log_lines=40
sleeper=
writer=

cleanup() {
        end_pids TERM "$writer" "$sleeper"
}

if [[ $mode != v1 || $all_cpus != 0-1 ]]; then
        echo "needs cgroup v1 and CPUs 0-1 online ($mode, $all_cpus)"
        exit 77
fi
said() { grep -c -F -- "$1" "$log"; }

cg_create_top "/$id" "$all_cpus"
cg_create "/$id/fw" "$all_cpus"
sleep 1000 &
sleeper=$!
cg_attach "/$id/fw" "$sleeper"
write_config power
start_daemon
wait_for 10 placed fw || fail "power never placed fw"
changes_before=$(said "/$id/fw: CPUs")

# The writer: the group's parent's CPUs, every 200 ms for 20 s.
file=$cpuset_root/$id/fw/cpuset.cpus
(for _ in $(seq 100); do echo "$all_cpus" > "$file"; sleep 0.2; done) &
writer=$!
held=1
for _ in $(seq 40); do
        sleep 0.5
        [[ $(cat "$file") == "$all_cpus" ]] || held=0
done
wait "$writer"
writer=
peltd_writes=$(($(said "/$id/fw: CPUs") - changes_before))
echo "peltd's writes to /$id/fw in the 20 s episode: $peltd_writes (the writer's: 100)"
check "the episode: peltd wrote the file at most once ($peltd_writes)" test "$peltd_writes" -le 1
check "the episode: the file held the writer's value throughout" test "$held" -eq 1
check "the foreign write said once" test "$(said "cpuset.cpus of /$id/fw was written by someone else")" -eq 1
check "the group's record is out of the state file" bash -c "! grep -q -F '\"/$id/fw\"' $state"

reload_daemon || fail "no reload"
check "SIGHUP takes the group back: placed again" wait_for 10 placed fw
stop_daemon TERM
check "SIGTERM puts the writer's value ($all_cpus) back" bash -c "[[ \$(cat $file) == $all_cpus && $daemon_status -eq 0 ]]"

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all fighting-writer checks passed"
