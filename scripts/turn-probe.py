#!/usr/bin/env python3
"""How long one client's heavy request line holds the others.

Starts PROMISED (in memory, on a socket in a temporary folder), and for
each heavy shape: sets it up on one connection, then sends the heavy line
while a probe on a second connection sends `get` every millisecond and
times each answer. Prints, per shape, how long the heavy line took and the
probe's answers: p50, p99 and the worst (the longest the loop was held,
to within the probe's period; the probe runs in a process of its own).
Shapes:

- list-batch: one batch of 1,000 `list` calls (limit 10,000) over 20,000 promises;
- list-values: one batch of 60 `list` calls over 300 promises with a 60 KB
  nested value and 300 with a short one;
- create-batch: one batch of 1,000 `create`s (the largest batch allowed);
- cancel-children: `cancel` of a promise with 100,000 `then` children;
- resolve-children: `resolve` of a promise with 100,000 `then` children;
- cancel-all: `cancel` of an `all` over one pending id repeated 250,000 times;
- cancel-prefix: `cancelPrefix` over 100,000 `then` children, cursor after cursor;
- all-chain: `resolve` of the root of a chain of 5,000 `all`, each over the one before;
- wide-all: one `all` over 80,000 distinct pending ids (close to a 1 MiB line);
- cancel-wide-all: `cancel` of that `all`;
- repeated-value: ten `all`/`allSettled`/`any`/`race` over one 200 KB value repeated 80 times;
- flood: four processes connecting and closing as fast as they can, for 5 s;
- silent-progress: 200 `progress` calls with a 60 KB message, one after the other,
  to 150 subscribers that never read.

Each line also gives the daemon's resident memory after the heavy line (rssKiB).

    usage: [TURN_PROBE_DAEMON_ARGS="--flag value…"] turn-probe.py PROMISED [SHAPE…]
    e.g.   swift build -c release --product promised
           scripts/turn-probe.py .build/release/promised
"""
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


class Connection:
    """One JSON-RPC connection: a call waits for the answer with its id."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buffer = bytearray()
        self.next_id = 0

    def line(self):
        scanned = 0
        while (end := self.buffer.find(b"\n", scanned)) < 0:
            scanned = len(self.buffer)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("the daemon closed the connection")
            self.buffer += chunk
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        return json.loads(line)

    def send(self, message):
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def call(self, method, params=None):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        while True:
            answer = self.line()
            if isinstance(answer, dict) and answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def batch(self, calls):
        self.send([{"jsonrpc": "2.0", "id": index + 1, "method": method, "params": params}
                   for index, (method, params) in enumerate(calls)])
        while True:
            answer = self.line()
            if isinstance(answer, list):
                return answer


class Probe:
    """Sends `get` of one id every millisecond on its own connection, in a
    process of its own (the heavy client's parsing holds this one's GIL)."""

    def __init__(self, path, promise_id):
        self.stopping = multiprocessing.Event()
        self.ready = multiprocessing.Event()
        receiving, self.sending = multiprocessing.Pipe(duplex=False)
        self.receiving = receiving
        self.process = multiprocessing.Process(target=Probe.run, args=(path, promise_id, self.stopping,
                                                                        self.ready, self.sending))

    def start(self):
        self.process.start()
        self.ready.wait()

    @staticmethod
    def run(path, promise_id, stopping, ready, sending):
        connection = Connection(path)
        latencies = []
        ready.set()
        while not stopping.is_set():
            start = time.perf_counter()
            connection.call("get", {"id": promise_id})
            latencies.append(time.perf_counter() - start)
            time.sleep(0.001)
        sending.send(latencies)

    def stop(self):
        self.stopping.set()
        ordered = sorted(self.receiving.recv())
        self.process.join()
        return {
            "probes": len(ordered),
            "p50Ms": round(statistics.median(ordered) * 1000, 2),
            "p99Ms": round(ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)] * 1000, 2),
            "maxMs": round(ordered[-1] * 1000, 2),
        }


def many(connection, calls):
    for start in range(0, len(calls), 1000):
        connection.batch(calls[start:start + 1000])


def setup_list_batch(c):
    many(c, [("create", {"id": f"p/{i}"}) for i in range(20_000)])
    return lambda: c.batch([("list", {"limit": 10_000})] * 1000)


def setup_list_values(c):
    nested = {"files": [{"name": f"f{i}", "size": i, "tags": ["a", "b", "c"]} for i in range(1500)]}
    for i in range(300):  # one at a time: a batch of these would pass the line bound
        c.call("create", {"id": f"v/{i}"})
        c.call("resolve", {"id": f"v/{i}", "value": nested})
    many(c, [call for i in range(300) for call in
             (("create", {"id": f"s/{i}"}), ("resolve", {"id": f"s/{i}", "value": "x" * 200}))])
    return lambda: c.batch([("list", {"limit": 10_000})] * 60)


def setup_create_batch(c):
    return lambda: c.batch([("create", {"id": f"made/{i}"}) for i in range(1000)])


def children(c, count=100_000):
    c.call("create", {"id": "parent"})
    many(c, [("then", {"id": "parent", "childId": f"kid/{i}"}) for i in range(count)])


def setup_cancel_children(c):
    children(c)
    return lambda: c.call("cancel", {"id": "parent"})


def setup_resolve_children(c):
    children(c)
    return lambda: c.call("resolve", {"id": "parent", "value": 1})


def setup_cancel_all(c):
    c.call("create", {"id": "a"})
    c.call("all", {"id": "many", "ids": ["a"] * 250_000})
    return lambda: c.call("cancel", {"id": "many"})


def setup_cancel_prefix(c):
    children(c)

    def run():
        cursor = None
        while True:
            params = {"prefix": "kid/"} if cursor is None else {"prefix": "kid/", "cursor": cursor}
            cursor = c.call("cancelPrefix", params)["cursor"]
            if cursor is None:
                return
    return run


def setup_all_chain(c):
    c.call("create", {"id": "link/0"})
    many(c, [("all", {"id": f"link/{i}", "ids": [f"link/{i - 1}"]}) for i in range(1, 5001)])
    return lambda: c.call("resolve", {"id": "link/0", "value": 1})


WIDE = [f"in/{i}" for i in range(80_000)]


def setup_wide_all(c):
    many(c, [("create", {"id": i}) for i in WIDE])
    return lambda: c.call("all", {"id": "wide", "ids": WIDE})


def setup_cancel_wide_all(c):
    setup_wide_all(c)()
    return lambda: c.call("cancel", {"id": "wide"})


def setup_repeated_value(c):
    c.call("create", {"id": "rv"})
    c.call("resolve", {"id": "rv", "value": "x" * 200_000})
    kinds = ["all", "allSettled", "any", "race"]
    return lambda: [c.call(kinds[n % 4], {"ids": ["rv"] * 80, "id": f"rv/{n}"}) for n in range(10)]


def flood_connections(path, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            pass
        s.close()


def setup_flood(c):
    path = c.sock.getpeername()

    def run():
        floods = [multiprocessing.Process(target=flood_connections, args=(path, 5)) for _ in range(4)]
        for flood in floods:
            flood.start()
        for flood in floods:
            flood.join()
    return run


def setup_silent_progress(c):
    c.call("create", {"id": "topic"})
    silent = []
    for _ in range(150):
        subscriber = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        subscriber.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        subscriber.connect(c.sock.getpeername())
        subscriber.sendall(b'{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["topic"]}}\n')
        silent.append(subscriber)
    c.call("info")  # every subscription is in
    message = "m" * 60_000

    def run():
        for step in range(1, 201):
            c.call("progress", {"id": "topic", "progress": step / 1000, "message": message})
        assert silent  # kept open, unread, until the daemon stops
    return run


def resident_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


SHAPES = {
    "list-batch": setup_list_batch,
    "list-values": setup_list_values,
    "create-batch": setup_create_batch,
    "cancel-children": setup_cancel_children,
    "resolve-children": setup_resolve_children,
    "cancel-all": setup_cancel_all,
    "cancel-prefix": setup_cancel_prefix,
    "all-chain": setup_all_chain,
    "wide-all": setup_wide_all,
    "cancel-wide-all": setup_cancel_wide_all,
    "repeated-value": setup_repeated_value,
    "flood": setup_flood,
    "silent-progress": setup_silent_progress,
}


def measure(promised, shape):
    folder = tempfile.mkdtemp(prefix="turn-probe-")
    path = os.path.join(folder, "d.sock")
    extra = os.environ.get("TURN_PROBE_DAEMON_ARGS", "").split()
    daemon = subprocess.Popen([promised, "--socket", path, "--in-memory", "--max-promises", "1000000", *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if os.path.exists(path):
                break
            time.sleep(0.01)
        heavy = Connection(path)
        heavy.call("create", {"id": "probe"})
        run = SHAPES[shape](heavy)
        probe = Probe(path, "probe")
        probe.start()
        time.sleep(0.2)
        start = time.perf_counter()
        run()
        took = time.perf_counter() - start
        time.sleep(0.05)
        figures = probe.stop()
        return {"shape": shape, "heavyMs": round(took * 1000, 1), **figures, "rssKiB": resident_kib(daemon.pid)}
    finally:
        daemon.terminate()
        daemon.wait()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    shapes = sys.argv[2:] or list(SHAPES)
    for shape in shapes:
        print(json.dumps(measure(sys.argv[1], shape)), flush=True)


if __name__ == "__main__":
    main()
