#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# peltctl links what it uses (STYLE.md): sd-bus, json-c and the helpers of libpeltd-shared. No
# global symbol of any object of libpeltd.a (the daemon: sampling, tracking, policy, applying, the
# manager, the topology, the config parser...) is defined in it, and it needs neither libcgroup nor
# inih.
#
#   test-peltctl-link.sh PELTCTL LIBPELTD.A LIBPELTD-SHARED.A
set -uo pipefail
peltctl=$1
lib=$2
shared=$3
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
defined "$lib" | sort -k2 > "$tmp/daemon"
defined "$shared" | sort -k2 > "$tmp/shared"
nm --defined-only "$peltctl" | awk '{ print $NF }' | sort -u > "$tmp/peltctl"

# The check sees symbols at all: the daemon's modules define what is known, peltctl the helpers.
for want in "manager.c.o manager_new" "policy.c.o policy_plan" "track.c.o track_thread_update" \
        "sample-proc.c.o proc_parse_schedstat" "apply-cgroup.c.o placement_writes" "manager-bus.c.o manager_bus_start"; do
        grep -qxF "$want" "$tmp/daemon" || fail "libpeltd.a does not define ${want#* } in ${want% *}: is this the right archive?"
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
        [[ $n -gt 0 ]] || fail "no symbols of $m* in libpeltd.a"
        echo "ok: none of the $n symbols of $m* is in peltctl"
done
echo "ok: $(wc -l < "$tmp/daemon") symbols of libpeltd.a checked; peltctl uses $(join -1 2 -2 1 -o 1.2 "$tmp/shared" "$tmp/peltctl" | wc -l) of libpeltd-shared.a"

needed=$(readelf -d "$peltctl" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
[[ $needed == *libsystemd* ]] || fail "peltctl does not link libsystemd ($needed)"
[[ $needed == *libcgroup* || $needed == *libinih* ]] && fail "peltctl links $needed"
echo "ok: peltctl needs $needed"

((failed)) && exit 1
exit 0
