#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Bytes that are not UTF-8, on the real kernel: a group whose name holds 0xff and a cut-off
# character, and a thread that named itself with such bytes. peltd --once (JSON and text), peltd
# --plan and the daemon's log write them as "\xNN" and nothing else that is not UTF-8. Removes the
# private subtree and ends the processes it started, also on failure.
#
#   test-text-utf8.sh PELTD
set -u
export LC_ALL=C
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin utf8
pids=()

cleanup() {
        end_pids KILL "${pids[@]}"
}

# utf8 FILE: the file is valid UTF-8 throughout.
utf8() {
        iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1
}

# The raw names and what peltd must write for them (the backslashes are characters).
name=$'grp\xff-\xe2\x82'
name_text='grp\xff-\xe2\x82'
comm=$'t\xc0\xafx\xff\xed\xa0\x80'
comm_text='t\xc0\xafx\xff\xed\xa0\x80'

cg_create_top "/$id" "$all_cpus"
cg_create "/$id/$name" "$all_cpus"

# A process that names itself (the write goes through /proc/self in the subshell), then waits.
mkfifo "$tmp/hold"
(
        printf '%s' "$comm" > /proc/self/comm || exit 1
        read -r -t 120 _ <> "$tmp/hold"
) &
pids+=($!)
cg_attach "/$id/$name" "${pids[0]}"
wait_for 5 grep -qF "$comm" "/proc/${pids[0]}/comm" || fail "the helper could not set its name"

printf '[Daemon]\nCgroupRoot=/%s\nStateFile=%s/state/originals\nMetricsFile=\nDryRun=yes\nSampleIntervalMSec=100\nTaskSampleIntervalMSec=200\n' \
        "$id" "$tmp" > "$conf"

# peltd --once --json: parses, is UTF-8, and names the group and the thread with "\xNN".
"$peltd" --config "$conf" --once 0.5 --interval 100 --json > "$tmp/once.json" 2> "$tmp/once.err"
rc=$?
((rc == 0)) || fail "peltd --once --json exited $rc: $(cat "$tmp/once.err")"
utf8 "$tmp/once.json" || fail "peltd --once --json wrote bytes that are not UTF-8"
jq -e . "$tmp/once.json" >/dev/null || fail "jq does not parse peltd --once --json"
grep -qF 'grp\\xff-\\xe2\\x82' "$tmp/once.json" || fail 'the JSON does not hold grp\\xff-\\xe2\\x82'
jq -e --arg p "/$id/$name_text" '[.groups[] | select(.path == $p)] | length == 1' "$tmp/once.json" >/dev/null ||
        fail "no group \"/$id/$name_text\" in the JSON"
jq -e --arg p "/$id/$name_text" --arg c "$comm_text" --argjson pid "${pids[0]}" \
        '[.tasks[] | select(.pid == $pid and .comm == $c and .cgroup == $p)] | length == 1' "$tmp/once.json" >/dev/null ||
        fail "no task with comm \"$comm_text\" in \"/$id/$name_text\" in the JSON"
((failures)) && { echo "---- peltd --once --json ----"; cat -v "$tmp/once.json" | head -60; }

# peltd --once, as text.
"$peltd" --config "$conf" --once 0.3 --interval 100 > "$tmp/once.txt" 2>&1 || fail "peltd --once failed: $(cat -v "$tmp/once.txt")"
utf8 "$tmp/once.txt" || fail "peltd --once wrote bytes that are not UTF-8"
grep -qF "/$id/$name_text" "$tmp/once.txt" || fail "peltd --once does not name \"/$id/$name_text\""
grep -qF "$comm_text" "$tmp/once.txt" || fail "peltd --once does not name the thread \"$comm_text\""

# peltd --plan: a group path from a plan file, in JSON and text.
printf '[Group /%s]\nUtil=300\n' "$name" > "$tmp/plan.ini"
for json in --json ""; do
        "$peltd" --plan "$tmp/plan.ini" $json > "$tmp/plan.out" 2>&1 || fail "peltd --plan $json failed: $(cat -v "$tmp/plan.out")"
        utf8 "$tmp/plan.out" || fail "peltd --plan $json wrote bytes that are not UTF-8"
        grep -qF "/$name_text" "$tmp/plan.out" || [[ -n $json ]] || fail "peltd --plan does not name \"/$name_text\""
done
jq -e --arg p "/$name_text" '.groups[0].path == $p' <("$peltd" --plan "$tmp/plan.ini" --json 2>/dev/null) >/dev/null ||
        fail "peltd --plan --json does not name \"/$name_text\""

# The daemon's log: the line that takes the group on is UTF-8 and names it with "\xNN".
"$peltd" --config "$conf" > "$log" 2>&1 &
daemon=$!
pids+=("$daemon")
wait_for 20 grep -qF "Managing /$id/$name_text." "$log" || fail "the log has no line \"Managing /$id/$name_text.\""
kill -TERM "$daemon"
wait "$daemon"
rc=$?
((rc == 0)) || fail "peltd exited $rc at SIGTERM"
utf8 "$log" || fail "the log holds bytes that are not UTF-8"
((failures)) && { echo "---- peltd log ----"; cat -v "$log" | tail -40; }

if ((failures)); then
        echo "$failures failure(s)"
        exit 1
fi
echo "ok: bytes that are not UTF-8 are written as \\xNN in JSON, text and logs"
