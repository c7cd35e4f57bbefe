#!/bin/sh
# A longer seeded fuzz of the framer and the dispatcher than the CI run
# (Tests/PromiseDispatchTests/FuzzTests.swift), with a fresh seed per run.
#
# Usage: scripts/fuzz-soak.sh [SCALE] [RUNS]
#   SCALE  multiplies the inputs of one run (1 is the CI run: about 100,000 lines); default 10
#   RUNS   how many runs, each with a new random seed; default 1
# Each run prints its seed. A failure names the seed of the worker that failed;
# reproduce it with: FUZZ_SEED=<seed> FUZZ_SCALE=<scale> swift test --filter FuzzTests
# FUZZ_SCRATCH sets the build folder (default .build-fuzz).
set -eu
scale=${1:-10}
runs=${2:-1}
scratch=${FUZZ_SCRATCH:-.build-fuzz}
cd "$(dirname "$0")/.."
swift build --build-tests --scratch-path "$scratch"
run=1
while [ "$run" -le "$runs" ]; do
    seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
    echo "fuzz-soak: run $run of $runs: FUZZ_SEED=$seed FUZZ_SCALE=$scale"
    if ! FUZZ_SEED=$seed FUZZ_SCALE=$scale swift test --skip-build --scratch-path "$scratch" --filter FuzzTests; then
        echo "fuzz-soak: FAILED: FUZZ_SEED=$seed FUZZ_SCALE=$scale" >&2
        exit 1
    fi
    run=$((run + 1))
done
echo "fuzz-soak: $runs runs passed"
