#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The soak: peltd on the real kernel for SECONDS under churn — hundreds of threads a second coming
# and going, groups made and removed under CgroupRoot every half second (some with a short-lived
# workload in them), the policy flipped by SIGHUP every 3 s. Passes when peltd never dies, logs
# nothing beyond the expected lines (placements, reloads, the races of a group vanishing), its RSS
# grows by less than 1 MiB after the warm-up, its fd count is the same in the quiet phase after the
# churn as in the one before it, and at SIGTERM every remaining group's cpuset and shares are back
# to what they were, and its metrics file (written all along) is gone. Prints the RSS/fd curve.
# Removes its subtree, files and processes, also on failure. The daemon owns org.peltd1 on a
# private system bus, and a client reads ListGroups and the Policy property every 0.2 s all along:
# every call must be answered.
#
#   soak.sh PELTD DUTY_CYCLE THREAD_CHURN SECONDS
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
duty=$2
churn=$3
seconds=${4:-60}
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/dbus-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin soak
cpuacct_root=/sys/fs/cgroup/cpuacct
bg_pids=()
# The metrics file too, rewritten every second as groups come and go: its own, in the scratch directory.
metrics_file=$tmp/metrics.prom

cleanup() {
        local p
        end_pids KILL "${bg_pids[@]}"
        # Anything still in the subtree (a workload of a temporary group) goes too.
        for p in $(cat "$cpuacct_root/$id"/*/tasks "$cpuacct_root/$id"/tasks 2>/dev/null); do
                kill -KILL "$p" 2>/dev/null
        done
        dbus_cleanup
}

[[ $mode == v1 ]] || { echo "the soak writes v1 paths"; exit 77; }
[[ $all_cpus != 0 ]] || { echo "FAIL: the soak needs two CPUs online"; exit 1; }

rss_kib() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$daemon_pid/status"; }
fds() { ls "/proc/$daemon_pid/fd" | wc -l; }
# fds other than the per-thread /proc ones (whose number follows the threads alive), and those.
other_fds() { find "/proc/$daemon_pid/fd" -mindepth 1 -printf '%l\n' | grep -v '^/proc/.*/task/' | sort | tee "$tmp/fds.$1" | wc -l; }
thread_fds() { find "/proc/$daemon_pid/fd" -mindepth 1 -printf '%l\n' | grep -c '^/proc/.*/task/'; }
# The sampler keeps fds for the threads it knows, the machine's (membership is decided per round).
machine_threads() { ls -d /proc/[0-9]*/task/[0-9]* 2>/dev/null | wc -l; }
alive() { kill -0 "$daemon_pid" 2>/dev/null; }

# The persistent groups: a steady workload, the churner, and an idle one; their values before.
cg_create_top "/$id" "$all_cpus"
for g in steady churn idle; do
        cg_create "/$id/$g" "$all_cpus"
done
"$duty" 2 10000 20 >/dev/null &
bg_pids+=($!)
cg_attach "/$id/steady" "$!"
"$churn" 300 2000 >/dev/null 2>"$tmp/churn.out" &
bg_pids+=($!)
churn_pid=$!
cg_attach "/$id/churn" "$churn_pid"
declare -A before_cpus before_shares
for g in steady churn idle; do
        before_cpus[$g]=$(cat "$cpuset_root/$id/$g/cpuset.cpus")
        before_shares[$g]=$(cat "$cpu_root/$id/$g/cpu.shares")
done

mkdir -m 0700 "$tmp/state"
dbus_start "$tmp" || { fail "no private bus"; exit 1; }
write_config power
start_daemon
wait_for 10 running || { fail "peltd did not start: $(cat "$log")"; exit 1; }

# Warm-up: history for every group, the first placements; then the quiet baseline.
warm=$((seconds / 6 > 5 ? seconds / 6 : 5))
sleep "$warm"
rss0=$(rss_kib)
fd0=$(other_fds 0)
echo "warm-up ${warm}s: RSS ${rss0} KiB, ${fd0} fds besides $(thread_fds) for threads"

# A bus client all along the churn: ListGroups and the Policy property, one line per answer.
(
        while :; do
                busctl --system --timeout=5 call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroups >/dev/null 2>>"$tmp/bus.err" &&
                        busctl --system --timeout=5 get-property org.peltd1 /org/peltd1 org.peltd1.Manager Policy >/dev/null 2>>"$tmp/bus.err" &&
                        echo ok || echo failed
                sleep 0.2
        done > "$tmp/bus.calls"
) &
bus_client_pid=$!
bg_pids+=($bus_client_pid)

# The churn: temporary groups every 0.5 s (each lives 1.5 s; every other one runs a workload for
# 1 s), and a policy flip by SIGHUP every 3 s.
policies=(power performance balanced)
end=$((SECONDS + seconds))
next_sample=$((SECONDS + 5))
n=0 flips=0 made=0
printf '%8s %10s %5s %7s\n' "t (s)" "RSS (KiB)" "fds" "groups" > "$tmp/curve"
while ((SECONDS < end)) && alive; do
        g=t$((n % 4))
        [[ -d $cpuacct_root/$id/$g ]] && { pkill -KILL -F "$tmp/$g.pid" 2>/dev/null; sleep 0.05; cg_remove "/$id/$g"; }
        cg_create "/$id/$g" "$all_cpus" && made=$((made + 1))
        if ((n % 2 == 0)); then
                "$duty" 1 10000 30 >/dev/null &
                echo $! > "$tmp/$g.pid"
                bg_pids+=($!)
                cg_attach "/$id/$g" "$!" 2>/dev/null
                disown "$!" # killed with its group, without a "Killed" line from the shell
        fi
        n=$((n + 1))
        if ((n % 6 == 0)); then
                flips=$((flips + 1))
                write_config "${policies[flips % 3]}"
                kill -HUP "$daemon_pid"
        fi
        if ((SECONDS >= next_sample)); then
                printf '%8d %10s %5s %7s\n' $((SECONDS - end + seconds)) "$(rss_kib)" "$(fds)" \
                        "$(find "$cpuacct_root/$id" -mindepth 1 -maxdepth 1 -type d | wc -l)" >> "$tmp/curve"
                next_sample=$((SECONDS + 5))
        fi
        sleep 0.5
done
alive || fail "peltd died during the churn: $(tail -n 20 "$log")"
kill -KILL "$bus_client_pid" 2>/dev/null
wait "$bus_client_pid" 2>/dev/null
bus_ok=$(grep -c '^ok$' "$tmp/bus.calls")
bus_failed=$(grep -c '^failed$' "$tmp/bus.calls")
if ((bus_ok > 0 && bus_failed == 0)); then
        pass "the bus answered all $bus_ok ListGroups and Policy reads during the churn"
else
        fail "bus calls during the churn: $bus_ok answered, $bus_failed failed: $(sort "$tmp/bus.err" | uniq -c | head -n 5)"
fi

# The quiet phase after: the temporary groups gone, back to power, two task rounds to forget them.
for i in 0 1 2 3; do
        pkill -KILL -F "$tmp/t$i.pid" 2>/dev/null
done
sleep 0.2
for i in 0 1 2 3; do
        cg_remove "/$id/t$i"
done
# Threads tracked (balanced): with the churner stopped (no thread born meanwhile), at most two fds
# for each thread alive on the machine after a few task rounds, none for ended ones...
write_config balanced
reload_daemon || fail "no reload logged after SIGHUP (balanced)"
hold_for 1 # threads born and ended while tracked
kill -STOP "$churn_pid"
wait_for 5 grep -q '^State:[[:space:]]*T' "/proc/$churn_pid/status" || fail "SIGSTOP: thread-churn did not stop"
hold_for 1.5 # task rounds that must let the ended threads' fds go
tfd1=$(thread_fds)
threads1=$(machine_threads)
kill -CONT "$churn_pid"
# ...and back to power, which tracks none: no thread fds at all, the others as before the churn.
write_config power
reload_daemon || fail "no reload logged after SIGHUP (power)"
no_thread_fds() { (($(thread_fds) == 0)); }
wait_for 5 no_thread_fds
rss1=$(rss_kib)
fd1=$(other_fds 1)
tfd2=$(thread_fds)
rss_max=$(awk 'NR > 1 && $2 > m { m = $2 } END { print m + 0 }' "$tmp/curve")
((rss1 > rss_max)) && rss_max=$rss1
cat "$tmp/curve"
echo "after the churn: RSS ${rss1} KiB (peak ${rss_max} KiB), ${fd1} fds besides $tfd2 for threads ($tfd1 for $threads1 threads when tracked); $made groups made, $flips policy flips, $(kill -0 "$churn_pid" && echo churning)"

growth=$((rss_max - rss0))
if ((growth < 1024)); then
        pass "RSS grew ${growth} KiB after the warm-up (under 1024)"
else
        fail "RSS grew ${growth} KiB after the warm-up (from $rss0 to a peak of $rss_max KiB)"
fi
if ((fd1 == fd0)); then
        pass "fds: $fd0 before the churn, $fd1 after it (besides the threads')"
else
        fail "fds: $fd0 before the churn, $fd1 after it (besides the threads'): $(diff "$tmp/fds.0" "$tmp/fds.1")"
fi
if ((tfd1 <= 2 * threads1)); then
        pass "thread fds: $tfd1 for $threads1 threads"
else
        fail "thread fds: $tfd1 for $threads1 threads on the machine: the fds of ended threads are kept"
fi
if ((tfd2 == 0)); then
        pass "thread fds: none once threads are not tracked"
else
        fail "thread fds: $tfd2 kept with threads not tracked"
fi

stop_daemon TERM
((daemon_status == 0)) || fail "peltd exited $daemon_status at SIGTERM"
kill -TERM "$churn_pid"
wait "$churn_pid" 2>/dev/null
bg_pids=("${bg_pids[0]}")
threads=$(sed -n 's/^thread-churn: \([0-9]*\) threads started/\1/p' "$tmp/churn.out")
echo "thread-churn started ${threads:-?} threads in $((warm + seconds + 3)) s"

for g in steady churn idle; do
        now_cpus=$(cat "$cpuset_root/$id/$g/cpuset.cpus")
        now_shares=$(cat "$cpu_root/$id/$g/cpu.shares")
        if [[ $now_cpus == "${before_cpus[$g]}" && $now_shares == "${before_shares[$g]}" ]]; then
                pass "/$id/$g back to cpus ${before_cpus[$g]}, shares ${before_shares[$g]}"
        else
                fail "/$id/$g: cpus $now_cpus shares $now_shares, was ${before_cpus[$g]} / ${before_shares[$g]}"
        fi
done
[[ -e $state ]] && fail "the state file is still there after a clean stop"
[[ -e $metrics_file ]] && fail "the metrics file is still there after a clean stop"

# Only the expected lines: start, reloads, placements and restores, the races of a group that
# vanishes between a read and a write (said at info or as a drop), and late rounds on a machine busy
# with other work (said once an episode).
unexpected=$(grep -v -E \
        -e '^peltd running: ' \
        -e '^Sampling threads (with the BPF task iterator|from /proc)' \
        -e '^The BPF task iterator does not show [0-9]+ of the [0-9]+ threads /proc lists, of [0-9]+ process(es)? \(.*\): their load is not tracked; SamplingBackend=proc reads them.$' \
        -e '^Owning org\.peltd1 on the system bus\.$' \
        -e '^A round took longer than its interval \([0-9]+ ms\); the next starts an interval later\. If this recurs, raise (Task)?SampleIntervalMSec= or the machine is overloaded\.$' \
        -e '^[0-9]+ groups? managed\.$' \
        -e '^Rounds on time again, after [0-9]+ late\.$' \
        -e '^Configuration reloaded: ' \
        -e '^Received SIGTERM' \
        -e '^Restoring [0-9]+ recorded original values' \
        -e '^Every recorded original value is restored' \
        -e "^Managing /$id/[^ ]+\.\$" \
        -e "^Restored (cpuset\.cpus|cpu\.shares) of /$id/[^ ]+: [^ ]+ -> [^ ]+\.\$" \
        -e "^/$id/[^ :]+: (CPUs|shares|weight) [^ ]+ -> [^ ]+ \(" \
        -e "^/$id/[^ ]+ is gone or no longer managed\.\$" \
        -e "^/$id/[^ ]+ was made again; managing the new group afresh\.\$" \
        -e "^(cpuset\.cpus|cpu\.shares) of /$id/[^ ]+ is gone, nothing to restore\.\$" \
        "$log" 2>/dev/null | grep -v '^$')
if [[ -z $unexpected ]]; then
        pass "the log holds only expected lines ($(wc -l < "$log") lines)"
else
        fail "unexpected log lines: $(echo "$unexpected" | sort | uniq -c | sort -rn | head -n 20)"
fi

((failures == 0)) || exit 1
echo "soak passed"
