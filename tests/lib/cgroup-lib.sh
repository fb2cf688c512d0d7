# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the shell tests of tests/kernel/ and tests/soak/, tests/vm/guest-tests.sh and
# scripts/run (--demo): polling, "ok:" lines, and a private cgroup subtree in every hierarchy a group
# lives in (cgroup v1: cpuset, cpu, cpuacct; v2: the unified one). Defines functions only; cg_detect
# sets the variables the others use.

# test_time_scale: how many times longer than on an idle machine what the tests wait for may take
# here, a whole number: the 1-minute load average per online CPU, rounded up, at least 1 and at
# most 8; at least PELTD_TEST_TIME_SCALE where that is set (a guest whose CPUs stall). Read afresh
# at each call (the load comes and goes), without starting a process.
test_time_scale() {
        local load cpus=${test_time_scale_cpus:-} parts part a b scale floor=${PELTD_TEST_TIME_SCALE:-1}
        if [[ -z $cpus ]]; then
                cpus=0
                IFS=, read -ra parts </sys/devices/system/cpu/online
                for part in "${parts[@]}"; do
                        a=${part%-*} b=${part#*-}
                        cpus=$((cpus + b - a + 1))
                done
                ((cpus > 0)) || cpus=1
                test_time_scale_cpus=$cpus
        fi
        read -r load _ </proc/loadavg
        load=$((10#${load%.*}${load#*.})) # hundredths
        scale=$(((load + cpus * 100 - 1) / (cpus * 100)))
        ((scale < 1)) && scale=1
        ((scale > 8)) && scale=8
        [[ $floor =~ ^[0-9]+$ ]] && ((scale < floor)) && scale=$floor
        echo "$scale"
}

# wait_for SECONDS COMMAND...: polls every 0.1 s until COMMAND succeeds, for SECONDS (whole) times
# test_time_scale at most: evidence that something happened, waited for as long as a loaded
# machine needs to show it. What COMMAND checks is the same at any load.
wait_for() {
        local deadline=$(($(date +%s%N) + $1 * $(test_time_scale) * 1000000000))
        shift
        while (($(date +%s%N) < deadline)); do
                "$@" && return 0
                sleep 0.1
        done
        "$@"
}

# hold_for SECONDS: a window in which something must not happen (a write, a log line, a change),
# checked after it: SECONDS (a decimal) times test_time_scale, so that a loaded machine's late
# rounds fill it as an idle machine's do. Not a wait for something: that is wait_for.
hold_for() {
        sleep "$(awk -v s="$1" -v k="$(test_time_scale)" 'BEGIN { print s * k }')"
}

pass() {
        echo "ok: $*"
}

# cg_detect: sets mode (v1 or v2), hier (the hierarchies' mount points), cpuset_root and cpu_root.
cg_detect() {
        if [[ -f /sys/fs/cgroup/cgroup.controllers && ! -d /sys/fs/cgroup/cpuset ]]; then
                mode=v2
                hier=(/sys/fs/cgroup)
                cpuset_root=/sys/fs/cgroup
                cpu_root=/sys/fs/cgroup
        else
                mode=v1
                hier=(/sys/fs/cgroup/cpuset /sys/fs/cgroup/cpu /sys/fs/cgroup/cpuacct)
                cpuset_root=/sys/fs/cgroup/cpuset
                cpu_root=/sys/fs/cgroup/cpu
        fi
}

# cg_create GROUP CPUS: GROUP (a path like /peltd-test-1/light) in every hierarchy, on CPUS (a v1
# cpuset starts empty: it gets its parent's memory nodes too).
cg_create() {
        local h
        for h in "${hier[@]}"; do
                mkdir -p "$h$1"
        done
        if [[ $mode == v1 ]]; then
                cat "$cpuset_root${1%/*}/cpuset.mems" > "$cpuset_root$1/cpuset.mems"
                echo "$2" > "$cpuset_root$1/cpuset.cpus"
        fi
}

# cg_create_top GROUP CPUS: cg_create for a group below the root; on v2 the root passes the cpuset
# and cpu controllers on to it, and it to its children. GROUP gets the largest CPU weight: the
# machine's other work (builds, other tests) must not keep the test's workloads waiting for CPU,
# as a group that waits is widened and never packed, whatever the policy (tests/lib/kernel-util.h
# does the same for the C tests).
cg_create_top() {
        cg_create "$@"
        if [[ $mode == v2 ]]; then
                echo "+cpuset +cpu" > /sys/fs/cgroup/cgroup.subtree_control
                echo "+cpuset +cpu" > "/sys/fs/cgroup$1/cgroup.subtree_control"
                echo 10000 > "/sys/fs/cgroup$1/cpu.weight"
        else
                echo 262144 > "$cpu_root$1/cpu.shares"
        fi
}

# cg_attach GROUP PID: moves PID into GROUP in every hierarchy.
cg_attach() {
        local h
        for h in "${hier[@]}"; do
                echo "$2" > "$h$1/cgroup.procs"
        done
}

# cg_remove GROUP: removes GROUP and everything below it in every hierarchy, children first. A group
# is removable once its last task has finished exiting: tries for up to a second.
cg_remove() {
        local h
        for h in "${hier[@]}"; do
                for _ in 1 2 3 4 5 6 7 8 9 10; do
                        [[ -d $h$1 ]] || break
                        find "$h$1" -depth -type d -exec rmdir {} + 2>/dev/null && break
                        sleep 0.1
                done
        done
        return 0
}

# cg_guard GROUP DIR: once this shell is gone, also by SIGKILL, removes GROUP in every hierarchy and
# DIR. meson's timeout sends SIGTERM to the test's whole process group and SIGKILL half a second
# later, before a cleanup that waits for groups to empty is done: the guard is in a session of its
# own, out of reach of both. It holds nothing open the test's runner or other tests wait on (the
# output, the machine lock).
cg_guard() {
        (
                [[ -z ${machine_lock_fd:-} ]] || exec {machine_lock_fd}>&-
                exec setsid bash -c "$(declare -f cg_remove)"'
                        hier=("${@:4}")
                        while kill -0 "$1" 2>/dev/null; do sleep 0.2; done
                        cg_remove "$2"
                        rm -rf "$3"' cg-guard "$$" "$1" "$2" "${hier[@]}"
        ) </dev/null >/dev/null 2>&1 &
}
