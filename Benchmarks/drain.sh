#!/usr/bin/env bash
# Drain a backlog of N tracking hits to `campaign-relay emulate` over loopback (release build), with
# the ceiling of the same emulator measured by wrk on the same number of connections in the same run.
# Usage: Benchmarks/drain.sh [EVENTS=1000000] [CONCURRENCY=8]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${1:-1000000}
concurrency=${2:-8}
python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
"$relay" ingest "$work/events.jsonl" --data-dir "$work/data" --json > /dev/null
"$relay" emulate --bind 127.0.0.1:18092 --kept-requests 0 --log-level warning > /dev/null &
pids+=($!)
sleep 1
drain=$("$relay" upload --until-drained --tracking-host http://127.0.0.1:18092 --data-dir "$work/data" --concurrency "$concurrency" --json --log-level warning)
accepted=$(curl -s http://127.0.0.1:18092/emulator/hits | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["accepted"], d["distinct"])')
ceiling=""
if command -v wrk >/dev/null; then
    ceiling=$(wrk -t1 -c"$concurrency" -d5s "http://127.0.0.1:18092/r/?id=hd828,f0190,1" | awk '/Requests\/sec/ {print int($2)}')
fi
python3 - "$drain" "$accepted" "$ceiling" "$events" "$concurrency" <<'PY'
import json, sys
drain, (accepted, distinct), ceiling = json.loads(sys.argv[1]), sys.argv[2].split(), sys.argv[3]
rate = drain["delivered"] / drain["seconds"]
print("| run | hits/s |")
print("|---|---|")
print("| drain %s hits, concurrency %s | %d |" % (sys.argv[4], sys.argv[5], rate))
if ceiling:
    print("| ceiling: wrk against the same emulator, %s connections | %s |" % (sys.argv[5], ceiling))
    print()
    print("drain / emulator ceiling: %.2fx" % (rate / float(ceiling)))
print("emulator accepted %s hits, %s distinct" % (accepted, distinct))
PY
