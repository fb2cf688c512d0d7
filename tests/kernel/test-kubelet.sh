#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kubelet's CPU manager beside peltd, on the real kernel: a kubelet-shaped tree under the test's
# CgroupRoot (kubepods/besteffort/pod<UID>/<container>) whose containers' cpusets a stand-in
# reconciler writes every 10 s as kubelet does (app on CPU 1, exclusive; other, and a second pod's
# sh, on CPU 0, the shared pool), an ordinary group beside it, and kubelet's checkpoint
# (KubeletCpuManagerState=, mode 0644, root's) giving app CPU 1. Groups= names each pod, so that
# peltd would place the second pod (pack it onto CPU 0) were it not kubelet's. Checked: CPU 1 is in no set peltd writes, under power and under performance; peltd writes
# nothing under kubepods (inotify on every cpuset.cpus there: only the reconciler's values are
# ever seen); the checkpoint edited as kubelet does (a new file renamed over it) is followed within
# a task round, a pod removed (CPU 1 free again) and one added (held again); a checkpoint that
# does not parse leaves kubepods alone, the log saying why, and one that parses again is said.
# Removes the subtree, its scratch directory and the processes it started, also on failure. About
# 10 s.
#
#   test-kubelet.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin kubelet
start_s=$SECONDS
fail_log_lines=40
sleepers=()
reconciler_pid=
watch_pid=
reader_pid=
uid=2f1e6a0c-5b7d-4c1a-9e0f-3d2b1a4c5e6f
uid2=8c9d0e1f-2a3b-4c5d-8e7f-6a5b4c3d2e1f
uid3=0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d
pod=kubepods/besteffort/pod$uid
pod3=kubepods/besteffort/pod$uid3
checkpoint_dir=$tmp/kubelet
checkpoint=$checkpoint_dir/cpu_manager_state
events=$tmp/kubepods-events

cleanup() {
        end_pids TERM "$reconciler_pid" "$watch_pid" "$reader_pid" "${sleepers[@]}"
}

if [[ $(cat /sys/devices/system/cpu/online) != 0-1 && $(cat /sys/devices/system/cpu/online) != 0-[2-9]* ]]; then
        echo "CPUs 0 and 1 are not both online: the scenario needs them"
        exit 77
fi

# put_checkpoint TEXT: as kubelet writes it, a new file renamed over the old one.
put_checkpoint() {
        printf '%s' "$1" > "$checkpoint.new" && chmod 0644 "$checkpoint.new" && mv "$checkpoint.new" "$checkpoint"
}
static_checkpoint() { # ENTRIES
        put_checkpoint "{\"policyName\":\"static\",\"defaultCpuSet\":\"0\",\"entries\":{$1},\"checksum\":1552716370}"
}

# ---- the tree, the reconciler, the watcher ------------------------------------------------------
cg_create_top "/$id" "$all_cpus"
for g in kubepods kubepods/besteffort "$pod" "$pod/app" "$pod/other" "$pod3" "$pod3/sh" web; do
        cg_create "/$id/$g" "$all_cpus"
done
for g in "$pod/app" "$pod/other" "$pod3/sh" web; do
        sleep 1000 &
        sleepers+=($!)
        cg_attach "/$id/$g" $!
done

# kubelet's reconcile loop (10 s): each container's cpuset as its CPU manager has it. SIGUSR1: now
# (kubelet reconciles at pod changes too).
reconcile() {
        local s
        trap 'kill $s 2>/dev/null; exit 0' TERM
        trap 'kill $s 2>/dev/null' USR1
        while :; do
                echo 1 > "$cpuset_root/$id/$pod/app/cpuset.cpus"
                echo 0 > "$cpuset_root/$id/$pod/other/cpuset.cpus"
                echo 0 > "$cpuset_root/$id/$pod3/sh/cpuset.cpus"
                sleep 10 &
                s=$!
                wait $s
        done
}
reconcile &
reconciler_pid=$!
wait_for 2 eval '[[ $(cpus_of "$pod/app") == 1 && $(cpus_of "$pod/other") == 0 && $(cpus_of "$pod3/sh") == 0 ]]'

# Every write to a cpuset.cpus under kubepods, with what the file holds right after it.
kube_files=()
for g in kubepods kubepods/besteffort "$pod" "$pod/app" "$pod/other" "$pod3" "$pod3/sh"; do
        kube_files+=("$cpuset_root/$id/$g/cpuset.cpus")
done
mkfifo "$tmp/fifo"
inotifywait -m -e modify --format '%w' "${kube_files[@]}" >"$tmp/fifo" 2>"$tmp/inotify.err" &
watch_pid=$!
while read -r f; do printf '%s %s\n' "${f#"$cpuset_root/$id/"}" "$(cat "$f")"; done <"$tmp/fifo" >"$events" &
reader_pid=$!
wait_for 5 grep -q 'Watches established' "$tmp/inotify.err" || fail "inotifywait did not start: $(cat "$tmp/inotify.err")"
kill -USR1 "$reconciler_pid"
check "the watcher sees the reconciler's writes" wait_for 2 grep -q "^$pod/app/cpuset.cpus 1$" "$events"

mkdir -m 0700 "$checkpoint_dir"
static_checkpoint "\"$uid\":{\"app\":\"1\"}"

# ---- power, then performance: CPU 1 is kubelet's ----------------------------------------------
write_config power "KubeletCpuManagerState=$checkpoint" "Groups=/$id/web /$id/kubepods/besteffort/*"
start_daemon
said() { grep -q -- "$1" "$log"; }
check "the checkpoint read at start: CPU 1 held" wait_for 5 said "^kubelet's CPU manager checkpoint $checkpoint: policy static, CPUs 1 held by 1 container\.$"
check "the pods left to kubelet" wait_for 5 said "^Leaving /$id/$pod3 alone: owned elsewhere (kubelet): under kubepods: kubelet's CPU manager (policy static) places it\.$"
check "power: web packed on CPU 0" wait_for 10 eval '[[ $(cpus_of web) == 0 ]]'

sed -i 's/^Policy=power$/Policy=performance/' "$conf"
reload_daemon
hold_for 1
check "performance: web on CPU 0 only (CPU 1 is held)" eval '[[ $(cpus_of web) == 0 ]]'

# ---- the checkpoint edited: followed within a task round (200 ms) ------------------------------
# followed LINE: the log line seen within two task rounds of the rename, scaled for a loaded machine.
followed() {
        local t0 t1
        t0=$(date +%s%N)
        wait_for 2 said "$1" || return 1
        t1=$(date +%s%N)
        echo "   (followed in $(((t1 - t0) / 1000000)) ms)"
        (((t1 - t0) / 1000000 <= 400 * $(test_time_scale)))
}
static_checkpoint ""
check "a pod removed: followed" followed "^kubelet's CPU manager checkpoint $checkpoint: policy static, CPUs (none) held by 0 containers\.$"
check "performance: web widened onto CPU 1, free again" wait_for 2 eval '[[ $(cpus_of web) == 0-1 ]]'

static_checkpoint "\"$uid2\":{\"db\":\"1\"}"
check "a pod added: followed" followed "^kubelet's CPU manager checkpoint $checkpoint: policy static, CPUs 1 held by 1 container\.$"
check "performance: web narrowed off CPU 1, held again" wait_for 2 eval '[[ $(cpus_of web) == 0 ]]'

stop_daemon
check "SIGTERM: exit 0" eval '[[ $daemon_status == 0 ]]'
check "SIGTERM: web back to its own CPUs" eval '[[ $(cpus_of web) == "$all_cpus" ]]'

# ---- a checkpoint that does not parse: kubepods left alone, said once; then it parses ----------
put_checkpoint "{\"policyName\":\"static\",\"defaultCpuSet\":\"0\",\"entries\":{\"$uid\":{\"app\":\"1-\"}},\"checksum\":1}"
sed -i 's/^Policy=performance$/Policy=power/' "$conf"
start_daemon
check "a broken checkpoint said, with why" wait_for 5 said "^$checkpoint: entries\.$uid\.app: \"1-\" is not a CPU list; every group under kubepods is left alone until it parses\.$"
check "the pods left alone, and why" wait_for 5 said "^Leaving /$id/$pod3 alone: owned elsewhere (kubelet): under kubepods, and kubelet's CPU manager checkpoint $checkpoint does not parse: left alone until it does\.$"
check "power: web placed" wait_for 10 eval 'grep -q "^/$id/web: CPUs " "$log"'
hold_for 0.5
check "the broken checkpoint said once" eval '[[ $(grep -c "is not a CPU list" "$log") == 1 ]]'
static_checkpoint "\"$uid\":{\"app\":\"1\"}"
check "parses again: said" followed "^kubelet's CPU manager checkpoint $checkpoint parses again: policy static, CPUs 1 held by 1 container\.$"
check "CPU 1 held again: web on CPU 0" wait_for 2 eval '[[ $(cpus_of web) == 0 ]]'
stop_daemon

# ---- what was written ---------------------------------------------------------------------------
# No set peltd wrote holds CPU 1 while it was held: every change line of web's (its new set) is
# "0" but the one after the pod was removed, and the one that widened it while nothing was known.
kill -USR1 "$reconciler_pid"
hold_for 0.3
bad=$(grep "^/$id/[^ ]*: CPUs " "$log" | grep -v "^/$id/web: ")
check "no group but web placed (no pod)" eval '[[ -z $bad ]]'
end_pids TERM "$reconciler_pid" "$watch_pid"
reconciler_pid= watch_pid=
wait "$reader_pid" 2>/dev/null
reader_pid=
foreign=$(grep -v -e "^$pod/app/cpuset.cpus 1$" -e "^$pod/other/cpuset.cpus 0$" -e "^$pod3/sh/cpuset.cpus 0$" "$events")
check "nothing under kubepods written but by the reconciler ($(wc -l <"$events") writes seen)" eval '[[ -z $foreign && -s $events ]]'
[[ -z $foreign ]] || echo "$foreign"

echo "($((SECONDS - start_s)) s after the machine lock)"
((failures == 0)) || exit 1
