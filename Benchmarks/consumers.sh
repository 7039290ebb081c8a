#!/usr/bin/env bash
# What a second consumer of the log costs: `serve` (release build) brought through a backlog of N
# tracking events, once with the aggregator alone and once with the aggregator and the marketing
# lane (to `campaign-relay emulate`), in the same run. The marketing lane sends nothing for tracking
# hits, so it reads and passes over every event: the difference between the two is the price of
# one more consumer reading the whole log, most of it decoding (the log's readers share one
# decoding of each frame, docs/architecture.md).
# Per configuration, from outside the process: the server's utime+stime (/proc/PID/stat) from
# start to the moment every consumer is through (relay_aggregator_lag_events = 0 and the server
# quiet), per event of the backlog; median of RUNS.
# Usage: Benchmarks/consumers.sh [EVENTS=1000000] [RUNS=3] [--json]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${args[0]:-1000000}
runs=${args[1]:-3}
ticks=$(getconf CLK_TCK)
port=18195
emulator_port=18196

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { # name: the value of an unlabelled sample on /metrics
    # Into a file first: `curl | awk` under pipefail fails when awk exits before curl has written everything.
    curl -sf "http://127.0.0.1:$port/metrics" -o "$work/metrics.txt" || return 1
    awk -v name="$1" '$1 == name { print $2; exit }' "$work/metrics.txt"
}

python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
"$relay" ingest "$work/events.jsonl" --data-dir "$work/backlog" --json > /dev/null
"$relay" emulate --bind "127.0.0.1:$emulator_port" --kept-requests 0 --log-level warning > /dev/null &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$emulator_port/r/test" > /dev/null && break; sleep 0.1; done

measure() { # configuration: aggregator | aggregator+marketing; prints CPU seconds and wall seconds
    local data="$work/data-$1-$2" flags=()
    rm -rf "$data"
    cp -r "$work/backlog" "$data"
    if [ "$1" = aggregator+marketing ]; then flags=(--marketing-host "http://127.0.0.1:$emulator_port"); fi
    local started
    started=$(date +%s.%N)
    "$relay" serve --bind "127.0.0.1:$port" --data-dir "$data" --log-level warning "${flags[@]}" &
    local pid=$!
    pids+=("$pid")
    # Through when the aggregator's lag is 0 and then the server has gone quiet: at most 2 clock
    # ticks of CPU in a second, with nobody scraping it (a lane that passed over its last events
    # may not show it in its cursor until more events come, in builds before the fix of that;
    # quiet is the same test for every build).
    local waited=0
    while [ $waited -lt 3000 ]; do
        local lag durable
        lag=$(metric relay_aggregator_lag_events) || lag=""
        durable=$(metric relay_wal_last_durable_sequence) || durable=""
        [ -n "$lag" ] && [ "${lag%.*}" = 0 ] && [ "${durable%.*}" = "$events" ] && break
        sleep 0.1
        waited=$((waited + 1))
    done
    local quiet=0 last now
    last=$(cpu_ticks "$pid")
    while [ $quiet -lt 10 ] && [ $waited -lt 6000 ]; do
        sleep 0.1
        waited=$((waited + 1))
        now=$(cpu_ticks "$pid")
        if [ $((now - last)) -le 2 ]; then quiet=$((quiet + 1)); else quiet=0; last=$now; fi
    done
    local cpu
    cpu=$(cpu_ticks "$pid")
    echo "$1 $(python3 -c "print($cpu / $ticks, $(date +%s.%N) - $started)")"
    kill -TERM "$pid"
    wait "$pid" || true
}

lines=()
for run in $(seq 1 "$runs"); do
    for configuration in aggregator aggregator+marketing; do
        lines+=("$(measure "$configuration" "$run")")
        echo "run $run: ${lines[-1]}" >&2
    done
done
printf '%s\n' "${lines[@]}" | python3 -c '
import json, statistics, sys
events, as_json = int(sys.argv[1]), sys.argv[2] == "1"
cpu, wall = {}, {}
for line in sys.stdin:
    name, seconds, elapsed = line.split()
    cpu.setdefault(name, []).append(float(seconds))
    wall.setdefault(name, []).append(float(elapsed))
alone = statistics.median(cpu["aggregator"]) * 1e6 / events
both = statistics.median(cpu["aggregator+marketing"]) * 1e6 / events
result = {"events": events, "runs": len(cpu["aggregator"]),
          "cpuMicrosecondsPerEventAggregatorAlone": round(alone, 3),
          "cpuMicrosecondsPerEventWithMarketingLane": round(both, 3),
          "secondConsumerMicrosecondsPerEvent": round(both - alone, 3),
          "wallSecondsAggregatorAlone": round(statistics.median(wall["aggregator"]), 2),
          "wallSecondsWithMarketingLane": round(statistics.median(wall["aggregator+marketing"]), 2)}
if as_json:
    print(json.dumps(result))
else:
    print("| consumers | CPU µs per event (median of %d) | wall seconds |" % result["runs"])
    print("|---|---|---|")
    print("| aggregator | %.3f | %.2f |" % (alone, result["wallSecondsAggregatorAlone"]))
    print("| aggregator + marketing lane | %.3f | %.2f |" % (both, result["wallSecondsWithMarketingLane"]))
    print("| the second consumer | %.3f | |" % (both - alone))
' "$events" "$json"
