#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What peltd tells the operator: a bad option points at --help, another user hears that the daemon
# needs root (before any lock file is touched). Each check prints "ok:" or "FAIL:". Removes its
# files, also on failure.
#
#   test-messages.sh PELTD
set -u
here=$(dirname "$(readlink -f "$0")")
peltd=$1
. "$here/../lib/machine-lock.sh"
. "$here/../lib/cgroup-lib.sh"
. "$here/../lib/daemon-lib.sh"

daemon_test_begin messages
fail_log_lines=30
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

# ---- usage and root -------------------------------------------------------------------------------
out=$("$peltd" --frobnicate 2>&1)
rc=$?
check "usage: an unknown option exits 2 (exit $rc)" [ "$rc" -eq 2 ]
check "usage: an unknown option points at --help: $(tail -n1 <<<"$out")" grep -qxF "Try 'peltd --help'." <<<"$out"

write_config power
mkdir -p "$tmp/state"
chmod 0755 "$tmp" "$tmp/state"
chmod 0644 "$conf"
out=$("${nobody[@]}" "$peltd" --config "$conf" 2>&1)
rc=$?
check "root: another user's daemon exits 1 (exit $rc)" [ "$rc" -eq 1 ]
check "root: it says it needs root: $out" grep -q "peltd needs root" <<<"$out"
check "root: no lock file met first" bash -c '! grep -qi "permission denied" <<<"$1"' _ "$out"
check "root: nothing made in the state directory" [ -z "$(ls -A "$tmp/state")" ]

if ((failures)); then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all message checks passed ($mode)"
