#!/usr/bin/env python3
"""Helps choose a workload's "root covering ~10% of the run": reads a JFR recording made by
`ferrofluid-suite run --modes jfr-profile --n 1 --keep --workloads NAME` and lists methods by the
share of execution samples whose stack contains them (inclusive share), near the wanted share.

    bench/suite/tools/pick-root.py $CARGO_TARGET_DIR/suite-work/runs/NAME/jfr-profile-1/rec.jfr [SHARE]
"""
import json, subprocess, sys
from collections import Counter

rec = sys.argv[1]
want = float(sys.argv[2]) if len(sys.argv) > 2 else 0.10
out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "64", "--events", "jdk.ExecutionSample", rec],
                     check=True, capture_output=True, text=True).stdout
events = json.loads(out)["recording"]["events"]
inclusive = Counter()
for e in events:
    frames = e["values"]["stackTrace"]["frames"] if e["values"].get("stackTrace") else []
    seen = set()
    for f in frames:
        m = f["method"]
        name = m["type"]["name"].replace("/", ".") + "::" + m["name"]
        if name not in seen:
            seen.add(name)
            inclusive[name] += 1
n = len(events)
print(f"{n} samples; methods with inclusive share between {want/2:.0%} and {want*2:.0%}:")
for name, c in sorted(inclusive.items(), key=lambda kv: abs(kv[1] / n - want)):
    if want / 2 <= c / n <= want * 2:
        print(f"{c / n:6.1%}  {name}")
