#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the libFuzzer targets of tests/fuzz/ with clang into BUILD/fuzz (a meson build with
# -Dfuzzing=true, ASan and UBSan) and runs each on its seeds (tests/fuzz/corpus/NAME) for SECONDS.
# New inputs libFuzzer finds are kept in BUILD/fuzz/corpus/NAME for the next run; a crash leaves
# its input in BUILD/fuzz/artifacts/ and fails the run. Prints each target's executions.
#
# Usage: run-fuzzers.sh BUILD SECONDS [NAME...]   (default: every target)
# Exit: 0 all clean, 1 a target crashed, leaked, hit UB or failed a check, 77 no clang with libFuzzer.
set -uo pipefail
src=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
. "$src/scripts/lib.sh"

(($# >= 2)) || die "usage: run-fuzzers.sh BUILD SECONDS [NAME...]"
[[ $2 =~ ^[0-9]+$ && $2 -gt 0 ]] || die "run-fuzzers.sh: SECONDS must be a positive number"
dir=$(mkdir -p "$1" && cd "$1" && pwd)/fuzz seconds=$2
shift 2

targets=("$@")
if ((${#targets[@]} == 0)); then
        mapfile -t targets < <(sed -n "s/^  '\([a-z0-9-]*\)',\$/\1/p" "$src/tests/fuzz/meson.build")
fi

# Only what fuzzing needs: clang and its libFuzzer runtime.
probe=$(mktemp -d /tmp/peltd-test-fuzz-probe-XXXXXX) || exit 1
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void) d; (void) n; return 0; }' >"$probe/p.c"
if ! command -v clang >/dev/null || ! clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2>/dev/null; then
        rm -rf "$probe"
        echo "run-fuzzers.sh: no clang with libFuzzer (Debian: clang, libclang-rt-14-dev), skipping" >&2
        exit 77
fi
rm -rf "$probe"

cd "$src" || exit 1
# Warnings are not errors here: clang warns where gcc does not, and this build is for fuzzing.
[[ -f $dir/build.ninja ]] || CC=clang meson setup "$dir" -Dfuzzing=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dwerror=false >/dev/null || die "meson setup $dir failed"
ninja -C "$dir" build.ninja >/dev/null || die "regenerating $dir failed" # targets added since setup
meson compile -C "$dir" "${targets[@]/#/tests/fuzz/fuzz-}" >/dev/null ||
        { meson compile -C "$dir" "${targets[@]/#/tests/fuzz/fuzz-}"; exit 1; }

# The targets' scratch directories live below one that is removed whatever happens; on a tmpfs
# where there is one (the topology and config targets write files for every input: 5x faster).
tmp=/tmp
[[ -d /dev/shm && -w /dev/shm ]] && tmp=/dev/shm
work=$(mktemp -d "$tmp/peltd-test-fuzz-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

status=0
printf '%-28s %12s %8s %8s\n' target executions exec/s corpus
for name in "${targets[@]}"; do
        bin=$dir/tests/fuzz/fuzz-$name
        seeds=$src/tests/fuzz/corpus/$name
        log=$dir/logs/$name.log
        mkdir -p "$dir/corpus/$name" "$dir/artifacts" "$dir/logs"
        [[ -x $bin && -d $seeds ]] || { echo "fuzz-$name: no such target or no seeds in $seeds" >&2; status=1; continue; }
        # -close_fd_mask=2: the targets' own log lines go nowhere; libFuzzer's and the sanitizers' reports stay.
        # (The braces keep bash's own "Aborted" line out of the output: the log has the report.)
        { "$bin" -max_total_time="$seconds" -timeout=30 -print_final_stats=1 -close_fd_mask=2 \
                -artifact_prefix="$dir/artifacts/$name-" "$dir/corpus/$name" "$seeds" >"$log" 2>&1; } 2>/dev/null
        rc=$?
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
        speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
        units=$(find "$dir/corpus/$name" -type f | wc -l)
        printf '%-28s %12s %8s %8s\n' "fuzz-$name" "${execs:-?}" "${speed:-?}" "$units"
        if ((rc != 0)) || [[ -z $execs ]]; then
                echo "fuzz-$name: FAILED (exit $rc); log: $log" >&2
                grep -E '^(==[0-9]+==|SUMMARY|.*check failed|.*runtime error|artifact_prefix|Test unit written)' "$log" | head -n 20 >&2
                status=1
        fi
done
exit $status
