#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of untrusted bytes with libFuzzer (see docs/fuzzing.md).
#
#   Fuzz/fuzz.sh [--runs N] [--max-seconds S] [--json] [TARGET...]
#
# For each target (all of them by default: Fuzz/fuzz.sh --list names them) it
#   1. builds the libFuzzer driver with -sanitize=fuzzer,address into .build-fuzz (once);
#   2. fuzzes N executions (default 10,000,000; --max-seconds S stops a target after S seconds),
#      starting from the committed corpus Fuzz/Corpus/<target> (or from the target's seeds when
#      that is empty) and the past findings in Fuzz/Regressions/<target>, under a 10 s limit per
#      input and a 512 MB limit per allocation, so a loop or an unbounded allocation is a finding
#      like a crash;
#   3. minimizes what it found together with the committed corpus (libFuzzer -merge=1) back into
#      Fuzz/Corpus/<target>, which the tests replay (FuzzCorpusReplayTests).
# A finding stops that target: the input is kept in Fuzz/Findings/<target>/ and the summary says
# so. Fix the cause, then copy the input to Fuzz/Regressions/<target>/finding-<first 12 hex digits>
# so the tests keep checking it: a merge rewrites Fuzz/Corpus/<target> and drops any input that
# adds no coverage, which a finding, once fixed, often does not.
# Exit status: 0 when no target found anything, 1 when one did, 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=10000000
max_seconds=0
json=false
targets=()
all_targets=(json-value json-events sdk-form tracking-hit retry-after wal-segment event-codec cursor-file relay-batch)

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --max-seconds) max_seconds=${2:?--max-seconds needs a number}; shift 2 ;;
    --json) json=true; shift ;;
    --list) printf '%s\n' "${all_targets[@]}"; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
        if [[ " ${all_targets[*]} " != *" $1 "* ]]; then
            echo "fuzz.sh: no target $1; the targets are: ${all_targets[*]}" >&2
            exit 2
        fi
        targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

echo "building the libFuzzer driver (.build-fuzz)…" >&2
export CAMPAIGN_RELAY_FUZZ=1
# Swift's backtracer would read memory AddressSanitizer guards when a property aborts: leave the
# report to the sanitizer.
export SWIFT_BACKTRACE=enable=no
build=(swift build --package-path "$root" --scratch-path "$root/.build-fuzz" --product RelayFuzzer
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -O)
"${build[@]}" >&2
fuzzer="$("${build[@]}" --show-bin-path)/RelayFuzzer"

work=$(mktemp -d /tmp/campaign-relay-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
found=0
summaries=()
for target in "${targets[@]}"; do
    corpus="$root/Fuzz/Corpus/$target"
    findings="$root/Fuzz/Findings/$target"
    mkdir -p "$corpus" "$work/$target/new" "$work/$target/merged" "$findings"
    export CAMPAIGN_RELAY_FUZZ_TARGET=$target
    if [ -z "$(ls -A "$corpus")" ]; then
        CAMPAIGN_RELAY_FUZZ_WRITE_SEEDS="$corpus" "$fuzzer"
    fi
    before=$(ls "$corpus" | wc -l)
    echo "fuzzing $target: $runs executions from $before inputs…" >&2
    started=$(date +%s)
    status=0
    regressions=()
    if [ -d "$root/Fuzz/Regressions/$target" ]; then regressions=("$root/Fuzz/Regressions/$target"); fi
    "$fuzzer" -runs="$runs" -max_total_time="$max_seconds" -timeout=10 -malloc_limit_mb=512 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$findings/" "$work/$target/new" "$corpus" "${regressions[@]}" >"$work/$target/log" 2>&1 || status=$?
    seconds=$(($(date +%s) - started))
    executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target/log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$target/log" | tail -1)
    result=clean
    if [ "$status" -ne 0 ]; then
        result=finding
        found=1
        grep -aE "^(==[0-9]+==ERROR|property broken|SUMMARY|artifact_prefix|Test unit written)" "$work/$target/log" >&2 || tail -30 "$work/$target/log" >&2
    fi
    # Minimize the committed corpus and the new inputs together into one covering set.
    "$fuzzer" -merge=1 -timeout=10 "$work/$target/merged" "$corpus" "$work/$target/new" >"$work/$target/merge.log" 2>&1
    rm -rf "$corpus"
    mv "$work/$target/merged" "$corpus"
    after=$(ls "$corpus" | wc -l)
    rmdir "$findings" 2>/dev/null || true
    echo "$target: $result, ${executed:-0} executions in ${seconds} s (${rate:-0}/s), corpus $before → $after inputs" >&2
    summaries+=("{\"target\":\"$target\",\"result\":\"$result\",\"executions\":${executed:-0},\"seconds\":$seconds,\"executionsPerSecond\":${rate:-0},\"corpusBefore\":$before,\"corpusAfter\":$after}")
done
if $json; then
    (IFS=,; echo "[${summaries[*]}]")
fi
exit $found
