#!/usr/bin/env bash
# Crash soak: the release `promised` on one store, under concurrent writers,
# killed with SIGKILL at random moments and started again, CYCLES times
# (default 200). After every restart it checks that each acknowledged change
# is there (creates, resolve/reject values, then children and their parents,
# `all` inputs), that nothing unacknowledged is half-applied (batch lines of
# [create X1, create X2, then X1 -> X3] are all there or not at all; an
# unacknowledged resolve is absent or exact), that no promise appears that no
# client asked for, and that then children and `all` settle as their inputs
# did. Exits 1 on the first cycle with a problem, keeping the work folder.
#
#   scripts/crash-soak.sh                       # 200 cycles
#   CYCLES=1000 SEED=42 WRITERS=4 scripts/crash-soak.sh
#   SKIP_BUILD=1 SCRATCH_PATH=.build-crash scripts/crash-soak.sh
#
# Environment: CYCLES, SEED (replays a run's choices), WRITERS (client
# threads, default 3), MAX_KILL_MS (longest run before the kill, default 400),
# SCRATCH_PATH (default .build), SKIP_BUILD=1 (use the binaries as built),
# PROMISED=/path/to/promised (use that binary, e.g. a debug build),
# KEEP=1 (keep the work folder even on success), CLIENT_CYCLES (default 5).
#
# Then, CLIENT_CYCLES times, it kills the daemon while `promisectl wait`,
# `watch --until-settled` and `run` are attached, starts it again, and checks
# that each ends as it should: `wait` prints the value resolved after the
# restart, `watch` prints each settlement once (one made before the kill, one
# after), and `run`, whose command ends while the daemon is down, settles
# its promise once the daemon is back (docs/DURABILITY.md, "Clients that
# reconnect").
#
# The writer is Python 3 (standard library only): a JSON-RPC line client is
# a few lines there, and threads with one socket each are what is needed.
set -euo pipefail

cd "$(dirname "$0")/.."
CYCLES="${CYCLES:-200}"
SEED="${SEED:-$(( (RANDOM << 15) | RANDOM ))}"
WRITERS="${WRITERS:-3}"
MAX_KILL_MS="${MAX_KILL_MS:-400}"
SCRATCH_PATH="${SCRATCH_PATH:-.build}"

CLIENT_CYCLES="${CLIENT_CYCLES:-5}"

if [ -n "${PROMISED:-}" ]; then
    DAEMON="$PROMISED"
    CTL="$(dirname "$PROMISED")/promisectl"
else
    if [ "${SKIP_BUILD:-0}" != 1 ]; then
        swift build -c release --scratch-path "$SCRATCH_PATH" --product promised >&2
        swift build -c release --scratch-path "$SCRATCH_PATH" --product promisectl >&2
    fi
    DAEMON="$(swift build -c release --scratch-path "$SCRATCH_PATH" --show-bin-path)/promised"
    CTL="$(dirname "$DAEMON")/promisectl"
fi
[ -x "$DAEMON" ] || { echo "crash-soak: no promised at $DAEMON (build it or unset SKIP_BUILD)" >&2; exit 70; }
[ "$CLIENT_CYCLES" -eq 0 ] || [ -x "$CTL" ] || { echo "crash-soak: no promisectl at $CTL" >&2; exit 70; }

WORK="$(mktemp -d /tmp/crash-soak-XXXXXX)"
status=0
python3 - "$DAEMON" "$WORK" "$CYCLES" "$SEED" "$WRITERS" "$MAX_KILL_MS" <<'PY' || status=$?
import json, os, random, socket, subprocess, sys, threading, time

promised, work, cycles, seed, writers, max_kill_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
sock_path, store = os.path.join(work, "s.sock"), os.path.join(work, "store")
rng = random.Random(seed)


class Closed(Exception):
    pass


class RPCError(Exception):
    def __init__(self, error):
        super().__init__(f"{error.get('code')} {error.get('message')}")
        self.error = error


class Client:
    """One connection: requests one line each, answers matched by id."""

    def __init__(self, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(sock_path)
        self.buffer = b""
        self.answers = {}
        self.next_id = 1

    def close(self):
        self.sock.close()

    def send(self, message):
        try:
            self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        except OSError as error:
            raise Closed(str(error))

    def read_answer(self, key):
        while key not in self.answers:
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                raise TimeoutError("no answer within the timeout")
            except OSError as error:
                raise Closed(str(error))
            if not chunk:
                raise Closed("end of input")
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                message = json.loads(line)
                if isinstance(message, list):
                    self.answers[tuple(m.get("id") for m in message)] = message
                elif "id" in message:
                    self.answers[message["id"]] = message
        return self.answers.pop(key)

    def call(self, method, params=None):
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        answer = self.read_answer(request_id)
        if "error" in answer:
            raise RPCError(answer["error"])
        return answer["result"]

    def batch(self, entries):
        ids = tuple(range(self.next_id, self.next_id + len(entries)))
        self.next_id += len(entries)
        self.send([{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in zip(ids, entries)])
        answers = {a["id"]: a for a in self.read_answer(ids)}
        return [answers[i] for i in ids]


class Daemon:
    def __init__(self):
        self.proc = None
        self.starts = 0

    def log_tail(self, limit=3000):
        try:
            with open(os.path.join(work, f"promised-{self.starts}.log"), errors="replace") as f:
                return f.read()[-limit:]
        except OSError:
            return ""

    def start(self):
        self.starts += 1
        log = open(os.path.join(work, f"promised-{self.starts}.log"), "w")
        self.proc = subprocess.Popen([promised, "--socket", sock_path, "--store", store],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"crash-soak: promised exited with {self.proc.returncode} at start {self.starts}: {self.log_tail()}")
            try:
                client = Client(timeout=5)
                try:
                    return client.call("info")
                finally:
                    client.close()
            except (OSError, Closed, TimeoutError, RPCError):
                time.sleep(0.005)
        self.kill()
        raise SystemExit(f"crash-soak: promised did not answer info within 30 s: {self.log_tail()}")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def describe(change):
    return json.dumps(change, separators=(",", ":"))


class Writer(threading.Thread):
    def __init__(self, cycle, index, seed, resolvable, existing, killed):
        super().__init__(daemon=True)
        self.cycle, self.index, self.rng, self.killed = cycle, index, random.Random(seed), killed
        self.resolvable, self.existing = list(resolvable), list(existing)
        self.acknowledged, self.uncertain, self.problems = [], [], []
        self.counter = 0

    def fresh(self, kind):
        self.counter += 1
        return f"{kind}{self.cycle}.{self.index}.{self.counter}"

    def next_change(self):
        roll = self.rng.randrange(100)
        if 35 <= roll < 62 and self.resolvable:
            target = self.resolvable.pop(self.rng.randrange(len(self.resolvable)))
            self.counter += 1
            stamp = f"{self.cycle}.{self.index}.{self.counter}"
            if roll < 55:
                return ["resolve", target, {"w": stamp, "n": self.counter, "list": [self.counter, "x", True, None]}]
            return ["reject", target, {"message": "r" + stamp, "code": self.counter}]
        if 62 <= roll < 82 and self.existing:
            return ["then", self.rng.choice(self.existing), self.fresh("h")]
        if roll >= 91:
            return ["batch", self.fresh("b"), self.fresh("b"), self.fresh("b")]
        if roll >= 82 and len(self.existing) >= 2:
            return ["all", self.rng.sample(self.existing, 2), self.fresh("a")]
        return ["create", self.fresh("c")]

    def acknowledge(self, change):
        self.acknowledged.append(change)
        kind = change[0]
        if kind == "create":
            self.existing.append(change[1]); self.resolvable.append(change[1])
        elif kind in ("then", "all"):
            self.existing.append(change[2])
        elif kind == "batch":
            self.existing += change[1:]; self.resolvable += change[1:3]

    def run(self):
        try:
            client = Client(timeout=10)
        except OSError:
            return
        try:
            while len(self.acknowledged) < 2000:
                change = self.next_change()
                kind = change[0]
                try:
                    if kind == "batch":
                        a, b, c = change[1:]
                        answers = client.batch([("create", {"id": a}), ("create", {"id": b}), ("then", {"id": a, "childId": c})])
                        errors = [x["error"] for x in answers if "error" in x]
                        if errors:
                            self.problems.append(f"{describe(change)} answered with {errors}")
                            return
                    elif kind == "create":
                        client.call("create", {"id": change[1]})
                    elif kind == "resolve":
                        client.call("resolve", {"id": change[1], "value": change[2]})
                    elif kind == "reject":
                        client.call("reject", {"id": change[1], "reason": change[2]})
                    elif kind == "then":
                        client.call("then", {"id": change[1], "childId": change[2]})
                    else:
                        client.call("all", {"ids": change[1], "id": change[2]})
                    self.acknowledge(change)
                except RPCError as error:
                    self.problems.append(f"{describe(change)} answered with {error}")
                    return
                except (Closed, TimeoutError) as error:
                    self.uncertain.append(change)
                    if not self.killed.is_set():
                        self.problems.append(f"{describe(change)} failed before the kill: {error}")
                    return
        finally:
            client.close()


def all_records(client):
    records, cursor = {}, None
    while True:
        params = {"limit": 10000}
        if cursor is not None:
            params["cursor"] = cursor
        page = client.call("list", params)
        for record in page["promises"]:
            records[record["id"]] = record
        cursor = page.get("cursor")
        if cursor is None:
            return records


def matches(record, change):
    if change[0] == "resolve":
        return record["state"] == "fulfilled" and record.get("value") == change[2]
    reason = record.get("reason") or {}
    return record["state"] == "rejected" and reason.get("message") == change[2]["message"] and reason.get("code") == change[2]["code"]


expected = {}       # id -> {"kind": "created"|"then"|"all", "parent", "inputs", "outcome", "because"}
acknowledged_total = checks = uncertain_total = 0


def expect(pid, kind, because, parent=None, inputs=None):
    expected[pid] = {"kind": kind, "parent": parent, "inputs": inputs, "outcome": None, "because": because}


def absorb(writers, fetch):
    global acknowledged_total, checks, uncertain_total
    for w in writers:
        for change in w.acknowledged:
            acknowledged_total += 1
            kind, because = change[0], describe(change)
            if kind == "create":
                expect(change[1], "created", because)
            elif kind in ("resolve", "reject"):
                expected[change[1]]["outcome"] = change
            elif kind == "then":
                expect(change[2], "then", because, parent=change[1])
            elif kind == "all":
                expect(change[2], "all", because, inputs=change[1])
            else:
                a, b, c = change[1:]
                expect(a, "created", because); expect(b, "created", because); expect(c, "then", because, parent=a)
    problems = [p for w in writers for p in w.problems]
    records = fetch()
    settled_uncertainly = set()
    for w in writers:
        for change in w.uncertain:
            uncertain_total += 1
            checks += 1
            kind, because = change[0], describe(change) + " (unacknowledged, present)"
            if kind == "create":
                if change[1] in records:
                    expect(change[1], "created", because)
            elif kind in ("resolve", "reject"):
                record = records.get(change[1])
                if record is None:
                    problems.append(f"{describe(change)} (unacknowledged): {change[1]} is missing")
                    continue
                settled_uncertainly.add(change[1])
                if record["state"] == "pending":
                    continue
                if matches(record, change):
                    expected[change[1]]["outcome"] = change
                else:
                    problems.append(f"{describe(change)} (unacknowledged) half-applied or garbled: {record}")
            elif kind == "then":
                record = records.get(change[2])
                if record is not None:
                    if record.get("parent") != change[1]:
                        problems.append(f"{describe(change)} (unacknowledged): parent is {record.get('parent')}")
                    expect(change[2], "then", because, parent=change[1])
            elif kind == "all":
                if change[2] in records:
                    expect(change[2], "all", because, inputs=change[1])
            else:
                a, b, c = change[1:]
                present = [x for x in (a, b, c) if x in records]
                if len(present) == 3:
                    expect(a, "created", because); expect(b, "created", because); expect(c, "then", because, parent=a)
                elif present:
                    problems.append(f"{describe(change)} (unacknowledged) half-applied: only {present} exist")
    for pid, e in expected.items():
        checks += 1
        record = records.get(pid)
        if record is None:
            problems.append(f"{pid} is missing ({e['because']})")
            continue
        if e["kind"] == "created" and record.get("parent") is not None:
            problems.append(f"{pid} has parent {record.get('parent')}")
        if e["kind"] == "then" and record.get("parent") != e["parent"]:
            problems.append(f"{pid} has parent {record.get('parent')}, not {e['parent']}")
        if e["kind"] == "all" and record.get("inputs") != e["inputs"]:
            problems.append(f"{pid} has inputs {record.get('inputs')}, not {e['inputs']}")
        if e["outcome"] is not None:
            if not matches(record, e["outcome"]):
                problems.append(f"{pid} after acknowledged {describe(e['outcome'])}: {record}")
        elif e["kind"] == "created" and pid not in settled_uncertainly and record["state"] != "pending":
            problems.append(f"{pid} was never settled by a client but is {record['state']}: {record}")
    for pid in records:
        if pid not in expected:
            problems.append(f"{pid} exists but no client asked for it: {records[pid]}")

    def derived(records):
        found = []
        for pid, e in expected.items():
            record = records.get(pid)
            if record is None or e["kind"] == "created":
                continue
            if e["kind"] == "then":
                parent = records.get(e["parent"])
                if parent is None:
                    continue
                if parent["state"] == "pending":
                    if record["state"] != "pending":
                        found.append(f"then child {pid} is {record['state']} while its parent is pending")
                elif (record["state"], record.get("value"), record.get("reason")) != (parent["state"], parent.get("value"), parent.get("reason")):
                    found.append(f"then child {pid} does not follow its settled parent: {record} vs {parent}")
            else:
                inputs = [records.get(i) for i in e["inputs"]]
                if any(i is None for i in inputs):
                    continue
                if any(i["state"] in ("rejected", "cancelled") for i in inputs):
                    if record["state"] != "rejected":
                        found.append(f"all {pid} with a rejected input is {record['state']}")
                elif all(i["state"] == "fulfilled" for i in inputs):
                    values = [i.get("value") for i in inputs]
                    if record["state"] != "fulfilled" or record.get("value") != values:
                        found.append(f"all {pid} over fulfilled inputs is {record}, expected {values}")
                elif record["state"] != "pending":
                    found.append(f"all {pid} with a pending input is {record['state']}")
        return found

    deadline = time.monotonic() + 3
    later = derived(records)
    while later and time.monotonic() < deadline:
        time.sleep(0.1)
        records = fetch()
        later = derived(records)
    problems += later
    resolvable = sorted(p for p, e in expected.items() if e["kind"] == "created" and records.get(p, {}).get("state") == "pending")
    return problems, resolvable


daemon = Daemon()
daemon.start()
resolvable = []
started = time.monotonic()
try:
    for cycle in range(1, cycles + 1):
        killed = threading.Event()
        count = writers if writers > 0 else 2 + rng.randrange(3)
        existing = sorted(expected)
        team = [Writer(cycle, i, rng.getrandbits(63), resolvable[i::count], existing, killed) for i in range(count)]
        for w in team:
            w.start()
        kill_after = rng.randrange(5) if rng.randrange(10) == 0 else 10 + rng.randrange(max_kill_ms)
        time.sleep(kill_after / 1000)
        killed.set()
        daemon.kill()
        for w in team:
            w.join(timeout=30)
            if w.is_alive():
                raise SystemExit(f"crash-soak: seed {seed}, cycle {cycle}: a writer did not stop within 30 s of the kill")
        info = daemon.start()
        client = Client(timeout=60)
        try:
            problems, resolvable = absorb(team, lambda: all_records(client))
        finally:
            client.close()
        if not info.get("store", {}).get("writable", False):
            problems.append(f"store not writable after restart: {info.get('store')}")
        if problems:
            print(f"crash-soak: seed {seed} (SEED={seed} replays it), cycle {cycle}, {count} writers, "
                  f"killed after {kill_after} ms: {len(problems)} problems:", file=sys.stderr)
            for p in problems[:40]:
                print("  " + p, file=sys.stderr)
            print(f"daemon log (tail): {daemon.log_tail()}", file=sys.stderr)
            print(f"crash-soak: work folder kept: {work}", file=sys.stderr)
            sys.exit(1)
        if cycle % 10 == 0:
            print(f"crash-soak: cycle {cycle}/{cycles}: {acknowledged_total} acknowledged, {len(expected)} promises, "
                  f"{time.monotonic() - started:.1f} s", file=sys.stderr)
finally:
    daemon.kill()

print(f"crash-soak: {cycles} cycles, {acknowledged_total} acknowledged changes checked "
      f"({checks} checks in all, {uncertain_total} unacknowledged changes seen, {len(expected)} promises in the store, "
      f"seed {seed}, {time.monotonic() - started:.1f} s)")
PY

# Clients attached across a kill: wait, watch and run must each end with the right result.
client_cycle() {
    local n=$1 dir="$WORK/clients-$1" daemon_pid
    mkdir -p "$dir"
    export PROMISED_SOCKET="$dir/s.sock"
    start_daemon() {
        "$DAEMON" --socket "$PROMISED_SOCKET" --store "$dir/store" --log-level warning 2>>"$dir/promised.log" &
        daemon_pid=$!
        for _ in $(seq 500); do "$CTL" info >/dev/null 2>&1 && return 0; sleep 0.02; done
        echo "crash-soak: clients cycle $n: the daemon did not start" >&2; return 1
    }
    start_daemon || return 1
    "$CTL" create w >/dev/null && "$CTL" create a >/dev/null && "$CTL" create b >/dev/null || return 1
    "$CTL" wait w >"$dir/wait.out" 2>"$dir/wait.err" & local wait_pid=$!
    "$CTL" watch a b --until-settled >"$dir/watch.out" 2>"$dir/watch.err" & local watch_pid=$!
    "$CTL" run r -- sh -c 'touch "$0.started"; while [ ! -e "$0" ]; do sleep 0.02; done; echo 7' "$dir/gate" \
        >"$dir/run.out" 2>"$dir/run.err" & local run_pid=$!
    for _ in $(seq 500); do [ -e "$dir/gate.started" ] && break; sleep 0.02; done
    "$CTL" resolve a '"before"' || return 1
    sleep "0.$(( RANDOM % 4 + 1 ))"
    kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
    touch "$dir/gate"                     # run's command ends while the daemon is down
    sleep "0.$(( RANDOM % 5 ))"
    start_daemon || return 1
    "$CTL" resolve w '"after"' && "$CTL" resolve b '"after"' || return 1
    local problems=() code
    wait "$wait_pid"; code=$?
    [ "$code" -eq 0 ] && [ "$(cat "$dir/wait.out")" = '"after"' ] || problems+=("wait: status $code, output $(cat "$dir/wait.out" "$dir/wait.err")")
    wait "$watch_pid"; code=$?
    local lines; lines=$(grep -c '"method":"settled"' "$dir/watch.out" || true)
    [ "$code" -eq 0 ] && [ "$lines" -eq 2 ] && grep -q '"id":"a"' "$dir/watch.out" && grep -q '"id":"b"' "$dir/watch.out" \
        || problems+=("watch: status $code, $lines settled lines: $(cat "$dir/watch.out" "$dir/watch.err")")
    wait "$run_pid"; code=$?
    local record; record=$("$CTL" get r --json)
    [ "$code" -eq 0 ] && echo "$record" | grep -q '"state":"fulfilled"' && echo "$record" | grep -q '"value":7' \
        || problems+=("run: status $code, record $record, $(cat "$dir/run.err")")
    kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
    if [ "${#problems[@]}" -gt 0 ]; then
        printf 'crash-soak: clients cycle %s: %s\n' "$n" "${problems[@]}" >&2
        return 1
    fi
}

if [ "$status" -eq 0 ] && [ "$CLIENT_CYCLES" -gt 0 ]; then
    for cycle in $(seq "$CLIENT_CYCLES"); do
        client_cycle "$cycle" || { status=1; break; }
    done
    [ "$status" -ne 0 ] || echo "crash-soak: $CLIENT_CYCLES client cycles: wait, watch and run each ended as they should across kill -9"
fi

if [ "$status" -eq 0 ] && [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$WORK"
elif [ "$status" -ne 0 ]; then
    echo "crash-soak: FAILED (status $status); work folder: $WORK" >&2
fi
exit "$status"
