#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A state directory that is full, on the real kernel: peltd on a tmpfs of a few pages of its own
# (in a private mount namespace), filled by a file once a group is placed. Then a new group that
# needs a placement is not placed over several rounds (no write without its record), the log says
# so once, and a value another writer puts into a cpuset peltd placed is never overwritten while
# the state file cannot be saved. With room again peltd places the new group and says so; at
# SIGTERM every value is what it was before peltd (the other writer's value where it wrote one).
# About 10 s. Removes the subtree, the tmpfs and the scratch directory, and ends only the
# processes it started, also on failure.
#
#   test-full-disk.sh PELTD
set -u
if [[ -z ${PELTD_TEST_PRIVATE_MOUNTS:-} && $(id -u) -eq 0 ]]; then
        # The tmpfs is seen by this test and the daemon it starts only, and goes with them.
        PELTD_TEST_PRIVATE_MOUNTS=1 exec unshare -m --propagation private "$0" "$@"
fi
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin full-disk
statedir=$tmp/state
state=$statedir/originals
fill=$statedir/fill
sleepers=()
fail_log_lines=40

cleanup() {
        end_pids TERM "${sleepers[@]}"
        umount "$statedir" 2>/dev/null
}

said() { grep -c -- "$1" "$log"; }

if [[ $(cat /sys/devices/system/cpu/online) != *[-,]* ]]; then
        echo "one CPU online: nothing to place"
        exit 77
fi

# fill_up: the tmpfs full (it is counted in pages: the last write of a page-sized block fails).
fill_up() {
        dd if=/dev/zero of="$fill" bs=4096 2>/dev/null
        [[ -s $fill ]] && ! echo x >> "$fill" 2>/dev/null
}

# group NAME: a group on every CPU with a sleeping task in it.
group() {
        cg_create "/$id/$1" "$all_cpus"
        sleep 1000 &
        sleepers+=($!)
        cg_attach "/$id/$1" $!
}

mkdir -p "$statedir"
mount -t tmpfs -o size=16k,mode=0755 peltd-test-state "$statedir" || { echo "FAIL: cannot mount a tmpfs"; exit 1; }
cg_create_top "/$id" "$all_cpus"
group a
before_shares=$(shares_of a)
write_config power

start_daemon
wait_for 10 placed a || fail "a was never placed"
placed_a=$(cpus_of a)
wait_for 2 test -s "$state" || fail "a's record was never saved"
saved=$(cat "$state")

# ---- full: nothing placed, said once ----------------------------------------------------------
check "the state directory filled" fill_up
group b
# b needs a placement (power packs it, as it packed a): over many rounds, never written.
b_changed=0
for _ in $(seq 1 15); do
        [[ $(cpus_of b) == "$all_cpus" ]] || b_changed=1
        hold_for 0.1
done
check "b not placed while the state file cannot be saved" test "$b_changed" -eq 0
wait_for 2 grep -q "Cannot save the state file $state: No space left on device; placing nothing until it can" "$log"
check "said once: cannot save, placing nothing" test "$(said 'Cannot save the state file')" -eq 1
check "the state file on disk as it was" test "$(cat "$state")" == "$saved"

# ---- another writer's value in a placed file, while full: never overwritten ---------------------
other=$(( placed_a == 0 ? 1 : 0 ))
echo "$other" > "$cpuset_root/$id/a/cpuset.cpus"
a_overwritten=0
for _ in $(seq 1 15); do # several task rounds (their drift checks) and the rounds after them
        [[ $(cpus_of a) == "$other" ]] || a_overwritten=1
        hold_for 0.1
done
check "the other writer's $other on a kept while the state file cannot be saved" test "$a_overwritten" -eq 0
check "still said once" test "$(said 'Cannot save the state file')" -eq 1

# ---- room again: placed, said --------------------------------------------------------------------
rm -f "$fill"
wait_for 5 placed b || fail "b not placed once the state file could be saved again (holds $(cpus_of b))"
check "said: the state file can be saved again" test "$(said "The state file $state can be saved again")" -eq 1
check "the state file records b" grep -q "\"/$id/b\"" "$state"
# Whatever peltd does with a now (yields, or places it again), a record of a's cpuset names the other
# writer's value as the original, never peltd's old one.
a_record_ok() {
        local entry="\"group\": \"/$id/a\", \"file\": \"cpuset.cpus\""
        ! grep -q "$entry" "$state" || grep -q "$entry, \"original\": \"$other\"" "$state"
}
check "no record of a's cpuset with peltd's old original" a_record_ok

# ---- the stop: everything as before peltd, a as the other writer left it --------------------------
stop_daemon TERM
check "exit 0" test "$daemon_status" -eq 0
check "a holds the other writer's $other" test "$(cpus_of a)" == "$other"
check "b back on $all_cpus" test "$(cpus_of b)" == "$all_cpus"
check "a's shares as before" test "$(shares_of a)" == "$before_shares"
check "b's shares as before" test "$(shares_of b)" == "$before_shares"
check "the state file removed" test ! -e "$state"

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all full-disk checks passed ($mode)"
