#!/usr/bin/env bash
# Keeps the benchmarks compiling and running (CI): builds the relay's package with its benchmark
# targets (CAMPAIGN_RELAY_BENCHMARKS=1), the package-benchmark harness included, once, in the same
# build directory as the tests (so the relay's modules compile once), and runs the scripted
# benchmarks with tiny sizes on that debug build; none of them builds again (RELAY_BIN_DIR).
# With RELAY_BIN_DIR set (.ci/run, after its build phase) nothing is built here at all.
# The figures of this run mean nothing; see BENCHMARKS.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CAMPAIGN_RELAY_BENCHMARKS=1
if [ -z "${RELAY_BIN_DIR:-}" ]; then
    swift build --package-path "$here/.."
    RELAY_BIN_DIR=$(swift build --package-path "$here/.." --show-bin-path)
fi
export RELAY_BIN_DIR
BUILD_CONFIGURATION=debug "$here/ingest-vs-sqlite.sh" 2000 1
BUILD_CONFIGURATION=debug "$here/aggregate.sh" 2000 1
if command -v wrk >/dev/null; then BUILD_CONFIGURATION=debug "$here/http-ingest.sh" 1 2; fi
if command -v wrk >/dev/null; then BUILD_CONFIGURATION=debug "$here/batch-ingest.sh" 1 2 1; fi
if command -v wrk >/dev/null; then BUILD_CONFIGURATION=debug "$here/encryption.sh" 1 2 1; fi
if command -v wrk >/dev/null; then BUILD_CONFIGURATION=debug STRACE_SECONDS=1 "$here/vs-fluent-bit.sh" 1 1 0; fi
BUILD_CONFIGURATION=debug "$here/aggregates-size.sh" 2000
BUILD_CONFIGURATION=debug "$here/bit-flip.sh" 20000 2
BUILD_CONFIGURATION=debug "$here/restart.sh" 0.01 1
if command -v wrk >/dev/null && command -v openssl >/dev/null; then BUILD_CONFIGURATION=debug "$here/tls-hits.sh" 1 2; fi
BUILD_CONFIGURATION=debug "$here/poison-lane.sh" 50
BUILD_CONFIGURATION=debug "$here/drain.sh" 500 2
BUILD_CONFIGURATION=debug "$here/drain-adaptive-cost.sh" 500 1 2
if command -v wrk >/dev/null; then
    BUILD_CONFIGURATION=debug RATE=50 LATENCY_SECONDS=4 OUTAGE_SECONDS=2 BATCH_SECONDS=1 BATCH_ROUNDS=1 "$here/tenants.sh"
fi
BUILD_CONFIGURATION=debug "$here/relay-chain.sh" 2000
BUILD_CONFIGURATION=debug "$here/consumers.sh" 2000 1
BUILD_CONFIGURATION=debug SEGMENT_BYTES=4096 "$here/replay.sh" 10000
if ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then BUILD_CONFIGURATION=debug "$here/postgres-aggregate.sh" 2000; fi
"$RELAY_BIN_DIR/AckLatency" --seconds 0.2 --batches 1,10 --concurrency 4
echo "benchmark smoke run: ok"
