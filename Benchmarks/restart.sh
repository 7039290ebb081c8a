#!/usr/bin/env bash
# Time from `campaign-relay serve` starting to its first 200 for POST /v1/events, with a log of
# GIB gibibytes of events no consumer has read behind it (BENCHMARKS.md, "Restart"), against the
# same start on an empty data directory in the same run.
#   1. events are piped into `campaign-relay ingest -` until the log holds GIB GiB: tracking events
#      with random message ids and a random 128-bit integration key (about 25 bytes each in the
#      log, so 1 GiB is some 43 million events; nothing is aggregated, nothing forwarded);
#   2. serve starts (defaults: aggregator and uploader on, both behind by the whole log), and one
#      event is posted every 2 ms until the first 200; the time is from the spawn to that answer;
#   3. the same on an empty data directory (the baseline: process start, listener, empty log).
# Each start is measured RUNS times; medians are reported, and `wal verify --json` says what was
# behind. Usage: Benchmarks/restart.sh [GIB=1] [RUNS=3] [--json]
set -euo pipefail
source "$(dirname "$0")/common.sh"
gib=${args[0]:-1}
runs=${args[1]:-3}
target_bytes=$(python3 -c "print(int($gib * (1 << 30)))")
echo "filling a log of $gib GiB…" >&2
python3 - "$target_bytes" <<'PY' | "$relay" ingest - --data-dir "$work/full" --json > "$work/ingest.json"
import os, random, sys
# About 25 log bytes per event: write until the log should pass the target, with 5 % to spare.
count = int(int(sys.argv[1]) / 25 * 1.05)
rng = random.Random(6)
actions = ("impression", "open", "click")
out = sys.stdout
for start in range(0, count, 10000):
    out.write("".join(
        '{"kind":"track","action":"%s","messageId":"%d","deliveryId":"f%04x","integrationKey":"%032x"}\n'
        % (actions[i % 3], rng.randrange(1, 10**12), 0x1000 + i % 200, rng.getrandbits(128))
        for i in range(start, min(count, start + 10000))))
PY
python3 - "$relay" "$work" "$runs" "$json" <<'PY'
import json, os, socket, statistics, subprocess, sys, time
relay, work, runs, as_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
verify = json.loads(subprocess.run([relay, "wal", "verify", "--json", "--data-dir", f"{work}/full"], capture_output=True, text=True).stdout)
os.makedirs(f"{work}/empty", exist_ok=True)
body = b'[{"kind":"track","action":"open","messageId":"1","deliveryId":"restart"}]'
request = (b"POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
           b"Connection: close\r\n\r\n" % len(body)) + body
def first_ok(directory, port):
    started = time.monotonic()
    server = subprocess.Popen([relay, "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", directory, "--log-level", "warning"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.monotonic() - started < 120:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
                    connection.sendall(request)
                    answer = connection.recv(64)
                if answer.startswith(b"HTTP/1.1 200"):
                    return (time.monotonic() - started) * 1000
            except OSError:
                pass
            time.sleep(0.002)
        sys.exit(f"serve on {directory} answered no 200 within 120 s")
    finally:
        server.terminate()
        server.wait()
results = {"empty": [], "full": []}
for run in range(runs):
    for name in ("empty", "full"):
        # Every start finds the whole log unconsumed: what the last one counted is forgotten.
        for leftover in ("aggregates.sqlite", "aggregates.sqlite-wal", "aggregates.sqlite-shm", "aggregates.sqlite-journal"):
            if os.path.exists(f"{work}/{name}/{leftover}"): os.remove(f"{work}/{name}/{leftover}")
        cursors = f"{work}/{name}/wal/cursors"
        for cursor in os.listdir(cursors) if os.path.isdir(cursors) else []:
            os.remove(f"{cursors}/{cursor}")
        results[name].append(first_ok(f"{work}/{name}", 18290 + run))
summary = {
    "logBytes": verify["bytes"], "logEvents": verify["events"], "segments": verify["segments"],
    "emptyMilliseconds": round(statistics.median(results["empty"]), 1),
    "fullMilliseconds": round(statistics.median(results["full"]), 1),
    "runs": {name: [round(v, 1) for v in values] for name, values in results.items()},
}
summary["extraMilliseconds"] = round(summary["fullMilliseconds"] - summary["emptyMilliseconds"], 1)
if as_json:
    print(json.dumps(summary))
else:
    print(f"| data directory | first 200 after spawn (median of {runs}) |")
    print("|---|---|")
    print(f"| empty | {summary['emptyMilliseconds']} ms |")
    print(f"| {verify['bytes'] / (1 << 30):.2f} GiB log, {verify['events']:,} events, {verify['segments']} segments, none consumed | {summary['fullMilliseconds']} ms |")
PY
