#!/usr/bin/env bash
# Aggregation of N tracking events from an existing log (release build): `campaign-relay aggregate`
# from an empty database, and `campaign-relay stats --rebuild`, RUNS times each; prints medians.
# Usage: Benchmarks/aggregate.sh [EVENTS=1000000] [RUNS=5]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${1:-1000000}
runs=${2:-5}
python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
"$relay" ingest "$work/events.jsonl" --data-dir "$work/data" --json >/dev/null
: > "$work/results"
for run in $(seq 1 "$runs"); do
    rm -f "$work/data/aggregates.sqlite"*
    "$relay" aggregate --data-dir "$work/data" --json --log-level error | python3 -c 'import json,sys; print("aggregate", json.load(sys.stdin)["eventsPerSecond"])' >> "$work/results"
    "$relay" stats --rebuild --data-dir "$work/data" --log-level error 2>&1 >/dev/null | python3 -c 'import re,sys; print("rebuild", re.search(r"\((\d+) events/s\)", sys.stdin.read()).group(1))' >> "$work/results"
    echo "run $run: $(tail -2 "$work/results" | tr '\n' ' ')" >&2
done
python3 - "$work/results" "$events" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for kind in ("aggregate", "rebuild"):
    print("%-9s %s events: median %d events/s" % (kind, sys.argv[2], statistics.median(int(r[1]) for r in rows if r[0] == kind)))
PY
