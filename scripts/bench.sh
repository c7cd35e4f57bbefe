#!/usr/bin/env bash
# Runs the benchmarks (release builds) and writes bench/results.json and
# bench/results.md. Every figure is reported with its ratio to the anchor
# measured in the same run; allocation counts come from valgrind, which
# counts exactly, however busy the machine is.
set -euo pipefail
cd "$(dirname "$0")/.."
# redis-tools: redis-cli, the anchor of one promisectl call; gcc and make: the C build pipeline.
scripts/install-deps.sh libuv1-dev libsqlite3-dev pkg-config valgrind python3 redis-server redis-tools gcc make

mkdir -p bench
(cd Benchmarks && swift build -c release --product CoreBenchmarks &&
    swift build -c release --product ContentionBenchmarks &&
    swift build -c release --product DaemonBenchmarks)
core=Benchmarks/.build/release/CoreBenchmarks
contention=Benchmarks/.build/release/ContentionBenchmarks
daemon_bench=Benchmarks/.build/release/DaemonBenchmarks
# Built by `make release` (the standard library linked in; promisectl fully
# static, in a scratch folder of its own).
make release
bin="$(swift build -c release --static-swift-stdlib --show-bin-path)"
promised="$bin/promised"
promisectl="$(swift build -c release --static-swift-stdlib --scratch-path .build-static --show-bin-path)/promisectl"

echo "core benchmarks (timed, median of 7 rounds)…" >&2
"$core" > bench/core.jsonl

# Valgrind cannot read this binary's debug information (the swift-nio part);
# a copy without it counts the same allocations.
plain=$(mktemp)
trap 'rm -f "$plain"' EXIT
cp "$core" "$plain" && chmod +x "$plain" && strip --strip-debug "$plain"

echo "allocations per operation (valgrind)…" >&2
: > bench/allocations.jsonl
# One of each operator (then, a chain link, recover, all of N, race…), and
# swift-nio's two for comparison.
for name in promise.fulfill promise.then+fulfill.inline promise.then.settled.inline promise.chain2.inline \
    promise.chain10.inline promise.recover+reject.inline promise.always+fulfill.inline \
    promise.onSettled+fulfill.inline promise.resolve+fulfill promise.then+cancel.inline promise.all2 \
    promise.all10 promise.race2 nio.map+succeed.embedded nio.chain10.embedded; do
    count() {
        valgrind --tool=memcheck "$plain" --only "$name" --iterations "$1" 2>&1 |
            sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
    }
    small=$(count 1000)
    large=$(count 2000)
    echo "{\"name\":\"$name\",\"allocationsPerOp\":$(( (large - small) / 1000 ))}" >> bench/allocations.jsonl
done

# The locks under oversubscription: 64 threads on this machine's cores.
echo "lock contention (64 threads: old spin lock, futex lock, Mutex, NSLock; promises)…" >&2
"$contention" > bench/contention.jsonl

# Across processes: the daemon (started and stopped by the benchmark, on a
# socket in a temporary folder) against redis-server and an echo server.
echo "daemon benchmarks (round trips, fan-out, memory)…" >&2
"$daemon_bench" --promised "$promised" --redis-server "$(command -v redis-server)" > bench/daemon.jsonl
# Pinned: each server alone on core 0, the clients (this benchmark) on core 1.
if [ "$(nproc)" -ge 2 ]; then
    echo "daemon benchmarks, pinned (servers on core 0, clients on core 1)…" >&2
    taskset --cpu-list 1 "$daemon_bench" --promised "$promised" --redis-server "$(command -v redis-server)" \
        --only pinned --server-cpu 0 >> bench/daemon.jsonl
fi

# From Swift: PromiseConnection (one async connection, 50 tasks) against
# blocking clients (50 threads), bytes per pending mirror and allocations
# per pair (malloc_counter.so preloaded), through examples/swift-client's
# ConnectionBench on a daemon of its own.
echo "from Swift: one async connection against blocking clients, bytes per mirror, allocations…" >&2
swift build -c release --package-path examples/swift-client --product ConnectionBench
client_bench="$(swift build -c release --package-path examples/swift-client --show-bin-path)/ConnectionBench"
client_dir=$(mktemp -d)
"$promised" --in-memory --socket "$client_dir/s.sock" 2> "$client_dir/promised.log" &
client_daemon=$!
for _ in $(seq 100); do [ -S "$client_dir/s.sock" ] && break; sleep 0.1; done
cc -shared -fPIC -O2 -o "$client_dir/malloc_counter.so" examples/swift-client/MallocCounter/malloc_counter.c
LD_PRELOAD="$client_dir/malloc_counter.so" "$client_bench" --socket "$client_dir/s.sock" --seconds 5 --clients 50 \
    >> bench/daemon.jsonl
kill "$client_daemon"; wait "$client_daemon" || true
# The same async load pinned as the pinned benchmark is (the daemon alone on
# core 0, the client on core 1), anchored to that benchmark's one-thread
# epoll load generator with as many clients.
if [ "$(nproc)" -ge 2 ]; then
    taskset --cpu-list 0 "$promised" --in-memory --socket "$client_dir/p.sock" --log-level warning \
        --max-promises 10000000 --max-connections 256 2> "$client_dir/pinned.log" &
    client_daemon=$!
    for _ in $(seq 100); do [ -S "$client_dir/p.sock" ] && break; sleep 0.1; done
    taskset --cpu-list 1 "$client_bench" --socket "$client_dir/p.sock" --seconds 6 --clients 50 --async-only \
        --name client.async.pinned.c50.pairsPerSecond --anchor daemon.pinned.c50.promised.pairsPerSecond \
        >> bench/daemon.jsonl
    kill "$client_daemon"; wait "$client_daemon" || true
fi
rm -rf "$client_dir"

# What the pinned ratio comes down to, counted rather than timed (the same on
# any machine, however busy): user-space instructions per pair in each server,
# sent one after another on one connection (scripts/count-instructions.sh).
echo "instructions per pair: promised create+resolve, Redis SET+PUBLISH (callgrind)…" >&2
promised_instructions=$(scripts/count-instructions.sh daemon "$promised" | sed -n 's/.*: \([0-9]*\) instructions.*/\1/p')
redis_instructions=$(scripts/count-instructions.sh redis "$(command -v redis-server)" | sed -n 's/.*: \([0-9]*\) instructions.*/\1/p')
echo "{\"name\":\"daemon.instructions.redis.perPair\",\"value\":$redis_instructions,\"unit\":\"instructions\",\"better\":\"lower\"}" >> bench/daemon.jsonl
echo "{\"name\":\"daemon.instructions.promised.perPair\",\"value\":$promised_instructions,\"unit\":\"instructions\",\"better\":\"lower\",\"anchor\":\"daemon.instructions.redis.perPair\"}" >> bench/daemon.jsonl

# One call from a shell script: promisectl get and run against redis-cli get.
echo "one call as a fresh process (promisectl get, run -- true, redis-cli get)…" >&2
python3 scripts/bench_launch.py "$promised" "$promisectl" "$(command -v redis-server)" "$(command -v redis-cli)" \
    > bench/launch.jsonl
echo "a 21-file C build: make -j2 and promisectl run steps…" >&2
python3 scripts/bench_pipeline.py "$promised" "$promisectl" >> bench/launch.jsonl

python3 scripts/bench_report.py bench/core.jsonl bench/allocations.jsonl bench/daemon.jsonl bench/launch.jsonl \
    bench/contention.jsonl \
    > bench/results.md
cat bench/results.md
