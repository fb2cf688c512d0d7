#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# peltd --plan, run for real on fixture trees: the JSON and text output, --policy and --config
# merging, and every kind of bad file reported as FILE:LINE with exit status 1 (bad usage: 2).
set -uo pipefail

PELTD=$1
FIXTURES=$2
README=$3
TMP=$(mktemp -d /tmp/peltd-test-plan-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM HUP
failures=0
passes=0

ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() { # check DESCRIPTION CONDITION...
        local what=$1
        shift
        if "$@"; then ok; else bad "$what"; fi
}

plan() { # plan FILE ARGS... -> $out, $err, $rc
        out=$("$PELTD" --plan "$@" 2>"$TMP/err")
        rc=$?
        err=$(cat "$TMP/err")
}

cat >"$TMP/groups.ini" <<'INI'
# What-if: a web tier, a batch job, a short-burst daemon, one the operator keeps.
[Group /web]
Util=1400
Tasks=8

[Group /daemons]
Util=60
Tasks=3
AvgSliceUSec=38

[Group /batch]
Util=3000
Tasks=4
MaxTaskUtil=750
Shares=512

[Group /kept]
Util=200
Manage=no
INI

# JSON, default policy, on the 2-socket fixture (CPUs 3 and 11 isolated).
plan "$TMP/groups.ini" --sysfs-root "$FIXTURES/x86-2s-smt" --json
check "json: exit 0 ($rc: $err)" test "$rc" -eq 0
check "json: policy" test "$(jq -r .policy <<<"$out")" = balanced
check "json: groups in file order" test "$(jq -c '[.groups[].path]' <<<"$out")" = '["/web","/daemons","/batch","/kept"]'
check "json: only the contract's keys" test "$(jq -c '[keys, (.groups[0] | keys)]' <<<"$out")" = \
        '[["energy_estimate","groups","policy"],["cpus","path","reason","shares"]]'
check "json: cpus sorted ints" jq -e 'all(.groups[]; (.cpus | length > 0) and (.cpus == (.cpus | sort)) and all(.cpus[]; type == "number"))' <<<"$out" >/dev/null
check "json: isolated CPUs unused" jq -e '[.groups[0:3][].cpus[]] | index(3) == null and index(11) == null' <<<"$out" >/dev/null
check "json: long-running web spread" test "$(jq -r '.groups[0].reason' <<<"$out")" = "balanced: long-running, spread over all 14 allowed CPUs"
check "json: short bursts packed" jq -e '.groups[1].reason | startswith("balanced: short bursts (38 µs < ")' <<<"$out" >/dev/null
check "json: shares" test "$(jq -c '[.groups[].shares]' <<<"$out")" = '[1024,1024,512,1024]'
check "json: Manage=no left alone" test "$(jq -r '.groups[3].reason' <<<"$out")" = "Manage=no: left alone"
check "json: Manage=no keeps every CPU" test "$(jq -c '.groups[3].cpus' <<<"$out")" = "$(seq -s, 0 15 | sed 's/^/[/; s/$/]/')"
check "json: energy is a number" jq -e '.energy_estimate | type == "number" and . > 0' <<<"$out" >/dev/null

# --policy power: light work in one package.
plan "$TMP/groups.ini" --sysfs-root "$FIXTURES/x86-2s-smt" --json --policy power
check "power: exit 0" test "$rc" -eq 0
check "power: web in package 0" jq -e '.groups[0].cpus | all(. as $c | [0,1,2,8,9,10] | index($c))' <<<"$out" >/dev/null
check "power: reason" jq -e '.groups[0].reason | startswith("power: demand 1.4 CPUs fits 2 cores (4 CPUs) of package 0")' <<<"$out" >/dev/null

# Asymmetric: a light group on the LITTLE cluster; a 750-util task never there.
plan "$TMP/groups.ini" --sysfs-root "$FIXTURES/rk3399-linux6.6" --json --policy power
check "rk3399: daemons on the LITTLEs" test "$(jq -c '.groups[1].cpus' <<<"$out")" = '[0,1,2,3]'
check "rk3399: batch only on the bigs" test "$(jq -c '.groups[2].cpus' <<<"$out")" = '[4,5]'

# --config: its [Group PATH] settings apply, the plan file's keys win.
cat >"$TMP/peltd.conf" <<'INI'
[Daemon]
Policy=power

[Group /web]
MinCPUs=6
Shares=300

[Group /batch]
Shares=100
INI
plan "$TMP/groups.ini" --sysfs-root "$FIXTURES/x86-2s-smt" --json --config "$TMP/peltd.conf"
check "config: exit 0 ($err)" test "$rc" -eq 0
check "config: its Policy=" test "$(jq -r .policy <<<"$out")" = power
check "config: MinCPUs= applies" jq -e '.groups[0].cpus | length >= 6' <<<"$out" >/dev/null
check "config: its Shares= where the plan has none" test "$(jq -r '.groups[0].shares' <<<"$out")" = 300
check "config: the plan's Shares= wins" test "$(jq -r '.groups[2].shares' <<<"$out")" = 512
plan "$TMP/groups.ini" --sysfs-root "$FIXTURES/x86-2s-smt" --json --config "$TMP/peltd.conf" --policy performance
check "config: --policy wins" test "$(jq -r .policy <<<"$out")" = performance

# Text form: each group's CPUs, reason, and the energy estimate.
plan "$TMP/groups.ini" --sysfs-root "$FIXTURES/x86-2s-smt"
check "text: exit 0" test "$rc" -eq 0
check "text: group" grep -q '^\[Group /web\]$' <<<"$out"
check "text: CPUs" grep -qE '^  CPUs: +[0-9]' <<<"$out"
check "text: reason" grep -q '^  Reason: balanced: long-running' <<<"$out"
check "text: energy" grep -qE '^Energy estimate: [0-9]+\.[0-9] \(built-in model' <<<"$out"
check "text: nothing on stderr" test -z "$err"

# Bad files: FILE:LINE, exit 1, nothing on stdout.
expect_error() { # expect_error LINE MESSAGE-FRAGMENT CONTENT
        local line=$1 msg=$2
        printf '%s' "$3" >"$TMP/bad.ini"
        plan "$TMP/bad.ini" --sysfs-root "$FIXTURES/x86-2s-smt"
        check "bad file ($msg): exit 1, got $rc" test "$rc" -eq 1
        check "bad file ($msg): $TMP/bad.ini:$line: in: $err" grep -qF "$TMP/bad.ini:$line: " <<<"$err"
        check "bad file ($msg): message in: $err" grep -qF "$msg" <<<"$err"
        check "bad file ($msg): no output" test -z "$out"
}
expect_error 3 "Foo=1: Unknown key" $'[Group /a]\nUtil=10\nFoo=1\n'
expect_error 2 "Util=lots: Expected a number" $'[Group /a]\nUtil=lots\n'
expect_error 2 "Util=-5: Expected a number" $'[Group /a]\nUtil=-5\n'
expect_error 4 "[Group /b]: Util= is required" $'[Group /a]\nUtil=10\n\n[Group /b]\nTasks=2\n'
expect_error 3 "[Group /a] appears twice (first at line 1)" $'[Group /a]\nUtil=1\n[Group /a]\nUtil=2\n'
expect_error 3 "[Group /b]: Util= is required" $'[Group /a]\nUtil=10\n[Group /b]\n'
expect_error 2 "[Group /a] appears twice (first at line 1)" $'[Group /a]\n[Group /a]\nUtil=2\n'
expect_error 3 "MaxTaskUtil=900: A task's util cannot exceed" $'[Group /a]\nUtil=500\nMaxTaskUtil=900\n'
expect_error 3 "Tasks=0: Expected an integer from 1" $'[Group /a]\nUtil=5\nTasks=0\n'
expect_error 2 "AllowedCPUs=3-1" $'[Group /a]\nAllowedCPUs=3-1\nUtil=1\n'
expect_error 2 "Policy=fast: Unknown policy" $'[Group /a]\nPolicy=fast\nUtil=1\n'
expect_error 2 "Manage=maybe: Expected a boolean" $'[Group /a]\nManage=maybe\nUtil=1\n'
expect_error 1 "Unknown section [Groups /a]" $'[Groups /a]\nUtil=1\n'
expect_error 1 "Util=1: Key outside of any section" $'Util=1\n'
expect_error 1 "[Group /]: the root cgroup" $'[Group /]\nUtil=1\n'
expect_error 1 "[Group /a/../b]: expected an absolute cgroup path" $'[Group /a/../b]\nUtil=1\n'
expect_error 3 "Syntax error" $'[Group /a]\nUtil=1\nnot a key\n'

# A file that cannot be read: exit 1.
plan "$TMP/missing.ini" --sysfs-root "$FIXTURES/x86-2s-smt"
check "missing file: exit 1" test "$rc" -eq 1
check "missing file: named" grep -qF "$TMP/missing.ini" <<<"$err"
# The README's configuration block is valid as written.
awk '/^## Configuration/ { section = 1 } section && /^```ini$/ { inblock = 1; next }
     inblock && /^```$/ { exit } inblock { print }' "$README" >"$TMP/readme.conf"
check "the README has a configuration block" grep -q '^\[Daemon\]' "$TMP/readme.conf"
plan "$TMP/groups.ini" --sysfs-root "$FIXTURES/x86-2s-smt" --config "$TMP/readme.conf"
check "the README's configuration block: exit 0 ($err)" test "$rc" -eq 0

# A root without a topology: exit 1.
plan "$TMP/groups.ini" --sysfs-root "$TMP/nowhere"
check "bad --sysfs-root: exit 1" test "$rc" -eq 1

# Bad usage: exit 2.
plan "$TMP/groups.ini" --policy fast
check "bad --policy: exit 2" test "$rc" -eq 2
"$PELTD" --plan >/dev/null 2>&1
rc=$?
check "--plan without a file: exit 2" test "$rc" -eq 2
plan "$TMP/groups.ini" --frobnicate
check "unknown option: exit 2" test "$rc" -eq 2

echo "$passes passed, $failures failed"
((failures == 0))
