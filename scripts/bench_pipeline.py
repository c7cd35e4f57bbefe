"""Issue 20's pipeline: a C build of 21 generated files (20 compile steps, a
link step after all of them, a test step after the link), run by `make -j2`,
by a shell script of `promisectl run` steps under `xargs -P2`, and by a
script that declares the steps as `then … exec` children the daemon runs
(compiles in a pool of 2 slots, as -j2), against one promised (release, in
memory, started with `--pool cc=2`). All build the same files from scratch,
in ROUNDS rounds taken in alternating order; each figure is the median wall
time. Prints JSON lines for bench_report.py.

The floor of the `run` style: the same script with `promisectl` replaced by
a 15-line static C program that only starts the command and waits for it
(WRAPPER): what one extra process per step costs, whatever it does.

    usage: bench_pipeline.py PROMISED PROMISECTL
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

# Medians of 7 rounds moved by ±0.02 between runs, as much as the changes measured.
ROUNDS = 11
FILES = 20  # plus main.c

MAKEFILE = """OBJECTS := $(patsubst %.c,%.o,$(wildcard *.c))
test: prog
\t./prog > out.txt
prog: $(OBJECTS)
\tcc -o prog $(OBJECTS)
%.o: %.c
\tcc -O1 -c $< -o $@
"""

# The same steps, each settling a promise named after it (RUN is per round).
# Every compile, main.c's too, goes through xargs -P2, as make -j2 runs all
# 21 at two at a time (main.c on its own after the rest cost one compile's
# time that make does not pay).
SCRIPT = """set -e
ls *.c | sed 's/[.]c$//' | xargs -P2 -I{} promisectl run "$RUN/cc/{}" -- cc -O1 -c {}.c -o {}.o
promisectl run "$RUN/link" -- sh -c 'cc -o prog *.o'
promisectl run "$RUN/test" -- sh -c './prog > out.txt'
"""

# The same steps run by the daemon: the root is resolved first, so each
# compile starts as soon as it is declared (two at a time: pool cc).
THEN_SCRIPT = """set -e
promisectl create "$RUN/src" > /dev/null
promisectl resolve "$RUN/src" true
ids=""
for f in f*.c main.c; do
  n=${f%.c}
  promisectl then "$RUN/src" --pool cc --id "$RUN/cc/$n" -- cc -O1 -c "$f" -o "$n.o" > /dev/null
  ids="$ids $RUN/cc/$n"
done
promisectl all $ids --id "$RUN/objs" > /dev/null
promisectl then "$RUN/objs" --id "$RUN/link" -- sh -c 'cc -o prog *.o' > /dev/null
promisectl then "$RUN/link" --id "$RUN/test" -- sh -c './prog > out.txt' > /dev/null
promisectl wait "$RUN/test" > /dev/null
"""


# `promisectl run ID -- CMD…` reduced to starting CMD and passing on its status.
WRAPPER = r"""#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    int i = 1;
    while (i < argc && strcmp(argv[i], "--") != 0) i++;
    if (i + 1 >= argc) return 64;
    pid_t pid;
    if (posix_spawnp(&pid, argv[i + 1], NULL, NULL, argv + i + 1, environ) != 0) return 127;
    int status;
    if (waitpid(pid, &status, 0) < 0) return 70;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
"""


def write_sources(directory):
    """Small files that still take the compiler a moment, like a real project's."""
    for n in range(FILES):
        body = "\n".join(
            f"static int step{k}(int x) {{ for (int i = 0; i < {k + 3}; i++) x = x * 31 + i; return x; }}"
            for k in range(40))
        calls = " + ".join(f"step{k}(x)" for k in range(40))
        with open(f"{directory}/f{n:02}.c", "w") as f:
            f.write(f"#include <stdio.h>\n{body}\nint f{n:02}(int x) {{ return {calls}; }}\n")
    declarations = "".join(f"int f{n:02}(int);\n" for n in range(FILES))
    total = " + ".join(f"f{n:02}(1)" for n in range(FILES))
    with open(f"{directory}/main.c", "w") as f:
        f.write(f"#include <stdio.h>\n{declarations}int main(void) {{ printf(\"%d\\n\", {total}); return 0; }}\n")
    with open(f"{directory}/Makefile", "w") as f:
        f.write(MAKEFILE)
    with open(f"{directory}/build.sh", "w") as f:
        f.write(SCRIPT)
    with open(f"{directory}/build-then.sh", "w") as f:
        f.write(THEN_SCRIPT)


def clean(directory):
    for name in os.listdir(directory):
        if name.endswith(".o") or name in ("prog", "out.txt"):
            os.remove(f"{directory}/{name}")


def timed(argv, directory, environment):
    clean(directory)
    started = time.perf_counter()
    subprocess.run(argv, cwd=directory, env=environment, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - started) * 1000
    if not os.path.getsize(f"{directory}/out.txt"):
        raise SystemExit(f"{argv} built nothing")
    return elapsed


def main(promised, promisectl):
    directory = tempfile.mkdtemp(prefix="bench-pipeline-")
    socket_path = f"{directory}/promised.sock"
    sources = f"{directory}/src"
    os.mkdir(sources)
    write_sources(sources)
    # promisectl found on PATH, as a script finds it.
    ctl_folder = f"{directory}/bin"
    os.mkdir(ctl_folder)
    os.symlink(os.path.abspath(promisectl), f"{ctl_folder}/promisectl")
    environment = {**os.environ, "PROMISED_SOCKET": socket_path, "PATH": f"{ctl_folder}:{os.environ['PATH']}"}
    floor_folder = f"{directory}/floor"
    os.mkdir(floor_folder)
    with open(f"{floor_folder}/wrapper.c", "w") as f:
        f.write(WRAPPER)
    subprocess.run(["cc", "-O2", "-static", "-o", f"{floor_folder}/promisectl", f"{floor_folder}/wrapper.c"], check=True)
    floor_environment = {**environment, "PATH": f"{floor_folder}:{os.environ['PATH']}"}
    with open(f"{directory}/promised.log", "w") as log:
        daemon = subprocess.Popen([promised, "--in-memory", "--socket", socket_path, "--pool", "cc=2"],
                                  stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(socket_path)
                    break
            except OSError:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("promised did not start")
                time.sleep(0.02)
        subjects = {
            "pipeline.make-j2": lambda _: ["make", "-s", "-j2", "test"],
            "pipeline.promisectl-run": lambda r: ["sh", "-c", f"RUN=r{r} sh build.sh"],
            "pipeline.promisectl-then": lambda r: ["sh", "-c", f"RUN=t{r} sh build-then.sh"],
            "pipeline.floor-run": lambda r: ["sh", "-c", "RUN=f sh build.sh"],
        }
        times = {name: [] for name in subjects}
        for round_number in range(ROUNDS):
            order = list(subjects) if round_number % 2 == 0 else list(reversed(subjects))
            for name in order:
                run_environment = floor_environment if name == "pipeline.floor-run" else environment
                times[name].append(timed(subjects[name](round_number), sources, run_environment))
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)

    for name, samples in times.items():
        print(json.dumps({"name": name, "value": statistics.median(samples), "unit": "ms",
                          "p90": statistics.quantiles(samples, n=10)[-1], "launches": len(samples),
                          "anchor": "pipeline.make-j2" if name != "pipeline.make-j2" else None,
                          "floor": "pipeline.floor-run" if name == "pipeline.promisectl-run" else None}))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(*sys.argv[1:3])
