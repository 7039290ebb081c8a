#!/usr/bin/env bash
# shellcheck disable=SC2154
# (relay, here, work and json are set by common.sh, which shellcheck does not read.)
# Tenants in one `campaign-relay serve` (release build), two measurements in one run:
#
# 1. Delivery latency under another tenant's outage. Tenants t-a and t-b (the default tenant has no
#    hosts), each forwarding to a `campaign-relay emulate` of its own. Benchmarks/tenants-load.py
#    sends GET /t-a/r/?id=… and GET /t-b/r/?id=… at RATE hits/s each, open loop, for
#    LATENCY_SECONDS, every hit with a message id of its own, and notes when each 200 came back
#    (the ingest: the hit is durable then). Each emulator notes when each hit reached it (its
#    /emulator/requests, same machine, same clock). Delivery latency = emulator receipt - ack.
#    Run A: both emulators up. Run B: the same, but t-b's emulator answers 503 to every hit for
#    OUTAGE_SECONDS in the middle of the load (POST /emulator/faults, unavailableUntil). Reported:
#    t-a's p50/p99 in both runs (in B also over the hits acknowledged during the outage), B/A
#    (aim <= 1.2x), and that t-b's hits acknowledged during its outage all reached its emulator
#    after it came back. Each run waits (up to DRAIN_TIMEOUT s) until both emulators have every
#    acknowledged hit, on a fresh data directory and fresh emulators' records.
# 2. Batch ingest, 10 tenants vs 1. POST /{tenant}/v1/events with JSON arrays of 100 tracking
#    events with unique message ids (Benchmarks/http/array100-tenants.lua), wrk -t1 with
#    CONNECTIONS connections for BATCH_SECONDS: all to /t0/v1/events (one), or round-robin over
#    /t0/ … /t9/ (ten), alternately one, ten, one, ten … (BATCH_ROUNDS pairs), each on a fresh
#    `serve` and data directory (aggregator on, no hosts). events/s = 200 answers x 100 / wrk's
#    duration; reported: the median of each and ten/one (aim >= 0.9x), and each pair's ratio; and
#    the server's CPU (utime + stime) per event during the load, steadier than events/s when
#    something else shares the machine.
#
# `uptime` before and after goes into the output: figures taken on a busy machine are noisy.
# Usage: Benchmarks/tenants.sh [--json]
# Environment (defaults, about 4 minutes in all): RATE=500 LATENCY_SECONDS=60 OUTAGE_SECONDS=30
#   LATENCY_ROUNDS=1 (pairs of runs A, B) DRAIN_TIMEOUT=180 BATCH_SECONDS=10 BATCH_ROUNDS=2
#   CONNECTIONS=16; SKIP_LATENCY=1 or SKIP_BATCH=1 runs one part only; SERVE_FLAGS adds options to
#   the batch part's serve (e.g. SERVE_FLAGS=--no-aggregates for the aggregator's share).
set -euo pipefail
# shellcheck source=/dev/null
source "$(dirname "$0")/common.sh"
rate=${RATE:-500}
latency_seconds=${LATENCY_SECONDS:-60}
latency_rounds=${LATENCY_ROUNDS:-1}
outage_seconds=${OUTAGE_SECONDS:-30}
drain_timeout=${DRAIN_TIMEOUT:-180}
batch_seconds=${BATCH_SECONDS:-10}
batch_rounds=${BATCH_ROUNDS:-2}
connections=${CONNECTIONS:-16}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
relay_port=18290 emulator_a=18291 emulator_b=18292 batch_port=18293
uptime_before=$(uptime)
echo "uptime: $uptime_before" >&2

wait_healthy() { # port
    for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return 0; sleep 0.1; done
    echo "nothing answers /healthz on port $1" >&2
    exit 1
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # pid: user + system clock ticks

stop() { # pid: SIGTERM, then wait for it
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# The number of distinct hits an emulator accepted (answered 200).
distinct_hits() { # port
    curl -sf "http://127.0.0.1:$1/emulator/hits" -o "$work/hits.json" || { echo 0; return; }
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["distinct"])' "$work/hits.json"
}

# Sets an emulator's faults: the JSON object of GET /emulator/faults with the fields of $2 (a JSON
# object) changed; a value "now+N" is N seconds from now (seconds since the Unix epoch).
set_faults() { # port, JSON of the fields to change
    curl -sf "http://127.0.0.1:$1/emulator/faults" -o "$work/faults.json"
    python3 - "$work/faults.json" "$2" <<'PY' > "$work/faults-new.json"
import json, sys, time
faults = json.load(open(sys.argv[1]))
for name, value in json.loads(sys.argv[2]).items():
    if isinstance(value, str) and value.startswith("now+"):
        value = time.time() + float(value[4:])
    faults[name] = value
print(json.dumps(faults))
PY
    curl -sf -X POST --data-binary "@$work/faults-new.json" "http://127.0.0.1:$1/emulator/faults" >/dev/null
}

latency_run() { # A | B, round
    local kind=$1 run=$1$2 data="$work/latency-$1$2" serve load deadline acked_a acked_b got_a got_b ended
    for port in $emulator_a $emulator_b; do
        curl -sf -X POST "http://127.0.0.1:$port/emulator/reset" >/dev/null
        set_faults "$port" '{"unavailableUntil": null}'
    done
    "$relay" serve --config "$work/latency.toml" --bind "127.0.0.1:$relay_port" --data-dir "$data" --log-level warning &
    serve=$!
    pids+=("$serve")
    wait_healthy "$relay_port"
    echo "## latency run $run: $rate hits/s on each of t-a and t-b for $latency_seconds s$([ "$kind" = B ] && echo ", t-b's emulator answering 503 for $outage_seconds s in the middle")" >&2
    python3 "$here/tenants-load.py" --url "http://127.0.0.1:$relay_port" --tenant t-a --tenant t-b --rate "$rate" \
        --seconds "$latency_seconds" --out "$work/load-$run.json" &
    load=$!
    pids+=("$load")
    if [ "$kind" = B ]; then
        sleep "$(python3 -c "print(max(0, ($latency_seconds - $outage_seconds) / 2 + 0.2))")"
        set_faults "$emulator_b" "{\"unavailableUntil\": \"now+$outage_seconds\"}"
        # From the moment the emulator took the faults, to the time they end.
        python3 -c 'import json, sys, time; print(time.time(), json.load(open(sys.argv[1]))["unavailableUntil"])' \
            "$work/faults-new.json" > "$work/outage-$run"
        echo "t-b's emulator answers 503 for $outage_seconds s from now" >&2
    fi
    wait "$load"
    ended=$(date +%s.%N)
    # Every acknowledged hit at its emulator, or DRAIN_TIMEOUT.
    read -r acked_a acked_b < <(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["tenants"]; print(len(t["t-a"]["acks"]), len(t["t-b"]["acks"]))' "$work/load-$run.json")
    deadline=$((SECONDS + drain_timeout))
    while got_a=$(distinct_hits "$emulator_a") && got_b=$(distinct_hits "$emulator_b") \
        && { [ "$got_a" -lt "$acked_a" ] || [ "$got_b" -lt "$acked_b" ]; } && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.2
    done
    echo "t-a: $got_a of $acked_a acknowledged hits delivered, t-b: $got_b of $acked_b, $(python3 -c "import time; print(round(time.time() - $ended, 1))") s after the load ended" >&2
    for tenant in a b; do
        port=$emulator_a; [ "$tenant" = b ] && port=$emulator_b
        curl -sf "http://127.0.0.1:$port/emulator/requests?limit=100000000" -o "$work/requests-$run-$tenant.json"
    done
    stop "$serve"
}

latency_json=null
if [ "${SKIP_LATENCY:-0}" = 1 ]; then
    echo "SKIP_LATENCY=1: skipping the delivery latency part" >&2
else
    kept=$(python3 -c "print(int(3 * $rate * $latency_seconds) + 10000)")
    for port in $emulator_a $emulator_b; do
        "$relay" emulate --bind "127.0.0.1:$port" --kept-requests "$kept" --log-level warning >/dev/null &
        pids+=($!)
    done
    cat > "$work/latency.toml" <<EOF
[tenant.t-a]
tracking-host = "http://127.0.0.1:$emulator_a"

[tenant.t-b]
tracking-host = "http://127.0.0.1:$emulator_b"
EOF
    for port in $emulator_a $emulator_b; do
        for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/r/test" >/dev/null && break; sleep 0.1; done
    done
    for round in $(seq 1 "$latency_rounds"); do
        latency_run A "$round"
        latency_run B "$round"
    done
    latency_json=$(python3 - "$work" "$latency_rounds" <<'PY'
import json, math, statistics, sys
from urllib.parse import urlsplit, parse_qs
work, rounds = sys.argv[1], int(sys.argv[2])

def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(p / 100 * len(ordered)))) - 1]

def ms(value):
    return None if value is None else round(value * 1000, 2)

def receipts(path):
    """message id -> time of the first 200 for it; and the count of each status."""
    first, statuses = {}, {}
    for request in json.load(open(path))["requests"]:
        statuses[str(request["status"])] = statuses.get(str(request["status"]), 0) + 1
        if request["status"] != 200:
            continue
        ids = parse_qs(urlsplit(request["uri"]).query).get("id")
        if not ids:
            continue
        message = ids[0].split(",")[0][1:]
        if message not in first or request["time"] < first[message]:
            first[message] = request["time"]
    return first, statuses

def tenant_figures(acks, received, statuses, window=None):
    latencies = [received[m] - t for m, t in acks.items() if m in received]
    figures = {"acknowledged": len(acks), "delivered": len(latencies), "missing": len(acks) - len(latencies),
               "emulatorAnswers": statuses,
               "p50Milliseconds": ms(percentile(latencies, 50)), "p99Milliseconds": ms(percentile(latencies, 99)),
               "maxMilliseconds": ms(max(latencies) if latencies else None)}
    if window:
        inside = [received[m] - t for m, t in acks.items() if m in received and window[0] <= t < window[1]]
        figures["duringOutage"] = {"hits": len(inside), "p50Milliseconds": ms(percentile(inside, 50)),
                                   "p99Milliseconds": ms(percentile(inside, 99))}
    return figures

def figures_of(run):
    kind = run[0]
    if kind == "B":
        outage_start, outage_end = map(float, open("%s/outage-%s" % (work, run)).read().split())
    load = json.load(open("%s/load-%s.json" % (work, run)))
    figures = {}
    for tenant, letter in (("t-a", "a"), ("t-b", "b")):
        received, statuses = receipts("%s/requests-%s-%s.json" % (work, run, letter))
        result = load["tenants"][tenant]
        window = (outage_start, outage_end) if kind == "B" else None
        figures[tenant] = tenant_figures(result["acks"], received, statuses, window if tenant == "t-a" else None)
        figures[tenant]["sent"] = result["sent"]
        figures[tenant]["refusedByRelay"] = result["statuses"]
        figures[tenant]["clientErrors"] = len(result["errors"])
        figures[tenant]["scheduleLatenessP99Milliseconds"] = result["scheduleLatenessP99Milliseconds"]
        if kind == "B" and tenant == "t-b":
            during = {m: t for m, t in result["acks"].items() if outage_start <= t < outage_end}
            arrivals = [received[m] for m in during if m in received]
            all_arrivals = sorted(received.values())
            figures[tenant]["outage"] = {
                "acknowledgedDuringOutage": len(during),
                "deliveredAfterRecovery": sum(1 for t in arrivals if t >= outage_end),
                "deliveredBeforeRecovery": sum(1 for t in arrivals if t < outage_end),
                "notDelivered": len(during) - len(arrivals),
                "anyHitDeliveredDuringOutage": sum(1 for t in all_arrivals if outage_start <= t < outage_end),
                "firstDeliverySecondsAfterRecovery": round(min(t for t in all_arrivals if t >= outage_end) - outage_end, 2)
                if any(t >= outage_end for t in all_arrivals) else None,
                "outageHitsAllDeliveredSecondsAfterRecovery": round(max(arrivals) - outage_end, 2) if arrivals else None,
            }
    return figures

def ratio(x, y):
    return round(x / y, 3) if x is not None and y else None
results = []
for number in range(1, rounds + 1):
    a, b = figures_of("A%d" % number), figures_of("B%d" % number)
    results.append({"round": number, "runA": a, "runB": b,
                    "tAP50RatioBToA": ratio(b["t-a"]["p50Milliseconds"], a["t-a"]["p50Milliseconds"]),
                    "tAP99RatioBToA": ratio(b["t-a"]["p99Milliseconds"], a["t-a"]["p99Milliseconds"]),
                    "tAP99DuringOutageRatioToA": ratio(b["t-a"]["duringOutage"]["p99Milliseconds"], a["t-a"]["p99Milliseconds"])})
def median(name):
    values = [r[name] for r in results if r[name] is not None]
    return round(statistics.median(values), 3) if values else None
print(json.dumps({"rounds": results, "tAP50RatioBToA": median("tAP50RatioBToA"), "tAP99RatioBToA": median("tAP99RatioBToA"),
                  "tAP99DuringOutageRatioToA": median("tAP99DuringOutageRatioToA")}))
PY
)
fi

batch_run() { # tenants (1 or 10), round
    local tenants=$1 round=$2 serve before after
    # shellcheck disable=SC2086 # SERVE_FLAGS: options, split on spaces
    "$relay" serve --config "$work/batch.toml" --bind "127.0.0.1:$batch_port" --data-dir "$work/batch-$tenants-$round" \
        --log-level warning ${SERVE_FLAGS:-} &
    serve=$!
    pids+=("$serve")
    wait_healthy "$batch_port"
    echo "## batch ingest, round $round, $tenants tenant(s): $connections connections, $batch_seconds s" >&2
    before=$(cpu_ticks "$serve")
    TENANTS=$tenants wrk -t1 -c"$connections" -d"${batch_seconds}s" -s "$here/http/array100-tenants.lua" \
        "http://127.0.0.1:$batch_port" > "$work/wrk-$tenants-$round.txt"
    after=$(cpu_ticks "$serve")
    grep -E "requests in|Requests/sec|Non-2xx" "$work/wrk-$tenants-$round.txt" >&2 || true
    stop "$serve"
    python3 - "$work/wrk-$tenants-$round.txt" "$tenants" "$round" "$((after - before))" "$(getconf CLK_TCK)" >> "$work/batch-runs.jsonl" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
span = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
requests, duration = int(span.group(1)), float(span.group(2)) * {"s": 1, "ms": 1e-3, "m": 60}[span.group(3)]
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
refused = int(non2xx.group(1)) if non2xx else 0
events = (requests - refused) * 100
cpu = int(sys.argv[4]) / int(sys.argv[5])
print(json.dumps({"tenants": int(sys.argv[2]), "round": int(sys.argv[3]),
                  "eventsPerSecond": round(events / duration), "refusedRequests": refused,
                  "serverCPUMicrosecondsPerEventDuringLoad": round(cpu * 1e6 / events, 2) if events else None,
                  "serverCPUPercent": round(cpu * 100 / duration)}))
PY
}

batch_json=null
if [ "${SKIP_BATCH:-0}" = 1 ]; then
    echo "SKIP_BATCH=1: skipping the batch ingest part" >&2
else
    : > "$work/batch.toml"
    for t in $(seq 0 9); do printf '[tenant.t%d]\n\n' "$t" >> "$work/batch.toml"; done
    for round in $(seq 1 "$batch_rounds"); do
        for tenants in 1 10; do batch_run "$tenants" "$round"; done
    done
    batch_json=$(python3 -c '
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
one = [r["eventsPerSecond"] for r in runs if r["tenants"] == 1]
ten = [r["eventsPerSecond"] for r in runs if r["tenants"] == 10]
cpu_one = [r["serverCPUMicrosecondsPerEventDuringLoad"] for r in runs if r["tenants"] == 1]
cpu_ten = [r["serverCPUMicrosecondsPerEventDuringLoad"] for r in runs if r["tenants"] == 10]
pairs = [round(t / o, 3) for o, t in zip(one, ten) if o]
print(json.dumps({"runs": runs, "oneTenantEventsPerSecond": round(statistics.median(one)),
                  "tenTenantsEventsPerSecond": round(statistics.median(ten)),
                  "ratioTenToOne": round(statistics.median(ten) / statistics.median(one), 3) if statistics.median(one) else None,
                  "pairRatios": pairs,
                  "oneTenantCPUMicrosecondsPerEvent": statistics.median(cpu_one), "tenTenantsCPUMicrosecondsPerEvent": statistics.median(cpu_ten)}))
' "$work/batch-runs.jsonl")
fi

uptime_after=$(uptime)
echo "uptime: $uptime_after" >&2
python3 - "$latency_json" "$batch_json" "$json" "$uptime_before" "$uptime_after" "$rate" "$latency_seconds" "$outage_seconds" \
    "$connections" "$batch_seconds" "$batch_rounds" "$latency_rounds" <<'PY'
import json, sys
latency, batch = json.loads(sys.argv[1]), json.loads(sys.argv[2])
rate, seconds, outage, connections, batch_seconds, rounds, latency_rounds = (float(v) for v in sys.argv[6:13])
settings = {"ratePerTenant": rate, "latencySeconds": seconds, "outageSeconds": outage, "latencyRounds": int(latency_rounds),
            "connections": int(connections), "batchSeconds": batch_seconds, "batchRounds": int(rounds)}
if sys.argv[3] == "1":
    print(json.dumps({"settings": settings, "latency": latency, "batch": batch,
                      "uptimeBefore": sys.argv[4].strip(), "uptimeAfter": sys.argv[5].strip()}))
    sys.exit(0)
if latency:
    print("### Delivery latency of t-a (ingest ack -> its emulator's receipt), %g hits/s on each tenant, %g s" % (rate, seconds))
    print()
    print("| round | run | t-a acknowledged | delivered | p50 | p99 | max |")
    print("|---|---|---|---|---|---|---|")
    for r in latency["rounds"]:
        for name, run in (("A: both emulators up", r["runA"]), ("B: t-b's emulator 503 for %g s" % outage, r["runB"])):
            f = run["t-a"]
            print("| %d | %s | %d | %d | %s ms | %s ms | %s ms |" % (r["round"], name, f["acknowledged"], f["delivered"],
                  f["p50Milliseconds"], f["p99Milliseconds"], f["maxMilliseconds"]))
        during = r["runB"]["t-a"]["duringOutage"]
        print("| %d | B, t-a hits acknowledged during the outage | %d | | %s ms | %s ms | |" % (
            r["round"], during["hits"], during["p50Milliseconds"], during["p99Milliseconds"]))
    print()
    print("t-a B/A (median over rounds): p50 %sx, p99 %sx (aim <= 1.2x); p99 during the outage / A: %sx" % (
        latency["tAP50RatioBToA"], latency["tAP99RatioBToA"], latency["tAP99DuringOutageRatioToA"]))
    for r in latency["rounds"]:
        o = r["runB"]["t-b"]["outage"]
        print("round %d, t-b in B: %d hits acknowledged during its outage, %d delivered after its emulator came back, %d before, %d not"
              " delivered; first delivery %s s after it came back, the last of those hits %s s after; emulator answers %s" % (
                  r["round"], o["acknowledgedDuringOutage"], o["deliveredAfterRecovery"], o["deliveredBeforeRecovery"], o["notDelivered"],
                  o["firstDeliverySecondsAfterRecovery"], o["outageHitsAllDeliveredSecondsAfterRecovery"], r["runB"]["t-b"]["emulatorAnswers"]))
        print("round %d, acknowledged and never delivered: A t-a %d, t-b %d; B t-a %d, t-b %d" % (r["round"],
              r["runA"]["t-a"]["missing"], r["runA"]["t-b"]["missing"], r["runB"]["t-a"]["missing"], r["runB"]["t-b"]["missing"]))
    print()
if batch:
    print("### Batch ingest, JSON arrays of 100 unique events, %d connections, %g s per run" % (connections, batch_seconds))
    print()
    print("| round | tenants | events/s | server CPU µs/event during the load | server CPU |")
    print("|---|---|---|---|---|")
    for r in batch["runs"]:
        print("| %d | %d | %d | %s | %d%% |" % (r["round"], r["tenants"], r["eventsPerSecond"], r["serverCPUMicrosecondsPerEventDuringLoad"], r["serverCPUPercent"]))
    print()
    print("medians: one tenant %d, ten tenants %d events/s; ten/one %sx (aim >= 0.9x); per pair %s; CPU µs/event one %s, ten %s" % (
        batch["oneTenantEventsPerSecond"], batch["tenTenantsEventsPerSecond"], batch["ratioTenToOne"], batch["pairRatios"],
        batch["oneTenantCPUMicrosecondsPerEvent"], batch["tenTenantsCPUMicrosecondsPerEvent"]))
    print()
print("uptime before: %s" % sys.argv[4].strip())
print("uptime after:  %s" % sys.argv[5].strip())
PY
