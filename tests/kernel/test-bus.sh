#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The D-Bus API on a private system bus configured as Debian's (deny by default, the project's
# conf/org.peltd1.conf included), with the daemon on a private cgroup subtree of the real kernel:
# every property and method as root; readers open and changes refused for uid 65534; invalid
# arguments; Reload with a broken file; PropertiesChanged and PlacementChanged; SetGroupShares
# reaching cpu.shares and restored at SIGTERM; the bus killed and started again; polkit (a stand-in,
# tests/fake-polkit.c) granting, refusing, asking for authentication and never answering.
#
#   test-bus.sh PELTD DUTY_CYCLE FAKE_POLKIT
set -u
shopt -s extglob
here=$(dirname "$(readlink -f "$0")")
peltd=$1
duty=$2
fake_polkit=$3
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/dbus-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin bus
chmod 0755 "$tmp"
monitor_pid=
workload_pids=()
fail_log_lines=30
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

cleanup() {
        end_pids TERM "$monitor_pid" "${workload_pids[@]}"
        dbus_cleanup
}

# call [--nobody] METHOD ARGS...: dbus-send's reply or "Error NAME: message" (stdout), its status.
call() {
        local pre=()
        if [[ $1 == --nobody ]]; then pre=("${nobody[@]}"); shift; fi
        "${pre[@]}" dbus-send --system --print-reply --reply-timeout=30000 --dest=org.peltd1 /org/peltd1 \
                "org.peltd1.Manager.$1" "${@:2}" 2>&1
}
prop() { # [--nobody] NAME: the value, as busctl prints it without the type
        local pre=()
        if [[ $1 == --nobody ]]; then pre=("${nobody[@]}"); shift; fi
        "${pre[@]}" busctl --system get-property org.peltd1 /org/peltd1 org.peltd1.Manager "$1" 2>&1 | cut -d' ' -f2-
}
matches() { # TEXT PATTERN: TEXT matches the glob PATTERN
        # shellcheck disable=SC2053
        [[ $1 == $2 ]]
}
is_error() { # NAME OUTPUT
        [[ $2 == *"Error org.freedesktop.DBus.Error.$1:"* ]]
}
owned() { busctl --system status org.peltd1 >/dev/null 2>&1; }
reloads() { grep -c '^Configuration reloaded' "$log"; }
reloaded() { [[ $(reloads) -gt $1 ]]; } # N: the log says a reload happened since it said N of them
policy_signals() { # N: the monitor saw at least N PropertiesChanged for Policy
        [[ $(grep -A6 'member=PropertiesChanged' "$tmp/signals" | grep -c 'string "Policy"') -ge $1 ]]
}
start_polkit() { # ANSWER
        polkit_start "$fake_polkit" "$1" "$tmp/polkit.out" || fail "fake polkit did not start: $(cat "$tmp/polkit.out")"
}

polkit_conf "$tmp/polkit-bus.conf"
dbus_start "$tmp" "$tmp/polkit-bus.conf" || { echo "FAIL: no private bus"; exit 1; }

cg_create_top "/$id" "$all_cpus"
for g in a b; do cg_create "/$id/$g" "$all_cpus"; done
"$duty" 1 10000 20 >/dev/null &
workload_pids+=($!)
cg_attach "/$id/a" "$!"
orig_shares=$(shares_of a)

write_config performance
start_daemon
dbus-monitor --system "type='signal',sender='org.peltd1'" > "$tmp/signals" 2>&1 &
monitor_pid=$!

# ---- The name is owned before READY=1, and every property reads as configured ------------------
wait_for 10 running || fail "the daemon did not start"
check "org.peltd1 owned before READY=1 (logged before 'peltd running')" \
        bash -c "grep -n -e '^Owning org.peltd1' -e '^peltd running' '$log' | head -n1 | grep -q Owning"
check "owned on the bus" owned
check "Policy" [ "$(prop Policy)" = '"performance"' ]
check "Policies" [ "$(prop Policies)" = '3 "power" "performance" "balanced"' ]
check "DryRun" [ "$(prop DryRun)" = false ]
check "Version" [ "$(prop Version)" = "\"$("$peltd" --version | cut -d' ' -f2)\"" ]
check "CgroupRoot" [ "$(prop CgroupRoot)" = "\"/$id\"" ]
check "CgroupMode" [ "$(prop CgroupMode)" = "\"$mode\"" ]
check "Backend" [ "$(prop Backend)" = '"cgroupfs"' ]
# SamplingBackend=auto: the BPF task iterator where it loads; the line at start says which.
sampling=$(sed -n -e 's/^Sampling threads with the BPF task iterator.*/bpf/p' -e 's/^Sampling threads from \/proc.*/proc/p' "$log")
check "SamplingBackend (\"$sampling\", as the log says)" [ "$(prop SamplingBackend)" = "\"$sampling\"" ]
check "SampleIntervalUSec" [ "$(prop SampleIntervalUSec)" = 100000 ]
check "TaskSampleIntervalUSec" [ "$(prop TaskSampleIntervalUSec)" = 200000 ]
r1=$(prop Rounds)
sleep 0.5
check "Rounds counts rounds ($r1, then $(prop Rounds))" [ "$(prop Rounds)" -gt "$r1" ]
check "Changes is a count" bash -c "[[ '$(prop Changes)' =~ ^[0-9]+$ ]]"

# ---- Readers -------------------------------------------------------------------------------------
wait_for 10 bash -c "busctl --system call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroups | grep -q 'performance: '" ||
        fail "ListGroups: no planned group"
lg=$(busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroups)
check "ListGroups lists a and b with their fields" bash -c "jq -e '.data[0] | length == 2 and
        (map(.[0]) == [\"/$id/a\", \"/$id/b\"]) and (.[0][4] == $orig_shares) and (.[0][5] == \"$all_cpus\") and
        (.[0][6] == \"performance\") and (.[0][7] | startswith(\"performance: \"))' <<<'$lg' >/dev/null"
check "ListGroups: a's util is its ~20% of a CPU (in 1/1024)" bash -c "jq -e '.data[0][0][1] > 100 and .data[0][0][1] < 500' <<<'$lg' >/dev/null"
gg=$(busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager GetGroup s "/$id/b")
check "GetGroup: one row of ListGroups" bash -c "jq -e '.type == \"(sdddtsss)\" and .data[0][0] == \"/$id/b\"' <<<'$gg' >/dev/null"
busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager GetTopology | jq -r '.data[0]' > "$tmp/topo.bus"
"$peltd" --print-topology --json > "$tmp/topo.cmd"
check "GetTopology is the --print-topology --json document" cmp -s "$tmp/topo.bus" "$tmp/topo.cmd"
check "introspection lists the contract" bash -c "busctl --system introspect org.peltd1 /org/peltd1 org.peltd1.Manager |
        grep -c -E '^\.(GetGroup|GetTopology|ListGroups|ListGroupDetails|Reload|SetGroupShares|SetPolicy|PlacementChanged) ' | grep -qx 8"

# ---- Invalid arguments: InvalidArgs, nothing changed ----------------------------------------------
out=$(call SetPolicy string:turbo)
check "SetPolicy turbo: InvalidArgs naming the policies ($out)" matches "$out" "*InvalidArgs:*turbo*power*"
out=$(call SetGroupShares string:/nonexistent uint64:100)
check "SetGroupShares on an unmanaged group: InvalidArgs" is_error InvalidArgs "$out"
out=$(call SetGroupShares string:"/$id/a" uint64:1)
check "shares 1: InvalidArgs" is_error InvalidArgs "$out"
out=$(call SetGroupShares string:"/$id/a" uint64:300000)
check "shares 300000: InvalidArgs" is_error InvalidArgs "$out"
out=$(call GetGroup string:/nonexistent)
check "GetGroup on an unmanaged group: InvalidArgs" is_error InvalidArgs "$out"
sleep 0.5
check "invalid calls changed nothing" [ "$(prop Policy)" = '"performance"' -a "$(shares_of a)" = "$orig_shares" ]

# ---- Reload and SIGHUP that change the policy: PropertiesChanged ---------------------------------
write_config balanced
out=$(call Reload)
check "Reload: the new policy" [ "$(prop Policy)" = '"balanced"' ]
write_config power
kill -HUP "$daemon_pid"
wait_for 5 bash -c "[[ \$(busctl --system get-property org.peltd1 /org/peltd1 org.peltd1.Manager Policy) == 's \"power\"' ]]" ||
        fail "SIGHUP: Policy did not become power"
write_config performance
kill -HUP "$daemon_pid"
wait_for 5 bash -c "[[ \$(busctl --system get-property org.peltd1 /org/peltd1 org.peltd1.Manager Policy) == 's \"performance\"' ]]" ||
        fail "SIGHUP: Policy did not become performance"
check "PropertiesChanged for Policy at Reload and at each SIGHUP (3)" wait_for 5 policy_signals 3
printf '[Daemon]\nPolicy=performance\nSampleIntervalMSec=soon\n' > "$tmp/broken.conf"
cp "$conf" "$tmp/good.conf"
cat "$tmp/broken.conf" > "$conf"
out=$(call Reload)
check "Reload with a broken file: InvalidArgs naming FILE:LINE ($out)" \
        matches "$out" "*InvalidArgs:*$conf:3:*SampleIntervalMSec*"
check "... and the old settings stay" [ "$(prop SampleIntervalUSec)" = 100000 -a "$(prop Policy)" = '"performance"' ]
cat "$tmp/good.conf" > "$conf"

# ---- As uid 65534 (no polkit on the bus): readers work, changes are refused -----------------------
check "uid 65534 reads Policy" [ "$(prop --nobody Policy)" = '"performance"' ]
out=$(call --nobody ListGroups)
check "uid 65534 calls ListGroups" matches "$out" "*/$id/a*"
out=$(call --nobody GetTopology)
check "uid 65534 calls GetTopology" matches "$out" "*online_cpus*"
out=$(call --nobody GetGroup string:"/$id/a")
check "uid 65534 calls GetGroup" matches "$out" "*/$id/a*"
for c in "SetPolicy string:power" "SetGroupShares string:/$id/a uint64:500" "Reload"; do
        # shellcheck disable=SC2086
        out=$(call --nobody $c)
        check "uid 65534: ${c%% *} is AccessDenied ($out)" matches "$out" "*AccessDenied:*only root*"
done
sleep 0.5
check "refused calls changed nothing" [ "$(prop Policy)" = '"performance"' -a "$(shares_of a)" = "$orig_shares" ]
grep -q "by uid 65534" "$log" && fail "a refused call was logged as accepted"

# ---- Changes as root: SetPolicy with PlacementChanged, SetGroupShares ------------------------------
out=$(call SetPolicy string:power)
check "SetPolicy power: Policy is power" [ "$(prop Policy)" = '"power"' ]
grep -q "^SetPolicy(\"power\") by uid 0, pid [0-9]" "$log" || fail "SetPolicy: no log line naming uid and pid"
wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/a/cpuset.cpus) =~ ^[0-9]+\$ ]]" || fail "power: a not packed onto one CPU"
wait_for 5 grep -q "member=PlacementChanged" "$tmp/signals" || fail "no PlacementChanged"
check "PlacementChanged names the group, old and new CPUs and the policy" bash -c "grep -A8 member=PlacementChanged '$tmp/signals' |
        tr -d '\n' | grep -q 'string \"/$id/a\"   string \"$all_cpus\"   string \"$(cpus_of a)\".*string \"power\"'"
write_config balanced
n=$(reloads)
out=$(call Reload)
wait_for 5 reloaded "$n" || fail "Reload: no reload logged ($out)"
check "SetPolicy holds across Reload" [ "$(prop Policy)" = '"power"' ]
n=$(reloads)
kill -HUP "$daemon_pid"
wait_for 5 reloaded "$n" || fail "SIGHUP: no reload logged within 5 s"
check "SetPolicy holds across SIGHUP" [ "$(prop Policy)" = '"power"' ]

out=$(call SetGroupShares string:"/$id/a" uint64:500)
wait_for 5 bash -c "[[ \$(cat $cpu_root/$id/a/$shares_file) == $([[ $mode == v1 ]] && echo 500 || echo 48) ]]" ||
        fail "SetGroupShares 500 did not reach $shares_file ($(shares_of a))"
check "GetGroup shows the runtime shares" bash -c "busctl --system call org.peltd1 /org/peltd1 org.peltd1.Manager GetGroup s /$id/a | grep -q ' 500 '"
out=$(call SetGroupShares string:"/$id/a" uint64:0)
wait_for 5 bash -c "[[ \$(cat $cpu_root/$id/a/$shares_file) == $orig_shares ]]" || fail "shares 0 did not put a's shares back"
out=$(call SetGroupShares string:"/$id/a" uint64:700)
wait_for 5 bash -c "[[ \$(cat $cpu_root/$id/a/$shares_file) == $([[ $mode == v1 ]] && echo 700 || echo 68) ]]" ||
        fail "SetGroupShares 700 did not reach $shares_file"

# ---- The bus goes away and comes back: placing goes on, the name is owned again -------------------
dbus_stop
cg_create "/$id/c" "$all_cpus"
wait_for 10 bash -c "[[ \$(cat $cpuset_root/$id/c/cpuset.cpus) =~ ^[0-9]+\$ ]]" ||
        fail "without the bus, a new group was not placed"
grep -q "Lost the system bus" "$log" || fail "losing the bus was not logged"
kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon died with the bus"
kill "$monitor_pid" 2>/dev/null; wait "$monitor_pid" 2>/dev/null
dbus_start "$tmp" "$tmp/polkit-bus.conf" || fail "the bus did not start again"
dbus-monitor --system "type='signal',sender='org.peltd1'" > "$tmp/signals" 2>&1 &
monitor_pid=$!
wait_for 10 owned || fail "org.peltd1 not owned again after the bus came back"
check "after the bus came back: ListGroups lists the new group" \
        bash -c "busctl --system call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroups | grep -q '/$id/c'"
grep -q "Connected to the system bus again" "$log" || fail "the reconnection was not logged"

# ---- polkit: granted, refused, authentication needed, no answer ------------------------------------
start_polkit yes
out=$(call --nobody SetPolicy string:performance)
check "polkit yes: uid 65534 may SetPolicy" [ "$(prop Policy)" = '"performance"' ]
grep -q "^SetPolicy(\"performance\") by uid 65534" "$log" || fail "the accepted change was not logged with uid 65534"
check "polkit was asked for org.peltd1.manage for the caller's bus name, not interactively" \
        grep -q "^CHECK system-bus-name :1\.[0-9]* org.peltd1.manage flags=0$" "$tmp/polkit.out"
"${nobody[@]}" busctl --system --allow-interactive-authorization=yes call org.peltd1 /org/peltd1 org.peltd1.Manager \
        SetGroupShares st "/$id/b" 300 >/dev/null 2>&1
check "the caller's interactive flag reaches polkit" grep -q "flags=1$" "$tmp/polkit.out"
for a in no challenge; do
        start_polkit "$a"
        out=$(call --nobody SetPolicy string:power)
        check "polkit $a: AccessDenied ($out)" is_error AccessDenied "$out"
done
check "refused by polkit: the policy stays" [ "$(prop Policy)" = '"performance"' ]
start_polkit never
r1=$(prop Rounds)
# 16 calls of one caller wait for polkit at once; a 17th is refused at once.
pending=()
for i in $(seq 16); do
        (
                t0=$(date +%s%N)
                o=$(call --nobody SetPolicy string:power)
                echo "$((($(date +%s%N) - t0) / 1000000000)) $o" >"$tmp/pending.$i"
        ) &
        pending+=($!)
done
checks() { grep -c '^CHECK' "$tmp/polkit.out"; }
wait_for 5 bash -c "(( \$(grep -c '^CHECK' '$tmp/polkit.out') >= 16 ))"
out=$(call --nobody SetPolicy string:power)
check "a 17th call while 16 wait for polkit: refused at once ($out)" matches "$out" "*AccessDenied:*too many pending requests*"
check "... and never sent to polkit ($(checks) checks)" [ "$(checks)" -eq 16 ]
wait "${pending[@]}"
r2=$(prop Rounds)
out=$(cat "$tmp/pending.1")
check "polkit never answers: AccessDenied after about 10 s (${out%% *} s: ${out#* })" \
        matches "$out" "@(9|10|11|12|13) *AccessDenied:*10 s*"
late=$(cat "$tmp"/pending.* | grep -vc "AccessDenied:.*10 s")
check "all 16 waiting calls answered the same ($late otherwise)" [ "$late" -eq 0 ]
check "rounds went on while polkit was asked ($r1 -> $r2)" [ $((r2 - r1)) -ge 50 ]
check "no answer: the policy stays" [ "$(prop Policy)" = '"performance"' ]
polkit_stop

# ---- SIGTERM: every original back, including the runtime shares -----------------------------------
stop_daemon TERM
check "SIGTERM: exit 0" [ "$daemon_status" -eq 0 ]
check "SIGTERM: a's shares back to $orig_shares ($(shares_of a))" [ "$(shares_of a)" = "$orig_shares" ]
check "SIGTERM: cpusets back" [ "$(cpus_of a)" = "$all_cpus" -a "$(cpus_of b)" = "$all_cpus" -a "$(cpus_of c)" = "$all_cpus" ]
check "SIGTERM: the state file is gone" [ ! -e "$state" ]

if ((failures)); then
        echo "$failures checks failed"
        exit 1
fi
echo "all bus checks passed"
