#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The metrics file of a daemon on a private cgroup subtree of the real kernel, started under
# umask 077: it appears with mode 0644; every name made in its directory (watched with inotify,
# which sees each one, however short-lived) is its temporary file, which does not end in ".prom";
# it is replaced at most once a second though rounds run ten times as often; its values (groups
# managed, threads tracked, a busy group's util, a group named with a quote, a backslash and a byte that is not
# UTF-8, rounds growing, no failed write, every owner's held CPUs, foreign writes and pressure per
# group) are what the daemon sees; promtool finds nothing to say; node_exporter's
# textfile collector serves the same samples with node_textfile_scrape_error 0; a removed group
# leaves the file; a directory gone is one warning and the file comes back with it; SIGHUP
# moving MetricsFile= removes the old file; a clean stop removes the file.
#
#   test-metrics.sh PELTD DUTY_CYCLE
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
duty=$2
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin metrics
chmod 0755 "$tmp"
dir=$tmp/metrics
file=$dir/peltd.prom
exporter_pid=
watch_pid=
workload_pids=()

# What peltd reports: v1 cpu.shares and cpuset.cpus; v2 cpu.weight converted, the effective set.
reported_shares() {
        if [[ $mode == v1 ]]; then cat "$cpu_root/$id/$1/cpu.shares"; else echo $(($(cat "$cpu_root/$id/$1/cpu.weight") * 1024 / 100)); fi
}
cpus_file=cpuset.cpus
[[ $mode == v1 ]] || cpus_file=cpuset.cpus.effective

cleanup() {
        end_pids KILL "$exporter_pid"
        end_pids TERM "$watch_pid" "${workload_pids[@]}"
}

# Not daemon-lib.sh's fail: the log and the file follow the first failure only.
fail() {
        echo "FAIL: $*"
        if ((failures++ == 0)); then
                echo "---- peltd log ----"
                tail -n 20 "$log" 2>/dev/null
                echo "---- $file ----"
                cat "$file" 2>/dev/null
                echo "-------------------"
        fi
}

for tool in promtool prometheus-node-exporter curl inotifywait; do
        command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/lib.sh installs it)"; exit 1; }
done

# value NAME [LABELS] [FILE]: a sample's value in the file ("" when there is none).
value() {
        local key=$1
        [[ -z ${2:-} ]] || key+="{$2}"
        # ENVIRON, not -v: awk would take the backslashes of a label value for escapes.
        KEY=$key awk '$1 == ENVIRON["KEY"] { print $2; exit }' "${3:-$file}"
}
# A group's label, as the format writes it: bytes that are not UTF-8 as \xNN, then \ and " escaped.
label() { printf 'group="%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"; }

# ---- The subtree: a busy group, an idle one, one named with awkward bytes, one that goes away ----
cg_create_top "/$id" "$all_cpus"
for g in busy idle gone; do cg_create "/$id/$g" "$all_cpus"; done
# The kernel refuses a newline in a cgroup name (EINVAL: /proc/PID/cgroup is line-based); the
# renderer's \n escaping is checked by tests/unit/test-metrics.c. Used here only where it is allowed.
odd='q"uote\back'$'\xff'
if mkdir "$cpu_root/$id/n"$'\n'"l" 2>/dev/null; then
        rmdir "$cpu_root/$id/n"$'\n'"l"
        odd+=$'\n'nl
fi
cg_create "/$id/$odd" "$all_cpus"
groups=4
"$duty" 1 10000 50 >/dev/null &
workload_pids+=($!)
cg_attach "/$id/busy" "$!"
# The name as peltd writes it: the backslash, 0xff and a newline as \xNN.
odd_text=${odd//\\/\\x5c}
odd_text=${odd_text//$'\xff'/\\xff}
odd_label=$(label "/$id/${odd_text//$'\n'/\\x0a}")

mkdir -m 0755 "$dir"
metrics_file=$file
write_config power TaskTracking=yes

# Every name made, moved or removed in the directory, as it happens (appended to $tmp/events).
watch_dir() {
        if [[ -n $watch_pid ]]; then
                kill "$watch_pid"
                wait "$watch_pid" 2>/dev/null
        fi
        : > "$tmp/inotify.err"
        inotifywait -m -e create -e moved_from -e moved_to -e delete --format '%e %f' "$dir" >> "$tmp/events" 2>"$tmp/inotify.err" &
        watch_pid=$!
        wait_for 5 grep -q "Watches established" "$tmp/inotify.err" || fail "inotifywait: $(cat "$tmp/inotify.err")"
}
watch_dir

(umask 077 && exec "$peltd" --config "$conf") >>"$log" 2>&1 &
daemon_pid=$!

# ---- The file: there, 0644 whatever the umask, promtool silent ----------------------------------
if wait_for 10 test -f "$file"; then
        file_mode=$(stat -c %a "$file")
        check "the file appears, mode $file_mode (daemon under umask 077)" [ "$file_mode" = 644 ]
else
        fail "no metrics file after 10 s"
fi

# A few seconds of history: PELT averages settle, the power policy packs.
wait_for 10 bash -c "[[ \$(awk '\$1 == \"peltd_rounds_total{kind=\\\"task\\\"}\" { print \$2 }' '$file') -ge 15 ]]"

promtool check metrics < "$file" > "$tmp/promtool.out" 2>&1
rc=$?
check "promtool check metrics: exit $rc, nothing said ($(wc -c < "$tmp/promtool.out") bytes)" \
        bash -c "[[ $rc -eq 0 && ! -s '$tmp/promtool.out' ]]"
[[ -s $tmp/promtool.out ]] && cat "$tmp/promtool.out"

# ---- Values --------------------------------------------------------------------------------------
n=$(value peltd_groups_managed)
check "peltd_groups_managed $n (the subtree has $groups groups)" [ "$n" = "$groups" ]
check "peltd_build_info names version $("$peltd" --version | cut -d' ' -f2)" \
        [ "$(value peltd_build_info "version=\"$("$peltd" --version | cut -d' ' -f2)\"")" = 1 ]
check "peltd_policy_info{policy=\"power\"} 1" [ "$(value peltd_policy_info 'policy="power"')" = 1 ]
# Every thread of the machine (TaskTracking=yes): as many as /proc shows, give or take those that came
# and went, less those a kernel hides from the BPF task iterator (said at start, when it does).
# Threads come and go (the sanitizer build runs its tools slowly, kworkers start and stop): the count
# is compared afresh with each new file, for up to 5 s.
# Threads a kernel hides from the BPF task iterator: said at start, at debug level when only PID 1's
# (a sandbox's init): asked of a one-shot run at that level.
hidden=$("$peltd" --config "$conf" --log-level debug --once 1 2>&1 >/dev/null |
        sed -n 's/^The BPF task iterator does not show \([0-9]*\) of the .*/\1/p')
threads_agree() {
        t=$(value peltd_threads_tracked) machine=$(ls -d /proc/[0-9]*/task/[0-9]* | wc -l)
        visible=$((machine - ${hidden:-0}))
        (( ${t:-0} >= visible * 8 / 10 && ${t:-0} <= visible * 12 / 10 ))
}
wait_for 5 threads_agree
check "peltd_threads_tracked $t, the machine has $machine threads${hidden:+, $hidden of them hidden from the BPF task iterator}" \
        threads_agree
u=$(value peltd_group_util_cpus "group=\"/$id/busy\"")
# Wide: the machine is shared, and a late wakeup bunches the thread's runs up.
check "busy (one thread, 50% of every 10 ms): peltd_group_util_cpus $u in 0.3..0.8" \
        awk -v u="$u" 'BEGIN { exit !(u != "" && u >= 0.3 && u <= 0.8) }'
u=$(value peltd_group_util_cpus "group=\"/$id/idle\"")
check "idle: peltd_group_util_cpus $u below 0.02" awk -v u="$u" 'BEGIN { exit !(u != "" && u < 0.02) }'
check "the odd group's label: $odd_label (\\xNN, then \\\\ and \\\" escaped)" \
        grep -qxF "peltd_group_shares{$odd_label} $(reported_shares "$odd")" "$file"
# The file may be up to a second behind the cpuset and the log: these wait for it to catch up.
cpus_match() {
        set=$(cat "$cpuset_root/$id/busy/$cpus_file")
        c=$(value peltd_group_cpus "group=\"/$id/busy\"")
        [[ $c == "$(awk -F, '{ n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }' <<< "$set")" ]]
}
check "peltd_group_cpus of busy as many as its $cpus_file" wait_for 5 cpus_match
echo "    ($c in the file, $cpus_file $set)"
changes_match() {
        p=$(value peltd_group_placement_changes_total "group=\"/$id/busy\"")
        logged=$(grep -c "^/$id/busy: CPUs " "$log")
        [[ $p == "$logged" && $p -ge 1 ]]
}
check "busy, placed by power: peltd_group_placement_changes_total as many as the log's change lines" wait_for 5 changes_match
echo "    (${p:-none} in the file, $logged in the log)"
# Owners, held CPUs, failed writes, foreign writes and pressure: this subtree's groups are peltd's,
# and every write of a healthy run is taken.
check "peltd_placement_errors_total 0 (no write failed)" [ "$(value peltd_placement_errors_total)" = 0 ]
held_owners=$(sed -n 's/^peltd_cpus_held{owner="\([a-z]*\)"} [0-9][0-9]*$/\1/p' "$file" | tr '\n' ' ')
check "peltd_cpus_held: every owner, a count each ($held_owners)" [ "$held_owners" = "kubelet runtime systemd partition affinity other " ]
check "peltd_group_foreign_writes_total of busy: 0" [ "$(value peltd_group_foreign_writes_total "group=\"/$id/busy\"")" = 0 ]
n=$(grep -c '^peltd_group_foreign_writes_total{' "$file")
check "peltd_group_foreign_writes_total for every group ($n)" [ "$n" = "$groups" ]
p=$(value peltd_group_cpu_pressure_seconds_total "group=\"/$id/busy\"")
check "peltd_group_cpu_pressure_seconds_total of busy: a number of seconds ($p)" grep -qE '^[0-9]+(\.[0-9]+)?$' <<< "$p"
check "peltd_group_owner_info: no group here is owned elsewhere" bash -c "! grep -q '^peltd_group_owner_info' '$file'"
for f in peltd_placement_errors_total peltd_cpus_held peltd_group_foreign_writes_total peltd_group_cpu_pressure_seconds_total; do
        check "$f: HELP and TYPE" bash -c "grep -q '^# HELP $f ' '$file' && grep -qE '^# TYPE $f (counter|gauge)$' '$file'"
done
# Packed on one CPU (power, unless a burst of demand widened it), busy costs less than spread by the model.
cp "$file" "$tmp/energy.prom"
e=$(value peltd_energy_estimate "" "$tmp/energy.prom") s=$(value peltd_energy_estimate_spread "" "$tmp/energy.prom")
c=$(value peltd_group_cpus "group=\"/$id/busy\"" "$tmp/energy.prom")
check "peltd_energy_estimate $e, peltd_energy_estimate_spread $s, busy on $c CPUs: less when packed, never more" \
        awk -v e="$e" -v s="$s" -v c="$c" 'BEGIN { exit !(e != "" && s != "" && e > 0 && (c == 1 ? e < s : e <= s)) }'

# The counters of a later write of the file (at most one a second) against this one's.
cp "$file" "$tmp/a.prom"
t0=$(date +%s%N)
ga=$(value peltd_rounds_total 'kind="group"' "$tmp/a.prom") ta=$(value peltd_rounds_total 'kind="task"' "$tmp/a.prom")
sa=$(value peltd_sampling_cpu_seconds_total "" "$tmp/a.prom") ma=$(value peltd_metrics_cpu_seconds_total "" "$tmp/a.prom")
counters_grown() {
        cp "$file" "$tmp/b.prom"
        gb=$(value peltd_rounds_total 'kind="group"' "$tmp/b.prom") tb=$(value peltd_rounds_total 'kind="task"' "$tmp/b.prom")
        sb=$(value peltd_sampling_cpu_seconds_total "" "$tmp/b.prom") mb=$(value peltd_metrics_cpu_seconds_total "" "$tmp/b.prom")
        awk -v ga="$ga" -v gb="$gb" -v ta="$ta" -v tb="$tb" -v sa="$sa" -v sb="$sb" -v ma="$ma" -v mb="$mb" \
                'BEGIN { exit !(gb > ga && tb > ta && sb > sa && sa > 0 && mb > ma && ma > 0 && mb < sb) }'
}
wait_for 5 counters_grown
check "a write $((($(date +%s%N) - t0) / 1000000)) ms later: rounds group $ga -> $gb, task $ta -> $tb; sampling CPU ${sa}s -> ${sb}s; metrics CPU ${ma}s -> ${mb}s" \
        awk -v ga="$ga" -v gb="$gb" -v ta="$ta" -v tb="$tb" -v sa="$sa" -v sb="$sb" -v ma="$ma" -v mb="$mb" \
        'BEGIN { exit !(gb > ga && tb > ta && sb > sa && sa > 0 && mb > ma && ma > 0 && mb < sb) }'

# ---- At most once a second, though a round comes every 100 ms ---------------------------------
w0=$(grep -c "^MOVED_TO peltd.prom$" "$tmp/events")
t0=$(date +%s%N)
sleep 5
w1=$(grep -c "^MOVED_TO peltd.prom$" "$tmp/events")
t1=$(date +%s%N)
secs=$(((t1 - t0) / 1000000))
check "$((w1 - w0)) writes in $secs ms (at most one a second, and at least one every 2 s)" \
        bash -c "(( $((w1 - w0)) <= $secs / 1000 + 1 && $((w1 - w0)) * 2000 >= $secs ))"

# ---- node_exporter's textfile collector serves the same samples -------------------------------
for _ in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 40000))
        prometheus-node-exporter --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
                --collector.textfile --collector.textfile.directory="$dir" > "$tmp/exporter.log" 2>&1 &
        exporter_pid=$!
        wait_for 5 bash -c "curl -sf 'http://127.0.0.1:$port/metrics' >/dev/null || ! kill -0 $exporter_pid 2>/dev/null"
        kill -0 "$exporter_pid" 2>/dev/null && break
        wait "$exporter_pid" 2>/dev/null # the port was taken: another one
        exporter_pid=
done
if [[ -z $exporter_pid ]]; then
        fail "node_exporter did not start: $(tail -n 3 "$tmp/exporter.log")"
else
        # Stopped, the daemon leaves the file as it is: the scrape and the copy are the same data.
        kill -STOP "$daemon_pid"
        wait_for 5 grep -q '^State:[[:space:]]*T' "/proc/$daemon_pid/status" || fail "SIGSTOP: peltd did not stop"
        cp "$file" "$tmp/scraped-file.prom"
        curl -sf "http://127.0.0.1:$port/metrics" > "$tmp/scrape.txt"
        rc=$?
        kill -CONT "$daemon_pid"
        check "node_exporter (127.0.0.1:$port) answers (curl exit $rc)" [ "$rc" = 0 ]
        err=$(value node_textfile_scrape_error "" "$tmp/scrape.txt")
        check "node_textfile_scrape_error $err" [ "$err" = 0 ]
        # Every peltd sample of the file, in the scrape, with the same value (Go may spell a number otherwise).
        diffs=$(awk 'FNR == NR { if ($1 ~ /^peltd_/) { want[$1] = $2; n++ } next }
                     $1 ~ /^peltd_/ { got[$1] = $2; m++ }
                     END {
                        for (k in want)
                                if (!(k in got)) print "missing " k
                                else if (got[k] + 0 != want[k] + 0 && (got[k] - want[k]) ^ 2 > 1e-18 * want[k] ^ 2) print k " " want[k] " != " got[k]
                        if (m != n) print m " samples scraped, " n " in the file"
                     }' "$tmp/scraped-file.prom" "$tmp/scrape.txt")
        check "the scrape holds every one of the file's $(grep -c '^peltd_' "$tmp/scraped-file.prom") peltd samples, same values" \
                [ -z "$diffs" ]
        [[ -z $diffs ]] || echo "$diffs" | head -n 20
        check "the scrape's HELP and TYPE of peltd_group_util_cpus are the file's" \
                bash -c "grep -xF '# TYPE peltd_group_util_cpus gauge' '$tmp/scrape.txt' >/dev/null &&
                         grep -F '# HELP peltd_group_util_cpus ' '$tmp/scrape.txt' | grep -qxF \"\$(grep -F '# HELP peltd_group_util_cpus ' '$tmp/scraped-file.prom')\""
        echo "---- scrape excerpt ----"
        grep -E "^(node_textfile|peltd_(build_info|rounds_total|groups_managed|sampling|energy|group_util_cpus))" "$tmp/scrape.txt"
        echo "------------------------"
        kill "$exporter_pid"
        wait "$exporter_pid" 2>/dev/null
        exporter_pid=
fi

# ---- A group removed leaves the file ------------------------------------------------------------
cg_remove "/$id/gone"
if wait_for 5 bash -c "! grep -qF '\"/$id/gone\"' '$file' && grep -qx 'peltd_groups_managed $((groups - 1))' '$file'"; then
        pass "/$id/gone removed: its samples left the file, peltd_groups_managed $((groups - 1))"
else
        fail "/$id/gone removed: $(grep -cF "\"/$id/gone\"" "$file") samples left, $(grep ^peltd_groups_managed "$file")"
fi

# ---- The directory gone: said once, rounds go on, the file comes back with it -------------------
rounds() { # FILE: group and task rounds
        echo $(($(value peltd_rounds_total 'kind="group"' "$1") + $(value peltd_rounds_total 'kind="task"' "$1")))
}
mv "$dir" "$dir.away"
# The next write fails and is said; the writes that fail after it for a while are not.
wait_for 5 grep -q "Failed to write the metrics file $file" "$log" || fail "the directory gone: no warning"
hold_for 2
mkdir -m 0755 "$dir"
watch_dir
if wait_for 5 test -f "$file"; then
        said=$(grep -c "Failed to write the metrics file $file" "$log")
        again=$(grep -c "The metrics file $file is written again" "$log")
        r0=$(rounds "$dir.away/peltd.prom") r1=$(rounds "$file")
        check "its directory gone: $said warning, $again line when back; rounds went on ($r0 -> $r1)" \
                bash -c "(( $said == 1 && $again == 1 && $r1 >= $r0 + 20 ))"
else
        fail "the directory made again: no file after 5 s"
fi

# ---- SIGHUP moving MetricsFile= removes the old file ---------------------------------------------
mkdir -m 0755 "$tmp/moved"
metrics_file=$tmp/moved/peltd.prom
write_config power TaskTracking=yes
kill -HUP "$daemon_pid"
check "SIGHUP with another MetricsFile=: written there, the old file removed" \
        wait_for 5 bash -c "[[ -f '$tmp/moved/peltd.prom' && ! -e '$file' ]]"

# ---- A clean stop removes the file -----------------------------------------------------------------
stop_daemon TERM
check "SIGTERM: exit $daemon_status, the file and no temporary file left" \
        bash -c "(( $daemon_status == 0 )) && [[ ! -e '$tmp/moved/peltd.prom' && -z \$(ls -A '$tmp/moved') ]]"

# ---- The names the directory saw ------------------------------------------------------------------
kill "$watch_pid"
wait "$watch_pid" 2>/dev/null
watch_pid=
made=$(awk '$1 == "CREATE" { n[$2]++ } END { for (k in n) printf "%s%d %s", sep, n[k], k; sep = ", " }' "$tmp/events")
check "names made in the directory (inotify): $made; none ends in .prom" \
        bash -c "[[ -n '$made' ]] && ! awk '\$1 == \"CREATE\" && \$2 ~ /\\.prom\$/ { bad = 1 } END { exit !bad }' '$tmp/events'"
# Nothing else happened there: the temporary file made and renamed over peltd.prom, which went at SIGHUP.
others=$(grep -v -x -e 'CREATE peltd.prom.tmp' -e 'MOVED_FROM peltd.prom.tmp' -e 'MOVED_TO peltd.prom' -e 'DELETE peltd.prom' \
        "$tmp/events" | sort -u | tr '\n' ',')
check "peltd.prom came only by rename ($(grep -c "^MOVED_TO peltd.prom$" "$tmp/events") times); nothing else seen${others:+: ${others%,}}" \
        [ -z "$others" ]

((failures == 0)) || exit 1
echo "metrics test passed"
