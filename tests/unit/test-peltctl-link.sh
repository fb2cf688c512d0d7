#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# peltctl links what it uses: sd-bus, json-c and the helpers of daemon/lib. No global symbol of
# any object of the daemon's stage archives (sampling, tracking, policy, applying, the manager, the
# topology, the config parser...) is defined in it, and it needs neither libcgroup nor inih. (The
# build already keeps the stages' headers off peltctl's include path; this checks the result.)
#
#   test-peltctl-link.sh PELTCTL LIB.A STAGE.A...
set -uo pipefail
peltctl=$1
shared=$2
shift 2
tmp=$(mktemp -d /tmp/peltd-test-link-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failed=0

fail() {
        echo "FAIL: $*"
        failed=1
}

# "OBJECT SYMBOL" for every global symbol an archive's objects define (meson's archives are thin:
# members are paths).
defined() {
        nm -A --defined-only -g "$1" | sed -n 's|^[^:]*:\([^:]*\):[0-9a-f]* [A-Za-z] \(.*\)$|\1 \2|p' |
                while read -r obj sym; do echo "${obj##*/} $sym"; done
}
for lib in "$@"; do defined "$lib"; done | sort -k2 > "$tmp/daemon"
defined "$shared" | sort -k2 > "$tmp/shared"
nm --defined-only "$peltctl" | awk '{ print $NF }' | sort -u > "$tmp/peltctl"

# The check sees symbols at all: the daemon's modules define what is known, peltctl the helpers.
for want in "manager.c.o manager_new" "policy.c.o policy_plan" "track.c.o track_thread_update" \
        "sample-proc.c.o proc_parse_schedstat" "apply-cgroup.c.o placement_writes" "manager-bus.c.o manager_bus_start"; do
        grep -qxF "$want" "$tmp/daemon" || fail "the stage archives do not define ${want#* } in ${want% *}: is this the right archive?"
done
for want in main utf8_escape cpumask_format dropin_set_policy topology_json_to_text text_sanitize; do
        grep -qxF "$want" "$tmp/peltctl" || fail "peltctl does not define $want: nm sees nothing?"
done

# The daemon's symbols in peltctl, by module.
join -1 2 -2 1 -o 1.1,1.2 "$tmp/daemon" "$tmp/peltctl" > "$tmp/both"
if [[ -s $tmp/both ]]; then
        fail "peltctl holds the daemon's code: $(awk '{ print $1 ": " $2 }' "$tmp/both" | head -n 20 | tr '\n' ' ')"
fi
for m in 'sample-' 'policy.c' 'apply-' 'manager' 'track.c'; do
        n=$(grep -c "^$m" "$tmp/daemon")
        [[ $n -gt 0 ]] || fail "no symbols of $m* in the stage archives"
        echo "ok: none of the $n symbols of $m* is in peltctl"
done
echo "ok: $(wc -l < "$tmp/daemon") symbols of the stage archives checked; peltctl uses $(join -1 2 -2 1 -o 1.2 "$tmp/shared" "$tmp/peltctl" | wc -l) of the lib archive"

needed=$(readelf -d "$peltctl" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
[[ $needed == *libsystemd* ]] || fail "peltctl does not link libsystemd ($needed)"
[[ $needed == *libcgroup* || $needed == *libinih* ]] && fail "peltctl links $needed"
[[ $needed == *libncursesw* ]] || fail "peltctl does not link ncursesw, for top ($needed)"
echo "ok: peltctl needs $needed"

((failed)) && exit 1
exit 0
