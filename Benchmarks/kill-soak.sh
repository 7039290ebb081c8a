#!/usr/bin/env bash
# kill -9 soak (not for CI): CYCLES times `campaign-relay serve` is SIGKILLed under load from three
# clients (SDK hits and JSON batches) while its uploader forwards to `campaign-relay emulate`, then
# restarted on the same data directory. At the end: every id answered 200 is in the log exactly
# once, `stats --json` equals the log, the emulator got every logged event (duplicates within
# kills × --max-unsynced), `wal verify` is clean. Prints the figures (a table, or one JSON object
# with --json); exit status 1 if a check failed. The driver is Benchmarks/kill-soak.py.
# Usage: Benchmarks/kill-soak.sh [CYCLES=1000] [--json] [--seed N]
set -euo pipefail
source "$(dirname "$0")/common.sh"
cycles=1000
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then cycles=$1; shift; fi
python3 "$here/kill-soak.py" "$relay" "$work" "$cycles" "$@"
