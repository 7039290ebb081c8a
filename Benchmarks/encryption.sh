#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2034
# (relay, here, work, json and args are set by common.sh, and pids is read by its cleanup on exit;
# common.sh is not read by shellcheck.)
# The cost of encryption at rest (`serve --encryption-key-file`: AES-256-GCM of every log frame),
# on the load of Benchmarks/batch-ingest.sh: `campaign-relay serve` (release build, defaults:
# aggregator on, no forwarding) taking JSON arrays of 100 tracking events with unique message ids
# (Benchmarks/http/array100-unique.lua), wrk -t1 with CONNECTIONS connections for SECONDS; every 200
# is fdatasync'ed. Runs alternate plain, encrypted, plain, encrypted … (PAIRS pairs), each on a
# fresh `serve` and data directory; one key file (`k1:BASE64` of 32 random bytes, mode 0600) for
# all the encrypted runs.
# Per run, from outside the process, as batch-ingest.sh measures:
#   events/s        200 answers × 100 / wrk's duration
#   CPU µs/event    the server's utime+stime (/proc/PID/stat) from just before wrk to the moment
#                   the aggregator has counted every event (relay_aggregator_lag_events = 0),
#                   divided by the events acknowledged (the aggregator reads the log back, so the
#                   encrypted runs pay sealing and opening); also the same over wrk's run alone
#   peak RSS        VmHWM of /proc/PID/status after the run
#   bytes/event     `campaign-relay wal verify --json` of the run's log (with the key file for the
#                   encrypted runs)
# Checks, failing loudly: an encrypted run's log verified without the key has unopenedFrames > 0
# (and with it: every frame opened, encryptedFrames > 0, at least every acknowledged event in it);
# a plain run's log has no encrypted frame; every log is clean.
# Reported: every run, the medians of each side, and encrypted / plain of events/s and CPU per event,
# per pair and their median (the aim: CPU per event ≤ 1.10×). `uptime` before and after goes into
# the output: figures taken on a busy machine are noisy. The last line is all of it as JSON
# (--json: that line alone).
# Usage: Benchmarks/encryption.sh [SECONDS=10] [CONNECTIONS=16] [PAIRS=3] [--json]
# (RELAY_BINARY=/path/to/campaign-relay runs that build and skips swift build, see common.sh;
# SERVE_FLAGS adds options to both sides' serve.)
set -euo pipefail
# shellcheck source=/dev/null
source "$(dirname "$0")/common.sh"
seconds=${args[0]:-10}
connections=${args[1]:-16}
pairs=${args[2]:-3}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
ticks=$(getconf CLK_TCK)
port=18390
uptime_before=$(uptime)
echo "uptime: $uptime_before" >&2

keys="$work/keys"
(umask 077 && printf 'k1:%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$keys")
chmod 600 "$keys"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # pid: user + system clock ticks
metric() { # name: the value of an unlabelled sample on /metrics
    # Into a file first: `curl | awk` under pipefail fails when awk exits before curl has written
    # everything, and the catch-up wait then ends before the aggregator has counted it all.
    curl -sf "http://127.0.0.1:$port/metrics" -o "$work/metrics.txt" || return 1
    awk -v name="$1" '$1 == name { print $2; exit }' "$work/metrics.txt"
}

cat >"$work/summarize.py" <<'PY'
import json, re, statistics, sys

def run(a):
    """One run: wrk's output, /proc figures and `wal verify --json` to one JSON line; checks."""
    text = open(a["wrk"]).read()
    span = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
    requests = int(span.group(1))
    duration = float(span.group(2)) * {"s": 1, "ms": 1e-3, "m": 60}[span.group(3)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    acknowledged = (requests - (int(non2xx.group(1)) if non2xx else 0)) * 100
    ticks = int(a["ticks"])
    cpu = (int(a["after"]) - int(a["before"])) / ticks
    cpu_load = (int(a["afterLoad"]) - int(a["before"])) / ticks
    pct = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M))
    verify = json.loads(a["verify"]) if a["verify"].strip() else {}
    keyless = json.loads(a["keyless"]) if a["keyless"].strip() else {}
    encrypted = a["mode"] == "encrypted"
    problems = []
    if not verify:
        problems.append("wal verify --json printed nothing")
    elif not verify.get("clean"):
        problems.append("wal verify: the log is not clean: %s" % verify.get("damage"))
    if acknowledged == 0:
        problems.append("no event was acknowledged")
    if int(a["lagWait"]) >= 600:
        problems.append("the aggregator had not counted everything after 60 s")
    if encrypted:
        if keyless.get("unopenedFrames", 0) <= 0:
            problems.append("the log does not look encrypted: `wal verify --json` without the key shows unopenedFrames = %s"
                            % keyless.get("unopenedFrames"))
        if verify.get("encryptedFrames", 0) <= 0 or verify.get("unopenedFrames", 1) != 0:
            problems.append("with the key: encryptedFrames = %s, unopenedFrames = %s (every frame should be encrypted and opened)"
                            % (verify.get("encryptedFrames"), verify.get("unopenedFrames")))
        if (verify.get("events") or 0) < acknowledged:
            problems.append("with the key the log holds %s events, fewer than the %d acknowledged" % (verify.get("events"), acknowledged))
    elif verify.get("encryptedFrames", 0) != 0:
        problems.append("the plain run's log has %s encrypted frames" % verify.get("encryptedFrames"))
    result = {
        "pair": int(a["pair"]), "mode": a["mode"],
        "eventsPerSecond": round(acknowledged / duration),
        "acknowledgedEvents": acknowledged,
        "cpuSeconds": round(cpu, 2),
        "cpuMicrosecondsPerEvent": round(cpu * 1e6 / acknowledged, 3) if acknowledged else None,
        "cpuMicrosecondsPerEventDuringLoad": round(cpu_load * 1e6 / acknowledged, 3) if acknowledged else None,
        "serverCPUPercent": round(cpu_load * 100 / duration),
        "aggregatorCatchUpSeconds": int(a["lagWait"]) / 10,
        "peakRSSMiB": round(int(a["hwm"]) / 1024, 1),
        "bytesPerEvent": verify.get("bytesPerEvent"),
        "loggedEvents": verify.get("events"),
        "frames": verify.get("frames"),
        "encryptedFrames": verify.get("encryptedFrames"),
        "unopenedFramesWithoutKey": keyless.get("unopenedFrames") if encrypted else None,
        "p50": pct.get("50"), "p99": pct.get("99"),
    }
    print(json.dumps(result), flush=True)
    if problems:
        for problem in problems:
            print("FAILED, pair %s, %s run: %s" % (a["pair"], a["mode"], problem), file=sys.stderr)
        sys.exit(1)

def report(a):
    runs = [json.loads(line) for line in open(a["runs"]) if line.strip()]
    med = lambda values: statistics.median(values) if values else None
    rnd = lambda value, digits=3: None if value is None else round(value, digits)
    keys = ("eventsPerSecond", "cpuMicrosecondsPerEvent", "cpuMicrosecondsPerEventDuringLoad", "serverCPUPercent",
            "peakRSSMiB", "bytesPerEvent", "aggregatorCatchUpSeconds")
    sides = {}
    for mode in ("plain", "encrypted"):
        mine = [r for r in runs if r["mode"] == mode]
        sides[mode] = {k: rnd(med([r[k] for r in mine if r[k] is not None])) for k in keys}
        sides[mode]["eventsPerSecond"] = round(sides[mode]["eventsPerSecond"])
    pair_ratios = []
    for n in sorted({r["pair"] for r in runs}):
        p = {r["mode"]: r for r in runs if r["pair"] == n}
        if "plain" not in p or "encrypted" not in p:
            continue
        ratio = lambda k: rnd(p["encrypted"][k] / p["plain"][k]) if p["plain"][k] else None
        pair_ratios.append({"pair": n, "eventsPerSecond": ratio("eventsPerSecond"),
                            "cpuMicrosecondsPerEvent": ratio("cpuMicrosecondsPerEvent"),
                            "cpuMicrosecondsPerEventDuringLoad": ratio("cpuMicrosecondsPerEventDuringLoad"),
                            "bytesPerEvent": ratio("bytesPerEvent")})
    ratios = {k: rnd(med([p[k] for p in pair_ratios if p[k] is not None]))
              for k in ("eventsPerSecond", "cpuMicrosecondsPerEvent", "cpuMicrosecondsPerEventDuringLoad", "bytesPerEvent")}
    result = {
        "settings": {"seconds": float(a["seconds"]), "connections": int(a["connections"]), "pairs": int(a["pairs"]),
                     "relay": a["relay"], "serveFlags": a["serveFlags"]},
        "plain": sides["plain"], "encrypted": sides["encrypted"],
        "ratios": ratios, "pairRatios": pair_ratios,
        "cpuAimMet": None if ratios["cpuMicrosecondsPerEvent"] is None else ratios["cpuMicrosecondsPerEvent"] <= 1.10,
        "runs": runs,
        "uptimeBefore": a["uptimeBefore"].strip(), "uptimeAfter": a["uptimeAfter"].strip(),
    }
    if a["json"] != "1":
        f = lambda v, d=2: "—" if v is None else (f"{v:,.{d}f}" if isinstance(v, float) else f"{v:,}")
        print(f"### Encryption at rest: batch ingest, {a['connections']} connections, {a['seconds']} s per run, {a['pairs']} pairs")
        print()
        print("| pair | log | events/s | CPU µs/event until counted | during the load | server CPU | catch-up | peak RSS | bytes/event | p50 | p99 |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in runs:
            print(f"| {r['pair']} | {r['mode']} | {f(r['eventsPerSecond'])} | {f(r['cpuMicrosecondsPerEvent'])} | "
                  f"{f(r['cpuMicrosecondsPerEventDuringLoad'])} | {r['serverCPUPercent']} % | {r['aggregatorCatchUpSeconds']} s | "
                  f"{r['peakRSSMiB']} MiB | {f(r['bytesPerEvent'])} | {r['p50']} | {r['p99']} |")
        print()
        print("| median | plain | encrypted | encrypted / plain (median of the pairs' ratios) | per pair |")
        print("|---|---|---|---|---|")
        for label, k, d in (("events/s", "eventsPerSecond", 0), ("CPU µs per event, until counted", "cpuMicrosecondsPerEvent", 2),
                            ("CPU µs per event, during the load", "cpuMicrosecondsPerEventDuringLoad", 2),
                            ("bytes per event on disk", "bytesPerEvent", 2)):
            per_pair = ", ".join(f(p[k], 3) for p in pair_ratios)
            print(f"| {label} | {f(sides['plain'][k], d) if d else f(sides['plain'][k])} | "
                  f"{f(sides['encrypted'][k], d) if d else f(sides['encrypted'][k])} | {f(ratios[k], 3)}× | {per_pair} |")
        print()
        aim = {True: "met", False: "NOT met", None: "not measured"}[result["cpuAimMet"]]
        print(f"CPU per event, encrypted / plain: {f(ratios['cpuMicrosecondsPerEvent'], 3)}× (aim ≤ 1.10×: {aim})")
        print(f"uptime before: {result['uptimeBefore']}")
        print(f"uptime after:  {result['uptimeAfter']}")
    print(json.dumps(result))

mode, pairs = sys.argv[1], dict(arg.split("=", 1) for arg in sys.argv[2:])
{"run": run, "report": report}[mode](pairs)
PY
summarize() { python3 "$work/summarize.py" "$@"; }

: >"$work/runs.jsonl"
for pair in $(seq 1 "$pairs"); do
    for mode in plain encrypted; do
        data="$work/$mode$pair"
        flags=()
        if [ "$mode" = encrypted ]; then flags=(--encryption-key-file "$keys"); fi
        # shellcheck disable=SC2086 # SERVE_FLAGS is split on purpose, as in batch-ingest.sh
        "$relay" serve --bind "127.0.0.1:$port" --data-dir "$data" --log-level warning "${flags[@]}" ${SERVE_FLAGS:-} &
        pid=$!
        pids=("$pid")
        healthy=0
        for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && { healthy=1; break; }; sleep 0.1; done
        [ $healthy = 1 ] || { echo "FAILED: serve ($mode) does not answer /healthz on port $port" >&2; exit 1; }
        before=$(cpu_ticks "$pid")
        echo "## pair $pair of $pairs, $mode: $connections connections, ${seconds} s" >&2
        wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$here/http/array100-unique.lua" \
            "http://127.0.0.1:$port/v1/events" >"$work/wrk-$mode$pair.txt"
        after_load=$(cpu_ticks "$pid")
        cat "$work/wrk-$mode$pair.txt" >&2
        lag_wait=0
        while lag=$(metric relay_aggregator_lag_events) && [ -n "$lag" ] && [ "${lag%.*}" != 0 ] && [ $lag_wait -lt 600 ]; do
            sleep 0.1; lag_wait=$((lag_wait + 1))
        done
        after=$(cpu_ticks "$pid")
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
        kill -TERM "$pid"; wait "$pid" || true
        pids=()
        verify=$("$relay" wal verify --json --data-dir "$data" "${flags[@]}" 2>/dev/null || true)
        keyless=""
        if [ "$mode" = encrypted ]; then keyless=$("$relay" wal verify --json --data-dir "$data" 2>/dev/null || true); fi
        summarize run wrk="$work/wrk-$mode$pair.txt" pair="$pair" mode="$mode" ticks="$ticks" before="$before" \
            afterLoad="$after_load" after="$after" hwm="$hwm" lagWait="$lag_wait" verify="$verify" keyless="$keyless" \
            | tee -a "$work/runs.jsonl" >&2 || { echo "FAILED: see above" >&2; exit 1; }
        rm -rf "$data"
    done
done
uptime_after=$(uptime)
echo "uptime: $uptime_after" >&2
summarize report runs="$work/runs.jsonl" seconds="$seconds" connections="$connections" pairs="$pairs" relay="$relay" \
    serveFlags="${SERVE_FLAGS:-}" json="$json" uptimeBefore="$uptime_before" uptimeAfter="$uptime_after"
