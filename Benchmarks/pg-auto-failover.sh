#!/usr/bin/env bash
# The relay on a live pg_auto_failover formation (not for CI; needs root and Debian's
# postgresql-15-auto-failover): a monitor and two PostgreSQL 15 nodes on loopback ports, three
# `serve --log-postgres-url` on the formation's multi-host URL, loaded by three clients while the
# primary (its keeper and PostgreSQL) is killed with SIGKILL. pg_auto_failover promotes the standby
# after its timeouts (about 50 s with its defaults); the relays answer 503 meanwhile and 200 again
# without a restart. Then, from outside: every acknowledged id is in the promoted database once and
# reached the emulator, `stats --postgres-url` counts every stored event, and the duplicates are
# printed. A table, or one JSON object with --json; exit status 1 if a check failed. The driver is
# Benchmarks/pg-auto-failover.py; see docs/high-availability.md.
# `--kill standby` kills the standby instead (commits wait for it until the monitor drops it, ~20 s).
# Usage: Benchmarks/pg-auto-failover.sh [--json] [--kill primary|standby] [--seconds-before N] [--seconds-after N]
set -euo pipefail
source "$(dirname "$0")/common.sh"
command -v pg_autoctl >/dev/null || { echo "needs pg_autoctl: apt-get install postgresql-15-auto-failover pg-auto-failover-cli" >&2; exit 2; }
python3 "$here/pg-auto-failover.py" "$relay" "$work" "$@"
