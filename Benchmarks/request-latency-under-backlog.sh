#!/usr/bin/env bash
# p99 of `GET /r/test` (wrk, 4 connections, 5 s) on `serve` idle, then on the same kind of `serve`
# while it aggregates and forwards a backlog of N events to `campaign-relay emulate` (release build,
# one run, so the two figures share the machine's state). The issue's bar:
# busy p99 <= max(3 x idle p99, 15 ms).
# Usage: Benchmarks/request-latency-under-backlog.sh [EVENTS=2000000]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${1:-2000000}
command -v wrk >/dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 2; }

python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
"$relay" ingest "$work/events.jsonl" --data-dir "$work/backlog" --json > /dev/null
rm -f "$work/events.jsonl"

"$relay" emulate --bind 127.0.0.1:18093 --kept-requests 0 --log-level warning > /dev/null &
pids+=($!)

# wrk's 99th percentile, in milliseconds.
p99() {
    wrk -t1 -c4 -d5s --latency "$1" | awk '
        $1 == "99%" { v = $2; unit = v; sub(/[0-9.]+/, "", unit); sub(/[a-z]+$/, "", v)
                      if (unit == "us") v /= 1000; else if (unit == "s") v *= 1000; printf "%.2f\n", v }'
}

# Waits for a serve started with --data-dir $1 to write its address.
url_of() {
    for _ in $(seq 1 300); do
        if [ -f "$1/server.json" ]; then python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$1/server.json"; return; fi
        sleep 0.1
    done
    echo "serve did not start" >&2; exit 1
}

"$relay" serve --bind 127.0.0.1:0 --data-dir "$work/idle" --tracking-host http://127.0.0.1:18093 --log-level warning &
idle_pid=$!
pids+=($idle_pid)
idle_url=$(url_of "$work/idle")
p99 "$idle_url/r/test" > /dev/null  # warm-up
idle=$(p99 "$idle_url/r/test")
kill "$idle_pid"; wait "$idle_pid" 2>/dev/null || true

"$relay" serve --bind 127.0.0.1:0 --data-dir "$work/backlog" --tracking-host http://127.0.0.1:18093 --log-level warning &
pids+=($!)
busy_url=$(url_of "$work/backlog")
sleep 1  # the aggregator and the uploader are both under way by now
busy=$(p99 "$busy_url/r/test")
backlog=$(curl -s "$busy_url/metrics" | awk '/^relay_upload_backlog\{lane="tracking",tenant="default"\}/ {print $2}')
lag=$(curl -s "$busy_url/metrics" | awk '/^relay_aggregator_lag_events / {print $2}')

python3 - "$idle" "$busy" "$events" "${backlog:-?}" "${lag:-?}" <<'PY'
import sys
idle, busy, events, backlog, lag = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
bar = max(3 * idle, 15.0)
print("| GET /r/test, wrk -c4 -d5s | p99 |")
print("|---|---|")
print("| serve idle | %.2f ms |" % idle)
print("| serve aggregating and forwarding a %s-event backlog | %.2f ms |" % (events, busy))
print()
print("busy / idle: %.1fx; bar max(3 x idle, 15 ms) = %.1f ms: %s" % (busy / idle, bar, "met" if busy <= bar else "NOT met"))
print("after the measurement: upload backlog %s events, aggregator lag %s events" % (backlog, lag))
PY
