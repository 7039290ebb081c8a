#!/usr/bin/env bash
# Simulated power losses beyond CI's 10,000: runs the "Simulated power loss" suite ROUNDS times,
# each on 10,000 new seeds (8 shards × 1,250; the seeds of round R start at 10,000 × R, and round 0
# is what CI runs: its fast and thorough tiers together). Every crash point checks that each
# acknowledged event survives once and in order, that nothing is invented and that recovery needs
# no one. Stops at the first failing round and names its first seed, so
# `CAMPAIGN_RELAY_CRASH_FIRST_SEED=<seed> CAMPAIGN_RELAY_TIER=all swift test --filter 'RelayLogTests.CrashSimulation'`
# replays it.
# Usage: Benchmarks/crash-soak.sh [ROUNDS=10] [--json]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=10
json=false
for argument in "$@"; do
    case "$argument" in
    --json) json=true ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) rounds=$argument ;;
    esac
done
per_shard=1250
swift build --build-tests >&2
started=$(date +%s)
points=0
for ((round = 1; round <= rounds; round++)); do
    first=$((round * 8 * per_shard))
    log=$(mktemp /tmp/campaign-relay-crash-soak.XXXXXX)
    # Both suites of the simulation: the fast tier's first seeds of each shard and the thorough
    # tier's rest (Tests/RelayLogTests/CrashSimulationTests.swift).
    if ! CAMPAIGN_RELAY_CRASH_FIRST_SEED=$first CAMPAIGN_RELAY_CRASH_SEEDS_PER_SHARD=$per_shard CAMPAIGN_RELAY_TIER=all \
        swift test --skip-build --filter 'RelayLogTests\.CrashSimulation(RemainingSeeds)?Tests/' >"$log" 2>&1; then
        grep -E "✘|Expectation failed" "$log" | head -20 >&2
        echo "round $round failed: replay with CAMPAIGN_RELAY_CRASH_FIRST_SEED=$first (log: $log)" >&2
        $json && echo "{\"rounds\":$((round - 1)),\"crashPoints\":$points,\"failedFirstSeed\":$first}"
        exit 1
    fi
    rm -f "$log"
    points=$((points + 8 * per_shard))
    echo "round $round/$rounds: seeds $first–$((first + 8 * per_shard - 1)) clean ($points crash points, $(($(date +%s) - started)) s)" >&2
done
if $json; then
    echo "{\"rounds\":$rounds,\"crashPoints\":$points,\"seconds\":$(($(date +%s) - started)),\"failedFirstSeed\":null}"
fi
