#!/usr/bin/env python3
"""Re-scores saved accuracy runs under other calibration estimators.

A profile's JSON keeps every node's measured (uncompensated) self time, calls and outer calls,
and the agent log keeps every calibration batch, so the compensation any estimator would have
made can be recomputed offline, for the very same runs:

    for i in $(seq 10); do
        bench/accuracy/run.sh 50 3 > /tmp/acc/round$i.txt && cp -r target/bench-accuracy /tmp/acc/r$i
    done
    bench/accuracy/estimators.py /tmp/acc/r*

usage: estimators.py WORKDIR...   (each a copy of run.sh's work directory: base-R.txt, prof-R.txt,
                                   prof-R.json and agent-R.log for R in 1..REPS)

For every profiled run it compares the root's charged time with the best uninstrumented time of
the same round, and the calibrated pair with the pair the application's probes actually cost in
`tinyCaller` (measured time less true time, per call of `tiny`). A second table checks, under
ferrofluid's estimator (the median), the reports' `~` mark (crates/profile PROBE_SPREAD,
UNCERTAIN_SHARE) phase by phase: how often each phase was marked, and how often an unmarked one
was within 10% of its true time.
"""
import glob
import json
import os
import re
import statistics
import sys

import compare


def batches(log):
    """(total, inner) ns per pair of each calibration batch, from the agent log (since session
    12 each batch also shows what its probes measured of themselves, which is not calibrated)."""
    with open(log) as f:
        for line in f:
            m = re.search(r"total/inner(?:/measured)? ns per call: ([0-9/ ]+)\)", line)
            if m:
                return [tuple(map(float, b.split("/")[:2])) for b in m.group(1).split()]
    raise SystemExit(f"{log}: no calibration line")


ESTIMATORS = {
    "minimum": min,  # JFluid's
    "median": statistics.median,  # ferrofluid's estimator
    "mean": statistics.mean,
}


def calibration(bs, estimate):
    total, inner = estimate([b[0] for b in bs]), estimate([b[1] for b in bs])
    return inner, max(total - inner, 0.0)


# crates/profile/src/calibration.rs: PROBE_SPREAD, UNCERTAIN_SHARE.
PROBE_SPREAD, UNCERTAIN_SHARE = 0.30, 0.10


def compensate(node, inner, outer):
    """Sets total_ns/self_ns/total_uncertain of `node`'s subtree as node_times (crates/profile)
    would; returns (total_ns, total calibrated probe cost subtracted). What the probes measured
    of themselves (`probe_ns`) is subtracted too, but is no estimate."""
    children = [compensate(c, inner, outer) for c in node["children"]]
    overhead = node["calls"] * inner + node.get("outer_calls", 0) * outer
    if "measured_self_ns" in node:
        measured = node["measured_self_ns"] - node.get("probe_ns", 0)
        node["self_ns"] = max(0, round(measured - overhead))
    node["total_ns"] = node["self_ns"] + sum(t for t, _ in children)
    total_overhead = round(overhead) + sum(o for _, o in children)
    node["total_uncertain"] = total_overhead * PROBE_SPREAD > node["total_ns"] * UNCERTAIN_SHARE
    return node["total_ns"], total_overhead


def score(workdir, estimate):
    """One row per profiled run of `workdir`."""
    reps = len(glob.glob(f"{workdir}/base-*.txt"))
    true = {}
    for r in range(1, reps + 1):
        for k, v in compare.program_output(f"{workdir}/base-{r}.txt").items():
            true[k] = min(true.get(k, v), v)
    for r in range(1, reps + 1):
        with open(f"{workdir}/prof-{r}.json") as f:
            doc = json.load(f)
        inner, outer = calibration(batches(f"{workdir}/agent-{r}.log"), estimate)
        for thread in doc["threads"]:
            compensate(thread["root"], inner, outer)
        d, g = compare.root_children(doc, "driver"), compare.root_children(doc, "graded")
        yield {
            "run": f"{os.path.basename(workdir)}-{r}",
            "pair": inner + outer,
            # Apart from what the probes measured of themselves, which is not calibrated.
            "app_pair": (d["tinyCaller"][1] - d["tinyCaller"][4] - true["tiny"]) / d["tiny"][2],
            "root": d["driver"][0] / true["driver"],
            "graded": g["graded"][0] / true["graded"],
            "m100": g["m100Caller"][0] / true["m100"] - 1,
            "m1000": g["m1000Caller"][0] / true["m1000"] - 1,
            # phase: (error, marked ~)
            "phases": {p: (n[m][0] / true[p] - 1, n[m][3]) for n, phases in (
                (d, compare.PHASES + [("driver", "driver")]),
                (g, [(p, c) for p, c, _, _ in compare.GRADED] + [("graded", "graded")]))
                for p, m in phases},
        }


def main():
    dirs = sys.argv[1:]
    if not dirs:
        raise SystemExit(__doc__)
    print(f"{'estimator':10} {'root<=1.10':>10} {'root median':>11} {'root max':>8} "
          f"{'m100 in 10%':>11} {'m1000 in 10%':>12} {'|pair-app| median':>17}")
    for name, estimate in ESTIMATORS.items():
        rows = [row for d in dirs for row in score(d, estimate)]
        n = len(rows)
        within = lambda key: sum(abs(x[key]) <= 0.10 for x in rows)
        print(f"{name:10} {sum(x['root'] <= 1.10 for x in rows):>4} of {n:<3} "
              f"{statistics.median(x['root'] for x in rows):11.2f} "
              f"{max(x['root'] for x in rows):8.2f} {within('m100'):>4} of {n:<4} "
              f"{within('m1000'):>5} of {n:<4} "
              f"{statistics.median(abs(x['pair'] - x['app_pair']) for x in rows):14.1f} ns")
    rows = [row for d in dirs for row in score(d, statistics.median)]
    print()
    print(f"{'phase':10} {'marked ~':>10} {'unmarked within 10%':>20}")
    for phase in rows[0]["phases"]:
        runs = [x["phases"][phase] for x in rows]
        unmarked = [err for err, marked in runs if not marked]
        print(f"{phase:10} {len(runs) - len(unmarked):>4} of {len(runs):<3} "
              f"{sum(abs(e) <= 0.10 for e in unmarked):>11} of {len(unmarked):<3}")


if __name__ == "__main__":
    main()
