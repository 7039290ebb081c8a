#!/usr/bin/env bash
# Fleet aggregation into PostgreSQL beside the SQLite aggregator, on the same logs in the same run
# (release build): one relay's log, then three relays' logs at once. A throw-away PostgreSQL
# cluster (Debian's postgresql package) runs on loopback with pg_stat_statements, which then shows
# where the database's time went; sizes per delivery and per unique message come from
# pg_total_relation_size.
# Usage: Benchmarks/postgres-aggregate.sh [EVENTS_PER_RELAY=1000000]
set -euo pipefail
source "$(dirname "$0")/common.sh"
events=${1:-1000000}
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$pgbin" ] || { echo "PostgreSQL is not installed: apt-get install postgresql" >&2; exit 1; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
chmod 755 "$work"
mkdir -p "$work/pg/socket"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$work/pg"
as_postgres "$pgbin/initdb" -D "$work/pg/data" -A trust -U postgres --no-sync >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Output to a file, never a pipe: the server inherits pg_ctl's descriptors.
as_postgres "$pgbin/pg_ctl" -D "$work/pg/data" -w -l "$work/pg/server.log" \
    -o "-p $port -k $work/pg/socket -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements" start >"$work/pg/ctl.out" 2>&1
stop_postgres() { as_postgres "$pgbin/pg_ctl" -D "$work/pg/data" -m fast stop >"$work/pg/ctl.out" 2>&1 || true; cleanup; }
trap stop_postgres EXIT
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
sql() { "$pgbin/psql" -X -q -A -t -h 127.0.0.1 -p "$port" -U postgres -c "$1"; }
fresh_database() { sql "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public; CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset();" >/dev/null; }

for r in 0 1 2; do
    python3 "$here/generate-events.py" "$events" "$work/events$r.jsonl" $((7 + r))
    "$relay" ingest "$work/events$r.jsonl" --data-dir "$work/relay$r" --json >/dev/null
    rm "$work/events$r.jsonl"
done
now() { date +%s.%N; }
rate() { python3 -c "import sys; print(int(float(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2]))))" "$@"; }
# CPU seconds, to tell where an event's time goes on a machine whose cores are all busy: the relays'
# (bash's `time` of the subshell that runs them) and the server's (the postmaster's children, the
# backends that have exited included, and the processes still running).
TIMEFORMAT='%U %S'
ticks=$(getconf CLK_TCK)
server_cpu() {
    python3 - "$(head -1 "$work/pg/data/postmaster.pid")" "$ticks" <<'PY'
import os, sys
def fields(pid):
    with open("/proc/%s/stat" % pid) as f: return f.read().rsplit(")", 1)[1].split()
pm, ticks = sys.argv[1], int(sys.argv[2])
total = sum(int(x) for x in fields(pm)[11:15])  # its utime and stime, and its reaped children's
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = fields(pid)
        if stat[1] == pm: total += int(stat[11]) + int(stat[12])  # a child still running
    except OSError:
        pass
print(total / ticks)
PY
}
# run_relays CPU_FILE RELAY... ARGS: the aggregators of the relays named (0 1 2) at once; their CPU
# seconds (user + system) go to CPU_FILE.
run_relays() {
    local out=$1 relays=$2; shift 2
    { time (for r in $relays; do "$relay" aggregate --data-dir "$work/relay$r" --json --log-level error "$@" >/dev/null 2>&4 & done; wait); } 4>&2 2>"$out"
}
per_event() { python3 -c "import sys; u, s = map(float, open(sys.argv[1]).read().split()[-2:]); print('%.2f' % ((u + s) * 1e6 / float(sys.argv[2])))" "$@"; }
server_per_event() { python3 -c "import sys; print('%.2f' % ((float(sys.argv[2]) - float(sys.argv[1])) * 1e6 / float(sys.argv[3])))" "$@"; }

# SQLite, one relay, then three at once (each its own aggregates.sqlite).
rm -f "$work"/relay*/aggregates.sqlite*
start=$(now); run_relays "$work/cpu-sqlite-one" 0; sqlite_one=$(rate "$events" "$start" "$(now)")
rm -f "$work"/relay*/aggregates.sqlite*
start=$(now); run_relays "$work/cpu-sqlite-three" "0 1 2"; sqlite_three=$(rate $((3 * events)) "$start" "$(now)")

# PostgreSQL, one relay, then three at once, each from an empty database.
fresh_database
server_before=$(server_cpu)
start=$(now); run_relays "$work/cpu-pg-one" 0 --postgres-url "$url"; pg_one=$(rate "$events" "$start" "$(now)")
server_one=$(server_per_event "$server_before" "$(server_cpu)" "$events")
fresh_database
server_before=$(server_cpu)
start=$(now); run_relays "$work/cpu-pg-three" "0 1 2" --postgres-url "$url"; pg_three=$(rate $((3 * events)) "$start" "$(now)")
server_three=$(server_per_event "$server_before" "$(server_cpu)" $((3 * events)))

deliveries=$(sql "SELECT count(*) FROM deliveries")
messages=$(sql "SELECT count(*) FROM delivery_messages")
delivery_bytes=$(sql "SELECT pg_total_relation_size('deliveries') + pg_total_relation_size('delivery_counts')")
message_bytes=$(sql "SELECT pg_total_relation_size('delivery_messages')")
echo
echo "| $events events per relay | SQLite aggregator | PostgreSQL (fleet) | PostgreSQL / SQLite |"
echo "|---|---|---|---|"
echo "| one relay | $sqlite_one events/s | $pg_one events/s | $(python3 -c "print('%.2f' % ($pg_one / $sqlite_one))")× |"
echo "| three relays at once (total) | $sqlite_three events/s | $pg_three events/s | $(python3 -c "print('%.2f' % ($pg_three / $sqlite_three))")× |"
echo
echo "CPU per event (µs; user + system): SQLite aggregator $(per_event "$work/cpu-sqlite-one" "$events") one relay, $(per_event "$work/cpu-sqlite-three" $((3 * events))) three;" \
    "fleet aggregator $(per_event "$work/cpu-pg-one" "$events") and PostgreSQL's server $server_one one relay," \
    "$(per_event "$work/cpu-pg-three" $((3 * events))) and $server_three three"
echo
echo "PostgreSQL bytes: $(python3 -c "print(round($delivery_bytes / max($deliveries, 1)))") per delivery ($deliveries deliveries, rows per relay and their indexes), $(python3 -c "print(round($message_bytes / max($messages, 1), 1))") per unique message ($messages messages, table and primary key)"
echo
echo "Where PostgreSQL's time went in the three-relay run (pg_stat_statements, top 6 by total time):"
sql "SELECT round(total_exec_time)::text || ' ms total, ' || calls || ' calls, ' || round(mean_exec_time::numeric, 2) || ' ms mean, ' || rows || ' rows: ' || regexp_replace(left(query, 90), '\s+', ' ', 'g') FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 6"
