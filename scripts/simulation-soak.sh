#!/bin/sh
# Runs the seeded simulation (issue 22, item 11) seed after seed, for as
# long as asked, and stops at the first failure with the line that replays it.
#
# Usage: scripts/simulation-soak.sh [DURATION | SEEDS]
#   DURATION  how long to run: 90s, 10m, 2h (default 10m)
#   SEEDS     a plain number: how many seeds to run
# Environment:
#   STEPS=n          steps per seed (default 1000; the CI run uses 300)
#   START=n          first seed (default: random); seeds follow one by one
#   BATCH=n          seeds per test process (default 8)
#   VARIANT=process  the in-process simulation (SimulationTests, the default),
#          daemon   the real promised over its socket (SimulationDaemonTests),
#                   both  the two, one after the other for each batch
#   SIMULATION_INCLUDE=defect,…|all  stop avoiding known defects (see
#                   Sources/PromiseTestSupport/SimulationOptions.swift)
#   SOAK_SCRATCH     build folder (default .build)
# Each seed prints one line: its number, ok or FAILED, its steps, requests,
# restarts. Replay a failure with the SIMULATION_SEED=… line printed, e.g.
#   SIMULATION_SEED=1234 SIMULATION_STEPS=1000 swift test --filter SimulationTests
set -eu
what=${1:-10m}
steps=${STEPS:-1000}
batch=${BATCH:-8}
variant=${VARIANT:-process}
scratch=${SOAK_SCRATCH:-.build}
cd "$(dirname "$0")/.."

seconds=""
seeds=""
case "$what" in
    *s) seconds=${what%s} ;;
    *m) seconds=$(( ${what%m} * 60 )) ;;
    *h) seconds=$(( ${what%h} * 3600 )) ;;
    *[!0-9]*|"") echo "usage: $0 [DURATION (90s, 10m, 2h) | SEEDS]" >&2; exit 64 ;;
    *) seeds=$what ;;
esac
case "$variant" in
    process) filters="SimulationTests" ;;
    daemon) filters="SimulationDaemonTests" ;;
    both) filters="SimulationTests SimulationDaemonTests" ;;
    *) echo "VARIANT must be process, daemon or both" >&2; exit 64 ;;
esac

start=${START:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
swift build --build-tests --scratch-path "$scratch" 2>&1 | grep -E 'error|warning: ' || true
began=$(date +%s)
seed=$start
ran=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "simulation-soak: from seed $start, $steps steps per seed, variant $variant, ${seconds:+for ${seconds}s}${seeds:+$seeds seeds}"
while :; do
    if [ -n "$seconds" ] && [ $(( $(date +%s) - began )) -ge "$seconds" ]; then break; fi
    if [ -n "$seeds" ] && [ "$ran" -ge "$seeds" ]; then break; fi
    count=$batch
    if [ -n "$seeds" ] && [ $(( seeds - ran )) -lt "$count" ]; then count=$(( seeds - ran )); fi
    for filter in $filters; do
        status=0
        SIMULATION_SEED=$seed SIMULATION_SEEDS=$count SIMULATION_STEPS=$steps \
            swift test --skip-build --scratch-path "$scratch" --filter "$filter" >"$log" 2>&1 || status=$?
        grep -E '^Simulation(Daemon)? seed [0-9]+:' "$log" | sed "s/^/$filter: /" || true
        if [ "$status" -ne 0 ]; then
            echo "simulation-soak: FAILED in $filter after $ran seeds:" >&2
            grep -E '^  seed [0-9]+, step|^    replay:|^      Fatal|^    daemon log' "$log" >&2 || tail -40 "$log" >&2
            failed=$(grep -oE '^Simulation(Daemon)? seed [0-9]+: FAILED' "$log" | head -1 | grep -oE '[0-9]+' || true)
            echo "simulation-soak: replay with ${SIMULATION_INCLUDE:+SIMULATION_INCLUDE=$SIMULATION_INCLUDE }SIMULATION_SEED=${failed:-$seed} SIMULATION_STEPS=$steps swift test --filter $filter" >&2
            exit 1
        fi
    done
    seed=$(( seed + count ))
    ran=$(( ran + count ))
done
echo "simulation-soak: $ran seeds passed ($start to $(( seed - 1 ))), $steps steps each, in $(( $(date +%s) - began ))s"
