#!/usr/bin/env bash
# HTTP ingest of `campaign-relay serve` (release build, defaults: aggregator on, no forwarding) with wrk
# over loopback, every 200 durable (fdatasync'ed):
#   1. single tracking hits, GET /r/?id=h…           requests/s and latency percentiles
#   2. 100-event NDJSON batches, POST /v1/events      requests/s, events/s, latency percentiles
#   3. single hits paced at about half of (1)'s rate  latency p50/p99/p99.9 at half load
# Baseline in the same run: the same GETs against `campaign-relay emulate` (answers 200, stores
# nothing), flat out and paced the same way: the latency floor of HTTP and wrk on this machine.
# Usage: Benchmarks/http-ingest.sh [SECONDS=10] [CONNECTIONS=16]
set -euo pipefail
source "$(dirname "$0")/common.sh"
seconds=${1:-10}
connections=${2:-16}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

"$relay" serve --bind 127.0.0.1:18090 --data-dir "$work/data" --log-level warning ${SERVE_FLAGS:-} &
pids+=($!)
"$relay" emulate --bind 127.0.0.1:18091 --kept-requests 0 --log-level warning > /dev/null &
pids+=($!)
sleep 2

run() { # name url [wrk args…]
    local name=$1 url=$2; shift 2
    echo "## $name" >&2
    wrk -t1 -c"$connections" -d"${seconds}s" --latency "$@" "$url" | tee "$work/$name.txt" >&2
}
run baseline-emulator-hit "http://127.0.0.1:18091/r/?id=hd828,f0190,1"
run relay-hit "http://127.0.0.1:18090/r/?id=hd828,f0190,1"
run relay-batch100 "http://127.0.0.1:18090/v1/events" -s "$here/http/batch100.lua"

# Half load: 64 connections, each pausing after every answer so the offered rate is about half of
# the flat-out single-hit rate above (per connection 1000 / (pause + ~1 ms) requests/s).
half=$(python3 -c "import re; print(float(re.search(r'Requests/sec:\s+([\d.]+)', open('$work/relay-hit.txt').read()).group(1)) / 2)")
pace=$(python3 -c "print(max(0, round(64 * 1000 / $half - 1)))")
paced() { # name url
    echo "## $1 (64 connections, ${pace} ms pause)" >&2
    PACE_MS=$pace wrk -t1 -c64 -d"${seconds}s" -s "$here/http/paced.lua" "$2" | tee "$work/$1.txt" >&2
}
paced baseline-emulator-hit-half "http://127.0.0.1:18091/r/?id=hd828,f0190,1"
paced relay-hit-half "http://127.0.0.1:18090/r/?id=hd828,f0190,1"

python3 - "$work" <<'PY'
import re, sys
work = sys.argv[1]
def parse(name):
    text = open(f"{work}/{name}.txt").read()
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    pct = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return rate, pct.get("50"), pct.get("99"), int(non2xx.group(1)) if non2xx else 0
base = parse("baseline-emulator-hit")
hit = parse("relay-hit")
batch = parse("relay-batch100")
print("| load | requests/s | events/s | p50 | p99 | non-2xx |")
print("|---|---|---|---|---|---|")
print("| emulator GET /r/ (baseline: no durability) | %d | %d | %s | %s | %d |" % (base[0], base[0], base[1], base[2], base[3]))
print("| relay GET /r/ (durable) | %d | %d | %s | %s | %d |" % (hit[0], hit[0], hit[1], hit[2], hit[3]))
print("| relay POST /v1/events, 100 per request (durable) | %d | %d | %s | %s | %d |" % (batch[0], batch[0] * 100, batch[1], batch[2], batch[3]))
print()
print("durable single hits / non-durable baseline: %.2fx" % (hit[0] / base[0]))
def paced(name):
    m = re.search(r"PACED (\d+) req/s p50 ([\d.]+) ms p99 ([\d.]+) ms p99.9 ([\d.]+) ms max ([\d.]+) ms errors (\d+)", open(f"{work}/{name}.txt").read())
    return m.groups()
print()
print("| at about half load (single hits) | requests/s | p50 | p99 | p99.9 | max | errors |")
print("|---|---|---|---|---|---|---|")
for label, name in [("emulator (baseline: no durability)", "baseline-emulator-hit-half"), ("relay (durable)", "relay-hit-half")]:
    print("| %s | %s | %s ms | %s ms | %s ms | %s ms | %s |" % ((label,) + paced(name)))
PY
