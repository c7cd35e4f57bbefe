"""Joins benchmark output (JSON lines) into bench/results.json and a Markdown table.

Each timed figure is shown with its ratio to its anchor, measured in the
same run: on a shared machine only ratios are comparable between runs.
"""
import json
import sys


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def main(timed_path, allocations_path):
    timed = read_lines(timed_path)
    allocations = {row["name"]: row["allocationsPerOp"] for row in read_lines(allocations_path)}
    by_name = {row["name"]: row for row in timed}
    results = []
    for row in timed:
        anchor = row.get("anchor")
        ratio = row["nsPerOp"] / by_name[anchor]["nsPerOp"] if anchor in by_name else None
        results.append({**row, "ratio": ratio, "allocationsPerOp": allocations.get(row["name"])})
    with open("bench/results.json", "w") as f:
        json.dump({"core": results}, f, indent=2)

    print("| benchmark | ns/op | ratio | anchor | allocations/op |")
    print("| --- | ---: | ---: | --- | ---: |")
    for row in results:
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else ""
        allocs = row["allocationsPerOp"] if row["allocationsPerOp"] is not None else ""
        print(f"| {row['name']} | {row['nsPerOp']:.1f} | {ratio} | {row.get('anchor') or ''} | {allocs} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
