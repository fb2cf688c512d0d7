#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# peltd --print-topology as a command: the JSON contract (names, order, nulls), stdout carrying only
# the result, the text summary, and the exit codes (0 / 1 unreadable or CPU-less root / 2 usage).
# Usage: test-print-topology.sh PELTD FIXTURE-DIR
set -uo pipefail
peltd=$1
fixtures=$2
tmp=$(mktemp -d /tmp/peltd-print-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failed=0

fail() {
        echo "FAIL: $*"
        failed=1
}

# The JSON: equal to expected.json, nothing on stderr, fields in the contract's order.
for m in x86-2s-smt rk3399-linux5.10 vm-bare power9-lpar-smt4; do
        if ! "$peltd" --print-topology --json --sysfs-root "$fixtures/$m" >"$tmp/out" 2>"$tmp/err"; then
                fail "$m: exit status $?"
                continue
        fi
        [[ -s $tmp/err ]] && fail "$m: wrote to stderr: $(cat "$tmp/err")"
        diff -u <(jq -S . "$fixtures/$m/expected.json") <(jq -S . "$tmp/out") >"$tmp/diff" ||
                fail "$m: JSON differs from expected.json: $(cat "$tmp/diff")"
        keys=$(jq -c 'keys_unsorted' "$tmp/out")
        [[ $keys == '["online_cpus","packages","dies","clusters","smt_groups","llc_groups","numa_nodes","capacity_classes","asymmetric","cpus"]' ]] ||
                fail "$m: top-level fields $keys"
        keys=$(jq -c '[.cpus[] | keys_unsorted] | unique' "$tmp/out")
        [[ $keys == '[["cpu","package","die","cluster","core","capacity","max_freq_khz"]]' ]] ||
                fail "$m: per-CPU fields $keys"
done

# null where the contract says so: no clusters, no core_id, no cpufreq.
out=$("$peltd" --print-topology --json --sysfs-root "$fixtures/vm-bare")
[[ $(jq -c '[.clusters, .cpus[0].cluster, .cpus[0].core, .cpus[0].max_freq_khz, .llc_groups]' <<<"$out") == '[null,null,null,null,[]]' ]] ||
        fail "vm-bare: nulls: $(jq -c '[.clusters, .cpus[0]]' <<<"$out")"

# The text form starts with the one-line summary.
line=$("$peltd" --print-topology --sysfs-root "$fixtures/x86-2s-smt" | head -n1)
[[ $line == "2 packages × 4 cores × 2 threads, 2 NUMA nodes, 1 capacity class" ]] || fail "x86-2s-smt text: $line"
line=$("$peltd" --print-topology --sysfs-root "$fixtures/intel-hybrid-adl" | head -n1)
[[ $line == "1 package, 14 cores, 20 CPUs (1–2 threads a core), 1 NUMA node, 2 capacity classes" ]] ||
        fail "intel-hybrid-adl text: $line"

# Exit codes; on failure nothing on stdout.
expect_status() {
        local want=$1
        shift
        "$peltd" "$@" >"$tmp/out" 2>"$tmp/err"
        local got=$?
        [[ $got == "$want" ]] || fail "peltd $*: exit $got, expected $want ($(cat "$tmp/err"))"
        [[ $want == 0 || ! -s $tmp/out ]] || fail "peltd $*: wrote to stdout on failure"
        [[ $want == 0 || -s $tmp/err ]] || fail "peltd $*: said nothing on stderr"
}
mkdir -p "$tmp/empty"
expect_status 0 --print-topology --sysfs-root "$fixtures/one-cpu"
expect_status 1 --print-topology --sysfs-root "$tmp/does-not-exist"
expect_status 1 --print-topology --json --sysfs-root "$tmp/empty"
expect_status 2 --print-topology --sysfs-root ""
expect_status 2 --print-topology --no-such-option
expect_status 2 --print-topology extra-argument
expect_status 2 --sysfs-root "$fixtures/one-cpu"

exit $failed
