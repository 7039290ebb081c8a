#!/usr/bin/env bash
# What the aggregates cost on disk per unique message id, by how close the opened ids of a delivery
# are (docs/aggregates.md, "What a billion unique opens costs on disk"). For each distribution,
# EVENTS opens over 10 deliveries, every message id distinct, are ingested into a fresh log, then
# `campaign-relay aggregate` counts them; the size of aggregates.sqlite is divided by EVENTS.
#   consecutive   every id of each delivery's range opened
#   one-in-10     a tenth of each delivery's consecutive ids (random), as an open rate of 10 %
#   random        ids drawn from 1 … 10^9 (about one per chunk of 65,536 ids)
#   uuid          random UUIDs
# BASELINE=/path/to/campaign-relay counts the same logs with another build too (a version 2
# relay, for the comparison), with the ratio. --json prints one JSON object.
# Usage: Benchmarks/aggregates-size.sh [EVENTS=1000000] [--json]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${args[0]:-1000000}
rows=()
for distribution in consecutive one-in-10 random uuid; do
    data="$work/$distribution"
    python3 - "$events" "$distribution" "$work/$distribution.jsonl" <<'PY'
import random, sys, uuid
n, kind, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
random.seed(3)
per = n // 10
with open(out, "w") as f:
    for d in range(10):
        base = 50_000_000 + d * 10_000_000
        if kind == "consecutive":
            ids = [str(i) for i in range(base, base + per)]
        elif kind == "one-in-10":
            ids = [str(i) for i in sorted(random.sample(range(base, base + per * 10), per))]
        elif kind == "random":
            ids = [str(i) for i in random.sample(range(1, 10**9), per)]
        else:
            ids = [str(uuid.UUID(int=random.getrandbits(128), version=4)) for _ in range(per)]
        for i in ids:
            f.write('{"kind":"track","action":"open","messageId":"%s","deliveryId":"d%d"}\n' % (i, d))
PY
    "$relay" ingest "$work/$distribution.jsonl" --data-dir "$data" --json --log-level error >/dev/null
    size() { # binary: aggregate from an empty database, print its size in bytes
        rm -f "$data/aggregates.sqlite"*
        "$1" aggregate --data-dir "$data" --json --log-level error >/dev/null
        stat -c %s "$data/aggregates.sqlite"
    }
    relay_bytes=$(size "$relay")
    baseline_bytes=$([ -n "${BASELINE:-}" ] && size "$BASELINE" || echo null)
    rows+=("$distribution $relay_bytes $baseline_bytes")
    echo "$distribution: $relay_bytes bytes (baseline: $baseline_bytes)" >&2
done
printf '%s\n' "${rows[@]}" | python3 -c '
import json, sys
events, as_json = int(sys.argv[1]), sys.argv[2] == "1"
rows = []
for line in sys.stdin:
    name, relay, base = line.split()
    row = {"distribution": name, "bytes": int(relay), "bytesPerUnique": round(int(relay) / events, 2)}
    if base != "null":
        row["baselineBytesPerUnique"] = round(int(base) / events, 2)
        row["ratio"] = round(int(relay) / int(base), 3)
    rows.append(row)
if as_json:
    print(json.dumps({"events": events, "distributions": rows}))
else:
    print("| opened ids of a delivery | bytes per unique | a billion unique | baseline bytes per unique | ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.2f | %.1f GB | %s | %s |" % (r["distribution"], r["bytesPerUnique"], r["bytesPerUnique"], r.get("baselineBytesPerUnique", "-"), r.get("ratio", "-")))
' "$events" "$json"
