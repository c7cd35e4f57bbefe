"""Joins benchmark output (JSON lines) into bench/results.json and a Markdown table.

Each timed figure is shown with its ratio to its anchor, measured in the
same run: on a shared machine only ratios are comparable between runs.
The daemon figures (optional third file) come with two ratios: against
Redis (`anchor`) and against a bare echo server (`floor`), plus the
targets of the benchmarks issue, each marked met or missed.
"""
import json
import sys


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def ratio_to(row, key, by_name):
    other = by_name.get(row.get(key))
    if other is None or not other["value"]:
        return None
    return row["value"] / other["value"]


def daemon_targets(by_name):
    """The issue's targets, from the daemon rows present."""
    targets = []

    def add(text, row_name, test):
        row = by_name.get(row_name)
        if row is not None:
            met, figure = test(row)
            targets.append({"target": text, "met": met, "figure": figure})

    add("50 clients: pairs/s >= 1.0x Redis", "daemon.c50.promised.pairsPerSecond",
        lambda r: (r["vsAnchor"] is not None and r["vsAnchor"] >= 1.0,
                   f"{r['value']:.0f} pairs/s, {r['vsAnchor']:.2f}x Redis" if r["vsAnchor"] else f"{r['value']:.0f} pairs/s"))
    add("50 clients: p99 per pair < 1 ms", "daemon.c50.promised.p99",
        lambda r: (r["value"] < 1000, f"{r['value']:.0f} µs"))
    rounds = [by_name.get(f"daemon.pinned.c50.promised.roundRatio.{s}") for s in ("median", "min", "max")]
    spread = (f" (round by round: median {rounds[0]['value']:.2f}x, {rounds[1]['value']:.2f}-{rounds[2]['value']:.2f}x)"
              if all(rounds) else "")
    add("50 clients, each server pinned to one core: pairs/s >= 1.0x Redis pinned", "daemon.pinned.c50.promised.pairsPerSecond",
        lambda r: (r["vsAnchor"] is not None and r["vsAnchor"] >= 1.0,
                   (f"{r['value']:.0f} pairs/s, {r['vsAnchor']:.2f}x Redis" if r["vsAnchor"] else f"{r['value']:.0f} pairs/s") + spread))
    add("50 clients, pinned: p99 <= 1.1x Redis's p99", "daemon.pinned.c50.promised.p99",
        lambda r: (r["vsAnchor"] is not None and r["vsAnchor"] <= 1.1,
                   f"{r['value']:.0f} µs, {r['vsAnchor']:.2f}x Redis" if r["vsAnchor"] else f"{r['value']:.0f} µs"))
    for name, row in by_name.items():
        if name.startswith("daemon.fanout") and name.endswith(".promised.lastSubscriber"):
            add(f"fan-out to {row.get('subscribers')}: last subscriber within 1.0x Redis's time", name,
                lambda r: (r["vsAnchor"] is not None and r["vsAnchor"] <= 1.0,
                           f"{r['value']:.1f} ms, {r['vsAnchor']:.2f}x Redis" if r["vsAnchor"] else f"{r['value']:.1f} ms"))
    for shape in ("c50", "batched"):
        add(f"durable ({shape}): >= 0.3x in-memory settles/s and >= 20,000 settles/s",
            f"daemon.durable.{shape}.durable.settlesPerSecond",
            lambda r: (r["vsAnchor"] is not None and r["vsAnchor"] >= 0.3 and r["value"] >= 20000,
                       f"{r['value']:.0f} settles/s, {r['vsAnchor']:.2f}x in-memory" if r["vsAnchor"] else f"{r['value']:.0f} settles/s"))
    add("restart over the stored promises (a tenth of them consumers of one pending promise): answers within 10 s",
        "daemon.restart.promised.secondsToAnswer",
        lambda r: (r["value"] <= 10, f"{r['value']:.1f} s for {r.get('promises')} promises, {r.get('consumers')} consumers"))
    add("memory: < 300 bytes per settled promise", "daemon.memory.promised.bytesPerSettledPromise",
        lambda r: (r["value"] < 300, f"{r['value']:.0f} bytes"))
    return targets


def print_targets(targets):
    """The targets as a table, each marked met or missed."""
    if not targets:
        return
    print()
    print("| target | figure | |")
    print("| --- | --- | --- |")
    for target in targets:
        print(f"| {target['target']} | {target['figure']} | {'met' if target['met'] else 'missed'} |")


def core_targets(by_name):
    """Target (1): then + fulfill against swift-nio's map + succeed, and the cost of a link."""
    targets = []
    single = by_name.get("promise.then+fulfill.inline")
    if single is not None and single["ratio"] is not None:
        targets.append({"target": "then + fulfill: <= 0.5x swift-nio's time", "met": single["ratio"] <= 0.5,
                        "figure": f"{single['nsPerOp']:.0f} ns, {single['ratio']:.2f}x swift-nio"})
    if single is not None and single["allocationsPerOp"] is not None:
        allocations = single["allocationsPerOp"]
        targets.append({"target": "then + fulfill: <= 2 allocations", "met": allocations <= 2,
                        "figure": f"{allocations} allocations"})
    chain = by_name.get("promise.chain10.inline")
    if chain is not None and chain["ratio"] is not None:
        targets.append({"target": "chain of 10: <= 0.5x swift-nio's time", "met": chain["ratio"] <= 0.5,
                        "figure": f"{chain['nsPerOp']:.0f} ns, {chain['ratio']:.2f}x swift-nio"})
    if single is not None and chain is not None and None not in (single["allocationsPerOp"], chain["allocationsPerOp"]):
        # chain10 is one root and ten links; then + fulfill is one root and one link.
        per_link = (chain["allocationsPerOp"] - single["allocationsPerOp"]) / 9
        targets.append({"target": "each extra link: <= 1 allocation", "met": per_link <= 1,
                        "figure": f"{per_link:.1f} allocations per link"})
    return targets


def daemon_section(path):
    rows = read_lines(path)
    by_name = {row["name"]: row for row in rows}
    for row in rows:
        row["vsAnchor"] = ratio_to(row, "anchor", by_name)
        row["vsFloor"] = ratio_to(row, "floor", by_name)
    targets = daemon_targets(by_name)

    print()
    print("### Daemon (across processes, Unix sockets)")
    print()
    print("Ratios are value ÷ the other's value: above 1 is better for pairs/s, below 1 for times and sizes.")
    print("A pair is two round trips: create+resolve (promised), SET+PUBLISH (Redis), the same two lines echoed (floor).")
    print("The anchor is Redis, except for daemon.durable.*, whose anchor is the in-memory daemon under the same load")
    print("(c1/c50: pairs with 1/50 clients; batched: 8 clients sending batch lines of 100 creates, then 100 resolves).")
    print("Round trips are measured in 8 rounds, the subjects of a comparison taking each round in turn, in alternating order;")
    print("fan-out in 12 rounds the same way, each figure the median of its 12.")
    print("Pinned, each server's CPU time per pair is split into its own code (user) and the kernel's work for it,")
    print("from /proc/PID/stat over its rounds, and roundRatio.* are the median and range of its 8 rounds' ratios (each")
    print("promised round against the Redis round beside it: how far this machine's noise moves the ratio);")
    print("daemon.instructions.*: user-space instructions per pair, one after")
    print("another on one connection, counted with callgrind (scripts/count-instructions.sh), the same on any machine.")
    print()
    print("| benchmark | value | unit | vs anchor | vs echo floor |")
    print("| --- | ---: | --- | ---: | ---: |")
    for row in rows:
        vs_anchor = f"{row['vsAnchor']:.2f}x" if row["vsAnchor"] is not None else ""
        vs_floor = f"{row['vsFloor']:.2f}x" if row["vsFloor"] is not None else ""
        value = f"{row['value']:.2f}" if row["unit"].startswith("x ") else f"{row['value']:.1f}"
        print(f"| {row['name']} | {value} | {row['unit']} | {vs_anchor} | {vs_floor} |")
    print_targets(targets)
    return {"results": rows, "targets": targets}


def launch_section(path):
    """One command-line call as a fresh process, against redis-cli and the launch floor."""
    rows = read_lines(path)
    by_name = {row["name"]: row for row in rows}
    for row in rows:
        row["vsAnchor"] = ratio_to(row, "anchor", by_name)
        row["vsFloor"] = ratio_to(row, "floor", by_name)
    targets = []

    def add(text, row_name, limit, other):
        row = by_name.get(row_name)
        if row is not None and row["vsAnchor"] is not None:
            targets.append({"target": text, "met": row["vsAnchor"] <= limit,
                            "figure": f"{row['value']:.2f} ms, {row['vsAnchor']:.2f}x {other}"})

    add("one `promisectl get` <= 0.7x one `redis-cli get` (Unix socket)", "launch.promisectl.get", 0.7, "redis-cli get")
    add("`promisectl run ID -- true` <= 2x one `promisectl get`", "launch.promisectl.run-true", 2.0, "promisectl get")
    add("21-file C build, `promisectl run` steps under `xargs -P2`: <= 1.1x `make -j2`", "pipeline.promisectl-run", 1.1,
        "make -j2")
    add("21-file C build, daemon-run `then … exec` steps (pool of 2): <= 1.1x `make -j2`", "pipeline.promisectl-then", 1.1,
        "make -j2")

    print()
    print("### One call from a shell script (a fresh process each), and a pipeline")
    print()
    print("Median wall time of a launch to its reaping, each subject launched the same way, in alternating rounds;")
    print("launch.true (`/bin/true`) is the floor, what starting any process costs here. pipeline.*: the 21-file")
    print("C build of issue 20 from scratch (20 compiles, link, test), by make -j2, by promisectl run steps under xargs -P2,")
    print("and by then … exec steps the daemon runs (compiles in a pool of 2 slots); pipeline.floor-run is the run-step")
    print("script with promisectl replaced by a static C program that only starts the command and waits: the floor of any")
    print("client that adds one process per step.")
    print()
    print("| benchmark | median | unit | p90 | vs anchor | vs floor |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for row in rows:
        vs_anchor = f"{row['vsAnchor']:.2f}x" if row["vsAnchor"] is not None else ""
        vs_floor = f"{row['vsFloor']:.2f}x" if row["vsFloor"] is not None else ""
        print(f"| {row['name']} | {row['value']:.2f} | {row['unit']} | {row['p90']:.2f} | {vs_anchor} | {vs_floor} |")
    print_targets(targets)
    return {"results": rows, "targets": targets}


def contention_section(path):
    """The locks under oversubscription: 64 threads on the machine's cores."""
    rows = read_lines(path)
    by_name = {row["name"]: row for row in rows}
    baseline = by_name.get("contention.lock.futexLock")
    print()
    print("### Lock contention (more threads than cores)")
    print()
    print("Each of the threads takes one shared lock for a tiny critical section (a counter's read and write), all at once;")
    print("ns/op is wall time over every acquire of every thread, CPU ns/op the process's CPU time (user + system) over them,")
    print("each the median of the rounds. oldSpinLock is the promise lock before it learned to sleep; futexLock is today's")
    print("promise lock (`_FutexLock`) around the same counter, and promiseName the lock inside a promise, through `Promise.name`.")
    print("contention.promises.chain+settle: every thread chains `then` handlers onto 8 shared pending promises, then tries to")
    print("settle all 8; an operation is a `then` or a settle attempt.")
    print()
    print("| benchmark | threads | cores | ns/op | CPU ns/op | wall ms | vs futexLock |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        ratio = ""
        if baseline is not None and row["name"].startswith("contention.lock.") and baseline["nsPerOperation"]:
            ratio = f"{row['nsPerOperation'] / baseline['nsPerOperation']:.2f}x"
        print(f"| {row['name']} | {row['threads']} | {row['cores']} | {row['nsPerOperation']:.1f} | "
              f"{row['cpuNsPerOperation']:.1f} | {row['wallMs']:.1f} | {ratio} |")
    return {"results": rows}


def main(timed_path, allocations_path, daemon_path=None, launch_path=None, contention_path=None):
    timed = read_lines(timed_path)
    allocations = {row["name"]: row["allocationsPerOp"] for row in read_lines(allocations_path)}
    by_name = {row["name"]: row for row in timed}
    results = []
    for row in timed:
        anchor = row.get("anchor")
        ratio = row["nsPerOp"] / by_name[anchor]["nsPerOp"] if anchor in by_name else None
        results.append({**row, "ratio": ratio, "allocationsPerOp": allocations.get(row["name"])})

    print("| benchmark | ns/op | ratio | anchor | allocations/op |")
    print("| --- | ---: | ---: | --- | ---: |")
    for row in results:
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else ""
        allocs = row["allocationsPerOp"] if row["allocationsPerOp"] is not None else ""
        print(f"| {row['name']} | {row['nsPerOp']:.1f} | {ratio} | {row.get('anchor') or ''} | {allocs} |")

    targets = core_targets({row["name"]: row for row in results})
    print_targets(targets)

    report = {"core": results, "coreTargets": targets}
    if daemon_path is not None:
        report["daemon"] = daemon_section(daemon_path)
    if launch_path is not None:
        report["launch"] = launch_section(launch_path)
    if contention_path is not None:
        report["contention"] = contention_section(contention_path)
    with open("bench/results.json", "w") as f:
        json.dump(report, f, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main(*sys.argv[1:6])
