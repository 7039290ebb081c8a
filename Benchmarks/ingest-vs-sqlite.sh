#!/usr/bin/env bash
# Durable ingest of N tracking events from a JSONL file:
#   campaign-relay ingest            (write-ahead log, every batch fdatasync'ed before it counts)
#   IngestBaseline                   (the same decoding, the same batches, into SQLite WAL mode with synchronous=FULL)
# Runs alternate between the two so both see the same machine; prints medians and the ratio.
# Usage: Benchmarks/ingest-vs-sqlite.sh [EVENTS=1000000] [RUNS=5]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${1:-1000000}
runs=${2:-5}

baseline=$(built_product IngestBaseline)

python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
echo "input: $events events, $(stat -c %s "$work/events.jsonl") bytes of JSONL; $(nproc) cores" >&2

: > "$work/results"
for run in $(seq 1 "$runs"); do
    rm -rf "$work/relay" "$work/queue.sqlite"*
    rate=$("$relay" ingest "$work/events.jsonl" --data-dir "$work/relay" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["eventsPerSecond"])')
    perEvent=$("$relay" wal verify --data-dir "$work/relay" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytesPerEvent"])')
    echo "relay $rate $perEvent" >> "$work/results"
    "$baseline" "$work/events.jsonl" "$work/queue.sqlite" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("sqlite", d["eventsPerSecond"], round(d["bytesPerEvent"], 2))' >> "$work/results"
    echo "run $run: $(tail -2 "$work/results" | tr '\n' ' ')" >&2
done

python3 - "$work/results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(kind, column): return statistics.median(float(r[column]) for r in rows if r[0] == kind)
relay_rate, sqlite_rate = median("relay", 1), median("sqlite", 1)
print("| store | events/s (median) | bytes/event on disk |")
print("|---|---|---|")
print("| campaign-relay ingest (WAL, fdatasync per batch) | %d | %.2f |" % (relay_rate, median("relay", 2)))
print("| SQLite baseline (WAL mode, synchronous=FULL, same batches) | %d | %.2f |" % (sqlite_rate, median("sqlite", 2)))
print()
print("ratio campaign-relay / SQLite: %.2fx" % (relay_rate / sqlite_rate))
PY
