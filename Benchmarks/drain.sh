#!/usr/bin/env bash
# Drain a backlog of N tracking hits to `campaign-relay emulate` over loopback (release build), with
# the ceiling of the same emulator measured by wrk on the same number of connections in the same run,
# and the uploader's CPU per forwarded hit (user + system time of the `upload` process). Where the
# CPU goes on the two cores: the emulator's own CPU per hit under the uploader and under wrk (with
# the fixed URL, and with a new message id per request as the drain sends), and wrk's per request.
# PIN=1 gives the emulator core 0 and the client (the uploader, then wrk) core 1: the two clients
# then get the same core, instead of the C client leaving the emulator more of the two than the
# uploader does.
# NGINX=/usr/sbin/nginx adds a peer that is not ours as a second ceiling: nginx (worker_processes 1,
# access_log off) answering `return 200` to every hit, drained to from a copy of the same backlog
# and measured by wrk on the same connections. Without NGINX that part is skipped, saying so.
# Then the capacity part (Benchmarks/drain-capacity.py; CAPACITY=0 skips it): min(EVENTS, 50,000) hits
# drained into `emulate --capacity CAPACITY/s --queue QUEUE` (default 2000/s and 4 places, fewer than
# the default --concurrency), with adaptive concurrency and with 64 in flight: the drain rate as a
# share of the capacity, 503s per 1,000 requests, and the host's p99 during the drain against its p99
# unloaded (a probe of one hit every 50 ms).
# Usage: [PIN=1] [NGINX=/usr/sbin/nginx] [CAPACITY=2000] [QUEUE=4] Benchmarks/drain.sh [EVENTS=1000000] [CONCURRENCY=8]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${1:-1000000}
concurrency=${2:-8}
python3 "$here/generate-events.py" "$events" "$work/events.jsonl"
"$relay" ingest "$work/events.jsonl" --data-dir "$work/data" --json > /dev/null
# The nginx drain needs the backlog again: a copy, taken before the first drain moves the cursor.
if [ -n "${NGINX:-}" ]; then cp -a "$work/data" "$work/data-nginx"; fi
server_cpu=() client_cpu=()
if [ "${PIN:-0}" = 1 ]; then server_cpu=(taskset -c 0) client_cpu=(taskset -c 1); fi
"${server_cpu[@]}" "$relay" emulate --bind 127.0.0.1:18092 --kept-requests 0 --log-level warning > /dev/null &
emulator=$!
pids+=($emulator)
sleep 1
# The emulator's user + system time, in clock ticks (100 a second).
emulator_ticks() { awk '{print $14 + $15}' "/proc/$emulator/stat"; }
ticks_before=$(emulator_ticks)
# /usr/bin/time's line goes to a file of its own: the uploader's logs share standard error.
drain=$(/usr/bin/time -o "$work/upload-time" -f "%U %S" "${client_cpu[@]}" "$relay" upload --until-drained \
    --tracking-host http://127.0.0.1:18092 --data-dir "$work/data" --concurrency "$concurrency" --json --log-level warning)
emulator_drain_ticks=$(($(emulator_ticks) - ticks_before))
accepted=$(curl -s http://127.0.0.1:18092/emulator/hits | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["accepted"], d["distinct"])')
ceiling="" unique_ceiling="" cpu_split=""
if command -v wrk >/dev/null; then
    # Each wrk run: requests/s, requests, wrk's user + system seconds, the emulator's ticks.
    measured_wrk() {
        local before output
        before=$(emulator_ticks)
        output=$(/usr/bin/time -f "time %U %S" "${client_cpu[@]}" wrk -t1 -c"$concurrency" -d5s "$@" 2>&1)
        echo "$(echo "$output" | awk '/Requests\/sec/ {print int($2)}') $(echo "$output" | awk '/requests in/ {print $1}') \
$(echo "$output" | awk '/^time / {print $2 + $3}') $(($(emulator_ticks) - before))"
    }
    fixed=$(measured_wrk "http://127.0.0.1:18092/r/?id=hd828,f0190,1")
    unique=$(measured_wrk -s "$here/http/hits-unique.lua" "http://127.0.0.1:18092")
    ceiling=${fixed%% *}
    unique_ceiling=${unique%% *}
    cpu_split="$emulator_drain_ticks|$fixed|$unique"
fi
nginx_drain="" nginx_ceiling=""
if [ -z "${NGINX:-}" ]; then
    echo "NGINX is not set: skipping the drain to nginx (NGINX=/usr/sbin/nginx adds it)" >&2
else
    mkdir -p "$work/nginx/logs"
    cat > "$work/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server {
        listen 127.0.0.1:18093;
        location /r/ { return 200; }
        location /nms/mobile/1/ { return 200; }
    }
}
EOF
    # env -u: nginx itself reads NGINX (sockets inherited on a binary upgrade).
    "${server_cpu[@]}" env -u NGINX "$NGINX" -c "$work/nginx/nginx.conf" -p "$work/nginx" &
    pids+=($!)
    sleep 1
    nginx_drain=$("${client_cpu[@]}" "$relay" upload --until-drained --tracking-host http://127.0.0.1:18093 \
        --data-dir "$work/data-nginx" --concurrency "$concurrency" --json --log-level warning)
    if command -v wrk >/dev/null; then
        nginx_ceiling=$("${client_cpu[@]}" wrk -t1 -c"$concurrency" -d5s "http://127.0.0.1:18093/r/?id=hd828,f0190,1" | awk '/Requests\/sec/ {print int($2)}')
    fi
fi
capacity_result=""
if [ "${CAPACITY:-2000}" != 0 ]; then
    kill "$emulator" 2>/dev/null || true
    capacity_result=$(python3 "$here/drain-capacity.py" "$relay" "$work" "$((events < 50000 ? events : 50000))" "${CAPACITY:-2000}" "${QUEUE:-4}" "$concurrency")
fi
python3 - "$drain" "$accepted" "$ceiling" "$events" "$concurrency" "$(cat "$work/upload-time")" "${PIN:-0}" "$json" "$nginx_drain" "$nginx_ceiling" "$unique_ceiling" "$cpu_split" "$capacity_result" <<'PY'
import json, sys
drain, (accepted, distinct), ceiling = json.loads(sys.argv[1]), sys.argv[2].split(), sys.argv[3]
user, system = map(float, sys.argv[6].split())
rate = drain["delivered"] / drain["seconds"]
cpu = (user + system) / drain["delivered"] * 1e6 if drain["delivered"] else None
pinned = sys.argv[7] == "1"
nginx_rate = None
if sys.argv[9]:
    nginx = json.loads(sys.argv[9])
    nginx_rate = nginx["delivered"] / nginx["seconds"]
nginx_ceiling = int(sys.argv[10]) if sys.argv[10] else None
unique_ceiling = int(sys.argv[11]) if sys.argv[11] else None
# Where the CPU goes, µs per hit: the emulator under each client, and each client.
split = None
if sys.argv[12]:
    drain_ticks, fixed, unique = sys.argv[12].split("|")
    def client(run):
        rate, requests, seconds, ticks = run.split()
        return {"emulator": int(ticks) * 1e4 / int(requests), "client": float(seconds) * 1e6 / int(requests)}
    split = {"uploader": {"emulator": int(drain_ticks) * 1e4 / drain["delivered"], "client": cpu},
             "wrk, fixed URL": client(fixed), "wrk, a new id per request": client(unique)}
if sys.argv[8] == "1":
    print(json.dumps({"hits": drain["delivered"], "concurrency": int(sys.argv[5]), "hitsPerSecond": round(rate),
                      "cpuMicrosecondsPerHit": cpu and round(cpu, 2), "wrkCeiling": int(ceiling) if ceiling else None,
                      "ratioToCeiling": round(rate / float(ceiling), 3) if ceiling else None, "pinned": pinned,
                      "emulatorAccepted": int(accepted), "emulatorDistinct": int(distinct),
                      "nginxHitsPerSecond": nginx_rate and round(nginx_rate), "nginxWrkCeiling": nginx_ceiling,
                      "nginxRatioToCeiling": round(nginx_rate / nginx_ceiling, 3) if nginx_rate and nginx_ceiling else None,
                      "wrkCeilingNewIds": unique_ceiling,
                      "cpuMicrosecondsPerHitByClient": split and {k: {n: round(v, 2) for n, v in d.items()} for k, d in split.items()},
                      "capacity": json.loads(sys.argv[13]) if sys.argv[13] else None}))
    sys.exit(0)
print("| run | hits/s | uploader CPU per hit |")
print("|---|---|---|")
print("| drain %s hits, concurrency %s%s | %d | %.1f µs |" % (sys.argv[4], sys.argv[5], ", pinned" if pinned else "", rate, cpu or 0))
if ceiling:
    print("| ceiling: wrk against the same emulator, %s connections | %s | |" % (sys.argv[5], ceiling))
    print()
    print("drain / emulator ceiling: %.2fx" % (rate / float(ceiling)))
print("emulator accepted %s hits, %s distinct" % (accepted, distinct))
if split:
    print()
    print("| CPU per hit, µs | the emulator | the client | both | hits/s |")
    print("|---|---|---|---|---|")
    rates = {"uploader": rate, "wrk, fixed URL": float(ceiling), "wrk, a new id per request": float(unique_ceiling or 0)}
    for name, d in split.items():
        print("| %s | %.1f | %.1f | %.1f | %d |" % (name, d["emulator"], d["client"], d["emulator"] + d["client"], rates[name]))
if nginx_rate is not None:
    print()
    print("| peer: nginx (return 200) | hits/s |")
    print("|---|---|")
    print("| drain %s hits, concurrency %s | %d |" % (sys.argv[4], sys.argv[5], nginx_rate))
    if nginx_ceiling:
        print("| ceiling: wrk against the same nginx, %s connections | %d |" % (sys.argv[5], nginx_ceiling))
        print()
        print("drain / nginx ceiling: %.2fx" % (nginx_rate / nginx_ceiling))
if sys.argv[13]:
    result = json.loads(sys.argv[13])
    print()
    print("Against a host of %g requests/s with %d places in its queue (`emulate --capacity %g/s --queue %d`), %d hits; the host's p99 unloaded: %.2f ms"
          % (result["capacity"], result["queue"], result["capacity"], result["queue"], result["hits"], (result["hostUnloadedP99Seconds"] or 0) * 1000))
    print()
    print("| drain | seconds | hits/s | share of the capacity | 503s per 1,000 requests | host p99 during the drain | / unloaded |")
    print("|---|---|---|---|---|---|---|")
    for run in result["runs"]:
        print("| %s | %.1f | %d | %.2f | %.1f | %.2f ms | %.1fx |" % (
            run["mode"], run["seconds"], run["hitsPerSecond"], run["shareOfCapacity"], run["answered503PerThousand"],
            (run["hostP99Seconds"] or 0) * 1000, run["hostP99OverUnloaded"] or 0))
PY
