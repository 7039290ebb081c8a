#!/usr/bin/env bash
# What one damaged bit costs, and what the log's frames cost in bytes (BENCHMARKS.md, "Blast radius").
#   1. `campaign-relay ingest` of EVENTS generated tracking events (Benchmarks/generate-events.py)
#      with its default batches (4 MiB of input per group commit: the largest frames it writes);
#   2. FLIPS times: one bit at a random offset of a random segment's written bytes is inverted,
#      `campaign-relay wal verify --json` counts the events it can still read, the bit is restored;
#   3. bytes per event (`wal verify`) of that log, and of a log of 100,000 events ingested in
#      batches of 100 (--batch-bytes 11000: about 100 lines of the generated file).
# Reports the events lost per flip: the most, the median, and how many flips cost none (a bit in a
# segment header, which the file name makes redundant, or in zero padding).
# Usage: Benchmarks/bit-flip.sh [EVENTS=1000000] [FLIPS=40] [--json]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${args[0]:-1000000}
flips=${args[1]:-40}
python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
python3 "$here/generate-events.py" 100000 "$work/events-100k.jsonl" 11
"$relay" ingest "$work/events.jsonl" --data-dir "$work/large" --json > /dev/null
"$relay" ingest "$work/events-100k.jsonl" --data-dir "$work/small" --batch-bytes 11000 --json > /dev/null
python3 - "$relay" "$work" "$events" "$flips" "$json" <<'PY'
import json, os, random, subprocess, sys
relay, work, events, flips, as_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
def verify(directory):
    run = subprocess.run([relay, "wal", "verify", "--json", "--data-dir", directory], capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"wal verify exited {run.returncode}: {run.stderr}")
    return json.loads(run.stdout)
large = f"{work}/large"
clean = verify(large)
assert clean["clean"] and clean["events"] == events, clean
# The written bytes of each segment (frames end where the zeros of the preallocation begin).
segments = []
for name in sorted(os.listdir(f"{large}/wal")):
    if name.endswith(".wal"):
        data = open(f"{large}/wal/{name}", "rb").read()
        end = len(data.rstrip(b"\0"))
        segments.append((f"{large}/wal/{name}", end))
rng = random.Random(16)
lost = []
for flip in range(flips):
    path, end = rng.choice(segments)
    offset, bit = rng.randrange(end), 1 << rng.randrange(8)
    with open(path, "r+b") as f:
        f.seek(offset); byte = f.read(1)[0]
        f.seek(offset); f.write(bytes([byte ^ bit]))
    try:
        after = verify(large)
    finally:
        with open(path, "r+b") as f:
            f.seek(offset); f.write(bytes([byte]))
    lost.append(events - after["events"])
    if not as_json:
        print(f"flip {flip + 1}: {os.path.basename(path)} offset {offset} bit {bit}: {events - after['events']} events lost", file=sys.stderr)
assert verify(large)["events"] == events
small = verify(f"{work}/small")
ordered = sorted(lost)
result = {
    "events": events, "frames": clean["frames"], "flips": flips,
    "mostEventsLostByOneFlip": max(lost), "medianEventsLost": ordered[len(ordered) // 2],
    "flipsCostingNothing": sum(1 for n in lost if n == 0),
    "bytesPerEvent": clean["bytesPerEvent"], "bytesPerEventInBatchesOf100": small["bytesPerEvent"],
    "framesInBatchesOf100": small["frames"],
}
if as_json:
    print(json.dumps(result))
else:
    print(f"| log | events | frames | bytes/event | events lost by one flipped bit: most / median / flips costing none |")
    print(f"|---|---|---|---|---|")
    print(f"| ingest, default batches | {events:,} | {clean['frames']:,} | {clean['bytesPerEvent']:.2f} | {max(lost):,} / {ordered[len(ordered)//2]:,} / {result['flipsCostingNothing']} of {flips} |")
    print(f"| ingest, batches of ~100 | 100,000 | {small['frames']:,} | {small['bytesPerEvent']:.2f} | |")
PY
