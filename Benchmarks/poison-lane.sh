#!/usr/bin/env bash
# How long a poison registration holds the marketing lane: N registrations, the first of an
# integration key the emulator answers 500 forever, uploaded with `upload --until-drained
# --max-attempts 4`; baseline in the same run: the same N registrations, none poisoned. Reports,
# from the emulator's own request log, when the last healthy registration was answered (counted
# from the first request) in both runs, and when the poison was given up on.
# Usage: Benchmarks/poison-lane.sh [REGISTRATIONS=5000]
set -euo pipefail
source "$(dirname "$0")/common.sh"
count=${1:-5000}
python3 - "$count" "$work" <<'PY'
import sys
count, work = int(sys.argv[1]), sys.argv[2]
for name, first_key in (("poisoned", "poison"), ("healthy", "app")):
    with open("%s/%s.jsonl" % (work, name), "w") as out:
        out.write('{"kind":"register","platform":"ios","integrationKey":"%s","registrationToken":"first"}\n' % first_key)
        for index in range(1, count):
            out.write('{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"t%d"}\n' % index)
PY
"$relay" emulate --bind 127.0.0.1:18094 --kept-requests $((count + 100)) --fail-integration-key poison --log-level warning > /dev/null &
pids+=($!)
sleep 1
for name in healthy poisoned; do
    curl -s -X POST http://127.0.0.1:18094/emulator/reset > /dev/null
    "$relay" ingest "$work/$name.jsonl" --data-dir "$work/$name" --json > /dev/null
    "$relay" upload --until-drained --max-attempts 4 --marketing-host http://127.0.0.1:18094 --data-dir "$work/$name" --json --log-level error > "$work/$name.json"
    curl -s "http://127.0.0.1:18094/emulator/requests?limit=$((count + 100))" > "$work/$name-requests.json"
done
python3 - "$work" "$count" <<'PY'
import json, sys
work, count = sys.argv[1], int(sys.argv[2])
def timeline(name):
    requests = json.load(open("%s/%s-requests.json" % (work, name)))["requests"]
    start = min(r["time"] for r in requests)
    healthy = [r["time"] - start for r in requests if "mobileAppUuid=poison" not in r["body"]]
    poison = [r["time"] - start for r in requests if "mobileAppUuid=poison" in r["body"]]
    return max(healthy), len(healthy), poison, healthy
base_done, base_count, _, _ = timeline("healthy")
done, delivered, poison, _ = timeline("poisoned")
print("| run | healthy registrations answered | last one answered after | poison attempts | poison given up after |")
print("|---|---|---|---|---|")
print("| baseline, no poison | %d | %.0f ms | - | - |" % (base_count, base_done * 1000))
print("| first registration poisoned, --max-attempts 4 | %d | %.0f ms | %d | %.0f ms |" % (delivered, done * 1000, len(poison), max(poison) * 1000))
print()
during = sum(1 for t in timeline("poisoned")[3] if t < max(poison))
print("healthy registrations finished in %.2fx the baseline's time; %d of them were answered while the poison was still being retried"
      % (done / base_done if base_done else 0, during))
PY
