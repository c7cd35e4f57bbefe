#!/usr/bin/env bash
# Counts instructions with valgrind's callgrind, which gives the same figure
# however busy the machine is: for comparing two builds on a shared machine,
# where timings drift by tens of percent between runs.
#
#   scripts/count-instructions.sh core [BENCHMARK…]
#       instructions per operation of CoreBenchmarks benchmarks (default:
#       promise.then+fulfill.inline nio.map+succeed.embedded): the difference
#       between runs of 10,000 and 20,000 iterations, so set-up cancels out.
#   scripts/count-instructions.sh daemon [PROMISED] [--store]
#       instructions per create+resolve pair in a release `promised` (default:
#       this checkout's), in memory or with a store: counted over 1,000 pairs
#       sent one after another on one connection, after 200 to warm up.
#   scripts/count-instructions.sh redis [REDIS_SERVER]
#       the anchor counted the same way: instructions per SET+PUBLISH pair
#       (the pinned benchmark's pair) in redis-server, over 1,000 pairs sent
#       one after another on one connection, after 200 to warm up.
#   scripts/count-instructions.sh fanout [PROMISED] [SUBSCRIBERS]
#       instructions per subscriber for one resolve told to SUBSCRIBERS
#       (default 2,000) subscribed connections, from the resolve until every
#       subscriber has read its notification.
#
# With KEEP_CALLGRIND=FILE, the daemon's callgrind profile of the counted
# part is copied to FILE, for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh valgrind python3 >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Valgrind cannot read the debug information of these binaries; a copy
# without it runs the same code.
plain_copy() {
    cp "$1" "$work/$2" && chmod +x "$work/$2" && strip --strip-debug "$work/$2"
}

total() {
    callgrind_annotate "$1" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}

count_core() {
    (cd Benchmarks && swift build -c release --product CoreBenchmarks >&2)
    plain_copy Benchmarks/.build/release/CoreBenchmarks core
    local names=("$@")
    [ ${#names[@]} -gt 0 ] || names=(promise.then+fulfill.inline nio.map+succeed.embedded)
    for name in "${names[@]}"; do
        for iterations in 10000 20000; do
            valgrind --tool=callgrind --callgrind-out-file="$work/core.$iterations" \
                "$work/core" --only "$name" --iterations "$iterations" >/dev/null 2>&1
        done
        echo "$name: $(( ($(total "$work/core.20000") - $(total "$work/core.10000")) / 10000 )) instructions per operation"
    done
}

# Starts `$1` (a release promised; empty: this checkout's) under callgrind
# with the options that follow, on $work/promised.sock; sets $daemon.
start_daemon() {
    local promised="$1"
    shift
    if [ -z "$promised" ]; then
        swift build -c release --product promised >&2
        promised="$(swift build -c release --show-bin-path)/promised"
    fi
    plain_copy "$promised" promised
    valgrind --tool=callgrind --callgrind-out-file="$work/daemon.out" "$work/promised" "$@" \
        --socket "$work/promised.sock" --log-level warning >/dev/null 2>&1 &
    daemon=$!
    for _ in $(seq 1 150); do [ -S "$work/promised.sock" ] && break; sleep 0.2; done
}

# Stops the daemon; prints the instructions counted between the client's
# --zero and --dump.
stop_daemon_and_count() {
    sleep 1
    kill -INT "$daemon"
    wait "$daemon" 2>/dev/null || true
    local profile
    profile="$(ls -t "$work"/daemon.out.* | head -1)"
    if [ -n "${KEEP_CALLGRIND:-}" ]; then cp "$profile" "$KEEP_CALLGRIND"; fi
    total "$profile"
}

# Sends 200 pairs to warm up, then the 1,000 that are counted (callgrind
# zeroed before, dumped after), one after another on one connection to
# socket $1: create+resolve to promised, SET+PUBLISH (DaemonBenchmarks'
# pinned pair) to Redis ($2: promised or redis), with the same keys.
send_counted_pairs() {
    python3 - "$1" "$daemon" "$2" <<'EOF'
import socket, subprocess, sys
path, daemon, protocol = sys.argv[1], sys.argv[2], sys.argv[3]
connection = socket.socket(socket.AF_UNIX)
connection.connect(path)
replies = connection.makefile("rb")

def lines(key):
    if protocol == "redis":
        return [b"*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$1\r\n1\r\n" % (len(command), command, len(key), key)
                for command in (b"SET", b"PUBLISH")]
    return [b'{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"%s"}}\n' % key,
            b'{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"id":"%s","value":1}}\n' % key]

def refused(reply):
    return reply.startswith(b"-") if protocol == "redis" else b'"error"' in reply

# Keys shaped as the pinned benchmark's ("c" tag client "-" index): 17
# bytes, past the 15 that Swift keeps in a String without an allocation.
def pairs(count, prefix):
    for i in range(count):
        for line in lines(b"%s%d" % (prefix, 100000 + i)):
            connection.sendall(line)
            if refused(replies.readline()):
                sys.exit(f"{protocol} answered with an error")

pairs(200, b"cpinned.11-")
subprocess.run(["callgrind_control", "--zero", daemon], check=True, capture_output=True)
pairs(1000, b"cpinned.12-")
subprocess.run(["callgrind_control", "--dump", daemon], check=True, capture_output=True)
EOF
}

count_daemon() {
    local promised="" store=()
    for argument in "$@"; do
        case "$argument" in
            --store) store=(--store "$work/store") ;;
            *) promised="$argument" ;;
        esac
    done
    [ ${#store[@]} -gt 0 ] || store=(--in-memory)
    start_daemon "$promised" "${store[@]}"
    send_counted_pairs "$work/promised.sock" promised
    echo "promised ${store[0]}: $(( $(stop_daemon_and_count) / 1000 )) instructions per create+resolve pair"
}

count_fanout() {
    local promised="" subscribers=2000
    for argument in "$@"; do
        case "$argument" in
            *[!0-9]*) promised="$argument" ;;
            *) subscribers="$argument" ;;
        esac
    done
    # The daemon and the client each hold a socket per subscriber.
    ulimit -n "$(ulimit -Hn)"
    start_daemon "$promised" --in-memory --max-connections "$((subscribers + 16))"
    python3 - "$work/promised.sock" "$daemon" "$subscribers" <<'EOF'
import socket, subprocess, sys
path, daemon, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

def read_line(connection):
    line = b""
    while not line.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            sys.exit("a connection closed")
        line += chunk
    return line

subscribers = [socket.socket(socket.AF_UNIX) for _ in range(count)]
for subscriber in subscribers:
    subscriber.connect(path)
    subscriber.sendall(b'{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["fan"]}}\n')
for subscriber in subscribers:
    if b'"subscribed":1' not in read_line(subscriber):
        sys.exit("subscribe failed")
control = socket.socket(socket.AF_UNIX)
control.connect(path)
control.sendall(b'{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"fan"}}\n')
read_line(control)
subprocess.run(["callgrind_control", "--zero", daemon], check=True, capture_output=True)
control.sendall(b'{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"id":"fan","value":1}}\n')
read_line(control)
for subscriber in subscribers:
    if b'"settled"' not in read_line(subscriber):
        sys.exit("a subscriber was not told")
subprocess.run(["callgrind_control", "--dump", daemon], check=True, capture_output=True)
EOF
    echo "promised fan-out to $subscribers: $(( $(stop_daemon_and_count) / subscribers )) instructions per subscriber"
}

count_redis() {
    local server="${1:-$(command -v redis-server)}"
    valgrind --tool=callgrind --callgrind-out-file="$work/daemon.out" "$server" \
        --port 0 --unixsocket "$work/redis.sock" --save "" --appendonly no >/dev/null 2>&1 &
    daemon=$!
    for _ in $(seq 1 150); do [ -S "$work/redis.sock" ] && break; sleep 0.2; done
    send_counted_pairs "$work/redis.sock" redis
    echo "redis-server: $(( $(stop_daemon_and_count) / 1000 )) instructions per SET+PUBLISH pair"
}

case "${1:-}" in
    core) shift; count_core "$@" ;;
    daemon) shift; count_daemon "$@" ;;
    redis) shift; count_redis "$@" ;;
    fanout) shift; count_fanout "$@" ;;
    *) echo "usage: $0 core [BENCHMARK…] | daemon [PROMISED] [--store] | redis [REDIS_SERVER] | fanout [PROMISED] [SUBSCRIBERS]" >&2; exit 64 ;;
esac
