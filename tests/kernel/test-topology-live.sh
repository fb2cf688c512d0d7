#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# peltd --print-topology on this machine agrees with lscpu: online CPUs, sockets, cores per socket,
# threads per core, NUMA nodes, and which CPUs share a socket, a core and a node.
# Holds the machine lock: a concurrent hotplug test would change the answer between the two reads.
# Usage: test-topology-live.sh PELTD
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
. "$here/../lib/machine-lock.sh"
peltd=$1
failed=0

fail() {
        echo "FAIL: $*"
        failed=1
}

json=$("$peltd" --print-topology --json) || { echo "FAIL: peltd --print-topology exited $?"; exit 1; }
export LC_ALL=C
lscpu_json=$(lscpu -J) || exit 1
field() {
        jq -r --arg f "$1" '[.. | objects | select(.field == $f) | .data][0] // empty' <<<"$lscpu_json"
}
# lscpu -p: one line per online CPU, "CPU,Core,Socket,Node" (logical ids).
parse=$(lscpu -p=CPU,CORE,SOCKET,NODE | grep -v '^#')

echo "peltd:  $("$peltd" --print-topology | head -n1)"
echo "lscpu:  $(field 'CPU(s):') CPUs, $(field 'Socket(s):') sockets, $(field 'Core(s) per socket:') cores per socket, $(field 'Thread(s) per core:') threads per core, $(field 'NUMA node(s):') NUMA nodes"

online=$(jq -r '.online_cpus | map(tostring) | join(",")' <<<"$json")
lonline=$(cut -d, -f1 <<<"$parse" | paste -sd,)
[[ $online == "$lonline" ]] || fail "online CPUs: peltd $online, lscpu $lonline"

sockets=$(jq '.packages | length' <<<"$json")
[[ $sockets == "$(field 'Socket(s):')" ]] || fail "sockets: peltd $sockets, lscpu $(field 'Socket(s):')"

cores=$(jq '(.smt_groups | length) / (.packages | length) | floor' <<<"$json")
[[ $cores == "$(field 'Core(s) per socket:')" ]] || fail "cores per socket: peltd $cores, lscpu $(field 'Core(s) per socket:')"

threads=$(jq '[.smt_groups[] | length] | max' <<<"$json")
[[ $threads == "$(field 'Thread(s) per core:')" ]] || fail "threads per core: peltd $threads, lscpu $(field 'Thread(s) per core:')"

nodes=$(jq '.numa_nodes | length' <<<"$json")
lnodes=$(field 'NUMA node(s):')
[[ $nodes == "${lnodes:-1}" ]] || fail "NUMA nodes: peltd $nodes, lscpu ${lnodes:-none}"

# The same partitions: CPUs grouped by lscpu's column N versus peltd's groups.
partition() {
        awk -F, -v col="$1" '{ g[$col] = (g[$col] == "" ? $1 : g[$col] "," $1) } END { for (k in g) print g[k] }' <<<"$parse" | sort
}
[[ $(partition 3) == "$(jq -r '.packages[].cpus | map(tostring) | join(",")' <<<"$json" | sort)" ]] ||
        fail "socket membership differs: lscpu $(partition 3 | paste -sd' ')"
[[ $(partition 2) == "$(jq -r '.smt_groups[] | map(tostring) | join(",")' <<<"$json" | sort)" ]] ||
        fail "core membership differs: lscpu $(partition 2 | paste -sd' ')"
if [[ -n $lnodes ]]; then
        [[ $(partition 4) == "$(jq -r '.numa_nodes[].cpus | map(tostring) | join(",")' <<<"$json" | sort)" ]] ||
                fail "node membership differs: lscpu $(partition 4 | paste -sd' ')"
fi

((failed)) || echo "peltd agrees with lscpu"
exit $failed
