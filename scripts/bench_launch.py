"""One command-line call, launched as a shell script launches it: the wall
time of `promisectl get`, of `promisectl run ID -- true`, and of `redis-cli
get` against a redis-server on a Unix socket, each a fresh process.

Every subject is launched the same way (posix_spawn, then waitpid, stdout to
/dev/null), in ROUNDS rounds of LAUNCHES sequential launches each, the
subjects taking each round in turn in alternating order, so that a busy spell
on a shared machine slows all of them; each figure is the median of all its
launches. `/bin/true` launched the same way is the floor: what a process
launch costs here at all. Prints JSON lines for bench_report.py.

    usage: bench_launch.py PROMISED PROMISECTL REDIS_SERVER REDIS_CLI
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = 10
LAUNCHES = 30


def wait_for_socket(path, process, name):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(path)
                return
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"{name} did not start listening on {path}")


def launch(argv, environment, devnull):
    """Wall time of one launch, to its reaping, in milliseconds."""
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, environment, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status = os.waitpid(pid, 0)
    elapsed = (time.perf_counter() - started) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed with status {os.waitstatus_to_exitcode(status)}")
    return elapsed


def main(promised, promisectl, redis_server, redis_cli):
    directory = tempfile.mkdtemp(prefix="bench-launch-")
    promised_socket = f"{directory}/promised.sock"
    redis_socket = f"{directory}/redis.sock"
    environment = {**os.environ, "PROMISED_SOCKET": promised_socket}
    with open(f"{directory}/servers.log", "w") as log:
        daemon = subprocess.Popen([promised, "--in-memory", "--socket", promised_socket],
                                  stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        redis = subprocess.Popen([redis_server, "--port", "0", "--unixsocket", redis_socket, "--unixsocketperm", "700",
                                  "--save", "", "--appendonly", "no", "--dir", directory, "--daemonize", "no",
                                  "--loglevel", "warning"], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        wait_for_socket(promised_socket, daemon, "promised")
        wait_for_socket(redis_socket, redis, "redis-server")
        # The same small value on both sides.
        subprocess.run([promisectl, "create", "bench/value"], env=environment, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([promisectl, "resolve", "bench/value", '"built"'], env=environment, check=True)
        subprocess.run([redis_cli, "-s", redis_socket, "set", "bench/value", "built"], check=True,
                       stdout=subprocess.DEVNULL)

        runs = iter(range(10**9))
        subjects = {
            "launch.true": lambda: ["/bin/true"],
            "launch.redis-cli.get": lambda: [redis_cli, "-s", redis_socket, "get", "bench/value"],
            "launch.promisectl.get": lambda: [promisectl, "get", "bench/value"],
            # A fresh id each time: run settles it.
            "launch.promisectl.run-true": lambda: [promisectl, "run", f"bench/run/{next(runs)}", "--", "/bin/true"],
        }
        times = {name: [] for name in subjects}
        devnull = os.open(os.devnull, os.O_WRONLY)
        for round_number in range(ROUNDS):
            order = list(subjects) if round_number % 2 == 0 else list(reversed(subjects))
            for name in order:
                for _ in range(LAUNCHES):
                    times[name].append(launch(subjects[name](), environment, devnull))
        os.close(devnull)
    finally:
        for server in (daemon, redis):
            server.terminate()
            server.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)

    anchors = {"launch.promisectl.get": "launch.redis-cli.get", "launch.promisectl.run-true": "launch.promisectl.get"}
    for name, samples in times.items():
        print(json.dumps({"name": name, "value": statistics.median(samples), "unit": "ms",
                          "p90": statistics.quantiles(samples, n=10)[-1], "launches": len(samples),
                          "anchor": anchors.get(name), "floor": "launch.true" if name != "launch.true" else None}))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    main(*sys.argv[1:5])
