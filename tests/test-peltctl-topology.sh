#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# peltctl's topology text, rendered from the GetTopology document, against peltd --print-topology
# on every fixture machine: each line peltctl prints that peltd prints too is the same line; the
# capacity line is peltd's without where the capacities came from; "max freq" names the CPUs of
# each highest frequency that peltd's "freq domains" names. A document not shaped as the contract
# says is refused.
#
#   test-peltctl-topology.sh PELTD RENDER FIXTURE-DIR
set -uo pipefail
peltd=$1
render=$2
fixtures=$3
tmp=$(mktemp -d /tmp/peltd-test-ctltopo-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failed=0
compared=0

fail() {
        echo "FAIL: $*"
        failed=1
}

for dir in "$fixtures"/*/; do
        m=$(basename "$dir")
        "$peltd" --print-topology --sysfs-root "$dir" > "$tmp/peltd.txt" 2>/dev/null || continue
        "$peltd" --print-topology --json --sysfs-root "$dir" > "$tmp/doc.json" || { fail "$m: no JSON"; continue; }
        if ! "$render" "$tmp/doc.json" > "$tmp/ctl.txt"; then
                fail "$m: the document was refused"
                continue
        fi
        # Lines by their label (the first 14 columns; the headline has none).
        diff <(head -n1 "$tmp/peltd.txt") <(head -n1 "$tmp/ctl.txt") > /dev/null ||
                fail "$m: headline: $(head -n1 "$tmp/ctl.txt") / peltd: $(head -n1 "$tmp/peltd.txt")"
        while IFS= read -r line; do
                label=${line:0:14}
                case $label in
                "capacity      ")
                        want=$(grep "^capacity " "$tmp/peltd.txt" | sed -e 's/ (\(from [^,)]*\|uniform\|no capacity information\)\(, asymmetric\)\?)$//')
                        jq -e .asymmetric "$tmp/doc.json" > /dev/null && want+=" (asymmetric)"
                        [[ $line == "$want" ]] || fail "$m: '$line', expected '$want'"
                        ;;
                "max freq      ")
                        domains=$(grep "^freq domains " "$tmp/peltd.txt")
                        if [[ $domains == *none ]]; then
                                [[ $line == "max freq      unknown" ]] || fail "$m: '$line' where peltd says '$domains'"
                        else
                                [[ "(${line:14})" == "${domains#* (}" || "${line:14})" == "${domains#* (}" ]] ||
                                        fail "$m: '$line' where peltd says '$domains'"
                        fi
                        ;;
                *)
                        grep -qxF -- "$line" "$tmp/peltd.txt" || fail "$m: '$line' is not peltd's line: $(grep -F -- "$label" "$tmp/peltd.txt")"
                        ;;
                esac
        done < <(tail -n +2 "$tmp/ctl.txt")
        # Every line of peltd's but the three the document has no facts for.
        want=$(($(grep -cv -e '^isolated ' -e '^deepest idle ' "$tmp/peltd.txt")))
        [[ $(wc -l < "$tmp/ctl.txt") -eq $want ]] || fail "$m: $(wc -l < "$tmp/ctl.txt") lines, expected $want"
        compared=$((compared + 1))
done
[[ $compared -ge 12 ]] || fail "only $compared fixture machines compared"

# The status line.
"$peltd" --print-topology --json --sysfs-root "$fixtures/x86-2s-smt" > "$tmp/doc.json"
out=$("$render" --summary "$tmp/doc.json")
[[ $out == "16 CPUs, 2 packages, 8 cores, 2 NUMA nodes, 1 capacity class" ]] || fail "x86-2s-smt summary: $out"
"$peltd" --print-topology --json --sysfs-root "$fixtures/phone-sm8150-linux5.10" > "$tmp/doc.json"
out=$("$render" --summary "$tmp/doc.json")
[[ $out == "8 CPUs, 1 package, 8 cores, 1 NUMA node, 3 capacity classes, asymmetric" ]] || fail "sm8150 summary: $out"

# Documents not shaped as the contract says.
for bad in '[]' '{}' "$(jq -c '.cpus[0].cpu = -1' "$tmp/doc.json")" "$(jq -c 'del(.clusters)' "$tmp/doc.json")" \
        "$(jq -c '.packages[0].cpus = "0-3"' "$tmp/doc.json")" "$(jq -c '.asymmetric = 1' "$tmp/doc.json")"; do
        echo "$bad" > "$tmp/bad.json"
        "$render" "$tmp/bad.json" > /dev/null 2>&1 && fail "accepted: ${bad:0:80}"
done

((failed)) && exit 1
echo "ok: $compared fixture machines"
