#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The daemon's loop on the real kernel: groups made after start (or made again) are placed with
# threads not tracked, a group whose name begins with '.' is managed, signals with no job do not
# kill it, a SIGHUP at start does not kill it, and everything is put back at SIGTERM. Removes the
# subtree and ends only the processes it started, also on failure.
#
#   test-daemon-loop.sh PELTD DUTY_CYCLE
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
duty=$2
. "$here/machine-lock.sh"
. "$here/cgroup-lib.sh"

id=peltd-test-loop-$$
tmp=$(mktemp -d "/tmp/$id.XXXXXX")
conf=$tmp/peltd.conf
state=$tmp/state/originals
log=$tmp/peltd.log
daemon_pid=
daemon_status=
declare -A workload_pid=()
failures=0

cg_detect
all_cpus=$(cat /sys/devices/system/cpu/online)

stop_daemon() {
        local sig=${1:-TERM}
        [[ -n $daemon_pid ]] || return 0
        kill -"$sig" "$daemon_pid" 2>/dev/null
        wait "$daemon_pid" 2>/dev/null
        daemon_status=$?
        daemon_pid=
}

stop_workload() { # GROUP
        local p=${workload_pid[$1]:-}
        [[ -n $p ]] || return 0
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
        unset "workload_pid[$1]"
}

cleanup() {
        local g
        stop_daemon KILL
        for g in "${!workload_pid[@]}"; do
                stop_workload "$g"
        done
        cg_remove "/$id"
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
        echo "FAIL: $*"
        echo "---- peltd log ----"
        tail -n 40 "$log" 2>/dev/null
        echo "-------------------"
        failures=$((failures + 1))
}

cpus_of() { cat "$cpuset_root/$id/$1/cpuset.cpus"; }
# placed GROUP: power packed it onto one CPU (it was made on all of them)
placed() { [[ $(cpus_of "$1") =~ ^[0-9]+$ ]]; }
alive() { [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; }

# start_workload GROUP: one thread at 15% in GROUP (four of them fit one CPU: power packs them)
start_workload() {
        "$duty" 1 10000 15 >/dev/null &
        workload_pid[$1]=$!
        cg_attach "/$id/$1" "${workload_pid[$1]}"
}

write_config() { # POLICY [extra lines]
        {
                echo "[Daemon]"
                echo "Policy=$1"
                echo "CgroupRoot=/$id"
                echo "SampleIntervalMSec=100"
                echo "TaskSampleIntervalMSec=200"
                echo "TaskTracking=no"
                echo "StateFile=$state"
                shift
                printf '%s\n' "$@"
        } > "$conf"
}

start_daemon() {
        "$peltd" --config "$conf" "$@" >>"$log" 2>&1 &
        daemon_pid=$!
}

if [[ $(cat /sys/devices/system/cpu/online) == 0 ]]; then
        echo "FAIL: power packs onto one CPU of several: this machine has one CPU online"
        exit 1
fi

cg_create_top "/$id" "$all_cpus"
for g in early again; do
        cg_create "/$id/$g" "$all_cpus"
        start_workload "$g"
done

# ---- groups made after start, made again, and named .hidden: placed with threads not tracked ----
write_config power
start_daemon
wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/again/cpuset.cpus) =~ ^[0-9]+\$ ]]" || fail "late: power never placed again"
grep -q "threads not tracked" "$log" || fail "late: threads are tracked; the check needs them not tracked"

for g in late .hidden; do
        cg_create "/$id/$g" "$all_cpus"
        start_workload "$g"
done
# again: its service restarted (the group removed and made again, on all CPUs).
stop_workload again
cg_remove "/$id/again"
cg_create "/$id/again" "$all_cpus"
start_workload again

for g in late .hidden again; do
        if wait_for 10 placed "$g"; then
                pass "late: /$id/$g placed on CPU $(cpus_of "$g") with threads not tracked"
        else
                fail "late: /$id/$g on $(cpus_of "$g"), never placed"
        fi
done
grep -q "/$id/again was made again" "$log" || grep -q "/$id/again is gone" "$log" ||
        fail "late: again made again without a word"
alive || fail "late: peltd died"

# ---- signals with no job: ignored; SIGTERM still restores -------------------------------------
for sig in PIPE USR1 USR2 ALRM; do
        kill -"$sig" "$daemon_pid" 2>/dev/null
done
# A reload after them: once it is logged, the signals before it have been delivered.
kill -HUP "$daemon_pid"
if wait_for 5 grep -q "Configuration reloaded" "$log" && alive; then
        pass "signals: SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM left peltd running"
else
        fail "signals: peltd did not survive SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM"
fi

stop_daemon TERM
restored=1
for g in early again late .hidden; do
        [[ $(cpus_of "$g") == "$all_cpus" ]] || restored=0
done
if [[ $daemon_status -eq 0 && $restored -eq 1 && ! -e $state ]]; then
        pass "SIGTERM: exit 0, every group (made late, made again, .hidden) back on $all_cpus"
else
        fail "SIGTERM: exit $daemon_status; early $(cpus_of early), again $(cpus_of again), late $(cpus_of late), .hidden $(cpus_of .hidden)"
fi

# ---- SIGHUP at once at start: blocked before the configuration is read ------------------------
# The configuration at a FIFO: reading it waits for a writer, the window before the handlers
# are in place. SIGHUP must be blocked there already (or the FIFO refused outright).
fifo=$tmp/fifo.conf
mkfifo -m 0600 "$fifo"
"$peltd" --config "$fifo" >>"$log" 2>&1 &
daemon_pid=$!
waiting_at_open() { [[ $(cut -d' ' -f1 "/proc/$daemon_pid/syscall" 2>/dev/null) == 257 ]]; }
wait_for 5 bash -c "! kill -0 $daemon_pid 2>/dev/null || [[ \$(cut -d' ' -f1 /proc/$daemon_pid/syscall) == 257 ]]"
if waiting_at_open; then
        blocked=$(awk '/^SigBlk:/ { print $2 }' "/proc/$daemon_pid/status")
        if (((16#$blocked >> 0) & 1)); then
                pass "SIGHUP: blocked while the configuration is read (SigBlk $blocked)"
        else
                fail "SIGHUP: not blocked while the configuration is read (SigBlk $blocked)"
        fi
fi
stop_daemon KILL

write_config power
log=$tmp/peltd-hup.log
start_daemon
# As soon as it runs peltd's code (signals blocked first thing): a SIGHUP, then it must run on.
wait_for 5 bash -c "(( (16#\$(awk '/^SigBlk:/ { print \$2 }' /proc/$daemon_pid/status) >> 0) & 1 ))"
kill -HUP "$daemon_pid"
if wait_for 10 grep -q "Configuration reloaded" "$log" && alive; then
        pass "SIGHUP at start: handled as a reload once the loop runs"
else
        fail "SIGHUP at start: peltd died or never reloaded"
fi
stop_daemon TERM
[[ $daemon_status -eq 0 ]] || fail "SIGHUP at start: exit $daemon_status after SIGTERM"

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all loop checks passed ($mode)"
