#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# systemd-analyze verify only warns about most mistakes in a unit, and still exits 0: any output
# at all fails this test. The unit is checked with ExecStart= pointing at the binary just built.
# Usage: unit-verify.sh UNIT.in PELTD
set -u
dir=$(mktemp -d /tmp/peltd-unit-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM HUP
sed "s|@sbindir@/peltd|$2|g" "$1" > "$dir/peltd.service"
out=$(systemd-analyze verify --man=no "$dir/peltd.service" 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
        echo "systemd-analyze verify (exit $rc):"
        echo "$out"
        exit 1
fi
score=$(systemd-analyze security --offline=yes "$dir/peltd.service" 2>/dev/null | sed -n 's/.*Overall exposure level for peltd.service: \([0-9.]*\).*/\1/p')
echo "exposure score: ${score:-unknown}"
# What the unit allows (CAP_BPF and CAP_PERFMON for the BPF sampler among it) keeps it at 3.0 or lower.
if [ -z "$score" ] || [ "$(echo "$score" | awk '{ print ($1 <= 3.0) }')" != 1 ]; then
        echo "systemd-analyze security: exposure ${score:-unknown}, above 3.0"
        exit 1
fi
