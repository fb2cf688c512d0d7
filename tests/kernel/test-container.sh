#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A real container beside peltd, on the real kernel: podman (runc, cgroupfs, offline: a busybox
# image imported, tests/lib/container-lib.sh) starts a busy container with --cpuset-cpus=1 whose
# group is a direct child of the test's CgroupRoot (podman names it libpod-ID), beside an ordinary
# group. Checked, under power and then performance: the container's cpuset.cpus is never written
# by peltd (inotify on it), its demand is seen (peltd_group_util_cpus in the metrics file), and at
# SIGTERM it is as the runtime set it. Removes the container, the image, its storage, the subtree
# and the processes it started, also on failure. About 10 s, plus a second or two for podman.
#
#   test-container.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"
. "$here/../lib/container-lib.sh"

daemon_test_begin container
start_s=$SECONDS
fail_log_lines=30
metrics_file=$tmp/metrics.prom
sleepers=()
watch_pid=

cleanup() {
        end_pids TERM "$watch_pid" "${sleepers[@]}"
        container_cleanup
}

if [[ $(cat /sys/devices/system/cpu/online) != 0-[1-9]* ]]; then
        echo "CPUs 0 and 1 are not both online: the scenario needs them"
        exit 77
fi
container_setup "$id" || exit 1

cg_create_top "/$id" "$all_cpus"
cg_create "/$id/web" "$all_cpus"
sleep 1000 &
sleepers+=($!)
cg_attach "/$id/web" $!

container_start "$id-busy" "/$id" 1 'while :; do :; done' || exit 1
group=${container_group#"/$id/"}
echo "container $id-busy: pid $container_pid, group $container_group"
check "the runtime set its cpuset: 1" eval '[[ $(cpus_of "$group") == 1 ]]'

# Every write to its cpuset.cpus from here on.
inotifywait -m -e modify --format '%w %e' "$cpuset_root$container_group/cpuset.cpus" >"$tmp/events" 2>"$tmp/inotify.err" &
watch_pid=$!
wait_for 5 grep -q 'Watches established' "$tmp/inotify.err" || fail "inotifywait did not start: $(cat "$tmp/inotify.err")"

# value NAME LABELS: a sample's value in the metrics file.
value() {
        KEY="$1{$2}" awk '$1 == ENVIRON["KEY"] { print $2; exit }' "$metrics_file" 2>/dev/null
}
busy_seen() {
        local u
        u=$(value peltd_group_util_cpus "group=\"$container_group\"")
        awk -v u="$u" 'BEGIN { exit !(u != "" && u > 0.5) }'
}

write_config power
start_daemon
check "power: running" wait_for 5 running
check "power: web placed" wait_for 10 placed web
check "power: the container's demand seen (peltd_group_util_cpus over 0.5)" wait_for 5 busy_seen
hold_for 1
check "power: its cpuset as the runtime set it" eval '[[ $(cpus_of "$group") == 1 ]]'

sed -i 's/^Policy=power$/Policy=performance/' "$conf"
reload_daemon
hold_for 1.5
check "performance: its cpuset as the runtime set it" eval '[[ $(cpus_of "$group") == 1 ]]'
check "performance: its demand still seen" busy_seen

stop_daemon
check "SIGTERM: exit 0" eval '[[ $daemon_status == 0 ]]'
check "SIGTERM: its cpuset as the runtime set it" eval '[[ $(cpus_of "$group") == 1 ]]'
check "SIGTERM: web back to its own CPUs" eval '[[ $(cpus_of web) == "$all_cpus" ]]'
end_pids TERM "$watch_pid"
watch_pid=
check "its cpuset.cpus never written while peltd ran" eval '[[ ! -s $tmp/events ]]'
[[ -s $tmp/events ]] && { echo "writes seen:"; cat "$tmp/events"; grep -F "$container_group" "$log"; }
check "the container still runs" kill -0 "$container_pid"

echo "($((SECONDS - start_s)) s after the machine lock)"
((failures == 0)) || exit 1
