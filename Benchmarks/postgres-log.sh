#!/usr/bin/env bash
# The log in PostgreSQL (issue 40) beside the file log, alternated in one sitting (release build):
# `serve --log-postgres-url … --relay-name bench` against a throw-away cluster on loopback whose
# primary waits for a synchronous standby (pg_basebackup -R, its own port, `synchronous_standby_names
# = 'standby1'`, checked 'sync' in pg_stat_replication; the relay must say 2 copies on /v1/status),
# and `serve` on the file log. Both sides count the same way: into the fleet tables of the same
# cluster (the PostgreSQL log turns the SQLite aggregator off and counts into its own database; the
# file log gets `--postgres-url` to a database of its own and `--no-aggregates`), so the only
# difference is where an acknowledgement waits: fdatasync of a segment, or the COMMIT of one INSERT
# on two PostgreSQL servers (both on this machine's one disk). Every run is a fresh relay on a fresh
# data directory and a fresh database; the sides alternate (file, pg, file, pg, …) in each phase:
#   1. batches  wrk, CONNECTIONS connections, SECONDS, JSON arrays of 100 unique events
#               (Benchmarks/http/array100-unique.lua against POST /v1/events, as batch-ingest.sh):
#               events/s = 200s × 100 / wrk's duration; the relay's CPU µs/event (/proc/PID/stat,
#               from just before wrk until relay_postgres_lag_events = 0: taken and counted);
#               PostgreSQL's CPU µs/event (primary and standby, their backends included), WAL bytes
#               per event (pg_wal_lsn_diff of pg_current_wal_lsn() around the same span, after a
#               CHECKPOINT; on the file side that WAL is the counting's alone); bytes per event of
#               the log: relay_log_frames with its indexes and TOAST (pg_total_relation_size) or the
#               segments (`wal verify --json`); the mean group commit (relay_wal_fsync_seconds: the
#               fdatasync, or the INSERT through its COMMIT with the standby's flush).
#   2. hits     wrk GET /r/?id=… flat out, CONNECTIONS connections, SECONDS (as http-ingest.sh).
#   3. paced    single hits at half load, as http-ingest.sh (64 connections, Benchmarks/http/paced.lua),
#               at one offered rate for both sides: half the slower side's median flat-out rate
#               of phase 2; p50/p99/p99.9.
# On every PostgreSQL run, pg_stat_statements' calls of `INSERT INTO relay_log_frames` (by database)
# against the relay's group commits (relay_wal_fsync_seconds_count): one INSERT per commit is 1.00.
# Every run checks the log holds at least the events acknowledged, and no answer was a non-2xx.
# COUNTS=apart puts the counting of both sides in a third cluster of its own (no standby), so that the
# log's cluster carries the log alone: its WAL and CPU are then the log's, and its commits do not
# wait behind the counting's WAL (the issue's setting, and the default, is one cluster for both).
# Usage: Benchmarks/postgres-log.sh [SECONDS=8] [CONNECTIONS=16] [RUNS=3]   (~5 min; --json: last line)
set -euo pipefail
source "$(dirname "$0")/common.sh"
seconds=${1:-8}
connections=${2:-16}
runs=${3:-3}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$pgbin" ] || { echo "PostgreSQL is not installed: apt-get install postgresql" >&2; exit 1; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ticks=$(getconf CLK_TCK)
load_start=$(cut -d' ' -f1 /proc/loadavg)

# The cluster: a primary, then a standby cloned from it and streaming, then made synchronous.
chmod 755 "$work"
mkdir -p "$work/pg/socket"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$work/pg"
as_postgres "$pgbin/initdb" -D "$work/pg/primary" -A trust -U postgres --no-sync >/dev/null
echo "host replication all 127.0.0.1/32 trust" >>"$work/pg/primary/pg_hba.conf"
port=$(free_port)
standby_port=$(free_port)
options="-k $work/pg/socket -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements -c track_wal_io_timing=on"
# Output to a file, never a pipe: the server inherits pg_ctl's descriptors.
as_postgres "$pgbin/pg_ctl" -D "$work/pg/primary" -w -l "$work/pg/primary.log" -o "-p $port $options" start >"$work/pg/ctl.out" 2>&1
stop_all() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
    for cluster in counts standby primary; do
        [ -f "$work/pg/$cluster/postmaster.pid" ] && as_postgres "$pgbin/pg_ctl" -D "$work/pg/$cluster" -m fast stop >"$work/pg/ctl.out" 2>&1 || true
    done
    cleanup
}
trap stop_all EXIT
as_postgres "$pgbin/pg_basebackup" -D "$work/pg/standby" -R -X stream \
    -d "host=127.0.0.1 port=$port user=postgres application_name=standby1" >"$work/pg/basebackup.out" 2>&1
as_postgres "$pgbin/pg_ctl" -D "$work/pg/standby" -w -l "$work/pg/standby.log" -o "-p $standby_port $options" start >"$work/pg/ctl.out" 2>&1
sql() { "$pgbin/psql" -X -q -A -t -h 127.0.0.1 -p "$port" -U postgres -d "${2:-postgres}" -c "$1"; }
sql "ALTER SYSTEM SET synchronous_standby_names = 'standby1'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "CREATE EXTENSION pg_stat_statements" >/dev/null
for _ in $(seq 1 100); do
    [ "$(sql "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")" = sync ] && break
    sleep 0.1
done
state=$(sql "SELECT application_name || ' ' || state || ' ' || sync_state FROM pg_stat_replication")
[ "$state" = "standby1 streaming sync" ] || { echo "the standby is not synchronous: '$state'" >&2; exit 1; }
echo "PostgreSQL $(sql "SHOW server_version"): primary :$port, standby :$standby_port ($state)" >&2
counts=${COUNTS:-together}
counts_port=$port
if [ "$counts" = apart ]; then
    as_postgres "$pgbin/initdb" -D "$work/pg/counts" -A trust -U postgres --no-sync >/dev/null
    counts_port=$(free_port)
    as_postgres "$pgbin/pg_ctl" -D "$work/pg/counts" -w -l "$work/pg/counts.log" -o "-p $counts_port $options" start >"$work/pg/ctl.out" 2>&1
    echo "the counts go to a cluster of their own: :$counts_port (no standby)" >&2
fi

# The commit round trip without the relay: pgbench, one client, each transaction one INSERT of a
# 3,040-byte random bytea (a group commit's frame is about that size), with the standby, then with
# synchronous_commit = local (the primary's own flush only).
sql "CREATE TABLE bench_commit (id bigserial PRIMARY KEY, payload bytea NOT NULL)" >/dev/null
echo "INSERT INTO bench_commit (payload) SELECT decode(string_agg(md5(random()::text), ''), 'hex') FROM generate_series(1, 190);" >"$work/commit.sql"
bare_commit() { # PGOPTIONS: the average latency (ms) of pgbench's transactions over 3 s
    "$pgbin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -c 1 -T 3 -f "$work/commit.sql" postgres >"$work/pgbench.out" 2>&1
    awk '/^latency average/ { print $4 }' "$work/pgbench.out"
}
commit_sync=$(bare_commit)
commit_local=$(PGOPTIONS="-c synchronous_commit=local" bare_commit)
echo "pgbench, one 3 KB INSERT per commit: ${commit_sync} ms with the synchronous standby, ${commit_local} ms local only" >&2

# CPU seconds of both PostgreSQL servers: each postmaster's own and its reaped children's, and its
# children still running.
server_cpu() {
    python3 - "$(head -1 "$work/pg/primary/postmaster.pid")" "$(head -1 "$work/pg/standby/postmaster.pid")" "$ticks" <<'PY'
import os, sys
def fields(pid):
    with open("/proc/%s/stat" % pid) as f: return f.read().rsplit(")", 1)[1].split()
masters, ticks = sys.argv[1:3], int(sys.argv[3])
total = sum(sum(int(x) for x in fields(pm)[11:15]) for pm in masters)
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = fields(pid)
        if stat[1] in masters: total += int(stat[11]) + int(stat[12])
    except OSError:
        pass
print(total / ticks)
PY
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { # name: an unlabelled sample of the running relay's /metrics (into a file: no pipe under pipefail)
    curl -sf "http://127.0.0.1:$rport/metrics" -o "$work/metrics.txt" || return 1
    awk -v name="$1" '$1 == name { print $2; exit }' "$work/metrics.txt"
}

# start_relay SIDE NAME: `serve` on a fresh data directory and a fresh database NAME; sets pid,
# rport, db. The PostgreSQL side must say 2 copies (its log line and /v1/status).
start_relay() {
    local side=$1 flags url
    db=$2
    sql "CREATE DATABASE $db" >/dev/null
    url="postgres://postgres@127.0.0.1:$port/$db?sslmode=disable"
    local counts_url=$url
    if [ "$counts" = apart ]; then
        "$pgbin/psql" -X -q -h 127.0.0.1 -p "$counts_port" -U postgres -d postgres -c "CREATE DATABASE $db" >/dev/null
        counts_url="postgres://postgres@127.0.0.1:$counts_port/$db?sslmode=disable"
    fi
    if [ "$side" = pg ]; then
        flags=(--log-postgres-url "$url" --relay-name bench --postgres-url "$counts_url")
    else
        flags=(--postgres-url "$counts_url" --no-aggregates)
    fi
    rport=$(free_port)
    "$relay" serve --bind "127.0.0.1:$rport" --data-dir "$work/$db" --log-level notice "${flags[@]}" >"$work/$db.log" 2>&1 &
    pid=$!
    pids=("$pid")
    for _ in $(seq 1 150); do curl -sf "http://127.0.0.1:$rport/healthz" >/dev/null && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:$rport/v1/status" -o "$work/status.json"
    local copies
    copies=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["log"]["copies"])' "$work/status.json")
    if [ "$side" = pg ]; then
        [ "$copies" = 2 ] || { echo "the relay on the PostgreSQL log says $copies copies, not 2:" >&2; cat "$work/$db.log" >&2; exit 1; }
        grep -q "an acknowledgement is on 2 copies" "$work/$db.log" || { echo "no '2 copies' at start:" >&2; cat "$work/$db.log" >&2; exit 1; }
    else
        [ "$copies" = 1 ] || { echo "the file log says $copies copies" >&2; exit 1; }
    fi
}
# wait_counted: until every durable event is counted in PostgreSQL (at most a minute); prints the
# seconds waited.
wait_counted() {
    local waited=0 lag
    while lag=$(metric relay_postgres_lag_events) && [ -n "$lag" ] && [ "${lag%.*}" != 0 ] && [ $waited -lt 600 ]; do
        sleep 0.1; waited=$((waited + 1))
    done
    echo "$((waited / 10)).$((waited % 10))"
}
# commits: the relay's group commits so far and their summed duration (relay_wal_fsync_seconds).
commits() { echo "$(metric relay_wal_fsync_seconds_count) $(metric relay_wal_fsync_seconds_sum)"; }
# inserts DB: calls and mean execution ms of the INSERT INTO relay_log_frames in database DB.
inserts() {
    sql "SELECT coalesce(sum(calls), 0) || ' ' || coalesce(round((sum(total_exec_time) / nullif(sum(calls), 0))::numeric, 3), 0)
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$1') AND query LIKE 'INSERT INTO relay_log_frames%'"
}
# sample_flush_lag: the standby's flush_lag (pg_stat_replication, ms) every 0.5 s into $db.lag, until killed.
sample_flush_lag() {
    : >"$work/$db.lag"
    while :; do
        sql "SELECT coalesce(round((extract(epoch FROM flush_lag) * 1000)::numeric, 3)::text, '') FROM pg_stat_replication" >>"$work/$db.lag" 2>/dev/null || true
        sleep 0.5
    done
}
# stop_relay: SIGTERM to the relay; a relay that exited on its own is a failure of the run: its
# status and the end of its log go to stderr.
stop_relay() {
    if ! kill -TERM "$pid" 2>/dev/null; then
        local status=0
        wait "$pid" || status=$?
        pids=()
        echo "the relay of $db exited on its own (status $status) before the end of its run; the end of its log:" >&2
        tail -40 "$work/$db.log" >&2
        exit 1
    fi
    wait "$pid" || true
    pids=()
}
# finish SIDE PHASE RUN WRK_FILE KEY=VALUE…: the run's line of results (JSON) into results.jsonl.
finish() {
    local side=$1 phase=$2 run=$3 wrkfile=$4 logged errors; shift 4
    local counts ins="0 0"
    counts=$(commits)
    [ "$side" = pg ] && ins=$(inserts "$db")
    stop_relay
    if [ "$side" = pg ]; then
        logged=$(sql "SELECT coalesce(sum(event_count), 0) FROM relay_log_frames" "$db")
    else
        "$relay" wal verify --json --data-dir "$work/$db" >"$work/$db.verify.json" 2>/dev/null || true
        logged=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("events", 0))' "$work/$db.verify.json")
    fi
    errors=$(grep -ciE '(^|[^a-z])(error|warning|critical)' "$work/$db.log" || true)
    python3 - "$wrkfile" "$side" "$phase" "$run" "$counts" "$ins" "$logged" "$errors" "$@" >>"$work/results.jsonl" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
side, phase, run, (commits, commit_seconds), (ins, ins_ms), logged, errors = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split(), sys.argv[6].split(), int(sys.argv[7]), int(sys.argv[8])
r = {"side": side, "phase": phase, "run": run, "commits": int(float(commits)), "commitSeconds": float(commit_seconds),
     "inserts": int(ins), "insertMeanMs": float(ins_ms), "loggedEvents": logged, "logErrorLines": errors}
for pair in sys.argv[9:]:
    key, value = pair.split("=", 1)
    r[key] = float(value)
span = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
if span:
    duration = float(span.group(2)) * {"s": 1, "ms": 1e-3, "m": 60}[span.group(3)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    r["non2xx"] = int(non2xx.group(1)) if non2xx else 0
    r["answered"] = int(span.group(1)) - r["non2xx"]
    r["requestsPerSecond"] = r["answered"] / duration
    r.update(dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M)))
paced = re.search(r"PACED (\d+) req/s p50 ([\d.]+) ms p99 ([\d.]+) ms p99.9 ([\d.]+) ms max ([\d.]+) ms errors (\d+)", text)
if paced:
    r.update(zip(["requestsPerSecond", "p50ms", "p99ms", "p999ms", "maxms", "errors"], map(float, paced.groups())))
print(json.dumps(r))
PY
    tail -1 "$work/results.jsonl" >&2
}
order() { for run in $(seq 1 "$runs"); do echo "file $run"; echo "pg $run"; done; }

# 1. Batches.
while read -r side run; do
    echo "## batches, $side log, run $run of $runs: $connections connections, ${seconds} s" >&2
    start_relay "$side" "${side}_batch$run"
    sql "CHECKPOINT" >/dev/null
    lsn=$(sql "SELECT pg_current_wal_lsn()")
    read -r syncs sync_ms <<<"$(sql "SELECT wal_sync || ' ' || wal_sync_time FROM pg_stat_wal")"
    server_before=$(server_cpu)
    before=$(cpu_ticks "$pid")
    sample_flush_lag &
    sampler=$!
    pids+=("$sampler")
    wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$here/http/array100-unique.lua" \
        "http://127.0.0.1:$rport/v1/events" >"$work/$db.wrk" 2>&1
    kill "$sampler"; wait "$sampler" 2>/dev/null || true
    pids=("$pid")
    catch_up=$(wait_counted)
    read -r syncs sync_ms <<<"$(sql "SELECT wal_sync - $syncs || ' ' || wal_sync_time - $sync_ms FROM pg_stat_wal")"
    flush_lag=$(python3 -c 'import statistics, sys; v = [float(l) for l in open(sys.argv[1]) if l.strip()]; print(statistics.median(v) if v else 0)' "$work/$db.lag")
    relay_cpu=$(python3 -c "print(($(cpu_ticks "$pid") - $before) / $ticks)")
    server=$(python3 -c "print($(server_cpu) - $server_before)")
    wal=$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn')")
    table=0 indexes=0 bytes=0
    if [ "$side" = pg ]; then
        read -r table indexes <<<"$(sql "SELECT pg_total_relation_size('relay_log_frames') || ' ' || pg_indexes_size('relay_log_frames')" "$db")"
    fi
    finish "$side" batch "$run" "$work/$db.wrk" catchUpSeconds="$catch_up" relayCPUSeconds="$relay_cpu" serverCPUSeconds="$server" \
        walBytes="$wal" tableBytes="$table" indexBytes="$indexes" walSyncs="$syncs" walSyncMs="$sync_ms" flushLagMs="$flush_lag"
    if [ "$side" = file ]; then
        bytes=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("bytesPerEvent", 0))' "$work/$db.verify.json")
        python3 - "$work/results.jsonl" "$bytes" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
last = json.loads(lines[-1]); last["fileBytesPerEvent"] = float(sys.argv[2]); lines[-1] = json.dumps(last)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
    fi
done < <(order)

# 2. Single hits flat out.
while read -r side run; do
    echo "## hits, $side log, run $run of $runs: $connections connections, ${seconds} s" >&2
    start_relay "$side" "${side}_hits$run"
    wrk -t1 -c"$connections" -d"${seconds}s" --latency "http://127.0.0.1:$rport/r/?id=hd828,f0190,1" >"$work/$db.wrk" 2>&1
    wait_counted >/dev/null
    finish "$side" hits "$run" "$work/$db.wrk"
done < <(order)

# 3. Single hits at half load: one offered rate, half the slower side's median flat-out rate.
half=$(python3 - "$work/results.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(min(statistics.median(r["requestsPerSecond"] for r in runs if r["phase"] == "hits" and r["side"] == s) for s in ("file", "pg")) / 2)
PY
)
pace=$(python3 -c "print(max(0, round(64 * 1000 / $half - 1)))")
while read -r side run; do
    echo "## hits at half load, $side log, run $run of $runs: 64 connections, ${pace} ms pause, ${seconds} s" >&2
    start_relay "$side" "${side}_paced$run"
    PACE_MS=$pace wrk -t1 -c64 -d"${seconds}s" -s "$here/http/paced.lua" "http://127.0.0.1:$rport/r/?id=hd828,f0190,1" >"$work/$db.wrk" 2>&1
    wait_counted >/dev/null
    finish "$side" paced "$run" "$work/$db.wrk" pauseMs="$pace"
done < <(order)

python3 - "$work/results.jsonl" "$seconds" "$connections" "$runs" "$pace" "$commit_sync" "$commit_local" "$load_start" "$counts" <<'PY'
import json, os, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
seconds, connections, count, pace, commit_sync, commit_local, load_start, counts = sys.argv[2:10]
def of(phase, side): return [r for r in runs if r["phase"] == phase and r["side"] == side]
def med(phase, side, f): return statistics.median(f(r) for r in of(phase, side))
ms = lambda s: float(s[:-2]) if s.endswith("ms") else float(s[:-2]) / 1000 if s.endswith("us") else float(s[:-1]) * 1000
label = {"file": "file log (fdatasync)", "pg": "PostgreSQL log (sync standby)"}
problems = []
for r in runs:
    acknowledged = r.get("answered", 0) * (100 if r["phase"] == "batch" else 1)
    if r.get("non2xx") or r.get("errors"): problems.append("%s %s run %d: %s non-2xx/errors" % (r["side"], r["phase"], r["run"], r.get("non2xx") or r.get("errors")))
    if r["loggedEvents"] < acknowledged: problems.append("%s %s run %d: %d events logged < %d acknowledged" % (r["side"], r["phase"], r["run"], r["loggedEvents"], acknowledged))
    if r["logErrorLines"]: problems.append("%s %s run %d: %d error/warning lines in the relay's log" % (r["side"], r["phase"], r["run"], r["logErrorLines"]))
def events(r): return r["answered"] * 100
print("Medians of %s runs per side, alternated (file, pg, …), %s s each, %s connections; both sides count into the fleet tables of %s." % (count, seconds, connections,
    "the log's cluster" if counts == "together" else "a third cluster of their own (COUNTS=apart): the WAL, the CPU and the wal fsyncs below are the log cluster's alone"))
print()
print("| | events/s (batches) | batch p99 | relay CPU µs/event | PostgreSQL CPU µs/event | WAL B/event | log B/event | mean group commit | events/commit | hits/s flat out | hit p50 at half load | hit p99 at half load | hit p99.9 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for s in ("file", "pg"):
    logb = med("batch", s, lambda r: r["tableBytes"] / r["loggedEvents"]) if s == "pg" else med("batch", s, lambda r: r["fileBytesPerEvent"])
    print("| %s | %d | %.2f ms | %.2f | %.2f | %.1f | %.1f | %.2f ms | %.0f | %d | %.2f ms | %.2f ms | %.2f ms |" % (
        label[s], med("batch", s, lambda r: r["requestsPerSecond"] * 100), med("batch", s, lambda r: ms(r["99"])),
        med("batch", s, lambda r: r["relayCPUSeconds"] * 1e6 / events(r)), med("batch", s, lambda r: r["serverCPUSeconds"] * 1e6 / events(r)),
        med("batch", s, lambda r: r["walBytes"] / events(r)), logb,
        med("batch", s, lambda r: r["commitSeconds"] * 1e3 / max(r["commits"], 1)), med("batch", s, lambda r: r["loggedEvents"] / max(r["commits"], 1)),
        med("hits", s, lambda r: r["requestsPerSecond"]), med("paced", s, lambda r: r["p50ms"]), med("paced", s, lambda r: r["p99ms"]), med("paced", s, lambda r: r["p999ms"])))
print()
ratio_events = med("batch", "pg", lambda r: r["requestsPerSecond"]) / med("batch", "file", lambda r: r["requestsPerSecond"])
ratio_p99 = med("paced", "pg", lambda r: r["p99ms"]) / med("paced", "file", lambda r: r["p99ms"])
ins = sum(r["inserts"] for r in runs if r["side"] == "pg"); com = sum(r["commits"] for r in runs if r["side"] == "pg")
print("PostgreSQL / file: events/s %.2f× (aim ≥ 0.5×: %s); hit p99 at half load %.2f× (aim ≤ 3×: %s); hits/s flat out %.2f×" % (
    ratio_events, "met" if ratio_events >= 0.5 else "MISSED", ratio_p99, "met" if ratio_p99 <= 3 else "MISSED",
    med("hits", "pg", lambda r: r["requestsPerSecond"]) / med("hits", "file", lambda r: r["requestsPerSecond"])))
print("INSERT INTO relay_log_frames per group commit: %d / %d = %.2f (aim 1.00: %s); mean INSERT execution (pg_stat_statements, without its COMMIT) %.3f ms in the batch runs" % (
    ins, com, ins / max(com, 1), "met" if ins == com else "MISSED", med("batch", "pg", lambda r: r["insertMeanMs"])))
print("where a PostgreSQL group commit's %.2f ms goes (batch runs, medians): INSERT execution %.3f ms; the primary's WAL fsync %.2f ms mean (pg_stat_wal, %.2f per relay commit); the standby's flush_lag %.2f ms (pg_stat_replication, sampled every 0.5 s); file log: fdatasync %.2f ms; the primary's WAL fsyncs meanwhile on the file side (the counting's, unless COUNTS=apart) %.2f ms mean" % (
    med("batch", "pg", lambda r: r["commitSeconds"] * 1e3 / max(r["commits"], 1)), med("batch", "pg", lambda r: r["insertMeanMs"]),
    med("batch", "pg", lambda r: r["walSyncMs"] / max(r["walSyncs"], 1)), med("batch", "pg", lambda r: r["walSyncs"] / max(r["commits"], 1)),
    med("batch", "pg", lambda r: r["flushLagMs"]), med("batch", "file", lambda r: r["commitSeconds"] * 1e3 / max(r["commits"], 1)),
    med("batch", "file", lambda r: r["walSyncMs"] / max(r["walSyncs"], 1))))
# One group commit at a time: the share of wrk's span the relay spent committing tells whether the
# commit (rather than the CPU) bounds a side.
busy = lambda phase, s: med(phase, s, lambda r: r["commitSeconds"] / (r["answered"] / r["requestsPerSecond"]))
print("time spent committing (one group commit at a time; sum of relay_wal_fsync_seconds / wrk's span): batches %.0f%% PostgreSQL, %.0f%% file; flat-out hits %.0f%% and %.0f%%, with mean commits of %.2f ms and %.2f ms (the counting then nearly idle: one repeated hit)" % (
    100 * busy("batch", "pg"), 100 * busy("batch", "file"), 100 * busy("hits", "pg"), 100 * busy("hits", "file"),
    med("hits", "pg", lambda r: r["commitSeconds"] * 1e3 / max(r["commits"], 1)), med("hits", "file", lambda r: r["commitSeconds"] * 1e3 / max(r["commits"], 1))))
print("a bare commit of one 3 KB INSERT (pgbench, one client, 3 s, this cluster, before the runs): %s ms with the synchronous standby, %s ms with synchronous_commit = local" % (commit_sync, commit_local))
print("what the log itself costs PostgreSQL per event (PostgreSQL side minus the file side, whose database only counts or, with COUNTS=apart, does nothing): %.1f B of WAL, %.2f µs of the servers' CPU" % (
    med("batch", "pg", lambda r: r["walBytes"] / events(r)) - med("batch", "file", lambda r: r["walBytes"] / events(r)),
    med("batch", "pg", lambda r: r["serverCPUSeconds"] * 1e6 / events(r)) - med("batch", "file", lambda r: r["serverCPUSeconds"] * 1e6 / events(r))))
print("load average (1 min) at the start and the end: %s and %s; this machine has %d cores" % (load_start, open("/proc/loadavg").read().split()[0], os.cpu_count()))
print("relay_log_frames per event: %.1f B, of which indexes %.1f B; half load: %s ms pause on 64 connections (same offered rate both sides)" % (
    med("batch", "pg", lambda r: r["tableBytes"] / r["loggedEvents"]), med("batch", "pg", lambda r: r["indexBytes"] / r["loggedEvents"]), pace))
print("acknowledged and logged: %s" % ("every run's log holds every event acknowledged, no non-2xx, no error or warning in the relays' logs" if not problems else "PROBLEMS: " + "; ".join(problems)))
print()
print("| phase | side | run | requests/s | p50 | p99 | commits | INSERTs | logged events |")
print("|---|---|---|---|---|---|---|---|---|")
for r in runs:
    print("| %s | %s | %d | %d | %s | %s | %d | %s | %d |" % (r["phase"], r["side"], r["run"], r["requestsPerSecond"],
        r.get("50") or "%.2fms" % r["p50ms"], r.get("99") or "%.2fms" % r["p99ms"], r["commits"], r["inserts"] if r["side"] == "pg" else "–", r["loggedEvents"]))
print(json.dumps({"eventsRatio": round(ratio_events, 3), "hitP99Ratio": round(ratio_p99, 3), "insertsPerCommit": round(ins / max(com, 1), 3), "runs": runs}))
PY
