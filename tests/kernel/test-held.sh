#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# CPUs held by an exclusive cpuset (cgroup v1) on the real kernel: an unmanaged group outside
# CgroupRoot holding CPU 1 is found at start and logged with its CPUs; the hierarchy root and the
# ancestors of CgroupRoot (exclusive too) do not count; no cpuset peltd writes holds CPU 1 while it
# is held, under performance and under power; once the flag is cleared (and the operator gives
# CgroupRoot CPU 1 back), the periodic look (performance) or a SIGHUP (power) lets peltd place on
# CPU 1 again. The look's cost per call over 200 groups is printed from the daemon's debug log.
# About 20 s (10 s of it the wait for the periodic look). Removes the subtree and ends only the processes it started, also on failure.
#
#   The shape (v1 keeps exclusive cpusets' CPUs from every group outside their subtree: each
#   ancestor of an exclusive cpuset is exclusive, and no sibling of one may overlap it):
#     /ID            0-1  exclusive: an ancestor of CgroupRoot, never counted
#     /ID/root       0    CgroupRoot (0-1 once CPU 1 is given back); web and batch managed below
#     /ID/part       1    exclusive: holds CPU 1
#     /ID/n001..n200      siblings without CPUs, each looked at: the cost of a look
#     /ID/flat/n001..n200 not exclusive: nothing below it looked at
#
#   test-held.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin held
began=$SECONDS # the machine lock is held from here
fail_log_lines=40
n_siblings=200

said() { grep -c -- "$1" "$log"; }
cpus_are() { [[ $(cpus_of "$1") == "$2" ]]; }
no_cpu_1() { [[ $(cpus_of root/web) != *1* && $(cpus_of root/batch) != *1* ]]; }
held_said() { [[ $(said "CPUs held by partitions or exclusive cpusets: 1 (/$id/part; before: (none)): placing nothing there.") -ge $1 ]]; }
released_said() { [[ $(said "No partition or exclusive cpuset holds CPUs any more (they held 1)") -ge $1 ]]; }
excl() { echo "$2" > "$cpuset_root/$id/$1/cpuset.cpu_exclusive"; }

if [[ $mode != v1 ]]; then
        echo "SKIP: the exclusive cpusets of this test are cgroup v1's; v2 partitions are planned from the same set"
        exit 77
fi
if [[ $(cat /sys/devices/system/cpu/cpu1/online 2>/dev/null) != 1 ]]; then
        echo "FAIL: CPU 1 must be online"
        exit 1
fi

cg_create_top "/$id" 0-1
if ! echo 1 > "$cpuset_root/$id/cpuset.cpu_exclusive"; then
        echo "FAIL: /$id cannot be made exclusive (a top-level cpuset overlaps it: $(ls -d "$cpuset_root"/*/ | tr '\n' ' '))"
        exit 1
fi
cg_create "/$id/root" 0
cg_create "/$id/part" 1
excl part 1 || { echo "FAIL: /$id/part cannot be made exclusive on CPU 1"; exit 1; }
# Made empty (a new v1 cpuset is, and nobody set it): placing them is a write to wait for.
cg_create "/$id/root/web" ""
cg_create "/$id/root/batch" ""
mkdir "$cpuset_root/$id/flat"
for i in $(seq -w 1 $n_siblings); do
        mkdir "$cpuset_root/$id/n$i" "$cpuset_root/$id/flat/n$i"
done

write_config performance "CgroupRoot=/$id/root" "SamplingBackend=proc" "[Group /$id/root/batch]" "MinCPUs=2"
sed -i "/^CgroupRoot=\/$id\$/d" "$conf"

# ---- performance: held at start; given back, taken up by the periodic look ---------------------
start_daemon --log-level debug
wait_for 5 running
check "performance: CPU 1 held by /$id/part, said at start (not /$id, not the root cpuset)" held_said 1
placed_on_0() { cpus_are root/web 0 && cpus_are root/batch 0; }
check "performance: web and batch placed on CPU 0 (after a second of history)" wait_for 10 placed_on_0
check "performance: no cpuset peltd places holds CPU 1" no_cpu_1
check "performance: web and batch placed, not left alone for held CPUs" \
        bash -c "! grep -q 'held by other owners' '$log'"

excl part 0
echo 0-1 > "$cpuset_root/$id/root/cpuset.cpus"
if wait_for 15 released_said 1; then
        pass "performance: the flag cleared, found by the periodic look"
else
        fail "performance: the cleared flag never found"
fi
check "performance: web placed on CPU 1 again" wait_for 3 cpus_are root/web 0-1
stop_daemon TERM
check "performance: stopped cleanly, web empty again" bash -c "[[ $daemon_status -eq 0 && -z \$(cat $cpuset_root/$id/root/web/cpuset.cpus) ]]"

# The cost of a look, from the debug lines: "Looked for held CPUs in N groups in T µs (C µs of CPU)".
# Looked at: /ID, root, part, flat and the 200 siblings; not what lies below root and flat.
costs=$(sed -n 's/^Looked for held CPUs in \([0-9]*\) groups in \([0-9]*\) µs (\([0-9]*\) µs of CPU)\.$/\1 \2 \3/p' "$log")
if [[ -n $costs ]] && ! echo "$costs" | grep -qv "^$((n_siblings + 4)) "; then
        echo "$costs" | sort -n -k3 | awk '{ n[NR] = $1; t[NR] = $2; c[NR] = $3 } END {
                printf "cost of a look: %d looks at %d groups, median %d µs of CPU (max %d), %d µs elapsed at most\n",
                        NR, n[1], c[int((NR + 1) / 2)], c[NR], t[NR] }'
        pass "each look at $((n_siblings + 4)) groups, none below a cpuset that is not exclusive; its cost logged"
else
        fail "the looks: $(echo "$costs" | tr '\n' ';') (want $((n_siblings + 4)) groups each)"
fi

# ---- power: held again; given back, taken up at SIGHUP --------------------------------------------
echo 0 > "$cpuset_root/$id/root/cpuset.cpus"
excl part 1 || fail "/$id/part cannot be made exclusive again"
: > "$log"
write_config power "CgroupRoot=/$id/root" "SamplingBackend=proc" "[Group /$id/root/batch]" "MinCPUs=2"
sed -i "/^CgroupRoot=\/$id\$/d" "$conf"
start_daemon
wait_for 5 running
check "power: CPU 1 held by /$id/part, said at start" held_said 1
check "power: web and batch placed on CPU 0" wait_for 10 placed_on_0
check "power: no cpuset peltd places holds CPU 1 (batch asks MinCPUs=2)" no_cpu_1
excl part 0
echo 0-1 > "$cpuset_root/$id/root/cpuset.cpus"
reload_daemon
check "power: the flag cleared, found at SIGHUP" released_said 1
check "power: batch placed on CPU 1 again for MinCPUs=2" wait_for 3 cpus_are root/batch 0-1
stop_daemon TERM
check "power: stopped cleanly, batch empty again" bash -c "[[ $daemon_status -eq 0 && -z \$(cat $cpuset_root/$id/root/batch/cpuset.cpus) ]]"

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all held-CPU checks passed ($mode), in $((SECONDS - began)) s"
