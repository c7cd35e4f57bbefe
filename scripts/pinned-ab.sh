#!/usr/bin/env bash
# Compares promised builds on the pinned benchmark (issue 22, item 12):
# each run starts fresh servers, Redis and promised each pinned to core 0,
# the load generator on core 1, and prints promised's pairs/s and p99 as
# ratios to the Redis of the same run. The builds take turns, run after
# run, so that the machine's drift falls on each alike; a run's ratio moves
# by ±0.1 on this machine, so compare means over several runs, not one run.
#
#     usage: scripts/pinned-ab.sh RUNS PROMISED [PROMISED…]
#     e.g.   scripts/pinned-ab.sh 6 /tmp/promised-before .build/release/promised
#
# Needs the release benchmark (cd Benchmarks && swift build -c release
# --product DaemonBenchmarks) and redis-server (`make bench` installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
    sed -n 's/^#     //p' "$0" >&2
    exit 64
fi
runs=$1
shift
bench=Benchmarks/.build/release/DaemonBenchmarks
[ -x "$bench" ] || { echo "pinned-ab: build $bench first (see the usage)" >&2; exit 69; }
redis=$(command -v redis-server) || { echo "pinned-ab: redis-server is not installed" >&2; exit 69; }
[ "$(nproc)" -ge 2 ] || { echo "pinned-ab: needs two cores" >&2; exit 69; }

results=$(mktemp)
trap 'rm -f "$results"' EXIT
# The value of metric NAME in the benchmark's JSON lines on stdin.
value() { sed -n "s/.*\"name\":\"daemon\.pinned\.c50\.$1\",\"value\":\([0-9.]*\).*/\1/p"; }
for run in $(seq 1 "$runs"); do
    for promised in "$@"; do
        out=$(taskset --cpu-list 1 "$bench" --promised "$promised" --redis-server "$redis" \
            --only pinned --server-cpu 0)
        line=$(printf '%s\n' "$promised" "$(value promised.pairsPerSecond <<<"$out")" \
            "$(value redis.pairsPerSecond <<<"$out")" "$(value promised.p99 <<<"$out")" \
            "$(value redis.p99 <<<"$out")" "$(value promised.kernelMicrosecondsPerPair <<<"$out")" \
            "$(value redis.kernelMicrosecondsPerPair <<<"$out")" | paste -sd ' ')
        echo "$line" >> "$results"
        awk -v run="$run" '{ printf "run %s  %s  pairs/s %.3fx Redis (%d/%d)  p99 %.3fx (%d/%d µs)  kernel %.2f/%.2f µs a pair\n",
            run, $1, $2 / $3, $2, $3, $4 / $5, $4, $5, $6, $7 }' <<<"$line"
    done
done
echo "per build, over $runs runs: mean pairs/s ratio, median p99 ratio"
for promised in "$@"; do
    mean=$(awk -v build="$promised" '$1 == build { sum += $2 / $3; n++ } END { printf "%.3f", sum / n }' "$results")
    p99=$(awk -v build="$promised" '$1 == build { printf "%.3f\n", $4 / $5 }' "$results" | sort -n |
        awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    echo "$promised  pairs/s ${mean}x  p99 ${p99}x"
done
