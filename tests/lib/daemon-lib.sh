# SPDX-License-Identifier: GPL-2.0-only
# Sourced, after machine-lock.sh and cgroup-lib.sh, by the shell tests that run peltd on a private
# cgroup subtree of the real kernel: test-daemon.sh, test-daemon-loop.sh, test-daemon-rounds.sh,
# test-bus.sh, test-peltctl.sh, test-metrics.sh, test-security.sh, test-text-utf8.sh and soak.sh.
#
#   daemon_test_begin NAME
#                     id, the subtree's name (peltd-test-NAME-PID), and tmp, a new scratch directory
#                     /tmp/$id.XXXXXX, with conf, state and log named in it; cg_detect, and cg_guard
#                     on both; all_cpus, the CPUs online; shares_file, cpu.shares or cpu.weight;
#                     failures 0; daemon_pid and daemon_status empty. The traps: at EXIT the daemon
#                     killed, the test's own function cleanup run (where it has one: the processes
#                     it started besides), the subtree and tmp removed; at INT, TERM and HUP, exit 1.
#   fail MESSAGE      prints "FAIL: MESSAGE" and counts it in failures; where the test sets
#                     fail_log_lines, that many last lines of the daemon's log ($log) follow
#   check DESCRIPTION COMMAND...
#                     "ok: DESCRIPTION" (pass) where COMMAND succeeds, fail DESCRIPTION where not
#   write_config POLICY [LINE...]
#                     $conf: the policy, CgroupRoot on the subtree, group rounds every 100 ms and
#                     task rounds every 200 ms, StateFile $state, MetricsFile $metrics_file (none
#                     where the test sets none); then each LINE
#   start_daemon [ARG...]
#                     peltd --config $conf ARG... in the background, its output appended to $log
#   stop_daemon [SIGNAL]
#                     sends SIGNAL (TERM) to the daemon, waits for it; its exit status in daemon_status
#   reload_daemon     sends SIGHUP to the daemon and waits (wait_for 5) for the evidence that it read
#                     $conf again: one more "Configuration reloaded" or "keeping the old settings" line
#   running [N]       $log says "peltd running" N times (1) or more
#   end_pids SIGNAL PID...
#                     sends SIGNAL to each PID (an empty one skipped) and waits for it
#   cpus_of GROUP, shares_of GROUP
#                     GROUP's cpuset.cpus and $shares_file (GROUP below the subtree)
#   placed GROUP      power packed GROUP onto one CPU (it was made on all of them)

daemon_test_begin() {
        id=peltd-test-$1-$$
        tmp=$(mktemp -d "/tmp/$id.XXXXXX")
        conf=$tmp/peltd.conf
        state=$tmp/state/originals
        log=$tmp/peltd.log
        failures=0
        daemon_pid=
        daemon_status=
        cg_detect
        cg_guard "/$id" "$tmp"
        all_cpus=$(cat /sys/devices/system/cpu/online)
        shares_file=cpu.shares
        [[ $mode == v2 ]] && shares_file=cpu.weight
        trap daemon_test_exit EXIT
        trap 'exit 1' INT TERM HUP
}

daemon_test_exit() {
        stop_daemon KILL
        if declare -F cleanup >/dev/null; then
                cleanup
        fi
        cg_remove "/$id"
        rm -rf "$tmp"
}

fail() {
        echo "FAIL: $*"
        if [[ -n ${fail_log_lines:-} ]]; then
                echo "---- peltd log ----"
                tail -n "$fail_log_lines" "$log" 2>/dev/null
                echo "-------------------"
        fi
        failures=$((failures + 1))
}

check() {
        local what=$1
        shift
        if "$@"; then pass "$what"; else fail "$what"; fi
}

write_config() {
        {
                echo "[Daemon]"
                echo "Policy=$1"
                echo "CgroupRoot=/$id"
                echo "SampleIntervalMSec=100"
                echo "TaskSampleIntervalMSec=200"
                echo "StateFile=$state"
                echo "MetricsFile=${metrics_file:-}"
                # PELTD_TEST_CONFIG_EXTRA: lines a harness adds to every configuration (the guest: no pressure guard).
                [[ -z ${PELTD_TEST_CONFIG_EXTRA:-} ]] || printf '%s\n' "$PELTD_TEST_CONFIG_EXTRA"
                shift
                printf '%s\n' "$@"
        } > "$conf"
}

start_daemon() {
        "$peltd" --config "$conf" "$@" >>"$log" 2>&1 &
        daemon_pid=$!
}

stop_daemon() {
        local sig=${1:-TERM}
        [[ -n $daemon_pid ]] || return 0
        kill -"$sig" "$daemon_pid" 2>/dev/null
        wait "$daemon_pid" 2>/dev/null
        daemon_status=$?
        daemon_pid=
}

reloads_logged() {
        grep -c -e '^Configuration reloaded: ' -e '^Reloading the configuration failed; keeping the old settings' "$log" 2>/dev/null
}

reload_daemon() {
        local before
        before=$(reloads_logged)
        kill -HUP "$daemon_pid"
        wait_for 5 reloaded_since "$before"
}

reloaded_since() { (($(reloads_logged) > $1)); }

running() {
        [[ $(grep -c '^peltd running' "$log" 2>/dev/null) -ge ${1:-1} ]]
}

end_pids() {
        local sig=$1 p
        shift
        for p in "$@"; do
                [[ -n $p ]] || continue
                kill -"$sig" "$p" 2>/dev/null
                wait "$p" 2>/dev/null
        done
        return 0
}

cpus_of() { cat "$cpuset_root/$id/$1/cpuset.cpus"; }
shares_of() { cat "$cpu_root/$id/$1/$shares_file"; }
placed() { [[ $(cpus_of "$1") =~ ^[0-9]+$ ]]; }
