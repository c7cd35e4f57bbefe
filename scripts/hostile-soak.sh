#!/usr/bin/env bash
# Hostile soak: the release `promised` on one store, for DURATION seconds
# (default 1800), under a mix of the request and connection shapes that
# once stopped it or held every client, with `kill -9` restarts between:
#
#   chain       thousands of all/any/race/allSettled, each over the one
#               before, on a root with a timeout; the root resolved,
#               cancelled or left to time out (restore walks the chain)
#   fanin       an all over one pending id repeated up to 100,000 times,
#               then cancelled (or cancelPrefix over it)
#   thenfan     tens of thousands of then children of one parent, cancelled
#               with cancelPrefix
#   listbatch   one batch line of hundreds of `list` calls
#   repeated    all/any/race over one 200 KB value repeated 80 times
#   flood       two threads connecting and closing as fast as they can
#   silent      subscribers that never read while 60 KB progress messages go out
#   halflines   connections that each hold an unfinished 512 KB line
#   ledger      create+resolve pairs, each acknowledged one recorded
#
# Checked throughout, and the run fails on the first miss (the work folder
# and the daemon's log are kept):
#   alive       the daemon never exits unless the soak killed it
#   restartable after each kill -9 it listens again within RESTART_LIMIT s
#   nothing lost every acknowledged ledger change is there after a restart,
#               and every chain whose root settled has its end settled
#   answered    a probe asks `info` every 50 ms on a connection of its own;
#               no answer may take longer than STALL_LIMIT_MS (default 1000)
#   bounded     resident memory stays under RSS_LIMIT_MB (default 3072)
# and the summary prints the probe's p50/p99/max, the restart times, the
# largest RSS and the store's size.
#
#   scripts/hostile-soak.sh                           # 30 minutes
#   DURATION=300 SEED=7 scripts/hostile-soak.sh       # 5 minutes, replayable choices
#   PROMISED=/usr/local/bin/promised scripts/hostile-soak.sh   # the installed binary
#
# Environment: DURATION, SEED, WORKERS (shape threads, default 3),
# KILL_EVERY (mean seconds between kills, default 90), RESTART_LIMIT (60),
# STALL_LIMIT_MS, RSS_LIMIT_MB, PROMISED, SCRATCH_PATH (default .build),
# SKIP_BUILD=1, KEEP=1. Python 3, standard library only.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION="${DURATION:-1800}"
SEED="${SEED:-$(( (RANDOM << 15) | RANDOM ))}"
WORKERS="${WORKERS:-3}"
KILL_EVERY="${KILL_EVERY:-90}"
RESTART_LIMIT="${RESTART_LIMIT:-60}"
STALL_LIMIT_MS="${STALL_LIMIT_MS:-1000}"
RSS_LIMIT_MB="${RSS_LIMIT_MB:-3072}"
SCRATCH_PATH="${SCRATCH_PATH:-.build}"

if [ -n "${PROMISED:-}" ]; then
    DAEMON="$PROMISED"
else
    if [ "${SKIP_BUILD:-0}" != 1 ]; then
        swift build -c release --scratch-path "$SCRATCH_PATH" --product promised >&2
    fi
    DAEMON="$(swift build -c release --scratch-path "$SCRATCH_PATH" --show-bin-path)/promised"
fi
[ -x "$DAEMON" ] || { echo "hostile-soak: no promised at $DAEMON" >&2; exit 70; }

WORK="$(mktemp -d /tmp/hostile-soak-XXXXXX)"
status=0
python3 - "$DAEMON" "$WORK" "$DURATION" "$SEED" "$WORKERS" "$KILL_EVERY" "$RESTART_LIMIT" \
    "$STALL_LIMIT_MS" "$RSS_LIMIT_MB" <<'PY' || status=$?
import json, multiprocessing, os, random, signal, socket, subprocess, sys, threading, time

(promised, work, duration, seed, workers, kill_every, restart_limit, stall_limit_ms,
 rss_limit_mb) = (sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                  float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9]))
sock_path, store, log_path = (os.path.join(work, n) for n in ("s.sock", "store", "promised.log"))
deadline = time.monotonic() + duration
master = random.Random(seed)
print(f"hostile-soak: seed {seed}, {duration:.0f} s, {workers} workers, work folder {work}", flush=True)


class Closed(Exception):
    pass


class Client:
    """One connection; one request at a time, notifications skipped."""

    def __init__(self, timeout=30.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        # A flood fills the listen backlog for moments (EAGAIN): try again then.
        give_up = time.monotonic() + min(timeout, 10)
        while True:
            try:
                self.sock.connect(sock_path)
                break
            except BlockingIOError as error:
                if time.monotonic() > give_up:
                    self.sock.close()
                    raise Closed(str(error))
                time.sleep(0.01)
            except OSError as error:
                self.sock.close()
                raise Closed(str(error))
        self.buffer = b""
        self.next_id = 1

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except OSError as error:
            raise Closed(str(error))

    def line(self):
        # Chunks are joined once the line ends: a 64 MiB batch answer read
        # 1 MiB at a time costs one copy, not sixty-four.
        end = self.buffer.find(b"\n")
        if end < 0:
            chunks = [self.buffer]
            while True:
                try:
                    chunk = self.sock.recv(1 << 20)
                except OSError as error:
                    raise Closed(str(error))
                if not chunk:
                    raise Closed("end of input")
                chunks.append(chunk)
                if b"\n" in chunk:
                    break
            self.buffer = b"".join(chunks)
            end = self.buffer.find(b"\n")
        line, self.buffer = self.buffer[:end], self.buffer[end + 1:]
        return json.loads(line)

    def call(self, method, params=None):
        request_id = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        while True:
            answer = self.line()
            if isinstance(answer, dict) and answer.get("id") == request_id:
                return answer

    def batch(self, calls):
        """Sends `calls` ([(method, params)]) as one batch line; returns the answers by id."""
        first = self.next_id
        self.next_id += len(calls)
        members = [{"jsonrpc": "2.0", "id": first + i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
        self.send_raw(json.dumps(members, separators=(",", ":")).encode() + b"\n")
        while True:
            answer = self.line()
            if isinstance(answer, list):
                return answer


# --- the daemon, its restarts and the checks that fail the run -------------

failure = None
failure_lock = threading.Lock()
stop = threading.Event()


def fail(message):
    global failure
    with failure_lock:
        if failure is None:
            failure = message
            print(f"hostile-soak: FAILED: {message}", flush=True)
    stop.set()


class Daemon:
    def __init__(self):
        self.process = None
        # Odd while a daemon starts (it may take connections while it restores
        # its store, answering none), even once it has answered: the probe
        # counts only waits that began and ended in one even generation.
        self.shared_generation = multiprocessing.Value("l", 1, lock=False)
        self.restart_times = []
        self.killing = threading.Lock()

    def start(self):
        log = open(log_path, "ab")
        started = time.monotonic()
        self.process = subprocess.Popen([promised, "--store", store, "--socket", sock_path],
                                        stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        while time.monotonic() - started < restart_limit:
            if self.process.poll() is not None:
                fail(f"the daemon exited with {self.process.returncode} while starting (log: {log_path})")
                return
            try:
                probe = Client(timeout=5)
                probe.call("info")
                probe.close()
                self.shared_generation.value += 1
                self.restart_times.append(time.monotonic() - started)
                return
            except (Closed, OSError, ValueError):
                time.sleep(0.02)
        fail(f"the daemon did not answer within {restart_limit:.0f} s of its start (log: {log_path})")

    def restart(self):
        """kill -9, then start again; the watchdog, which takes the same lock,
        never sees the killed process as one that exited by itself."""
        with self.killing:
            self.shared_generation.value += 1
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.start()

    def kill(self):
        with self.killing:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def rss_kib(self):
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0


daemon = Daemon()
os.makedirs(store, mode=0o700)
daemon.start()

ledger = {}           # id -> value, acknowledged
ledger_lock = threading.Lock()
chains = []           # (root, end, kind, length), the root's settlement acknowledged
chains_lock = threading.Lock()
KEPT_CHAINS = 20     # chains kept to check after restarts; older ones are forgotten
counts = {}
counts_lock = threading.Lock()


def count(shape, outcome="done"):
    with counts_lock:
        counts[(shape, outcome)] = counts.get((shape, outcome), 0) + 1


def unique(prefix, rng):
    return f"{prefix}-{rng.getrandbits(40):010x}"


def forget_prefix(client, prefix):
    """Forgets what a shape made, as a long-running user does: without it the
    daemon reaches maxPromises and collects the oldest settled promises,
    the ledger's among them."""
    cursor = None
    while True:
        params = {"prefix": prefix} if cursor is None else {"prefix": prefix, "cursor": cursor}
        answer = client.call("forget", params)
        cursor = answer.get("result", {}).get("cursor")
        if cursor is None:
            return


# --- shapes -----------------------------------------------------------------

def shape_chain(rng):
    kind = rng.choice(["all", "any", "race", "allSettled"])
    length = rng.randint(3000, 12000)
    base = unique("chain", rng)
    client = Client(timeout=120)
    try:
        params = {"id": f"{base}/0"}
        if rng.random() < 0.5:
            params["timeoutMs"] = rng.randint(2000, 30000)
        root = client.call("create", params)
        if "error" in root:
            return count("chain", "refused")
        for start in range(1, length + 1, 1000):
            calls = [(kind, {"ids": [f"{base}/{i - 1}"], "id": f"{base}/{i}"})
                     for i in range(start, min(start + 1000, length + 1))]
            for answer in client.batch(calls):
                if "error" in answer:
                    return count("chain", "refused")
        action = rng.choice(["resolve", "reject", "cancel", "cancel-end", "timeout"])
        if action == "resolve":
            settled = client.call("resolve", {"id": f"{base}/0", "value": {"n": length}})
        elif action == "reject":
            settled = client.call("reject", {"id": f"{base}/0", "reason": "soak"})
        elif action == "cancel":
            settled = client.call("cancel", {"id": f"{base}/0"})
        elif action == "cancel-end":
            settled = client.call("cancel", {"id": f"{base}/{length}"})
        else:
            settled = {"result": None} if "timeoutMs" in params else client.call("cancel", {"id": f"{base}/0"})
        if "error" not in settled:
            with chains_lock:
                chains.append((f"{base}/0", f"{base}/{length}", kind, length, action, params.get("timeoutMs")))
                # The latest chains stay to be checked after restarts; older ones are forgotten.
                dropped = chains.pop(0) if len(chains) > KEPT_CHAINS else None
            if dropped:
                forget_prefix(client, dropped[0].rsplit("/", 1)[0] + "/")
        count("chain")
    finally:
        client.close()


def shape_fanin(rng):
    client = Client(timeout=300)
    try:
        pending = unique("f", rng)
        client.call("create", {"id": pending})
        repeat = rng.randint(10000, 60000)
        made = client.call("all", {"ids": [pending] * repeat, "id": pending + "/all"})
        if "error" in made:
            return count("fanin", "refused")
        if rng.random() < 0.5:
            client.call("cancel", {"id": pending + "/all"})
        else:
            client.call("cancelPrefix", {"prefix": pending + "/"})
        count("fanin")
    finally:
        client.close()


def shape_thenfan(rng):
    client = Client(timeout=300)
    try:
        parent = unique("tf", rng)
        client.call("create", {"id": parent})
        children = rng.randint(10000, 40000)
        for start in range(0, children, 1000):
            calls = [("then", {"id": parent, "childId": f"{parent}/c{i}"})
                     for i in range(start, min(start + 1000, children))]
            client.batch(calls)
        client.call("cancelPrefix", {"prefix": parent + "/"})
        client.call("cancel", {"id": parent})
        forget_prefix(client, parent + "/")
        client.call("forget", {"ids": [parent]})
        count("thenfan")
    finally:
        client.close()


def shape_listbatch(rng):
    client = Client(timeout=300)
    try:
        calls = [("list", {"limit": 10000})] * rng.randint(100, 500)
        client.batch(calls)
        count("listbatch")
    finally:
        client.close()


def shape_repeated(rng):
    client = Client(timeout=120)
    try:
        source = unique("rv", rng)
        client.call("create", {"id": source})
        client.call("resolve", {"id": source, "value": "x" * 200_000})
        for n in range(rng.randint(3, 10)):
            kind = rng.choice(["all", "allSettled", "any", "race"])
            client.call(kind, {"ids": [source] * 80, "id": f"{source}/{kind}{n}"})
        count("repeated")
    finally:
        client.close()


def shape_flood(rng):
    end = time.monotonic() + rng.uniform(3, 8)

    def flood():
        while time.monotonic() < end and not stop.is_set():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(sock_path)
            except OSError:
                pass
            s.close()

    threads = [threading.Thread(target=flood) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    count("flood")


def shape_silent(rng):
    topic = unique("silent", rng)
    writer = Client(timeout=60)
    silent = []
    try:
        writer.call("create", {"id": topic})
        for _ in range(rng.randint(50, 150)):
            c = Client(timeout=60)
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.call("subscribe", {"ids": [topic]})
            silent.append(c)
        message = "m" * 60_000
        end = time.monotonic() + rng.uniform(3, 8)
        step = 0
        while time.monotonic() < end and not stop.is_set():
            step += 1
            writer.call("progress", {"id": topic, "progress": min(0.99, step / 100000), "message": message})
        count("silent")
    finally:
        for c in silent:
            c.close()
        writer.close()


def shape_halflines(rng):
    held = []
    try:
        for _ in range(rng.randint(100, 300)):
            c = Client(timeout=10)
            held.append(c)
            try:
                c.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"' + b"h" * 500_000)
            except Closed:
                pass
        time.sleep(rng.uniform(3, 10))
        count("halflines")
    finally:
        for c in held:
            c.close()


SHAPES = [(shape_chain, 3), (shape_fanin, 2), (shape_thenfan, 1), (shape_listbatch, 2),
          (shape_repeated, 2), (shape_flood, 2), (shape_silent, 1), (shape_halflines, 1)]


spans = []            # (shape, start, end): which shapes ran when, to name a stall's suspects
spans_lock = threading.Lock()


def suspects(start, end):
    """The shapes that ran at some moment between start and end (monotonic seconds)."""
    now = time.monotonic()
    with spans_lock:
        names = sorted({name for name, s, e in spans if s <= end and (e or now) >= start})
    return ", ".join(names) or "none"


def worker(index):
    rng = random.Random(master.getrandbits(64))
    choices = [s for s, w in SHAPES for _ in range(w)]
    while not stop.is_set() and time.monotonic() < deadline:
        shape = rng.choice(choices)
        span = [shape.__name__[6:], time.monotonic(), None]
        with spans_lock:
            spans.append(span)
        try:
            shape(rng)
        except (Closed, OSError, ValueError, TimeoutError):
            count(shape.__name__[6:], "cut short (a restart, a time-out, or cut off by the daemon)")
            time.sleep(0.2)
        finally:
            span[2] = time.monotonic()


def ledger_writer():
    rng = random.Random(master.getrandbits(64))
    client = None
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            if client is None:
                client = Client(timeout=30)
            key = unique("ledger", rng)
            value = {"n": rng.getrandbits(30)}
            if "error" in client.call("create", {"id": key}):
                continue
            if "error" not in client.call("resolve", {"id": key, "value": value}):
                with ledger_lock:
                    ledger[key] = value
            time.sleep(0.005)
        except (Closed, OSError, ValueError):
            if client:
                client.close()
            client = None
            time.sleep(0.1)


probe_latencies = []
worst_stalls = []     # (ms, sent, shapes running): the five longest waits past 100 ms
probe_lock = threading.Lock()


def probe_process(generation, answers):
    """Asks `info` every 50 ms and sends (sent, elapsed ms) for each answer
    given by one started daemon from the question's start to its end.

    A process of its own, so that the soak's threads (parsing a 64 MiB batch
    answer holds Python's lock for seconds) never delay its reading.
    """
    client = None
    seen = -1
    while True:
        time.sleep(0.05)
        try:
            before = generation.value
            if before % 2:
                continue  # a daemon is starting: restoring is not a stall
            if client is None or seen != before:
                if client:
                    client.close()
                seen = before
                client = Client(timeout=stall_limit_ms / 1000 * 4)
            sent = time.monotonic()
            client.call("info")
            elapsed = (time.monotonic() - sent) * 1000
            if generation.value == before:
                answers.send((sent, elapsed))
        except (Closed, OSError, ValueError):
            if client:
                client.close()
            client = None


def probe():
    """Reads the probe process's answers: a slow one fails the run, naming what ran meanwhile."""
    while not stop.is_set() and time.monotonic() < deadline:
        if not probe_answers.poll(0.2):
            continue
        sent, elapsed = probe_answers.recv()
        with probe_lock:
            probe_latencies.append(elapsed)
            if elapsed > 100:
                worst_stalls.append((elapsed, sent, suspects(sent, sent + elapsed / 1000)))
                worst_stalls.sort(reverse=True)
                del worst_stalls[5:]
        if elapsed > stall_limit_ms:
            fail(f"the probe waited {elapsed:.0f} ms for info (limit {stall_limit_ms:.0f} ms) from "
                 f"{sent:.3f} s (CLOCK_MONOTONIC: `perf record -k mono` places it); "
                 f"shapes running then: {suspects(sent, sent + elapsed / 1000)}")


rss_peak = [0]


def watchdog():
    while not stop.is_set() and time.monotonic() < deadline:
        time.sleep(0.5)
        with daemon.killing:
            if daemon.process.poll() is not None:
                fail(f"the daemon exited by itself with {daemon.process.returncode} (log: {log_path})")
                return
        rss = daemon.rss_kib()
        rss_peak[0] = max(rss_peak[0], rss)
        if rss > rss_limit_mb * 1024:
            fail(f"the daemon's RSS reached {rss // 1024} MB (limit {rss_limit_mb:.0f} MB)")


def verify(after):
    """Every acknowledged ledger change is there; every chain whose root settled has ended."""
    client = Client(timeout=120)
    try:
        with ledger_lock:
            entries = list(ledger.items())
        for start in range(0, len(entries), 500):
            chunk = entries[start:start + 500]
            answers = client.batch([("get", {"id": key}) for key, _ in chunk])
            by_id = {a["id"]: a for a in answers}
            for offset, (key, value) in enumerate(chunk):
                answer = by_id.get(client.next_id - len(chunk) + offset)
                record = (answer or {}).get("result") or {}
                if record.get("state") != "fulfilled" or record.get("value") != value:
                    fail(f"{after}: acknowledged {key} = {value} is {answer}")
                    return
        with chains_lock:
            known = list(chains)
        for root, end, kind, length, action, timeout in known:
            limit = time.monotonic() + 60
            while True:
                answer = client.call("get", {"id": end})
                state = (answer.get("result") or {}).get("state")
                root_state = (client.call("get", {"id": root}).get("result") or {}).get("state")
                if state not in (None, "pending") or root_state == "pending":
                    break
                if time.monotonic() > limit:
                    fail(f"{after}: the end of a {length}-long {kind} chain ({end}) is still pending "
                         f"60 s after its root settled ({action})")
                    return
                time.sleep(0.5)
    finally:
        client.close()


probe_answers, probe_sender = multiprocessing.Pipe(duplex=False)
prober = multiprocessing.get_context("fork").Process(
    target=probe_process, args=(daemon.shared_generation, probe_sender), daemon=True)
prober.start()
threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(workers)]
threads += [threading.Thread(target=f, daemon=True) for f in (ledger_writer, probe, watchdog)]
for t in threads:
    t.start()

kills = 0
killer = random.Random(master.getrandbits(64))
while not stop.is_set() and time.monotonic() < deadline:
    pause = killer.uniform(kill_every / 2, kill_every * 1.5)
    stop.wait(max(0.0, min(pause, deadline - time.monotonic())))
    if stop.is_set() or time.monotonic() >= deadline:
        break
    daemon.restart()
    kills += 1
    if not stop.is_set():
        try:
            verify(f"after kill -9 number {kills}")
        except (Closed, OSError, ValueError) as error:
            fail(f"after kill -9 number {kills}: the check could not talk to the daemon: {error}")

stop.set()
prober.terminate()
for t in threads:
    t.join(timeout=120)
if failure is None:
    try:
        verify("at the end")
    except (Closed, OSError, ValueError) as error:
        fail(f"at the end: the check could not talk to the daemon: {error}")
exited = None
if daemon.process.poll() is None:
    daemon.process.send_signal(signal.SIGTERM)
    try:
        exited = daemon.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        fail("the daemon did not exit within 30 s of SIGTERM")
if exited not in (None, 0):
    fail(f"the daemon exited with {exited} on SIGTERM")

with probe_lock:
    latencies = sorted(probe_latencies)


def pct(p):
    return latencies[min(len(latencies) - 1, int(len(latencies) * p))] if latencies else 0.0


store_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(store) for f in fs)
print("hostile-soak summary:")
print(f"  seed {seed}, {duration:.0f} s, {kills} kill -9 restarts, restart times "
      f"{', '.join(f'{t:.2f}' for t in daemon.restart_times)} s")
print(f"  probe: {len(latencies)} answers, p50 {pct(0.5):.2f} ms, p99 {pct(0.99):.2f} ms, "
      f"max {latencies[-1] if latencies else 0:.2f} ms, over 100 ms: {sum(1 for l in latencies if l > 100)}")
print(f"  largest RSS {rss_peak[0] // 1024} MB; store {store_bytes / 1e6:.1f} MB; "
      f"ledger {len(ledger)} acknowledged changes checked; the latest {len(chains)} chains checked")
for elapsed, sent, running in worst_stalls:
    print(f"  probe waited {elapsed:.0f} ms from {sent:.3f} s (CLOCK_MONOTONIC); shapes running: {running}")
for (shape, outcome), n in sorted(counts.items()):
    print(f"  {shape}: {n} {outcome}")
print("hostile-soak:", "FAILED: " + failure if failure else "passed")
sys.exit(1 if failure else 0)
PY
if [ "$status" -eq 0 ] && [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$WORK"
else
    echo "hostile-soak: work folder kept: $WORK" >&2
fi
exit "$status"
