#!/usr/bin/env python3
"""Accuracy table of bench/accuracy/run.sh: best-of-N true phase times (uninstrumented runs)
against what ferrofluid reported for the same methods (profiled runs).

usage: compare.py WORKDIR REPS   (WORKDIR holds base-R.txt, prof-R.txt, prof-R.json for R in 1..REPS)
"""
import json
import sys

PHASES = [("loop1", "loop1"), ("loop2", "loop2"), ("loop4", "loop4"),
          ("tiny", "tinyCaller"), ("small", "smallCaller")]


def program_output(path):
    out = {}
    with open(path) as f:
        for line in f:
            key, value = line.split()
            out[key] = int(value)
    return out


def driver_children(doc):
    """(compensated total, measured total, calls) of the driver and of each of its callees."""
    found = {}

    def add(name, node):
        t, m, c = found.get(name, (0, 0, 0))
        found[name] = (t + node["total_ns"], m + node.get("measured_total_ns", node["total_ns"]),
                       c + node["calls"])

    def walk(node):
        for child in node["children"]:
            if child["class"] == "Accuracy" and child["method"] == "driver":
                add("driver", child)
                for g in child["children"]:
                    add(g["method"], g)
            else:
                walk(child)

    for thread in doc["threads"]:
        walk(thread["root"])
    return found


def main():
    work, reps = sys.argv[1], int(sys.argv[2])
    true, comp, raw, wall, dropped = {}, {}, {}, {}, 0
    for r in range(1, reps + 1):
        base = program_output(f"{work}/base-{r}.txt")
        prof = program_output(f"{work}/prof-{r}.txt")
        with open(f"{work}/prof-{r}.json") as f:
            doc = json.load(f)
        dropped += sum(t.get("dropped_events", 0) for t in doc["threads"])
        nodes = driver_children(doc)
        for phase, method in PHASES + [("driver", "driver")]:
            def best(d, v):
                d[phase] = min(d.get(phase, v), v)
            best(true, base[phase])
            best(wall, prof[phase])
            best(comp, nodes[method][0])
            best(raw, nodes[method][1])
    ms = lambda ns: f"{ns / 1e6:10.1f}"
    print(f"best of {reps} runs each; times in ms summed over all driver() calls")
    print(f"{'phase (method)':26} {'true':>10} {'ferrofluid':>10} {'error':>8} "
          f"{'uncompens.':>10} {'instr. wall':>11}")
    for phase, method in PHASES:
        err = (comp[phase] - true[phase]) * 100.0 / true[phase]
        print(f"{phase + ' (' + method + ')':26} {ms(true[phase])} {ms(comp[phase])} {err:+7.1f}% "
              f"{ms(raw[phase])} {ms(wall[phase]):>11}")
    ratio = comp["driver"] / true["driver"]
    print(f"{'root (driver), charged':26} {ms(true['driver'])} {ms(comp['driver'])} "
          f"{(ratio - 1) * 100:+7.1f}% {ms(raw['driver'])} {ms(wall['driver']):>11}")
    print(f"root charged / uninstrumented: {ratio:.2f} (goal <= 1.10)")
    loops = [comp[p] / comp["loop1"] for p in ("loop2", "loop4")]
    truth = [true[p] / true["loop1"] for p in ("loop2", "loop4")]
    print(f"loop2/loop1, loop4/loop1: ferrofluid {loops[0]:.2f}, {loops[1]:.2f}; "
          f"true {truth[0]:.2f}, {truth[1]:.2f} (by construction 2, 4)")
    if dropped:
        print(f"warning: {dropped} events dropped over all runs (rings full): counts inexact")


if __name__ == "__main__":
    main()
