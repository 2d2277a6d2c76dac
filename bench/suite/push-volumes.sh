#!/usr/bin/env bash
# Data volumes of continuous profiling on the suite's programs: every ferrofluid mode of the suite
# runs with `--push` to a sink standing in for Pyroscope's /ingest (bench/server/sink.py, which
# logs each request's body size), and the table says, per workload and mode, how many profiles
# were pushed and how large each was (gzipped pprof, what /ingest, the push API and Parca's
# gRPC-Web carry; OTLP and Parca's JSON are within a few percent and a third more: docs/push.md).
#
#   bench/suite/push-volumes.sh [--every 10s] [suite run flags: --workloads, --modes, --n...]
#
# Needs `bench/suite/prepare.sh` once. The runs go to $CARGO_TARGET_DIR/suite-work as the
# suite's; the sink's log to $CARGO_TARGET_DIR/suite-work/push-sink.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${CARGO_TARGET_DIR:-$here/../../target}
every=10s
args=()
while [ $# -gt 0 ]; do
    case $1 in
        --every) every=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) args+=("$1"); shift ;;
    esac
done
work=$target/suite-work
mkdir -p "$work"
log=$work/push-sink.log
: >"$log"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$here/../server/sink.py" "$port" "$log" >"$work/push-sink.out" 2>&1 &
sink=$!
trap 'kill $sink 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q listening "$work/push-sink.out" 2>/dev/null && break; sleep 0.1; done
"$target/release/ferrofluid-suite" run --no-doc --push "http://127.0.0.1:$port/ingest" \
    --push-every "$every" "${args[@]}" >"$work/push-suite.out"
echo "pushes every $every; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$log" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, path, size, name = line.rstrip("\n").split("\t")
    labels = dict(kv.split("=", 1) for kv in name[name.index("{") + 1:-1].split(","))
    rows[(labels["workload"], labels["suite_mode"])].append(int(size))
print("| workload | mode | pushes | median KiB | largest KiB | total KiB |")
print("|---|---|---:|---:|---:|---:|")
for (w, m), sizes in sorted(rows.items()):
    kib = [s / 1024 for s in sizes]
    print(f"| {w} | {m} | {len(sizes)} | {statistics.median(kib):.1f} | {max(kib):.1f} | {sum(kib):.0f} |")
PY
