#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Renamed groups on the real kernel (cgroup v1: `mv` renames a group in one hierarchy at a time,
# so it is done in each of cpuset, cpu and cpuacct). A placed group renamed while peltd runs stays
# the same managed group (its placement and history kept, not managed afresh), its records follow
# it into the state file, and --restore after a crash puts it back at its new path; a group renamed
# just before SIGTERM is put back at the stop. About 10 s. Removes the subtree and the scratch
# directory, and ends only the processes it started, also on failure.
#
#   test-rename.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin rename
sleepers=()
fail_log_lines=40

cleanup() {
        end_pids TERM "${sleepers[@]}"
}

said() { grep -c -- "$1" "$log"; }

if [[ $mode != v1 ]]; then
        echo "cgroup v2 renames no group"
        exit 77
fi
if [[ $(cat /sys/devices/system/cpu/online) != *[-,]* ]]; then
        echo "one CPU online: nothing to place"
        exit 77
fi

# group NAME: a group on every CPU with a sleeping task in it.
group() {
        cg_create "/$id/$1" "$all_cpus"
        sleep 1000 &
        sleepers+=($!)
        cg_attach "/$id/$1" $!
}

# rename FROM TO: mv in every hierarchy, one after another.
rename() {
        local h
        for h in "${hier[@]}"; do
                mv "$h/$id/$1" "$h/$id/$2" || fail "mv $h/$id/$1 $h/$id/$2"
        done
}

# as_before GROUP: its cpuset and shares what they were before peltd.
as_before() { [[ $(cpus_of "$1") == "$all_cpus" && $(shares_of "$1") == "$before_shares" ]]; }
placed_with_shares() { placed "$1" && [[ $(shares_of "$1") == 512 ]]; }
recorded_at() { grep -q "\"group\": \"/$id/$1\", \"file\": \"$2\"" "$state"; }
recorded_only_at() { recorded_at "$1" cpuset.cpus && recorded_at "$1" cpu.shares && ! grep -q "\"/$id/$2\"" "$state"; }

cg_create_top "/$id" "$all_cpus"
group web
group db
before_shares=$(shares_of web)
write_config power "[Group /$id/web]" "Shares=512" "[Group /$id/web2]" "Shares=512" \
        "[Group /$id/db]" "Shares=512" "[Group /$id/db2]" "Shares=512"

# ---- renamed while running: the same group, its records follow it; --restore after a crash ------
start_daemon
wait_for 10 placed_with_shares web || fail "web was never placed (cpus $(cpus_of web), shares $(shares_of web))"
wait_for 5 placed_with_shares db || fail "db was never placed"
web_cpus=$(cpus_of web)
rename web web2
wait_for 5 recorded_only_at web2 web || fail "the state file does not follow web to web2: $(cat "$state")"
check "said: web renamed, the same group" test "$(said "/$id/web was renamed to /$id/web2: the same group")" -eq 1
check "web2 not managed afresh" test "$(said "Managing /$id/web2")" -eq 0
hold_for 0.5
check "web2 keeps its placement ($web_cpus, shares 512)" test "$(cpus_of web2)/$(shares_of web2)" == "$web_cpus/512"
check "web2 not placed again" test "$(said "/$id/web2: CPUs")" -eq 0

stop_daemon KILL
"$peltd" --restore --config "$conf" >>"$log" 2>&1
rc=$?
check "--restore after a crash: exit 0" test "$rc" -eq 0
check "--restore: web2 (renamed) as before peltd" as_before web2
check "--restore: db as before peltd" as_before db

# ---- renamed just before SIGTERM: put back at the stop ----------------------------------------
start_daemon
wait_for 10 placed_with_shares db || fail "db was never placed again"
wait_for 5 placed_with_shares web2 || fail "web2 was never placed"
rename db db2
stop_daemon TERM
check "exit 0" test "$daemon_status" -eq 0
check "SIGTERM: db2 (renamed just before) as before peltd" as_before db2
check "SIGTERM: web2 as before peltd" as_before web2
check "the state file removed" test ! -e "$state"

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all rename checks passed ($mode)"
