#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The meson test of suite "vm": builds the test guest if it is not cached yet, boots it once with
# the source and build trees shared, runs tests/vm/guest-tests.sh there, and fails on a non-zero
# exit or on any FAIL line.
#
#   test-vm.sh SOURCE_DIR BUILD_DIR [PART...]
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
src=$(readlink -f "$1")
build=$(readlink -f "$2")
shift 2
out=$(mktemp /tmp/peltd-test-vm.XXXXXX)
trap 'rm -f "$out"' EXIT

start=$(date +%s)
"$here/run.sh" --smp 2 --timeout 600 --share "$src" --share "$build" "$here/guest-tests.sh" "$src" "$build" "$@" 2>&1 |
        tee "$out"
status=${PIPESTATUS[0]}
echo "vm: $(($(date +%s) - start)) s in all"
if ((status != 0)) || grep -q '^FAIL' "$out"; then
        # Again at the end: meson shows only the last lines of a long log.
        grep '^FAIL' "$out"
        echo "vm: FAILED (exit $status, $(grep -c '^FAIL' "$out") FAIL lines)"
        exit 1
fi
