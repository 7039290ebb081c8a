#!/usr/bin/env bash
# What adaptive concurrency costs against a host with room to spare: the same backlog of EVENTS
# tracking hits drained by `upload --until-drained` into `campaign-relay emulate` (no capacity limit)
# ROUNDS times with a fixed --concurrency (--no-adaptive-concurrency, the old default) and ROUNDS
# times adaptive (the default, the same ceiling), alternated in one sitting on the same binary: the
# drain rate and the uploader's CPU (user + system) per hit of each run, then the means and adaptive
# against fixed. Issue 41 asks for no more than 5 % of the fixed drain rate.
# Usage: [RELAY_BINARY=…] Benchmarks/drain-adaptive-cost.sh [EVENTS=500000] [ROUNDS=3] [CONCURRENCY=8]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${args[0]:-500000}
rounds=${args[1]:-3}
concurrency=${args[2]:-8}
python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
"$relay" ingest "$work/events.jsonl" --data-dir "$work/backlog" --json > /dev/null
"$relay" emulate --bind 127.0.0.1:18093 --kept-requests 0 --log-level warning > /dev/null &
pids+=($!)
for _ in $(seq 1 50); do curl -sf http://127.0.0.1:18093/emulator/hits > /dev/null && break; sleep 0.1; done

# drain LABEL OPTIONS…: one drain of a fresh copy of the backlog; prints "LABEL hits/s µs/hit".
drain() {
    local label=$1
    shift
    rm -rf "$work/data"
    cp -a "$work/backlog" "$work/data"
    curl -sf -X POST http://127.0.0.1:18093/emulator/reset > /dev/null
    local out
    out=$(/usr/bin/time -o "$work/time" -f "%U %S" "$relay" upload --until-drained --tracking-host http://127.0.0.1:18093 \
        --data-dir "$work/data" --concurrency "$concurrency" --json --log-level error "$@")
    python3 - "$label" "$out" "$work/time" <<'PY'
import json, sys
label, out, times = sys.argv[1], json.loads(sys.argv[2]), open(sys.argv[3]).read().split()
cpu = float(times[0]) + float(times[1])
print(label, round(out["delivered"] / out["seconds"]), round(cpu / max(1, out["delivered"]) * 1e6, 2))
PY
}

for round in $(seq 1 "$rounds"); do
    drain fixed --no-adaptive-concurrency
    drain adaptive
done | tee "$work/runs"
python3 - "$work/runs" "$json" <<'PY'
import json, sys
runs = [line.split() for line in open(sys.argv[1]) if line.strip()]
def mean(label, column):
    values = [float(r[column]) for r in runs if r[0] == label]
    return sum(values) / len(values)
fixed_rate, adaptive_rate = mean("fixed", 1), mean("adaptive", 1)
fixed_cpu, adaptive_cpu = mean("fixed", 2), mean("adaptive", 2)
result = {"fixedHitsPerSecond": round(fixed_rate), "adaptiveHitsPerSecond": round(adaptive_rate),
          "fixedCpuMicrosecondsPerHit": round(fixed_cpu, 2), "adaptiveCpuMicrosecondsPerHit": round(adaptive_cpu, 2),
          "rateRatio": round(adaptive_rate / fixed_rate, 3), "cpuRatio": round(adaptive_cpu / fixed_cpu, 3)}
if sys.argv[2] == "1":
    print(json.dumps(result))
else:
    print("fixed: %d hits/s, %.2f µs of CPU per hit; adaptive: %d hits/s, %.2f µs; adaptive / fixed: %.3f× the rate, %.3f× the CPU"
          % (fixed_rate, fixed_cpu, adaptive_rate, adaptive_cpu, result["rateRatio"], result["cpuRatio"]))
PY
