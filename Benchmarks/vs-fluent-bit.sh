#!/usr/bin/env bash
# The Fluent Bit comparison of BENCHMARKS.md, both sides in one sitting: `campaign-relay serve`
# (release build, defaults: aggregator on, no forwarding; every 200 is fdatasync'ed) and Fluent Bit
# (its HTTP input with the filesystem buffer and `storage.sync full`, the null output; its 201
# comes before any sync, see shared PEERS.md) take the same load, alternately run by run: wrk -t1
# with Benchmarks/http/array100-unique.lua (JSON arrays of 100 tracking events, message ids never
# repeated; the relay on /v1/events, Fluent Bit on /), for SECONDS, RUNS16 times each at 16
# connections, then RUNS64 times each at 64, on a fresh data / storage directory every run.
# Per run, from outside the process:
#   events/s        2xx answers × 100 / wrk's duration
#   CPU µs/event    the server's utime+stime (/proc/PID/stat) from just before wrk to the moment
#                   everything is counted, divided by the events acknowledged: for the relay until
#                   relay_aggregator_lag_events on /metrics is 0, for Fluent Bit until its storage
#                   directory holds no chunk file (*.flb: Fluent Bit deletes a chunk once its
#                   output has it); the same to the end of the load is reported too ("during the
#                   load")
#   peak RSS        VmHWM of /proc/PID/status once everything is counted
#   p50, p99        wrk --latency
#   bytes/event     `du -sb` of the data / storage directory once everything is counted, over the
#                   events acknowledged; for the relay also the log alone (`wal verify --json`
#                   bytesPerEvent) and aggregates.sqlite (with its -wal and -shm, and alone once the
#                   server stopped and checkpointed its journal) per event
#   lag             the relay: relay_aggregator_lag_events sampled every 100 ms during the load and
#                   at its end (the maximum, also in seconds of intake: maximum / events/s), at the
#                   load's end, and the seconds from the load's end until it is 0 (catch-up; a build
#                   before 58663ef refreshes the gauge once a second, so its figures move in steps
#                   of up to 1 s); Fluent Bit: its chunk files sampled the same way (most files and
#                   bytes), at the load's end, and the seconds until none is left
# Syncs per 1,000 events come from one more, shorter run of each server (STRACE_SECONDS, default 5,
# at 16 connections) under `strace -f -c -e trace=fsync,fdatasync,msync,sync_file_range`, counted
# until everything is counted as above, over the events acknowledged: strace slows the servers, so
# that run gives sync counts only. --seccomp-bpf (when this strace has it) stops only the traced
# calls, which slows them less; STRACE_SECCOMP=0 traces without it.
# Output: per connection count, a markdown table of each side's median run (by events/s) and the
# ratio relay / Fluent Bit of each figure, then every run, then the syncs; the last line is all of
# it as JSON (--json: that line alone).
# Fluent Bit comes from FLUENT_BIT=/path/to/fluent-bit (built as shared PEERS.md says, outside this
# repository); without it the relay is measured alone, which is said on stderr.
# Usage: FLUENT_BIT=/path/to/fluent-bit Benchmarks/vs-fluent-bit.sh [SECONDS=10] [RUNS16=3] [RUNS64=1]
# (RELAY_BINARY=/path/to/campaign-relay runs that build and skips swift build, see common.sh.)
set -euo pipefail
source "$(dirname "$0")/common.sh"
seconds=${args[0]:-10}
runs16=${args[1]:-3}
runs64=${args[2]:-1}
strace_seconds=${STRACE_SECONDS:-5}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
ticks=$(getconf CLK_TCK)
relay_port=18190
fluent_port=18290
lua="$here/http/array100-unique.lua"
# Polls of 100 ms to wait at most for everything to be counted after the load.
wait_limit=${WAIT_LIMIT:-1200}

fluent_bit=${FLUENT_BIT:-}
fluent_version=null
if [ -z "$fluent_bit" ]; then
    echo "FLUENT_BIT is not set: skipping Fluent Bit, measuring campaign-relay alone." >&2
    echo "  To compare, build Fluent Bit 5.1.1 as shared PEERS.md says and run" >&2
    echo "  FLUENT_BIT=/path/to/fluent-bit $0 $seconds $runs16 $runs64" >&2
elif [ ! -x "$fluent_bit" ]; then
    echo "FLUENT_BIT=$fluent_bit is not an executable file" >&2
    exit 1
else
    version_text=$("$fluent_bit" --version 2>&1 || true)
    fluent_version=${version_text%%$'\n'*}
    echo "Fluent Bit: $fluent_bit ($fluent_version)" >&2
fi
relay_version=$("$relay" --version 2>/dev/null || echo unknown)
strace_flags=(-f)
if command -v strace >/dev/null; then
    if [ "${STRACE_SECCOMP:-1}" != 0 ] && strace -f --seccomp-bpf -e trace=fsync -o /dev/null true 2>/dev/null; then
        strace_flags+=(--seccomp-bpf)
    fi
else
    echo "strace is not installed: no syncs per 1,000 events (apt-get install strace)" >&2
fi

now() { date +%s.%N; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
peak_rss() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
relay_lag() { # file: relay_aggregator_lag_events, through FILE
    # Into a file first: `curl | awk` under pipefail fails when awk exits before curl has written
    # everything, and a wait loop built on it ends before the aggregator has counted it all.
    curl -sf "http://127.0.0.1:$relay_port/metrics" -o "$1" || return 1
    awk '$1 == "relay_aggregator_lag_events" { printf "%d\n", $2; exit }' "$1"
}
chunks() { # storage directory: "FILES BYTES" of Fluent Bit's chunk files
    # find fails when a chunk is deleted under it; what it listed is still right.
    { find "$1" -name '*.flb' -printf '%s\n' 2>/dev/null || true; } |
        awk '{ n++; b += $1 } END { printf "%d %d\n", n, b }'
}
forget() { # pid: no longer for cleanup to stop (the number may be reused)
    local kept=() p
    for p in "${pids[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
    pids=("${kept[@]}")
}
stop() { # pid: SIGTERM, wait for it
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget "$1"
}
check_port_free() {
    if port_open "$1"; then echo "port $1 is taken: another server is running there" >&2; exit 1; fi
}
wait_ready() { # pid kind: the relay's /healthz, or Fluent Bit's port taking a connection
    for _ in $(seq 1 100); do
        kill -0 "$1" 2>/dev/null || { echo "$2 exited before it was ready" >&2; exit 1; }
        if [ "$2" = relay ]; then
            curl -sf "http://127.0.0.1:$relay_port/healthz" -o /dev/null && return 0
        else
            port_open "$fluent_port" && return 0
        fi
        sleep 0.1
    done
    echo "$2 was not ready after 10 s" >&2
    exit 1
}
start_relay() { # data directory [command prefix...]: sets server (the relay's pid) and launched
    local data=$1; shift
    check_port_free "$relay_port"
    "$@" "$relay" serve --bind "127.0.0.1:$relay_port" --data-dir "$data" --log-level warning &
    launched=$!
    pids+=("$launched")
}
start_fluent_bit() { # storage directory [command prefix...]
    local storage=$1; shift
    check_port_free "$fluent_port"
    cat >"$work/fluent-bit.conf" <<EOF
[SERVICE]
    flush        1
    log_level    warn
    storage.path $storage
    storage.sync full
[INPUT]
    name         http
    listen       127.0.0.1
    port         $fluent_port
    storage.type filesystem
[OUTPUT]
    name  null
    match *
EOF
    "$@" "$fluent_bit" -c "$work/fluent-bit.conf" >>"$work/fluent-bit.log" 2>&1 &
    launched=$!
    pids+=("$launched")
}
traced_child() { # strace's pid, the server's binary: the pid of the server strace started
    # strace forks short-lived children of its own first (to test ptrace and seccomp): the server
    # is the child running its binary.
    local binary child children
    binary=$(readlink -f "$2")
    for _ in $(seq 1 100); do
        children=$(cat "/proc/$1/task/$1/children" 2>/dev/null || true)
        for child in $children; do
            if [ "$(readlink -f "/proc/$child/exe" 2>/dev/null || true)" = "$binary" ]; then
                echo "$child"; return 0
            fi
        done
        sleep 0.05
    done
    echo "strace started no server" >&2
    exit 1
}
wait_counted() { # kind dir: until everything is counted; prints the polls it took
    local polls=0 lag
    if [ "$1" = relay ]; then
        while lag=$(relay_lag "$work/metrics.txt") && [ -n "$lag" ] && [ "$lag" != 0 ] && [ $polls -lt "$wait_limit" ]; do
            sleep 0.1; polls=$((polls + 1))
        done
        # A failed read counts as not counted: the loop stopped on it, not on 0.
        [ "${lag:-x}" = 0 ] || polls=-1
    else
        while [ "$(chunks "$2")" != "0 0" ] && [ $polls -lt "$wait_limit" ]; do
            sleep 0.1; polls=$((polls + 1))
        done
        [ "$(chunks "$2")" = "0 0" ] || polls=-1
    fi
    echo "$polls"
}
run_wrk() { # connections seconds url output
    wrk -t1 -c"$1" -d"${2}s" --latency -s "$lua" "$3" >"$4"
    cat "$4" >&2
}

cat >"$work/summarize.py" <<'PY'
import json, re, sys

def wrk(path):
    text = open(path).read()
    span = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
    requests = int(span.group(1))
    duration = float(span.group(2)) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60}[span.group(3)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    non2xx = int(non2xx.group(1)) if non2xx else 0
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    def ms(value):
        number, unit = re.fullmatch(r"([\d.]+)(\w+)", value).groups()
        return round(float(number) * {"us": 1e-3, "ms": 1, "s": 1e3, "m": 6e4}[unit], 3)
    pct = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M))
    return {
        "wrkSeconds": duration, "requests": requests, "non2xx": non2xx,
        "socketErrors": sum(map(int, errors.groups())) if errors else 0,
        "acknowledgedEvents": (requests - non2xx) * 100,
        "p50Milliseconds": ms(pct["50"]) if "50" in pct else None,
        "p99Milliseconds": ms(pct["99"]) if "99" in pct else None,
    }

def per_event(value, events, scale=1):
    return round(value * scale / events, 3) if events and value is not None else None

def run(a):
    w = wrk(a["wrk"])
    events, ticks = w["acknowledgedEvents"], int(a["ticks"])
    eps = events / w["wrkSeconds"]
    cpu = (int(a["after"]) - int(a["before"])) / ticks
    cpu_load = (int(a["loadEnd"]) - int(a["before"])) / ticks
    polls = int(a["polls"])
    r = {
        "side": a["side"], "connections": int(a["connections"]), "run": int(a["run"]),
        "eventsPerSecond": round(eps), "acknowledgedEvents": events,
        "non2xx": w["non2xx"], "socketErrors": w["socketErrors"],
        "wrkSeconds": round(w["wrkSeconds"], 2),
        "cpuMicrosecondsPerEvent": per_event(cpu, events, 1e6),
        "cpuMicrosecondsPerEventDuringLoad": per_event(cpu_load, events, 1e6),
        "serverCPUPercentDuringLoad": round(cpu_load * 100 / w["wrkSeconds"]),
        "countedFully": polls >= 0,
        "catchUpSeconds": round(float(a["counted"]) - float(a["loadEndTime"]), 2),
        "peakRSSMiB": round(int(a["hwm"]) / 1024, 1),
        "p50Milliseconds": w["p50Milliseconds"], "p99Milliseconds": w["p99Milliseconds"],
        "diskBytes": int(a["disk"]), "diskBytesPerEvent": per_event(int(a["disk"]), events),
    }
    samples = [line.split() for line in open(a["samples"]) if line.strip()]
    if a["side"] == "relay":
        verify = json.loads(a["verify"]) if a["verify"].strip() else {}
        lags = [int(s[0]) for s in samples if s and s[0].isdigit()]
        lag_end = int(a["lagEnd"]) if a["lagEnd"].isdigit() else None
        # The reading at the load's end is the last sample of the load.
        lags += [lag_end] if lag_end is not None else []
        r.update({
            "walBytesPerEvent": verify.get("bytesPerEvent"), "loggedEvents": verify.get("events"),
            "aggregatesBytes": int(a["aggregates"]),
            "aggregatesBytesPerEvent": per_event(int(a["aggregates"]), events),
            "aggregatesFileBytes": int(a["aggregatesFile"]),
            "aggregatesFileBytesPerEvent": per_event(int(a["aggregatesFile"]), events),
            "maxLagEvents": max(lags) if lags else None, "lagSamples": len(lags),
            "maxLagSecondsOfIntake": round(max(lags) / eps, 2) if lags and eps else None,
            "lagAtLoadEndEvents": lag_end,
            "lagAtLoadEndPercent": round(lag_end * 100 / events, 1) if lag_end is not None and events else None,
        })
    else:
        files = [(int(s[0]), int(s[1])) for s in samples if len(s) == 2]
        end_files, end_bytes = map(int, a["chunksEnd"].split())
        r.update({
            "maxChunkFiles": max((f for f, _ in files), default=None),
            "maxChunkBytes": max((b for _, b in files), default=None),
            "chunkSamples": len(files),
            "chunkFilesAtLoadEnd": end_files, "chunkBytesAtLoadEnd": end_bytes,
        })
    print(json.dumps(r))

def syncs(a):
    w = wrk(a["wrk"])
    calls = {}
    for line in open(a["strace"]):
        fields = line.split()
        if len(fields) >= 5 and fields[-1] in ("fsync", "fdatasync", "msync", "sync_file_range"):
            calls[fields[-1]] = int(fields[3])
    events = w["acknowledgedEvents"]
    print(json.dumps({
        "side": a["side"], "seconds": int(a["seconds"]), "connections": 16,
        "acknowledgedEvents": events, "eventsPerSecondUnderStrace": round(events / w["wrkSeconds"]),
        "countedFully": int(a["polls"]) >= 0, "calls": calls,
        "syncsPerThousandEvents": round(sum(calls.values()) * 1000 / events, 3) if events else None,
    }))

def ratio(x, y):
    return round(x / y, 2) if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y else None

def report(a):
    lines = [json.loads(l) for l in open(a["runs"]) if l.strip()]
    runs = [l for l in lines if "run" in l]
    sync_lines = {l["side"]: l for l in lines if "syncsPerThousandEvents" in l}
    compared = ["eventsPerSecond", "cpuMicrosecondsPerEvent", "cpuMicrosecondsPerEventDuringLoad",
                "serverCPUPercentDuringLoad", "peakRSSMiB", "p50Milliseconds", "p99Milliseconds",
                "diskBytesPerEvent", "catchUpSeconds"]
    result = {"seconds": int(a["seconds"]), "loadAverage": {"before": a["loadBefore"], "after": a["loadAfter"]}, "relayBinary": a["relay"], "relayVersion": a["relayVersion"],
              "fluentBit": a["fluentBit"] or None, "fluentBitVersion": a["fluentBitVersion"] if a["fluentBit"] else None,
              "straceFlags": a["straceFlags"], "byConnections": {}, "syncs": {}}
    out = []
    def f(value, digits=2):
        if value is None: return "–"
        if isinstance(value, bool): return str(value)
        if isinstance(value, int): return f"{value:,}"
        return f"{value:,.{digits}f}"
    for connections in sorted({r["connections"] for r in runs}):
        entry = {}
        for side in ("relay", "fluent-bit"):
            mine = sorted((r for r in runs if r["connections"] == connections and r["side"] == side),
                          key=lambda r: r["eventsPerSecond"])
            if mine:
                entry[side] = {"median": mine[len(mine) // 2], "runs": mine}
        rm = entry.get("relay", {}).get("median", {})
        fm = entry.get("fluent-bit", {}).get("median", {})
        entry["ratio"] = {k: ratio(rm.get(k), fm.get(k)) for k in compared} if fm else None
        result["byConnections"][str(connections)] = entry
        out.append(f"### {connections} connections, {a['seconds']} s, medians by events/s "
                   f"({len(entry.get('relay', {}).get('runs', []))} runs of the relay, "
                   f"{len(entry.get('fluent-bit', {}).get('runs', []))} of Fluent Bit)")
        out.append("")
        out.append("| | campaign-relay | Fluent Bit | relay / Fluent Bit |")
        out.append("|---|---|---|---|")
        def row(label, key, digits=2, relay_only=None, fluent_only=None):
            rv = rm.get(key) if relay_only is None else relay_only
            fv = fm.get(key) if fluent_only is None else fluent_only
            rt = ratio(rv, fv) if key in compared else None
            out.append(f"| {label} | {f(rv, digits)} | {f(fv, digits) if fm else 'not run'} | {f(rt) if rt is not None else ''} |")
        row("events/s", "eventsPerSecond")
        row("CPU µs per event, until counted / delivered", "cpuMicrosecondsPerEvent")
        row("CPU µs per event, during the load", "cpuMicrosecondsPerEventDuringLoad")
        row("server CPU during the load, %", "serverCPUPercentDuringLoad")
        row("peak RSS, MiB", "peakRSSMiB", 1)
        row("p50, ms", "p50Milliseconds")
        row("p99, ms", "p99Milliseconds")
        row("bytes on disk per event once counted (du -sb)", "diskBytesPerEvent", 3)
        row("catch-up: s from the load's end until counted / no chunk left", "catchUpSeconds")
        out.append(f"| relay: the log alone, bytes per event (wal verify) | {f(rm.get('walBytesPerEvent'))} | | |")
        out.append(f"| relay: aggregates.sqlite with its journal, bytes per event | {f(rm.get('aggregatesBytesPerEvent'), 3)} | | |")
        out.append(f"| relay: aggregates.sqlite alone once stopped (journal checkpointed), bytes per event | {f(rm.get('aggregatesFileBytesPerEvent'), 3)} | | |")
        out.append(f"| relay: max aggregator lag, events (s of intake) | {f(rm.get('maxLagEvents'))} ({f(rm.get('maxLagSecondsOfIntake'))} s) | | |")
        out.append(f"| relay: lag at the load's end, events (% of acknowledged) | {f(rm.get('lagAtLoadEndEvents'))} ({f(rm.get('lagAtLoadEndPercent'), 1)} %) | | |")
        if fm:
            out.append(f"| Fluent Bit: most chunk files / MB during the load | | {f(fm.get('maxChunkFiles'))} / {f((fm.get('maxChunkBytes') or 0) / 1e6, 1)} | |")
            out.append(f"| Fluent Bit: chunk files / MB at the load's end | | {f(fm.get('chunkFilesAtLoadEnd'))} / {f(fm.get('chunkBytesAtLoadEnd') / 1e6, 1)} | |")
        out.append("")
        out.append("| side | run | events/s | CPU µs/event counted (load) | peak RSS MiB | p50 ms | p99 ms | disk B/event | max lag (s of intake) / most chunks | at load end | catch-up s | counted |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for side in ("relay", "fluent-bit"):
            for r in sorted(entry.get(side, {}).get("runs", []), key=lambda r: r["run"]):
                mark = " (median)" if r is entry[side]["median"] else ""
                if side == "relay":
                    lag = f"{f(r['maxLagEvents'])} ({f(r['maxLagSecondsOfIntake'])} s)"
                    end = f"{f(r['lagAtLoadEndEvents'])} ({f(r['lagAtLoadEndPercent'], 1)} %)"
                else:
                    lag = f"{f(r['maxChunkFiles'])} files, {f((r['maxChunkBytes'] or 0) / 1e6, 1)} MB"
                    end = f"{f(r['chunkFilesAtLoadEnd'])} files"
                out.append(f"| {side} | {r['run']}{mark} | {f(r['eventsPerSecond'])} | "
                           f"{f(r['cpuMicrosecondsPerEvent'])} ({f(r['cpuMicrosecondsPerEventDuringLoad'])}) | "
                           f"{f(r['peakRSSMiB'], 1)} | {f(r['p50Milliseconds'])} | {f(r['p99Milliseconds'])} | "
                           f"{f(r['diskBytesPerEvent'], 3)} | {lag} | {end} | {f(r['catchUpSeconds'])} | {r['countedFully']} |")
        out.append("")
    if sync_lines:
        result["syncs"] = dict(sync_lines)
        rs, fs = sync_lines.get("relay", {}), sync_lines.get("fluent-bit", {})
        result["syncs"]["ratio"] = ratio(rs.get("syncsPerThousandEvents"), fs.get("syncsPerThousandEvents"))
        seconds = (rs or fs).get("seconds")
        out.append(f"### Syncs, under strace {a['straceFlags']} ({seconds} s at 16 connections, until counted)")
        out.append("")
        out.append("| | campaign-relay | Fluent Bit | relay / Fluent Bit |")
        out.append("|---|---|---|---|")
        out.append(f"| syncs per 1,000 events | {f(rs.get('syncsPerThousandEvents'), 3)} | {f(fs.get('syncsPerThousandEvents'), 3) if fs else 'not run'} | {f(result['syncs']['ratio'])} |")
        calls = lambda s: ", ".join(f"{k} {v:,}" for k, v in sorted(s.get("calls", {}).items())) or "none"
        out.append(f"| calls | {calls(rs)} | {calls(fs) if fs else ''} | |")
        out.append(f"| events acknowledged (events/s under strace) | {f(rs.get('acknowledgedEvents'))} ({f(rs.get('eventsPerSecondUnderStrace'))}) | "
                   + (f"{f(fs.get('acknowledgedEvents'))} ({f(fs.get('eventsPerSecondUnderStrace'))})" if fs else "") + " | |")
        out.append("")
    if a["json"] != "1":
        print("\n".join(out))
    print(json.dumps(result))

mode, pairs = sys.argv[1], dict(arg.split("=", 1) for arg in sys.argv[2:])
{"run": run, "syncs": syncs, "report": report}[mode](pairs)
PY
summarize() { python3 "$work/summarize.py" "$@"; }

measure() { # side connections run: one measured run, its JSON line appended to $work/runs.jsonl
    local side=$1 connections=$2 run=$3 dir="$work/$1-c$2-r$3" url server sampler
    local samples="$work/samples-$1-c$2-r$3.txt" out="$work/wrk-$1-c$2-r$3.txt"
    local before load_end load_end_time lag_end="" chunks_end="0 0" polls counted after hwm disk
    local aggregates=0 aggregates_file=0 verify=""
    : >"$samples"
    echo "## $side, $connections connections, run $run, ${seconds} s" >&2
    if [ "$side" = relay ]; then
        start_relay "$dir"; server=$launched
        wait_ready "$server" relay
        url="http://127.0.0.1:$relay_port/v1/events"
        (while :; do
            if lag=$(relay_lag "$work/sampler-metrics.txt") && [ -n "$lag" ]; then echo "$lag" >>"$samples"; fi
            sleep 0.1
        done) &
    else
        mkdir -p "$dir"
        start_fluent_bit "$dir"; server=$launched
        wait_ready "$server" fluent-bit
        url="http://127.0.0.1:$fluent_port/"
        (while :; do chunks "$dir" >>"$samples"; sleep 0.1; done) &
    fi
    sampler=$!
    pids+=("$sampler")
    before=$(cpu_ticks "$server")
    run_wrk "$connections" "$seconds" "$url" "$out"
    load_end_time=$(now)
    load_end=$(cpu_ticks "$server")
    stop "$sampler"
    if [ "$side" = relay ]; then
        lag_end=$(relay_lag "$work/metrics.txt" || true)
    else
        chunks_end=$(chunks "$dir")
    fi
    polls=$(wait_counted "$side" "$dir")
    counted=$(now)
    after=$(cpu_ticks "$server")
    hwm=$(peak_rss "$server")
    disk=$(du -sb "$dir" | cut -f1)
    if [ "$side" = relay ]; then
        aggregates=$(find "$dir" -maxdepth 1 -name 'aggregates.sqlite*' -printf '%s\n' | awk '{ b += $1 } END { print b + 0 }')
    fi
    stop "$server"
    if [ "$side" = relay ]; then
        verify=$("$relay" wal verify --json --data-dir "$dir" 2>/dev/null || true)
        # Once stopped, the aggregator has checkpointed its journal into the file: the counts alone.
        aggregates_file=$(stat -c %s "$dir/aggregates.sqlite" 2>/dev/null || echo 0)
    fi
    [ "$polls" -ge 0 ] || echo "warning: $side was not done counting after $((wait_limit / 10)) s" >&2
    summarize run side="$side" connections="$connections" run="$run" wrk="$out" ticks="$ticks" \
        before="$before" loadEnd="$load_end" after="$after" loadEndTime="$load_end_time" \
        counted="$counted" polls="$polls" hwm="$hwm" disk="$disk" aggregates="$aggregates" aggregatesFile="$aggregates_file" \
        verify="$verify" samples="$samples" lagEnd="$lag_end" chunksEnd="$chunks_end" \
        | tee -a "$work/runs.jsonl" >&2
    rm -rf "$dir"
}

sync_count() { # side: one run under strace, its JSON line appended to $work/runs.jsonl
    local side=$1 dir="$work/$1-strace" out="$work/wrk-$1-strace.txt" trace="$work/strace-$1.txt"
    local tracer server url polls
    echo "## $side under strace ${strace_flags[*]}, 16 connections, ${strace_seconds} s (sync counts only)" >&2
    local prefix=(strace "${strace_flags[@]}" -c -e "trace=fsync,fdatasync,msync,sync_file_range" -o "$trace")
    if [ "$side" = relay ]; then
        start_relay "$dir" "${prefix[@]}"
        url="http://127.0.0.1:$relay_port/v1/events"
        tracer=$launched
        server=$(traced_child "$tracer" "$relay")
    else
        mkdir -p "$dir"
        start_fluent_bit "$dir" "${prefix[@]}"
        url="http://127.0.0.1:$fluent_port/"
        tracer=$launched
        server=$(traced_child "$tracer" "$fluent_bit")
    fi
    # strace blocks SIGTERM while it runs a command with -o: the server gets it (from here or from
    # the cleanup), and strace writes its summary and exits when the server has exited.
    pids+=("$server")
    wait_ready "$server" "$side"
    run_wrk 16 "$strace_seconds" "$url" "$out"
    polls=$(wait_counted "$side" "$dir")
    kill -TERM "$server" 2>/dev/null || true
    wait "$tracer" 2>/dev/null || true
    forget "$tracer"; forget "$server"
    summarize syncs side="$side" seconds="$strace_seconds" wrk="$out" strace="$trace" polls="$polls" \
        | tee -a "$work/runs.jsonl" >&2
    rm -rf "$dir"
}

# Anything else busy on the machine skews both sides: the load average before and after is kept.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $load_before" >&2
: >"$work/runs.jsonl"
for connections in 16 64; do
    [ "$connections" = 16 ] && runs=$runs16 || runs=$runs64
    for run in $(seq 1 "$runs"); do
        measure relay "$connections" "$run"
        [ -z "$fluent_bit" ] || measure fluent-bit "$connections" "$run"
    done
done
if command -v strace >/dev/null; then
    sync_count relay
    [ -z "$fluent_bit" ] || sync_count fluent-bit
fi
summarize report runs="$work/runs.jsonl" seconds="$seconds" json="$json" relay="$relay" \
    loadBefore="$load_before" loadAfter="$(cut -d' ' -f1-3 /proc/loadavg)" \
    relayVersion="$relay_version" fluentBit="$fluent_bit" fluentBitVersion="$fluent_version" \
    straceFlags="${strace_flags[*]}"
