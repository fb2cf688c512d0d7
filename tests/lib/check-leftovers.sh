#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What the tests leave behind: `check-leftovers.sh start STAMP` runs first in a meson test run
# (alone, highest priority), `check-leftovers.sh check STAMP` last (alone, lowest priority). The
# check fails naming every scratch directory under /tmp and every cgroup named peltd-test-* that
# was made after the start and is still there.
#
# Another test run on this machine at the same time is not this run's leftover: the check holds
# the machine lock the real-kernel tests hold for their whole run (so no other run's kernel test is
# half-way), and a candidate must still be there two seconds later and not be any live process's
# working directory (a unit test of another run lives well under a second).
set -u

mode=${1:?usage: check-leftovers.sh start|check STAMP}
stamp=${2:?usage: check-leftovers.sh start|check STAMP}

if [ "$mode" = start ]; then
        rm -f "$stamp" && : > "$stamp" || { echo "cannot make $stamp" >&2; exit 1; }
        exit 0
fi
[ "$mode" = check ] || { echo "unknown mode $mode" >&2; exit 2; }
[ -f "$stamp" ] || { echo "$stamp is missing: the start of this run was not recorded" >&2; exit 1; }

. "$(dirname "$0")/machine-lock.sh"

candidates() {
        find /tmp -maxdepth 1 -mindepth 1 -newer "$stamp" \
                \( -name 'peltd-test-*' -o -name 'peltd-print-*' -o -name 'peltd-unit-*' -o -name 'peltd-fixture-*' \) -print 2>/dev/null
        find /sys/fs/cgroup -maxdepth 2 -mindepth 2 -type d -name 'peltd-test-*' -newer "$stamp" -print 2>/dev/null
}

busy() { # a path some live process works in
        local d
        for d in /proc/[0-9]*/cwd; do
                case $(readlink "$d" 2>/dev/null) in "$1" | "$1"/*) return 0 ;; esac
        done
        return 1
}

first=$(candidates | sort)
[ -z "$first" ] && { echo "no leftovers"; exit 0; }
sleep 2
left=()
while read -r p; do
        [ -e "$p" ] || continue
        busy "$p" && continue
        left+=("$p")
done <<< "$first"

if [ ${#left[@]} -eq 0 ]; then
        echo "no leftovers"
        exit 0
fi
echo "left behind by this run's tests:"
printf '  %s\n' "${left[@]}"
exit 1
