#!/usr/bin/env bash
# Edge → central over loopback (release build): N tracking events ingested into an edge's log, then
# `upload --upstream-relay --until-drained` hands them to a central `serve --relay-token` (which
# aggregates; it has no Campaign host, so it forwards nothing). Prints events/s of the hand-over,
# the bytes that crossed loopback per event (requests and answers, TCP/IP headers included: the
# received bytes of `lo` in /proc/net/dev, which counts each loopback packet once received and once
# sent) beside the edge log's bytes per event, and that the central log holds N events.
# Usage: Benchmarks/relay-chain.sh [EVENTS=1000000]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${1:-1000000}
token=relay-benchmark-token-0123456789
python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
"$relay" ingest "$work/events.jsonl" --data-dir "$work/edge" --json --log-level error >/dev/null
rm -f "$work/events.jsonl"
wal_bytes=$("$relay" wal verify --data-dir "$work/edge" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytesPerEvent"])')

"$relay" serve --bind 127.0.0.1:0 --data-dir "$work/central" --relay-token "$token" --log-level warning &
pids+=($!)
for _ in $(seq 1 300); do [ -f "$work/central/server.json" ] && break; sleep 0.1; done
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$work/central/server.json")

lo_bytes() { awk '$1 == "lo:" { printf "%.0f\n", $2 }' /proc/net/dev; }
before=$(lo_bytes)
"$relay" upload --data-dir "$work/edge" --upstream-relay "$url" --upstream-token "$token" --until-drained --json --log-level warning > "$work/upload.json"
after=$(lo_bytes)
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true; pids=()
stored=$("$relay" wal verify --data-dir "$work/central" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')

python3 - "$work/upload.json" "$events" "$before" "$after" "$wal_bytes" "$stored" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
events, before, after, wal, stored = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
wire = (after - before) / events
print("| edge → central, %d events | figure |" % events)
print("|---|---|")
print("| hand-over | %d events/s (%.2f s) |" % (events / summary["seconds"], summary["seconds"]))
print("| loopback bytes per event (requests and answers, headers included) | %.2f |" % wire)
print("| edge log bytes per event | %.2f |" % wal)
print("| wire / log | %.2fx |" % (wire / wal))
print("| events in the central log | %d |" % stored)
PY
