#!/usr/bin/env bash
# The thorough tier: every suite that needs real crashes, faults, clusters, floods, browsers or
# many seeds (kill -9 loops, libfiu, network namespaces, socket floods, PostgreSQL, schemathesis,
# Chromium, full disks, the rest of the crash simulations' seeds). CI runs it after the fast tier
# (`swift test`); each suite names its tier once (`.tier(.thorough)`, see Tests/TestTiers).
#
# Needs root (tmpfs mounts, network namespaces, PostgreSQL clusters run as postgres) and the tools
# .ci/run installs. Arguments go to `swift test`: `Tests/thorough.sh --filter KillNine` runs one
# suite of the tier, `--skip-build` uses the build there is.
set -euo pipefail
cd "$(dirname "$0")/.."
export CAMPAIGN_RELAY_TIER=thorough
exec swift test "$@"
