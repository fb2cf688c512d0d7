#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# peltctl end to end: a private system bus configured as Debian's (tests/dbus-lib.sh), peltd started
# with --config-dir on a private cgroup subtree of the real kernel. Every command in text and with
# --json (parsed by jq, checked against the cgroup files and the daemon's own answers); status within
# 80 columns; persisting into the drop-in (its text, header, mode 0644 under umask 077, the other
# settings kept, "set-shares PATH 0", peltd reading it at reload and at start); --runtime writing
# nothing; uid 65534 refused (by peltctl before any call when persisting, by the daemon with
# --runtime); the interactive-authorization flag only from a terminal (a stand-in polkit); monitor;
# "peltd is not running"; bad usage; the bash completion. ListGroupDetails (keys, types, open to
# everyone), the OWNER column and the new JSON fields, "top --once" (text and --json), and peltctl
# against a daemon from before ListGroupDetails (a stand-in answering ListGroups only).
#
#   test-peltctl.sh PELTD PELTCTL DUTY_CYCLE FAKE_POLKIT COMPLETION FAKE_OLD_PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
peltctl=$2
duty=$3
fake_polkit=$4
completion=$5
fake_old_peltd=$6
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/dbus-lib.sh"
. "$here/../lib/daemon-lib.sh"
export LC_ALL=C.UTF-8

daemon_test_begin ctl
chmod 0755 "$tmp"
etc=$tmp/etc
dropin=$etc/peltd.conf.d/90-peltctl.conf
monitor_pid=
top_pid=
old_pid=
workload_pids=()
fail_log_lines=20
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
long=a-group-whose-name-is-long-enough-to-be-cut-in-a-table-of-eighty-columns.scope

stop_monitor() {
        [[ -n $monitor_pid ]] || return 0
        kill "$monitor_pid" 2>/dev/null
        wait "$monitor_pid" 2>/dev/null
        monitor_pid=
}

cleanup() {
        stop_monitor
        [[ -z $old_pid ]] || { kill "$old_pid" 2>/dev/null; wait "$old_pid" 2>/dev/null; }
        [[ -z $top_pid ]] || { kill "$top_pid" 2>/dev/null; wait "$top_pid" 2>/dev/null; }
        end_pids TERM "${workload_pids[@]}"
        dbus_cleanup
}

matches() { # TEXT PATTERN: TEXT matches the glob PATTERN
        # shellcheck disable=SC2053
        [[ $1 == $2 ]]
}

# run [--nobody] STATUS ARGS...: peltctl ARGS (stdin not a terminal); stdout in $out, stderr in $err.
run() {
        local pre=() want
        if [[ $1 == --nobody ]]; then pre=("${nobody[@]}"); shift; fi
        want=$1
        shift
        "${pre[@]}" "$peltctl" "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
        status=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
        if [[ $status != "$want" ]]; then
                fail "peltctl $*: exit $status, expected $want (stderr: $err)"
                return 1
        fi
        pass "peltctl $*: exit $want"
}
jqcheck() { # DESCRIPTION JSON FILTER...: jq -e FILTER on JSON
        local what=$1 json=$2
        shift 2
        if jq -e "$@" <<<"$json" > /dev/null 2>"$tmp/jq.err"; then pass "$what"; else fail "$what: $(cat "$tmp/jq.err") in ${json:0:400}"; fi
}
prop() { busctl --system get-property org.peltd1 /org/peltd1 org.peltd1.Manager "$1" 2>&1 | cut -d' ' -f2-; }
list_groups() { busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroups; }
# ListGroupDetails as JSON: one object a group, each value as its variant's "data".
list_details() {
        "${@}" busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroupDetails |
                jq -c '.data[0] | map(with_entries(.value |= .data))'
}
# The same with each value's D-Bus type.
detail_types() {
        busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroupDetails |
                jq -c '.data[0] | map(with_entries(.value |= .type)) | unique'
}
v1_shares() { [[ $mode == v1 ]] && echo "$1" || echo $(($1 * 100 / 1024)); }
dropin_sum() { if [[ -e $dropin ]]; then stat -c '%i %Y %s' "$dropin"; md5sum < "$dropin"; else echo none; fi; }
too_wide() { # the lines of stdin wider than 80 characters (this shell counts characters: C.UTF-8)
        local l
        while IFS= read -r l; do ((${#l} > 80)) && printf '%s\n' "$l"; done
        return 0
}
calls_logged() { grep -c -E '^(SetPolicy|SetGroupShares|Reload)\(' "$log"; }

start_placed() { # N: the daemon on --config-dir, its Nth start in this log, once it has placed the groups
        "$peltd" --config-dir "$etc" >> "$log" 2>&1 &
        daemon_pid=$!
        wait_for 10 running "$1" || fail "the daemon did not start"
        # Placed, past "learning its load" (the first second): reasons that stay.
        wait_for 10 bash -c "[[ \$(busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager ListGroups |
                jq '[.data[0][] | select(.[7] | test(\"^(performance|power|balanced): \"))] | length') == 4 ]]" ||
                fail "the daemon did not place the four groups"
}

polkit_conf "$tmp/polkit-bus.conf"
dbus_start "$tmp" "$tmp/polkit-bus.conf" || { echo "FAIL: no private bus"; exit 1; }

cg_create_top "/$id" "$all_cpus"
for g in a b "c d" "$long"; do cg_create "/$id/$g" "$all_cpus"; done
"$duty" 1 10000 20 > /dev/null &
workload_pids+=($!)
cg_attach "/$id/a" "$!"
orig_shares=$(shares_of a)

mkdir -m 0755 "$etc"
cat > "$etc/peltd.conf" <<EOF
[Daemon]
Policy=performance
CgroupRoot=/$id
SampleIntervalMSec=100
TaskSampleIntervalMSec=200
StateFile=$state
MetricsFile=
EOF
start_placed 1
groups_sorted=$(printf '%s\n' "/$id/a" "/$id/b" "/$id/c d" "/$id/$long" | jq -R . | jq -cs 'sort')

# ---- status ---------------------------------------------------------------------------------------
run 0 status
check "status: Policy" grep -qxF "      Policy: performance" "$tmp/out"
check "status: Backend" grep -qxF "     Backend: cgroupfs" "$tmp/out"
check "status: cgroup mode and root" grep -qxF " Cgroup mode: $mode, root /$id" "$tmp/out"
# SamplingBackend=auto: the BPF task iterator where it loads; the line at start says which.
sampling=$(sed -n -e 's/^Sampling threads with the BPF task iterator.*/bpf/p' -e 's/^Sampling threads from \/proc.*/proc/p' "$log")
check "status: sampling ($sampling, as the log says)" grep -qxF "    Sampling: $sampling; groups every 100 ms, threads every 200 ms" "$tmp/out"
check "status: dry run" grep -qxF "     Dry run: no" "$tmp/out"
ncpus=$("$peltd" --print-topology --json | jq '.cpus | length')
check "status: topology summary ($(grep Topology: "$tmp/out"))" \
        grep -qE "^    Topology: $ncpus CPUs?, 1 package, [0-9]+ cores?, [0-9]+ NUMA nodes?, [0-9]+ capacity class" "$tmp/out"
check "status: rounds and changes" grep -qE "^      Rounds: [0-9]+, [0-9]+ placement changes?$" "$tmp/out"
check "status: version" grep -qxF "     Version: $("$peltd" --version | cut -d' ' -f2)" "$tmp/out"
check "status: the table's header" grep -qE "^GROUP +UTIL +RUNNABLE +SHARES +CPUS +POLICY +OWNER$" "$tmp/out"
wide=$(too_wide < "$tmp/out")
check "status: every line within 80 columns${wide:+ ($wide)}" [ -z "$wide" ]
check "status: a's row: util ~0.2 CPUs, shares, CPUs, policy" \
        grep -qE "^/$id/a +0\.[0-4][0-9] +0\.[0-9]{2} +$orig_shares +$all_cpus +performance +-$" "$tmp/out"
check "status: c d's row" grep -qE "^/$id/c d +0\.[0-9]{2} +0\.[0-9]{2} +$orig_shares +$all_cpus +performance +-$" "$tmp/out"
check "status: the long path cut at its start, with its end kept" grep -qE "^…[^ ]*-eighty-columns\.scope +0\.00 " "$tmp/out"
reason=$(list_groups | jq -r --arg p "/$id/a" '.data[0][] | select(.[0] == $p) | .[7]')
check "status: a's reason under its row ($reason)" grep -qxF "    $reason" "$tmp/out"

run 0 --json status
json=$out
jqcheck "status --json: the properties in snake_case" "$json" --arg id "/$id" --arg mode "$mode" --arg v "$("$peltd" --version | cut -d' ' -f2)" \
        --arg sampling "$sampling" \
        '.policy == "performance" and .policies == ["power", "performance", "balanced"] and .dry_run == false and
         .cgroup_root == $id and .cgroup_mode == $mode and .backend == "cgroupfs" and .sampling_backend == $sampling and
         .sample_interval_usec == 100000 and .task_sample_interval_usec == 200000 and .rounds > 0 and
         (.changes | type) == "number" and .version == $v'
jqcheck "status --json: the groups" "$json" --argjson want "$groups_sorted" '[.groups[].path] | sort == $want'
jqcheck "status --json: every group placed by peltd (owner empty)" "$json" '[.groups[].owner] | unique == [""]'
jqcheck "status --json: a's cpus, shares and util as the cgroup files and the daemon say" "$json" --arg p "/$id/a" \
        --arg cpus "$(cpus_of a)" --argjson shares "$orig_shares" \
        '.groups[] | select(.path == $p) | .cpus == $cpus and .shares == $shares and .util > 50 and .util < 500 and .policy == "performance"'
"$peltd" --print-topology --json > "$tmp/topo.peltd"
check "status --json: the topology is GetTopology's document" bash -c "diff <(jq -S .topology <<<'$json') <(jq -S . '$tmp/topo.peltd')"

# ---- ListGroupDetails ------------------------------------------------------------------------------
details=$(list_details)
jqcheck "ListGroupDetails: the four groups" "$details" --argjson want "$groups_sorted" 'map(.path) | sort == $want'
types=$(detail_types)
jqcheck "ListGroupDetails: the keys and their types ($types)" "$types" \
        '. == [{"path":"s","util":"d","runnable":"d","load":"d","shares":"t","cpus":"s","policy":"s","reason":"s",
                "owner":"s","pressure_usec":"t","changes":"t","last_change_usec":"t"}]'
jqcheck "ListGroupDetails: the fields of ListGroups as ListGroups gives them" "$details" --argjson bus "$(list_groups)" \
        'map([.path, .shares, .cpus, .policy]) == ($bus.data[0] | map([.[0], .[4], .[5], .[6]]))'
jqcheck "ListGroupDetails: placed by peltd, so no owner" "$details" 'map(.owner) | unique == [""]'
check "ListGroupDetails: open to uid 65534" bash -c "[[ \$(${nobody[*]} busctl --system --json=short call org.peltd1 /org/peltd1 \
        org.peltd1.Manager ListGroupDetails | jq '.data[0] | length') == 4 ]]"
busctl --system introspect org.peltd1 /org/peltd1 org.peltd1.Manager > "$tmp/introspect" 2>&1
check "ListGroupDetails: in the introspection" grep -qE '^\.ListGroupDetails +method +- +aa\{sv\}' "$tmp/introspect"

# ---- groups, group --------------------------------------------------------------------------------
run 0 groups
check "groups: the table" grep -qE "^GROUP +UTIL +RUNNABLE +SHARES +CPUS +POLICY +OWNER$" "$tmp/out"
check "groups: four rows" [ "$(grep -cE " +(performance|-) +-$" "$tmp/out")" -eq 4 ]
wide=$(too_wide < "$tmp/out")
check "groups: within 80 columns${wide:+ ($wide)}" [ -z "$wide" ]
run 0 --json groups
bus=$(list_groups)
jqcheck "groups --json: the D-Bus fields in snake_case, in order" "$out" \
        'map(keys_unsorted) | unique == [["path","util","runnable","load","shares","cpus","policy","reason",
                                          "owner","pressure_usec","changes","last_change_usec"]]'
jqcheck "groups --json: path, shares, cpus, policy and reason as ListGroups says" "$out" --argjson bus "$bus" \
        'map([.path, .shares, .cpus, .policy, .reason]) == ($bus.data[0] | map([.[0], .[4], .[5], .[6], .[7]]))'
jqcheck "groups --json: the long path whole" "$out" --arg p "/$id/$long" 'map(.path) | index($p) != null'

run 0 group "/$id/c d"
check "group: its fields ($out)" bash -c "grep -qxF '       Group: /$id/c d' '$tmp/out' && grep -qxF '      Shares: $orig_shares' '$tmp/out' &&
        grep -qxF '        CPUs: $all_cpus' '$tmp/out' && grep -qxF '      Policy: performance' '$tmp/out' &&
        grep -qE '^        Util: 0\.[0-9]{2} CPUs$' '$tmp/out' && grep -qE '^      Reason: performance: ' '$tmp/out'"
check "group: its owner, pressure and changes (ListGroupDetails)" bash -c "grep -qxF '       Owner: - (peltd places it)' '$tmp/out' &&
        grep -qE '^    Pressure: [0-9]+\.[0-9]{2} s waited for a CPU$' '$tmp/out' && grep -qE '^     Changes: [0-9]+(, the last [0-9]+ s ago)?$' '$tmp/out'"
run 0 --json group "/$id/a"
gg=$(busctl --system --json=short call org.peltd1 /org/peltd1 org.peltd1.Manager GetGroup s "/$id/a")
jqcheck "group --json: one object, as GetGroup says, with ListGroupDetails' fields" "$out" --argjson gg "$gg" \
        '(keys_unsorted == ["path","util","runnable","load","shares","cpus","policy","reason",
                            "owner","pressure_usec","changes","last_change_usec"]) and
         ([.path, .shares, .cpus, .policy] == ($gg.data[0] | [.[0], .[4], .[5], .[6]]))'
run 1 group "/$id/nonexistent"
check "group of an unmanaged path: the daemon's message ($err)" matches "$err" "/$id/nonexistent is not a group peltd manages."
check "... and nothing on stdout" [ -z "$out" ]

# ---- topology, policy -----------------------------------------------------------------------------
run 0 --json topology
check "topology --json: the document, byte for byte as peltd --print-topology --json" cmp -s "$tmp/out" "$tmp/topo.peltd"
run 0 topology
"$peltd" --print-topology > "$tmp/topo.txt"
for label in "" "online CPUs" packages dies clusters cores "LLC groups" "NUMA nodes"; do
        if [[ -z $label ]]; then
                check "topology: the headline as peltd's" [ "$(head -n1 "$tmp/out")" = "$(head -n1 "$tmp/topo.txt")" ]
        else
                check "topology: '$label' as peltd's" [ "$(grep "^$label " "$tmp/out")" = "$(grep "^$label " "$tmp/topo.txt")" ]
        fi
done
check "topology: capacity" grep -qE "^capacity      [0-9]+: $all_cpus$" "$tmp/out"

run 0 policy
check "policy: the name alone" [ "$out" = performance ]
run 0 --json policy
jqcheck "policy --json" "$out" '. == {"policy": "performance", "policies": ["power", "performance", "balanced"]}'

# ---- bash completion ----------------------------------------------------------------------------
# complete WORDS...: what _peltctl offers for the last word, one a line (COMP_WORDS[0] is this peltctl).
complete_words() {
        bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
                 _peltctl; printf "%s\n" "${COMPREPLY[@]}"' complete "$completion" "$peltctl" "$@" | sort
}
check "completion: commands" [ "$(complete_words "" | tr '\n' ' ')" = "group groups monitor policy reload set-shares status top topology " ]
check "completion: --once for top" [ "$(complete_words top --o)" = --once ]
check "completion: 'se' is set-shares" [ "$(complete_words se)" = set-shares ]
check "completion: policy names" [ "$(complete_words policy "" | tr '\n' ' ')" = "balanced performance power " ]
check "completion: policy p..." [ "$(complete_words --json policy p | tr '\n' ' ')" = "performance power " ]
want=$(printf '%q\n' "/$id/a" "/$id/b" "/$id/c d" "/$id/$long" | sort | tr '\n' ' ')
check "completion: group paths from the daemon ($(complete_words group "" | tr '\n' ' '))" \
        [ "$(complete_words group "" | tr '\n' ' ')" = "$want" ]
check "completion: set-shares /…/c (quoted for the shell)" [ "$(complete_words set-shares "/$id/c")" = "/$id/c\\ d" ]
check "completion: set-shares after an escaped space" [ "$(complete_words set-shares "/$id/c\\ ")" = "/$id/c\\ d" ]
check "completion: nothing for the shares" [ -z "$(complete_words set-shares --runtime "/$id/a" "")" ]
check "completion: --runtime for policy" [ "$(complete_words policy --r)" = --runtime ]
check "completion: no --runtime for status" [ "$(complete_words status --r)" = "" ]
check "completion: options" [ "$(complete_words --c)" = --config-dir ]
check "completion: --config-dir takes a directory" [ "$(complete_words --config-dir "$tmp/et")" = "$etc" ]

# ---- monitor ------------------------------------------------------------------------------------
# start_monitor [--json]: peltctl monitor in the background, once it is listening.
start_monitor() {
        "$peltctl" "$@" monitor > "$tmp/monitor.out" 2> "$tmp/monitor.err" &
        monitor_pid=$!
        wait_for 5 grep -q "^Monitoring" "$tmp/monitor.err" || fail "monitor did not start: $(cat "$tmp/monitor.err")"
}
start_monitor
busctl --system emit /org/peltd1 org.peltd1.Manager PlacementChanged sssttss "/$id/forged" 0 1 1 1 power forged
run 0 policy power --runtime
wait_for 10 grep -q "/$id/a: " "$tmp/monitor.out" || fail "monitor: no line for a"
line=$(grep "/$id/a: " "$tmp/monitor.out" | head -n1)
reason=$(grep -A1 "/$id/a: " "$tmp/monitor.out" | sed -n 2p)
check "monitor: a packed by power: when, the group and its CPUs ($line), shares only when they change" \
        matches "$line" "[0-2][0-9]:[0-5][0-9]:[0-6][0-9] /$id/a: CPUs $all_cpus -> $(cpus_of a)"
check "monitor: the reason below, indented, its policy named once ($reason)" matches "$reason" "         power: [a-z]*"
check "monitor: every reason line fits 80 columns, wrapped (stdout not a terminal)" \
        bash -c "grep '^         [^ ]' '$tmp/monitor.out' | awk 'length(\$0) > 80 { bad = 1 } END { exit bad }'"
check "monitor: a signal from anyone but the daemon is not shown" bash -c "! grep -q forged '$tmp/monitor.out'"
kill -INT "$monitor_pid"
wait "$monitor_pid"
check "monitor: SIGINT, exit 0 (got $?)" [ $? -eq 0 ]
monitor_pid=

start_monitor --json
run 0 --runtime policy performance
wait_for 10 grep -q "\"/$id/a\"" "$tmp/monitor.out" || fail "monitor --json: no line for a"
jqcheck "monitor --json: one document a line, the signal's fields" "$(grep "\"/$id/a\"" "$tmp/monitor.out" | head -n1)" \
        --arg p "/$id/a" --arg all "$all_cpus" --argjson s "$orig_shares" \
        'keys_unsorted == ["path","old_cpus","cpus","old_shares","shares","policy","reason","timestamp"] and .path == $p and
         (.timestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$")) and
         .cpus == $all and .old_cpus != $all and .shares == $s and .policy == "performance" and (.reason | startswith("performance: "))'
check "monitor --json: every line is JSON" bash -c "jq -e . '$tmp/monitor.out' > /dev/null"
kill -TERM "$monitor_pid"
wait "$monitor_pid"
check "monitor: SIGTERM, exit 0 (got $?)" [ $? -eq 0 ]
monitor_pid=

# ---- changes and top --------------------------------------------------------------------------------
# a was packed by power and spread again by performance: two changes at least, the last one now.
now_usec=$(awk '{ printf "%.0f", $1 * 1000000 }' /proc/uptime)
details=$(list_details)
jqcheck "ListGroupDetails: a's changes and the time of the last (CLOCK_MONOTONIC, about $now_usec)" "$details" \
        --arg p "/$id/a" --argjson now "$now_usec" \
        '.[] | select(.path == $p) | .changes >= 2 and .last_change_usec > $now - 30000000 and .last_change_usec < $now + 2000000'
run 0 --json groups
jqcheck "groups --json: changes and last_change_usec as ListGroupDetails says" "$out" --argjson d "$details" \
        'map(select(.changes > 0) | [.path, .changes]) == ($d | map(select(.changes > 0) | [.path, .changes]))'
# top: one frame when stdout is not a terminal, busiest first (a is the only busy group).
run 0 top
check "top: the header ($(head -n1 "$tmp/out"))" \
        grep -qE "^policy performance, backend cgroupfs, [0-9]+ rounds, [0-9]+ placement changes?, 4 groups$" <(head -n1 "$tmp/out")
check "top: the columns" grep -qE "^GROUP +UTIL +RUN +CPUS +SHARES +OWNER +CHANGES +REASON$" "$tmp/out"
check "top: a first, its changes ($(sed -n 4p "$tmp/out"))" \
        grep -qE "^(/$id|…[^ ]*)/a +0\.[0-9]{2} +0\.[0-9]{2} +$all_cpus +$orig_shares +- +[0-9]+ +performance" <(sed -n 4p "$tmp/out")
check "top: four groups, a line each" [ "$(wc -l < "$tmp/out")" -eq 7 ]
wide=$(too_wide < "$tmp/out")
check "top: within 80 columns${wide:+ ($wide)}" [ -z "$wide" ]
run 0 top --once
check "top --once: one frame" [ "$(grep -c "^policy " "$tmp/out")" -eq 1 -a "$(wc -l < "$tmp/out")" -eq 7 ]
# On a terminal too: --once prints one frame and exits.
script -qec "$(printf '%q ' "$peltctl" top --once)" /dev/null > "$tmp/script.out" 2>&1
check "top --once on a terminal: one frame ($(head -c 200 "$tmp/script.out"))" grep -q "^GROUP .*REASON" "$tmp/script.out"
# Live on a terminal: drawn, and q quits (exit 0).
(sleep 2; printf q) | TERM=xterm timeout 20 script -qec "$(printf '%q ' "$peltctl" top)" /dev/null > "$tmp/live.out" 2>&1
check "top live: q quits, exit 0 (got $?)" [ $? -eq 0 ]
check "top live: a frame drawn" grep -q "CHANGES" "$tmp/live.out"
check "top live: the key said" grep -q "q: quit" "$tmp/live.out"
TERM=peltd-no-such-terminal script -qec "$(printf '%q ' "$peltctl" top)" /dev/null < /dev/null > "$tmp/live.out" 2>&1
check "top on a terminal it cannot drive: exit 1 (got $?)" [ $? -eq 1 ]
check "... saying so ($(head -c 200 "$tmp/live.out"))" grep -q 'Cannot drive the terminal "peltd-no-such-terminal"' "$tmp/live.out"
run 0 --json top
jqcheck "top --json: the header's figures and the groups, busiest first" "$out" --arg p "/$id/a" \
        '(keys_unsorted == ["policy","backend","rounds","changes","groups"]) and .policy == "performance" and
         .backend == "cgroupfs" and .rounds > 0 and (.groups | length) == 4 and .groups[0].path == $p and
         ([.groups[].util] | . == (sort | reverse))'

# ---- --runtime, and uid 65534 ---------------------------------------------------------------------
run 0 set-shares "/$id/b" 900 --runtime
wait_for 5 bash -c "[[ \$(cat '$cpu_root/$id/b/$shares_file') == $(v1_shares 900) ]]" || fail "--runtime: b's shares did not become 900"
check "--runtime writes no drop-in" [ ! -e "$etc/peltd.conf.d" ]
run 0 set-shares "/$id/b" 0 --runtime
wait_for 5 bash -c "[[ \$(cat '$cpu_root/$id/b/$shares_file') == $orig_shares ]]" || fail "--runtime 0: b's shares not back"

calls=$(calls_logged)
run --nobody 1 --config-dir "$etc" policy power
check "uid 65534 persisting: refused by peltctl ($err)" matches "$err" "Persisting needs root; use --runtime*"
run --nobody 1 --config-dir "$etc" set-shares "/$id/a" 300
check "uid 65534 persisting shares: refused by peltctl" matches "$err" "Persisting needs root; use --runtime*"
sleep 0.3
check "... before calling anything (no call logged), nothing changed" \
        [ "$(calls_logged)" = "$calls" -a "$(prop Policy)" = '"performance"' -a "$(shares_of a)" = "$orig_shares" -a ! -e "$etc/peltd.conf.d" ]
run --nobody 1 policy power --runtime
check "uid 65534 --runtime: the daemon's AccessDenied ($err)" matches "$err" "SetPolicy is not allowed: only root may change peltd's settings*"
run --nobody 1 set-shares "/$id/a" 300 --runtime
check "uid 65534 set-shares --runtime: AccessDenied" matches "$err" "SetGroupShares is not allowed: only root*"
run --nobody 1 reload
check "uid 65534 reload: AccessDenied" matches "$err" "Reload is not allowed: only root*"
run --nobody 0 status
check "uid 65534 may read" grep -q "Policy: performance" "$tmp/out"

# The interactive-authorization flag: set from a terminal only (polkit asked by the daemon).
polkit_start "$fake_polkit" yes "$tmp/polkit.out" || fail "fake polkit did not start"
run --nobody 0 policy balanced --runtime
check "polkit grants uid 65534: policy balanced" [ "$(prop Policy)" = '"balanced"' ]
check "stdin not a terminal: not interactive" grep -q "^CHECK system-bus-name :1\.[0-9]* org.peltd1.manage flags=0$" "$tmp/polkit.out"
"${nobody[@]}" script -qec "$(printf '%q ' "$peltctl" policy performance --runtime)" /dev/null > "$tmp/script.out" 2>&1
check "stdin a terminal: interactive ($(tail -n1 "$tmp/polkit.out"))" grep -q "flags=1$" "$tmp/polkit.out"
check "... and the change made" [ "$(prop Policy)" = '"performance"' ]
polkit_stop

# ---- Persisting -----------------------------------------------------------------------------------
umask_saved=$(umask)
umask 077
run 0 --config-dir "$etc" policy power
check "policy power: in force" [ "$(prop Policy)" = '"power"' ]
check "the drop-in: mode 0644 under umask 077 ($(stat -c %a "$dropin" 2>&1))" [ "$(stat -c %a "$dropin")" = 644 ]
check "its directory made, mode 0755 ($(stat -c %a "$etc/peltd.conf.d"))" [ "$(stat -c %a "$etc/peltd.conf.d")" = 755 ]
check "root's" [ "$(stat -c %u "$dropin")" = 0 ]
check "a header says peltctl manages it" grep -q "^# This file is managed by peltctl(1)" <(head -n1 "$dropin")
check "[Daemon] Policy=power" bash -c "grep -A1 -x '\[Daemon\]' '$dropin' | grep -qx Policy=power"
check "no temporary file left" [ "$(ls -A "$etc/peltd.conf.d")" = 90-peltctl.conf ]
# An operator's own lines, which peltctl keeps.
printf '# the operator was here\n' >> "$dropin"
run 0 --config-dir "$etc" set-shares "/$id/a" 500
wait_for 5 bash -c "[[ \$(cat '$cpu_root/$id/a/$shares_file') == $(v1_shares 500) ]]" || fail "a's shares did not become 500"
run 0 --config-dir "$etc" set-shares "/$id/c d" 300
umask "$umask_saved"
cat > "$tmp/want" <<EOF
$(head -n2 "$dropin")

[Daemon]
Policy=power
# the operator was here

[Group /$id/a]
Shares=500

[Group /$id/c d]
Shares=300
EOF
check "the drop-in: both settings, the operator's line kept ($(cat "$dropin"))" cmp -s "$tmp/want" "$dropin"
check "still 0644" [ "$(stat -c %a "$dropin")" = 644 ]
run 0 --config-dir "$etc" policy balanced
check "a second policy replaces the first" [ "$(grep -c '^Policy=' "$dropin")" = 1 -a "$(grep '^Policy=' "$dropin")" = Policy=balanced ]

# peltd reads the drop-in at Reload: b's shares persisted, taken back at runtime, come back.
run 0 --config-dir "$etc" set-shares "/$id/b" 700
run 0 --runtime set-shares "/$id/b" 0
wait_for 5 bash -c "[[ \$(cat '$cpu_root/$id/b/$shares_file') == $orig_shares ]]" || fail "b's runtime shares not taken back"
run 0 reload
wait_for 5 bash -c "[[ \$(cat '$cpu_root/$id/b/$shares_file') == $(v1_shares 700) ]]" ||
        fail "after reload, b's shares are not the drop-in's 700 ($(shares_of b))"
# "set-shares PATH 0" removes the line; the daemon forgets it at the next reload.
run 0 --config-dir "$etc" set-shares "/$id/a" 0
check "set-shares a 0: its section gone, the rest kept" \
        bash -c "! grep -q '/$id/a\]' '$dropin' && grep -qxF '[Group /$id/c d]' '$dropin' && grep -qx Shares=700 '$dropin'"
run 0 reload
wait_for 5 bash -c "[[ \$(cat '$cpu_root/$id/a/$shares_file') == $orig_shares ]]" || fail "after reload, a's shares not back to $orig_shares"

# --runtime leaves the file alone.
before=$(dropin_sum)
run 0 --config-dir "$etc" --runtime policy power
run 0 --config-dir "$etc" set-shares "/$id/c d" 400 --runtime
check "--runtime: the drop-in untouched" [ "$(dropin_sum)" = "$before" ]
# A refused call changes nothing: an unknown policy, shares out of range, an unmanaged group.
run 1 --config-dir "$etc" policy turbo
check "policy turbo: the daemon's InvalidArgs ($err)" matches "$err" 'Unknown policy "turbo"*'
run 1 --config-dir "$etc" set-shares "/$id/a" 1
check "shares 1: the daemon's message" matches "$err" "Shares 1 out of range*"
run 1 --config-dir "$etc" set-shares "/$id/none" 100
run 1 --config-dir "$etc" set-shares "/$id/a]b" 100
check "a path [Group] cannot name: refused before the call ($err)" matches "$err" "Cannot persist the shares of /$id/a]b*use --runtime."
run 1 --config-dir "$etc" set-shares "/$id/a\\x2d" 100
check "\\x2d is the byte '-' to the daemon ($err)" matches "$err" "/$id/a- is not a group peltd manages."
run 1 --config-dir "$etc" set-shares "/$id/a\\xff" 100
check "\\xff is the byte 0xff, named back in the same form ($err)" matches "$err" "/$id/a\\\\xff is not a group peltd manages."
run 1 --config-dir "$etc" set-shares "/$id/a"$'\xff' 100
check "a byte that is not UTF-8 on the command line: refused, with the form to write ($err)" \
        matches "$err" "/$id/a\\\\xff is not UTF-8: write each byte*"
check "refused calls: the drop-in untouched" [ "$(dropin_sum)" = "$before" ]
mv "$dropin" "$tmp/dropin.saved"
ln -s "$tmp/dropin.saved" "$dropin"
run 1 --config-dir "$etc" policy performance
check "a symlinked drop-in is refused ($err)" matches "$err" "Refusing $dropin: it is a symbolic link*"
check "... before the call" [ "$(prop Policy)" = '"power"' ]
rm "$dropin"
mv "$tmp/dropin.saved" "$dropin"
# The directory itself: a symlink planted in its place, or one that anyone may write to, is refused.
mv "$etc/peltd.conf.d" "$tmp/conf.d.saved"
mkdir -m 0777 "$tmp/planted"
ln -s "$tmp/planted" "$etc/peltd.conf.d"
run 1 --config-dir "$etc" policy performance
check "a symlinked drop-in directory is refused ($err)" matches "$err" "Refusing $etc/peltd.conf.d: it is a symbolic link*"
check "... nothing written through it" [ -z "$(ls -A "$tmp/planted")" ]
rm "$etc/peltd.conf.d"
mv "$tmp/conf.d.saved" "$etc/peltd.conf.d"
chmod 0777 "$etc/peltd.conf.d"
run 1 --config-dir "$etc" policy performance
check "a drop-in directory writable by others is refused ($err)" matches "$err" "Refusing $etc/peltd.conf.d: it is writable by group or others*"
chmod 0755 "$etc/peltd.conf.d"
check "... before the call" [ "$(prop Policy)" = '"power"' ]

# A new daemon reads it at start: policy balanced, c d's 300 (peltd.conf says performance).
stop_daemon
start_placed 2
check "restarted: the drop-in's policy" [ "$(prop Policy)" = '"balanced"' ]
wait_for 5 bash -c "[[ \$(cat '$cpu_root/$id/c d/$shares_file') == $(v1_shares 300) ]]" ||
        fail "restarted: c d's shares not the drop-in's 300 ($(shares_of "c d"))"

# ---- peltd is not running ----------------------------------------------------------------------
start_monitor
# top live on a terminal, its input a FIFO held open here (no key pressed), when the daemon stops.
mkfifo "$tmp/top.in"
exec 7<>"$tmp/top.in"
TERM=xterm script -qec "$(printf '%q ' "$peltctl" top)" /dev/null < "$tmp/top.in" > "$tmp/top-live.out" 2>&1 &
top_pid=$!
wait_for 5 grep -q CHANGES "$tmp/top-live.out" || fail "top live: no frame drawn"
stop_daemon
wait "$monitor_pid"
check "monitor: the daemon stopped, exit 1 (got $?)" [ $? -eq 1 ]
monitor_pid=
check "... saying so" grep -q "peltd stopped" "$tmp/monitor.err"
# Gone, or a zombie waiting for this shell's wait.
wait_for 5 bash -c "[[ ! -e /proc/$top_pid ]] || grep -q '^State:.*Z' /proc/$top_pid/status" ||
        fail "top live: still running after the daemon stopped"
wait "$top_pid"
check "top live: the daemon stopped, exit 1 (got $?)" [ $? -eq 1 ]
top_pid=
exec 7>&-
check "... saying so, once the terminal is put back" grep -q "peltd is not running" "$tmp/top-live.out"
before=$(dropin_sum)
for c in status groups "group /$id/a" topology policy "policy power" "policy power --runtime" "set-shares /$id/a 5" reload monitor \
        top; do
        # shellcheck disable=SC2086
        run 1 --config-dir "$etc" $c
        check "$c: peltd is not running ($err)" matches "$err" "peltd is not running*"
done
check "not running: the drop-in untouched" [ "$(dropin_sum)" = "$before" ]

# ---- A daemon from before ListGroupDetails ---------------------------------------------------------
"$fake_old_peltd" "/$id/old" > "$tmp/old.out" 2>&1 &
old_pid=$!
wait_for 5 grep -q READY "$tmp/old.out" || fail "the stand-in old daemon did not start: $(cat "$tmp/old.out")"
run 0 groups
check "old daemon: groups from ListGroups, no owner known ($(tail -n2 "$tmp/out" | head -n1))" \
        grep -qE "^/$id/old +0\.50 +0\.59 +1024 +0 +power +-$" "$tmp/out"
run 0 --json groups
jqcheck "old daemon: groups --json with ListGroups' fields only" "$out" --arg p "/$id/old" \
        '. == [{"path":$p,"util":512,"runnable":600,"load":1024,"shares":1024,"cpus":"0","policy":"power","reason":"power: packed"}]'
run 0 group "/$id/old"
check "old daemon: group from GetGroup, no owner line" bash -c "grep -qxF '      Policy: power' '$tmp/out' && ! grep -q Owner: '$tmp/out'"
run 0 --json group "/$id/old"
jqcheck "old daemon: group --json with GetGroup's fields only" "$out" 'keys_unsorted == ["path","util","runnable","load","shares","cpus","policy","reason"]'
run 1 group "/$id/none"
check "old daemon: group of another path, GetGroup's error ($err)" matches "$err" "/$id/none is not a group peltd manages."
run 0 top
check "old daemon: top, changes unknown ($(sed -n 4p "$tmp/out"))" grep -qE "^(/$id|…[^ ]*)/old +0\.50 +0\.59 +0 +1024 +- +- +power: pack" "$tmp/out"
kill "$old_pid"
wait "$old_pid" 2>/dev/null
old_pid=

# ---- Bad usage: exit 2, nothing on stdout, also without a bus ---------------------------------------
for args in "" "frobnicate" "--frob status" "status extra" "group" "group a b" "policy a b" "set-shares /x" \
        "set-shares /x 1 2" "set-shares /x abc" "set-shares /x -5" "set-shares /x 12k" "status --runtime" \
        "policy --runtime" "groups --runtime" "--config-dir" "status --once" "top extra" "top --runtime"; do
        # shellcheck disable=SC2086
        DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent run 2 $args
        check "bad usage '$args': a message, no output ($err)" [ -n "$err" -a -z "$out" ]
done
run 2 --config-dir "" status
run 0 --help
check "--help" matches "$out" "*Usage: peltctl*set-shares PATH N*"
run 0 --version
check "--version" [ "$out" = "peltctl $("$peltd" --version | cut -d' ' -f2)" ]

if ((failures)); then
        echo "$failures checks failed"
        exit 1
fi
echo "all peltctl checks passed"
