#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What peltd, as root, refuses to obey, on real files and the real kernel (v1 here): forged state
# file entries at `peltd --restore` and at daemon start (a path out of the hierarchy, a cgroup file
# peltd never places), state files, configs and locks that are not root's own regular files, and a
# symlink planted at the lock. Each check prints "ok:" or "FAIL:". Removes its subtree, files and
# processes, also on failure.
#
#   test-security.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin security
pids=()

cleanup() {
        end_pids KILL "${pids[@]}"
        mountpoint -q "$cpuset_root/$id/bm" && umount "$cpuset_root/$id/bm"
        [[ -d $cpuset_root/$id-sib ]] && cg_remove "/$id-sib"
}

[[ $mode == v1 ]] || { echo "this test writes v1 paths; the v2 checks are the unit tests'"; exit 77; }
first_cpu=${all_cpus%%[-,]*}
cg_create_top "/$id" "$all_cpus"
cg_create "/$id/a" "$all_cpus"

mkdir -p "$tmp/state"
printf '[Daemon]\nCgroupRoot=/%s\nStateFile=%s\nMetricsFile=\nSampleIntervalMSec=100\nTaskSampleIntervalMSec=200\n' "$id" "$state" > "$conf"

# The victims a forged entry aims at: a file outside cgroupfs with a placed file's name, reached by
# "..", and a cgroup file peltd never writes (release_agent of the cpuset hierarchy is root's knob).
mkdir -p "$tmp/victim"
echo keep > "$tmp/victim/cpuset.cpus"
up=$(printf '/..%.0s' 1 2 3 4 5 6 7 8)
agent_before=$(cat "$cpuset_root/release_agent")

# forged_state: one valid entry (the group's cpuset, now at the first CPU, to go back to every
# CPU) and the forged ones, each with "written" equal to what the target holds now.
forged_state() {
        echo "$first_cpu" > "$cpuset_root/$id/a/cpuset.cpus"
        cat > "$state" <<EOT
{"version": 1, "entries": [
 {"hierarchy": "cpuset", "group": "$up$tmp/victim", "file": "cpuset.cpus", "original": "pwned", "written": "keep"},
 {"hierarchy": "cpuset", "group": "/", "file": "release_agent", "original": "$tmp/evil", "written": "$agent_before"},
 {"hierarchy": "cpuset", "group": "/$id/a", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"}
]}
EOT
        chmod 0600 "$state"
}

victims_untouched() {
        [[ $(cat "$tmp/victim/cpuset.cpus") == keep && $(cat "$cpuset_root/release_agent") == "$agent_before" ]]
}

# 1. --restore: the valid entry restored, the forged ones refused and named; exit 1.
forged_state
"$peltd" --restore --config "$conf" > "$tmp/restore.out" 2>&1
rc=$?
if ((rc == 1)) && victims_untouched && [[ $(cat "$cpuset_root/$id/a/cpuset.cpus") == "$all_cpus" ]] &&
        grep -q "refusing an entry.*release_agent" "$tmp/restore.out" && grep -q "refusing an entry.*victim" "$tmp/restore.out"; then
        pass "--restore: forged entries refused (exit 1), the valid one restored"
else
        fail "--restore: exit $rc, victim $(cat "$tmp/victim/cpuset.cpus"), release_agent $(cat "$cpuset_root/release_agent"), a $(cat "$cpuset_root/$id/a/cpuset.cpus"): $(cat "$tmp/restore.out")"
fi
rm -f "$state"

# 1b. --restore with entries that break a rule of their own (a value not a string, a NUL in the
# file's name, a key given twice): each refused by its index, the valid one restored, the refused
# ones kept in the file as they were; exit 1.
echo "$first_cpu" > "$cpuset_root/$id/a/cpuset.cpus"
cat > "$state" <<EOT
{"version": 1, "entries": [
 {"hierarchy": "cpuset", "group": "/$id/a", "file": "cpuset.cpus", "original": 7, "written": "$first_cpu"},
 {"hierarchy": "cpuset", "group": "/$id/a", "file": "cpuset.cpus\u0000x", "original": "$all_cpus", "written": "$first_cpu"},
 {"hierarchy": "cpuset", "group": "$up$tmp/victim", "group": "/$id/a", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"},
 {"hierarchy": "cpuset", "group": "/$id/a", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"}
]}
EOT
chmod 0600 "$state"
"$peltd" --restore --config "$conf" > "$tmp/restore.out" 2>&1
rc=$?
if ((rc == 1)) && victims_untouched && [[ $(cat "$cpuset_root/$id/a/cpuset.cpus") == "$all_cpus" ]] &&
        grep -q "entry 0: a field is missing or not a string" "$tmp/restore.out" &&
        grep -q "entry 1: a field holds a NUL byte" "$tmp/restore.out" && grep -q "entry 2: a key given twice" "$tmp/restore.out" &&
        grep -qF 'cpuset.cpus\u0000x' "$state" && grep -qF "\"group\": \"$up$tmp/victim\", \"group\"" "$state" &&
        grep -q '"original": 7' "$state"; then
        pass "--restore: bad entries refused one by one and kept (exit 1), the valid one restored"
else
        fail "--restore with bad entries: exit $rc, a $(cat "$cpuset_root/$id/a/cpuset.cpus"): $(cat "$tmp/restore.out"); $(cat "$state")"
fi
rm -f "$state"

# 2. Daemon start: carries on with the valid entries.
forged_state
"$peltd" --config "$conf" > "$tmp/daemon.out" 2>&1 &
pids+=($!)
if wait_for 10 grep -q "peltd running" "$tmp/daemon.out" && victims_untouched &&
        grep -q "Restoring 1 recorded original values" "$tmp/daemon.out" && grep -q "refusing an entry" "$tmp/daemon.out"; then
        pass "start: forged entries refused and logged, the valid one restored, the daemon runs"
else
        fail "start: victim $(cat "$tmp/victim/cpuset.cpus"), a $(cat "$cpuset_root/$id/a/cpuset.cpus"): $(cat "$tmp/daemon.out")"
fi
kill -TERM "${pids[-1]}"
wait "${pids[-1]}"
rc=$?
((rc == 0)) && [[ $(cat "$cpuset_root/$id/a/cpuset.cpus") == "$all_cpus" ]] && victims_untouched ||
        fail "start: the daemon exited $rc at SIGTERM; a $(cat "$cpuset_root/$id/a/cpuset.cpus")"
unset 'pids[-1]'
rm -f "$state"

# 2b. A group outside CgroupRoot (a sibling whose name starts like it), at daemon start: refused
# and logged, kept in the state file, the valid entry restored.
cg_create "/$id-sib" "$all_cpus"
cg_create "/$id-sib/v" "$first_cpu"
echo "$first_cpu" > "$cpuset_root/$id/a/cpuset.cpus"
cat > "$state" <<EOT
{"version": 1, "entries": [
 {"hierarchy": "cpuset", "group": "/$id-sib/v", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"},
 {"hierarchy": "cpuset", "group": "/$id/a", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"}
]}
EOT
chmod 0600 "$state"
"$peltd" --config "$conf" > "$tmp/daemon.out" 2>&1 &
pids+=($!)
if wait_for 10 grep -q "peltd running" "$tmp/daemon.out" && [[ $(cat "$cpuset_root/$id-sib/v/cpuset.cpus") == "$first_cpu" ]] &&
        grep -q "refusing entry 0 .*not under CgroupRoot=/$id;" "$tmp/daemon.out" &&
        [[ $(cat "$cpuset_root/$id/a/cpuset.cpus") == "$all_cpus" ]] && grep -q "/$id-sib/v" "$state"; then
        pass "start: an entry outside CgroupRoot refused alone and kept, the valid one restored"
else
        fail "start: sibling $(cat "$cpuset_root/$id-sib/v/cpuset.cpus"), a $(cat "$cpuset_root/$id/a/cpuset.cpus"): $(cat "$tmp/daemon.out")"
fi
kill -TERM "${pids[-1]}"
wait "${pids[-1]}"
unset 'pids[-1]'
[[ $(cat "$cpuset_root/$id-sib/v/cpuset.cpus") == "$first_cpu" ]] || fail "stop: the sibling outside CgroupRoot was written"
rm -f "$state"

# The same entries by hand: peltd --restore refuses the sibling alone (exit 1, kept), restores the rest.
echo "$first_cpu" > "$cpuset_root/$id/a/cpuset.cpus"
cat > "$state" <<EOT
{"version": 1, "entries": [
 {"hierarchy": "cpuset", "group": "/$id-sib/v", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"},
 {"hierarchy": "cpuset", "group": "/$id/a", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"}
]}
EOT
chmod 0600 "$state"
"$peltd" --restore --config "$conf" > "$tmp/restore.out" 2>&1
rc=$?
if ((rc == 1)) && [[ $(cat "$cpuset_root/$id-sib/v/cpuset.cpus") == "$first_cpu" ]] &&
        [[ $(cat "$cpuset_root/$id/a/cpuset.cpus") == "$all_cpus" ]] && grep -q "/$id-sib/v" "$state"; then
        pass "--restore: an entry outside CgroupRoot refused alone and kept (exit 1), the valid one restored"
else
        fail "--restore outside CgroupRoot: exit $rc, sibling $(cat "$cpuset_root/$id-sib/v/cpuset.cpus"), a $(cat "$cpuset_root/$id/a/cpuset.cpus"): $(cat "$tmp/restore.out")"
fi
rm -f "$state"

# 2c. A bind mount inside the hierarchy (a directory of /tmp at a group's place): never crossed.
mkdir -p "$tmp/bound" "$cpuset_root/$id/bm"
echo "$first_cpu" > "$tmp/bound/cpuset.cpus"
mount --bind "$tmp/bound" "$cpuset_root/$id/bm"
cat > "$state" <<EOT
{"version": 1, "entries": [
 {"hierarchy": "cpuset", "group": "/$id/bm", "file": "cpuset.cpus", "original": "$all_cpus", "written": "$first_cpu"}
]}
EOT
chmod 0600 "$state"
"$peltd" --restore --config "$conf" > "$tmp/restore.out" 2>&1
rc=$?
if ((rc == 1)) && [[ $(cat "$tmp/bound/cpuset.cpus") == "$first_cpu" ]] && grep -q "/$id/bm" "$state"; then
        pass "--restore: a bind mount at a group's place is not crossed (exit 1, the entry kept)"
else
        fail "--restore through a bind mount: exit $rc, $tmp/bound/cpuset.cpus $(cat "$tmp/bound/cpuset.cpus"): $(cat "$tmp/restore.out")"
fi
umount "$cpuset_root/$id/bm"
rmdir "$cpuset_root/$id/bm"
rm -f "$state"

# refused WHAT REASON: the daemon exits 1 at once (no hang), naming the file and the reason.
refused() {
        local what=$1 reason=$2 rc
        timeout 20 "$peltd" --config "$conf" --dry-run > "$tmp/refused.out" 2>&1
        rc=$?
        if ((rc == 1)) && grep -qF "$what" "$tmp/refused.out" && grep -qF "$reason" "$tmp/refused.out"; then
                pass "refused: $what $reason"
        else
                fail "expected exit 1 naming $what ($reason); exit $rc: $(cat "$tmp/refused.out")"
        fi
}

# 3. Untrusted state files, lock and configs.
echo '{"version": 1, "entries": []}' > "$state"
chmod 0666 "$state"
refused "$state" "is writable by group or others"
chmod 0600 "$state"
chown nobody "$state"
refused "$state" "is owned by another user"
rm -f "$state"
mkfifo -m 0600 "$state"
refused "$state" "is a FIFO"
rm -f "$state"
ln -s /dev/null "$state"
refused "$state" "is a symbolic link"
rm -f "$state"

rm -f "$state.lock"
ln -s "$tmp/lock-target" "$state.lock"
refused "$state" "is a symbolic link"
[[ -e $tmp/lock-target ]] && fail "the lock's symlink target was created"
rm -f "$state.lock"

chmod 0666 "$conf"
refused "$conf" "is writable by group or others"
chmod 0644 "$conf"
mv "$conf" "$conf.real"
mkfifo -m 0600 "$conf"
refused "$conf" "is a FIFO"
rm -f "$conf"
ln -s /dev/zero "$conf"
refused "$conf" "is a device"
rm -f "$conf"
mv "$conf.real" "$conf"

# 4. One daemon per subtree, whatever its StateFile=: the same root, one inside it and one above it
# exit 1 at once naming the holder; a sibling runs beside it. (Not a dry run: a dry run locks nothing.)
cg_create "/$id/a/in" "$all_cpus"
cg_create "/$id/b" "$all_cpus"
daemon_conf() { # NAME ROOT: a config with its own state file
        mkdir -p "$tmp/$1"
        printf '[Daemon]\nCgroupRoot=%s\nStateFile=%s/originals\nMetricsFile=\nSampleIntervalMSec=100\nTaskSampleIntervalMSec=200\n' \
                "$2" "$tmp/$1" > "$tmp/$1.conf"
}
daemon_conf first "/$id/a"
"$peltd" --config "$tmp/first.conf" > "$tmp/first.out" 2>&1 &
pids+=($!)
first=${pids[-1]}
wait_for 10 grep -q "peltd running" "$tmp/first.out" || fail "the first daemon did not start: $(cat "$tmp/first.out")"
for root in "/$id/a" "/$id/a/in" "/$id"; do
        daemon_conf second "$root"
        timeout 20 "$peltd" --config "$tmp/second.conf" > "$tmp/second.out" 2>&1
        rc=$?
        if ((rc == 1)) && grep -q "is locked by pid $first: another peltd manages a cgroup subtree that overlaps CgroupRoot=$root" "$tmp/second.out" &&
                ! grep -q "peltd running" "$tmp/second.out"; then
                pass "a second daemon at CgroupRoot=$root (another StateFile) exits 1, naming pid $first"
        else
                fail "a second daemon at CgroupRoot=$root: exit $rc: $(cat "$tmp/second.out")"
        fi
        [[ -e $tmp/second/originals ]] && fail "the refused daemon at $root wrote its state file"
done
daemon_conf sibling "/$id/b"
"$peltd" --config "$tmp/sibling.conf" > "$tmp/sibling.out" 2>&1 &
pids+=($!)
if wait_for 10 grep -q "peltd running" "$tmp/sibling.out"; then
        pass "a daemon on a sibling subtree runs beside it"
else
        fail "a daemon on a sibling subtree: $(cat "$tmp/sibling.out")"
fi
kill -TERM "${pids[-1]}"
wait "${pids[-1]}" || fail "the sibling daemon exited $? at SIGTERM: $(cat "$tmp/sibling.out")"
unset 'pids[-1]'

# A dry run locks nothing, so it runs beside the first; reloaded to go live it must lock the
# subtree first: refused while the first runs (the dry run goes on), taken once it has stopped.
# Reloaded to a dry run again, what it wrote goes back at once and the subtree is free again.
dry_conf() { # yes|no
        mkdir -p "$tmp/dry"
        printf '[Daemon]\nPolicy=power\nDryRun=%s\nCgroupRoot=/%s/a\nStateFile=%s/dry/originals\nSampleIntervalMSec=100\nTaskSampleIntervalMSec=200\n' \
                "$1" "$id" "$tmp" > "$tmp/dry.conf"
}
dry_conf yes
"$peltd" --config "$tmp/dry.conf" > "$tmp/dry.out" 2>&1 &
pids+=($!)
dry=${pids[-1]}
wait_for 10 grep -q "peltd running" "$tmp/dry.out" || fail "a dry run beside the first daemon did not start: $(cat "$tmp/dry.out")"
dry_conf no
kill -HUP "$dry"
if wait_for 10 grep -q "Reloading the configuration failed; keeping the old settings" "$tmp/dry.out" &&
        grep -q "is locked by pid $first: another peltd manages" "$tmp/dry.out" &&
        kill -0 "$dry" && [[ $(cat "$cpuset_root/$id/a/in/cpuset.cpus") == "$all_cpus" ]]; then
        pass "a dry run reloaded to go live while another daemon holds the subtree: refused, the dry run goes on"
else
        fail "a dry run reloaded to go live beside another daemon: $(cat "$tmp/dry.out")"
fi
kill -TERM "$first"
wait "$first" || fail "the first daemon exited $? at SIGTERM: $(cat "$tmp/first.out")"
unset 'pids[-2]'
kill -HUP "$dry"
if wait_for 10 grep -q "Configuration reloaded" "$tmp/dry.out" &&
        wait_for 10 bash -c "[[ \$(cat '$cpuset_root/$id/a/in/cpuset.cpus') =~ ^[0-9]+\$ ]]"; then
        pass "once the first daemon stopped: the reload to go live locks the subtree and places (a/in on CPU $(cat "$cpuset_root/$id/a/in/cpuset.cpus"))"
else
        fail "the reload to go live after the first stopped: a/in on $(cat "$cpuset_root/$id/a/in/cpuset.cpus"): $(cat "$tmp/dry.out")"
fi
daemon_conf second "/$id/a"
timeout 20 "$peltd" --config "$tmp/second.conf" > "$tmp/second.out" 2>&1
(($? == 1)) && grep -q "is locked by pid $dry" "$tmp/second.out" && pass "... and holds the lock: a second daemon exits 1" ||
        fail "a second daemon beside the daemon gone live: $(cat "$tmp/second.out")"
dry_conf yes
kill -HUP "$dry"
if wait_for 10 grep -q "Restoring [0-9]* recorded original values (a dry run from now on)" "$tmp/dry.out" &&
        wait_for 5 bash -c "[[ \$(cat '$cpuset_root/$id/a/in/cpuset.cpus') == '$all_cpus' ]]"; then
        pass "reloaded to a dry run: what it wrote is back at once (a/in on $all_cpus)"
else
        fail "reloaded to a dry run: a/in on $(cat "$cpuset_root/$id/a/in/cpuset.cpus"): $(cat "$tmp/dry.out")"
fi
daemon_conf second "/$id/a"
"$peltd" --config "$tmp/second.conf" > "$tmp/second.out" 2>&1 &
pids+=($!)
wait_for 10 grep -q "peltd running" "$tmp/second.out" && pass "... and the subtree is free: another daemon starts there" ||
        fail "another daemon after the reload to a dry run: $(cat "$tmp/second.out")"
kill -TERM "${pids[-1]}"
wait "${pids[-1]}" || fail "that daemon exited $? at SIGTERM: $(cat "$tmp/second.out")"
unset 'pids[-1]'
kill -TERM "$dry"
wait "$dry" || fail "the dry run exited $? at SIGTERM: $(cat "$tmp/dry.out")"
unset 'pids[-1]'

# CgroupRoot removed and made again while a daemon runs: a daemon started then may lock the new
# directory before the first one's next task round; then the first stops (exit 1), saying why.
# Never both.
cg_create "/$id/c" "$all_cpus"
daemon_conf first "/$id/c"
"$peltd" --config "$tmp/first.conf" > "$tmp/first.out" 2>&1 &
pids+=($!)
first=${pids[-1]}
wait_for 10 grep -q "peltd running" "$tmp/first.out" || fail "the daemon at /$id/c did not start: $(cat "$tmp/first.out")"
cg_remove "/$id/c"
cg_create "/$id/c" "$all_cpus"
daemon_conf second "/$id/c"
"$peltd" --config "$tmp/second.conf" > "$tmp/second.out" 2>&1 &
pids+=($!)
second=${pids[-1]}
# One of them gives up, saying why: the first at its next task round, or the second at its start.
one_gave_up() {
        { ! kill -0 "$first" 2>/dev/null && grep -q "Stopping: another peltd took CgroupRoot=/$id/c" "$tmp/first.out"; } ||
                { ! kill -0 "$second" 2>/dev/null && grep -q "is locked by pid $first" "$tmp/second.out"; }
}
wait_for 10 one_gave_up
alive=0
kill -0 "$first" 2>/dev/null && alive=$((alive + 1))
kill -0 "$second" 2>/dev/null && alive=$((alive + 1))
if ((alive == 1)) && { grep -q "Stopping: another peltd took CgroupRoot=/$id/c" "$tmp/first.out" ||
        grep -q "is locked by pid $first" "$tmp/second.out"; }; then
        pass "CgroupRoot made again: one daemon of two keeps it ($(grep -q Stopping "$tmp/first.out" && echo the second || echo the first))"
else
        fail "CgroupRoot made again: $alive daemons run: first: $(cat "$tmp/first.out"); second: $(cat "$tmp/second.out")"
fi
for p in "$first" "$second"; do
        kill -TERM "$p" 2>/dev/null
        wait "$p"
done
pids=("${pids[@]:0:${#pids[@]}-2}")

((failures == 0)) || exit 1
echo "all security checks passed"
