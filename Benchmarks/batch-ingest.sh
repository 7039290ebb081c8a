#!/usr/bin/env bash
# The Fluent Bit comparison of BENCHMARKS.md, on the relay's side: `campaign-relay serve` (release
# build, defaults: aggregator on, no forwarding) taking JSON arrays of 100 tracking events with
# unique message ids (Benchmarks/http/array100-unique.lua), wrk with CONNECTIONS connections for
# SECONDS, RUNS times on a fresh data directory each; every 200 is fdatasync'ed.
# Per run, from outside the process:
#   events/s        200 answers × 100 / wrk's duration
#   CPU µs/event    the server's utime+stime (/proc/PID/stat) from just before wrk to the moment
#                   the aggregator has counted every event (relay_aggregator_lag_events = 0),
#                   divided by the events acknowledged: the whole cost of taking and counting one
#   peak RSS        VmHWM of /proc/PID/status after the run
#   bytes/event     `campaign-relay wal verify --json` of the run's log
# The last line is the median run (by events/s) as JSON.
# Usage: Benchmarks/batch-ingest.sh [SECONDS=10] [CONNECTIONS=16] [RUNS=3]
# SERVE_FLAGS adds options to serve (e.g. SERVE_FLAGS=--no-aggregate for the aggregator's share).
set -euo pipefail
source "$(dirname "$0")/common.sh"
seconds=${1:-10}
connections=${2:-16}
runs=${3:-3}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
ticks=$(getconf CLK_TCK)
port=18190

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { # name: the value of an unlabelled sample on /metrics
    # Into a file first: `curl | awk` under pipefail fails when awk exits before curl has written
    # everything, and the catch-up wait then ends before the aggregator has counted it all.
    curl -sf "http://127.0.0.1:$port/metrics" -o "$work/metrics.txt" || return 1
    awk -v name="$1" '$1 == name { print $2; exit }' "$work/metrics.txt"
}

results=()
for run in $(seq 1 "$runs"); do
    data="$work/run$run"
    "$relay" serve --bind "127.0.0.1:$port" --data-dir "$data" --log-level warning ${SERVE_FLAGS:-} &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    before=$(cpu_ticks "$pid")
    echo "## run $run of $runs: $connections connections, ${seconds} s" >&2
    wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$here/http/array100-unique.lua" \
        "http://127.0.0.1:$port/v1/events" | tee "$work/wrk$run.txt" >&2
    lag_wait=0
    while lag=$(metric relay_aggregator_lag_events) && [ -n "$lag" ] && [ "${lag%.*}" != 0 ] && [ $lag_wait -lt 600 ]; do
        sleep 0.1; lag_wait=$((lag_wait + 1))
    done
    after=$(cpu_ticks "$pid")
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
    kill -TERM "$pid"; wait "$pid" || true
    verify=$("$relay" wal verify --json --data-dir "$data" 2>/dev/null || true)
    results+=("$(python3 - "$work/wrk$run.txt" "$before" "$after" "$ticks" "$hwm" "$verify" "$lag_wait" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
before, after, ticks, hwm = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
verify = json.loads(sys.argv[6]) if sys.argv[6].strip() else {}
requests = int(re.search(r"(\d+) requests in ([\d.]+)(\w+)", text).group(1))
span = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
duration = float(span.group(2)) * {"s": 1, "ms": 1e-3, "m": 60}[span.group(3)]
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
acknowledged = (requests - (int(non2xx.group(1)) if non2xx else 0)) * 100
cpu = (after - before) / ticks
pct = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M))
print(json.dumps({
    "eventsPerSecond": round(acknowledged / duration),
    "acknowledgedEvents": acknowledged,
    "cpuSeconds": round(cpu, 2),
    "cpuMicrosecondsPerEvent": round(cpu * 1e6 / acknowledged, 2) if acknowledged else None,
    "serverCPUPercent": round(cpu * 100 / duration),
    "aggregatorCatchUpSeconds": int(sys.argv[7]) / 10,
    "peakRSSMiB": round(hwm / 1024, 1),
    "bytesPerEvent": verify.get("bytesPerEvent"),
    "loggedEvents": verify.get("events"),
    "p50": pct.get("50"), "p99": pct.get("99"),
}))
PY
)")
    echo "${results[-1]}" >&2
done
printf '%s\n' "${results[@]}" | python3 -c '
import json, sys
runs = [json.loads(line) for line in sys.stdin if line.strip()]
runs.sort(key=lambda r: r["eventsPerSecond"])
median = runs[len(runs) // 2]
print("| run | events/s | CPU µs/event | server CPU | peak RSS | bytes/event | p50 | p99 |")
print("|---|---|---|---|---|---|---|---|")
for r in runs:
    mark = " (median)" if r is median else ""
    print("| %s | %d | %.2f | %d%% | %.1f MiB | %s | %s | %s |" % (mark.strip() or "", r["eventsPerSecond"], r["cpuMicrosecondsPerEvent"] or 0, r["serverCPUPercent"], r["peakRSSMiB"], r["bytesPerEvent"], r["p50"], r["p99"]))
print(json.dumps({"median": median, "runs": runs}))
'
