"""What one `then … exec` step costs the daemon: its CPU (utime + stime from
/proc/PID/stat) and the wall time per step, for a daemon that is small and
for one that holds many pending promises (its memory is what a fork copies).

Starts `promised --in-memory` on a temporary socket, creates and resolves
'root', optionally creates PENDING pending promises (batches of 1,000, a
40-byte name each), then runs STEPS steps one after the other: `then` with
exec ["/bin/true"] on 'root', then `wait` for the child.

    usage: bench_spawn.py PROMISED [PENDING] [STEPS]
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


def call(stream, conn, payload):
    conn.sendall((json.dumps(payload) + "\n").encode())
    line = stream.readline()
    if not line:
        raise SystemExit("daemon closed the connection")
    return json.loads(line)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(promised, pending, steps):
    directory = tempfile.mkdtemp(prefix="bench-spawn-")
    path = f"{directory}/p.sock"
    log = open(f"{directory}/daemon.log", "w")
    daemon = subprocess.Popen([promised, "--in-memory", "--socket", path, "--max-promises", "2000000"],
                              stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        conn = socket.socket(socket.AF_UNIX)
        while True:
            try:
                conn.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("daemon did not start")
                time.sleep(0.02)
        stream = conn.makefile("rb")
        next_id = 0

        def request(method, params):
            nonlocal next_id
            next_id += 1
            return {"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}

        call(stream, conn, request("create", {"id": "root"}))
        call(stream, conn, request("resolve", {"id": "root", "value": 1}))
        for start in range(0, pending, 1000):
            batch = [request("create", {"id": f"p{n}", "name": "n" * 40})
                     for n in range(start, min(pending, start + 1000))]
            answers = call(stream, conn, batch)
            if any("error" in a for a in answers):
                raise SystemExit(f"create failed: {answers[0]}")
        rss = rss_mb(daemon.pid)
        before_cpu = cpu_seconds(daemon.pid)
        began = time.perf_counter()
        for n in range(steps):
            answer = call(stream, conn, request("then", {"id": "root", "childId": f"s{n}", "exec": ["/bin/true"]}))
            if "error" in answer:
                raise SystemExit(f"then failed: {answer}")
            answer = call(stream, conn, request("wait", {"id": f"s{n}"}))
            if answer.get("result", {}).get("state") != "fulfilled":
                raise SystemExit(f"step did not fulfil: {answer}")
        wall = time.perf_counter() - began
        cpu = cpu_seconds(daemon.pid) - before_cpu
        print(json.dumps({"pending": pending, "steps": steps, "rssMB": round(rss, 1),
                          "daemonCpuMsPerStep": round(cpu * 1000 / steps, 3),
                          "wallMsPerStep": round(wall * 1000 / steps, 3)}))
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        log.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0,
         int(sys.argv[3]) if len(sys.argv) > 3 else 200)
