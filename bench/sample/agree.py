#!/usr/bin/env python3
"""Agreement of ferrofluid's `sample` mode with async-profiler's `cpu` mode on the suite's runs.

For each workload, the share of self samples per Java method (the innermost Java frame of each
sample, async-profiler's native and JVM frames above it skipped; samples without a Java frame
left out on both sides) in every kept run of the two profilers at the same interval, compared
pairwise:

- overlap: the sum over methods of the smaller of the two shares (1.0: the same distribution);
- top-10 gap: the largest difference, in percentage points, between the two shares of one of
  the first run's ten methods of most self samples.

async-profiler against itself (each pair of its runs) is the yardstick; ferrofluid against
async-profiler (each pair of a ferrofluid run and an async-profiler run) should be as close,
minus a small margin.

With `--ours cpu-sampled` the ferrofluid side is `cpu` mode's sampled timing (whole program),
whose samples land on the innermost *instrumented* method: time in uninstrumented code (the
classes the agent never probes, native methods) is its caller's there.

Usage: agree.py RUNS_DIR [--rate 10ms|1ms]... [--ours sample|cpu-sampled] (RUNS_DIR: the suite's `suite-work/runs`, after
`run.sh --modes baseline,sample,async-cpu[,sample-1k,async-cpu-1k] --n N --keep`).
"""

import argparse
import itertools
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

# async-profiler frames: Java methods are `pkg/Class.method` (a `_[j]`, `_[i]`, `_[0]` suffix
# with annotations on); JVM, C and kernel frames are `Class::method`, `function`, `name_[k]`.
JAVA = re.compile(r"^(?:[\w$]+/)*[\w$]+\.[\w$<>]+(?:_\[[ji0-9]\])?$")
SUFFIX = re.compile(r"_\[[ji0-9]\]$")


def async_profiler_shares(path: Path) -> Counter:
    own = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        for frame in reversed(stack.split(";")):
            if JAVA.match(frame) and "::" not in frame:
                own[SUFFIX.sub("", frame).replace("/", ".")] += int(count)
                break
    return own


def ferrofluid_shares(path: Path) -> Counter:
    own = Counter()
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return own  # a run killed at the cap wrote no profile
    for thread in doc["threads"]:
        stack = [thread["root"]]
        while stack:
            node = stack.pop()
            cls = node.get("class", "")
            if node.get("self_samples") and cls and not cls.startswith("["):
                own[f"{cls}.{node['method']}"] += node["self_samples"]
            stack.extend(node.get("children", []))
    return own


def normalised(own: Counter) -> dict:
    total = sum(own.values())
    return {m: n / total for m, n in own.items()} if total else {}


def compare(a: dict, b: dict) -> tuple:
    overlap = sum(min(share, b.get(m, 0.0)) for m, share in a.items())
    top = sorted(a, key=a.get, reverse=True)[:10]
    gap = max((abs(a[m] - b.get(m, 0.0)) for m in top), default=0.0)
    return overlap, 100.0 * gap


def runs(workload: Path, mode: str) -> list:
    """The kept run directories `MODE-I` of one workload (not those of `MODE-1k-I`)."""
    pattern = re.compile(re.escape(mode) + r"-\d+$")
    return sorted(p for p in workload.iterdir() if pattern.match(p.name) and p.is_dir())


def mean(values):
    return sum(values) / len(values) if values else math.nan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", type=Path)
    ap.add_argument("--rate", action="append", choices=["10ms", "1ms"])
    ap.add_argument("--ours", default="sample", choices=["sample", "cpu-sampled"],
                    help="the ferrofluid mode compared: `sample`, or `cpu-sampled` (exact calls, "
                    "sampled time: self samples on the innermost instrumented method; 10 ms only)")
    args = ap.parse_args()
    if args.ours == "cpu-sampled":
        rates = ["10ms"]
        modes = {"10ms": ("cpu-sampled", "async-cpu")}
    else:
        rates = args.rate or ["10ms", "1ms"]
        modes = {"10ms": ("sample", "async-cpu"), "1ms": ("sample-1k", "async-cpu-1k")}
    print("| workload | interval | runs (ferrofluid, async-profiler) | samples (ferrofluid, async-profiler) "
          "| overlap: async-profiler runs | overlap: ferrofluid vs async-profiler "
          "| top-10 gap (points): async-profiler runs | top-10 gap: ferrofluid vs async-profiler |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    summary = {}
    for workload in sorted(p.name for p in args.runs.iterdir() if p.is_dir()):
        for rate in rates:
            ours, theirs = modes[rate]
            ff = [ferrofluid_shares(p / "profile.json") for p in runs(args.runs / workload, ours)]
            ap_ = [async_profiler_shares(p / "async.collapsed") for p in runs(args.runs / workload, theirs)]
            ff = [c for c in ff if c]  # a missing or empty profile: no run
            ap_ = [c for c in ap_ if c]
            if not ff or len(ap_) < 2:
                continue
            ffn, apn = [normalised(c) for c in ff], [normalised(c) for c in ap_]
            ap_pairs = [compare(a, b) for a, b in itertools.combinations(apn, 2)]
            cross = [compare(b, a) for a in ffn for b in apn]
            row = (mean([o for o, _ in ap_pairs]), mean([o for o, _ in cross]),
                   mean([g for _, g in ap_pairs]), mean([g for _, g in cross]))
            summary.setdefault(rate, []).append(row)
            samples = (round(mean([sum(c.values()) for c in ff])), round(mean([sum(c.values()) for c in ap_])))
            print(f"| {workload} | {rate} | {len(ff)}, {len(ap_)} | {samples[0]}, {samples[1]} "
                  f"| {row[0]:.3f} | {row[1]:.3f} | {row[2]:.1f} | {row[3]:.1f} |")
    for rate, rows in summary.items():
        cols = list(zip(*rows))
        print(f"| mean of {len(rows)} | {rate} | | | {mean(cols[0]):.3f} | {mean(cols[1]):.3f} "
              f"| {mean(cols[2]):.1f} | {mean(cols[3]):.1f} |")
    return 0 if summary else 1


if __name__ == "__main__":
    sys.exit(main())
