#!/usr/bin/env bash
# The nightly replay's figures (release build): N generated tracking hits ingested (4 MiB
# segments), drained once by `upload --until-drained` to `campaign-relay emulate` (the baseline,
# same run), then replayed whole: from the log, and from an archive (`wal archive --to`, read with
# `--from-archive` beside an empty data directory), each to a fresh emulator; plus `--dry-run` and
# `--to-aggregates`. Also the log's bytes per event and what a day of retention costs at the
# ingest rate measured by `ingest` here and at 1,000 hits/s.
# Usage: [SEGMENT_BYTES=4194304] Benchmarks/replay.sh [EVENTS=1000000] [--json]
# (ingest commits 1 MiB of input at a time, a segment never splits a commit: the archive holds the
# segments sealed before the last one, so a tiny run needs tiny segments)
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${args[0]:-1000000}
python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
ingest=$("$relay" ingest "$work/events.jsonl" --data-dir "$work/data" --segment-bytes "${SEGMENT_BYTES:-4194304}" --batch-bytes 1048576 --json --log-level warning)
verify=$("$relay" wal verify --data-dir "$work/data" --json)
emulator() { # port → starts an emulator keeping no requests
    "$relay" emulate --bind "127.0.0.1:$1" --kept-requests 0 --log-level warning > /dev/null &
    pids+=($!)
    for _ in $(seq 50); do curl -sf "http://127.0.0.1:$1/emulator/hits" > /dev/null && return; sleep 0.1; done
}
accepted() { curl -s "http://127.0.0.1:$1/emulator/hits" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accepted"])'; }
emulator 18101
upload=$("$relay" upload --until-drained --tracking-host http://127.0.0.1:18101 --data-dir "$work/data" --json --log-level warning)
emulator 18102
from_log=$("$relay" replay --from 1 --tracking-host http://127.0.0.1:18102 --data-dir "$work/data" --json --log-level warning)
"$relay" wal archive --to "$work/archive" --data-dir "$work/data" --json > "$work/archive.json"
emulator 18103
from_archive=$("$relay" replay --from 1 --from-archive "$work/archive" --tracking-host http://127.0.0.1:18103 \
    --data-dir "$work/empty" --json --log-level warning) || [ $? = 2 ]
dry_started=$(date +%s.%N)
"$relay" replay --from 1 --dry-run --data-dir "$work/data" --json > /dev/null
dry_seconds=$(python3 -c "import time; print(time.time() - $dry_started)")
recount=$(/usr/bin/time -f "%e" -o "$work/recount-time" "$relay" replay --from 1 --to-aggregates "$work/side.sqlite" \
    --data-dir "$work/data" --json --log-level warning > /dev/null; cat "$work/recount-time")
python3 - "$ingest" "$verify" "$upload" "$from_log" "$from_archive" "$dry_seconds" "$recount" "$events" \
    "$(accepted 18101)" "$(accepted 18102)" "$(accepted 18103)" "$json" <<'PY'
import json, sys
ingest, verify, upload, from_log, from_archive = (json.loads(a) for a in sys.argv[1:6])
dry, recount, events = float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])
accepted = [int(a) for a in sys.argv[9:12]]
def rate(summary): return summary["delivered"] / summary["seconds"]
bytes_per_event = verify["bytes"] / verify["events"]
ingest_rate = ingest["eventsPerSecond"]
day = lambda per_second: bytes_per_event * per_second * 86400
figures = {
    "events": events, "bytesPerEvent": round(bytes_per_event, 2),
    "ingestEventsPerSecond": round(ingest_rate),
    "dayOfRetentionBytesAtIngestRate": round(day(ingest_rate)), "dayOfRetentionBytesAt1000PerSecond": round(day(1000)),
    "uploadHitsPerSecond": round(rate(upload)), "replayFromLogHitsPerSecond": round(rate(from_log)),
    "replayFromArchiveHitsPerSecond": round(rate(from_archive)), "replayFromArchiveHits": from_archive["delivered"],
    "dryRunEventsPerSecond": round(events / dry), "toAggregatesEventsPerSecond": round(events / recount),
    "emulatorAccepted": {"upload": accepted[0], "replayFromLog": accepted[1], "replayFromArchive": accepted[2]},
}
if sys.argv[12] == "1":
    print(json.dumps(figures))
    sys.exit(0)
print("| run | events/s | ratio to upload |")
print("|---|---|---|")
print("| upload --until-drained (baseline) | %d | 1.00 |" % rate(upload))
print("| replay from the log | %d | %.2f |" % (rate(from_log), rate(from_log) / rate(upload)))
print("| replay --from-archive (%d sealed-segment hits) | %d | %.2f |" % (from_archive["delivered"], rate(from_archive), rate(from_archive) / rate(upload)))
print("| replay --dry-run | %d | |" % (events / dry))
print("| replay --to-aggregates | %d | |" % (events / recount))
print()
print("log: %.2f bytes per event; ingest %d events/s" % (bytes_per_event, ingest_rate))
print("a day of retention: %.1f GB at the ingest rate, %.2f GB at 1,000 hits/s" % (day(ingest_rate) / 1e9, day(1000) / 1e9))
print("emulator accepted: upload %d, replay from the log %d, from the archive %d" % tuple(accepted))
PY
