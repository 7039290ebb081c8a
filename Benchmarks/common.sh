# Sourced by the benchmark scripts: builds `campaign-relay` (unless RELAY_BINARY names one already
# built), makes a scratch directory, and on exit stops the processes listed in `pids` (letting them
# stop cleanly) before removing it.
# BUILD_CONFIGURATION=debug is for the CI smoke run only: debug figures mean nothing.
configuration=${BUILD_CONFIGURATION:-release}
# The sourcing script's arguments: --json anywhere sets json=1, the others stay in order in args.
json=0
args=()
for arg in "$@"; do if [ "$arg" = --json ]; then json=1; else args+=("$arg"); fi; done
here=$(cd "$(dirname "$0")" && pwd)
# The benchmark targets are part of the relay's package when this is set (see Package.swift); every
# build of a benchmark run sets it, so they all plan the same package.
export CAMPAIGN_RELAY_BENCHMARKS=1
# RELAY_BINARY runs another build instead (a before/after comparison in one sitting, or a prebuilt
# release binary): then nothing is built here at all. RELAY_BIN_DIR names a build directory that
# holds every product already (the smoke run builds once and sets it): nothing is built either.
if [ -z "${RELAY_BINARY:-}" ] && [ -n "${RELAY_BIN_DIR:-}" ]; then RELAY_BINARY=$RELAY_BIN_DIR/campaign-relay; fi
if [ -n "${RELAY_BINARY:-}" ]; then
    echo "RELAY_BINARY is set: running $RELAY_BINARY, skipping swift build" >&2
    relay=$RELAY_BINARY
else
    swift build -c "$configuration" --package-path "$here/.." --product campaign-relay >&2
    relay="$(swift build -c "$configuration" --package-path "$here/.." --show-bin-path)/campaign-relay"
fi
# built_product NAME: the path of another product of the package (a baseline, a benchmark tool),
# taken from RELAY_BIN_DIR when it is set, built otherwise.
built_product() {
    if [ -n "${RELAY_BIN_DIR:-}" ]; then
        echo "$RELAY_BIN_DIR/$1"
    else
        swift build -c "$configuration" --package-path "$here/.." --product "$1" >&2
        echo "$(swift build -c "$configuration" --package-path "$here/.." --show-bin-path)/$1"
    fi
}
work=$(mktemp -d "/tmp/campaign-relay-$(basename "$0" .sh).XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
