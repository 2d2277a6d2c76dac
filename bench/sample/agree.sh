#!/usr/bin/env bash
# Agreement of `--mode sample` with async-profiler's `cpu` mode on the suite's workloads: runs
# them (after bench/suite/prepare.sh) under both at 10 ms and 1 ms, N times each, keeps the
# profiles, and prints per workload how the shares of self samples per method overlap, between
# async-profiler's own runs and between ferrofluid's and async-profiler's (bench/sample/agree.py).
# Usage: bench/sample/agree.sh --async-profiler PATH/libasyncProfiler.so [--n 3] [--workloads a,b]
# [--ours cpu-sampled] (further arguments go to `ferrofluid-suite run`). `--ours cpu-sampled`
# compares `cpu` mode's sampled timing (10 ms) instead of `--mode sample`. Exits 2 without
# async-profiler's library.
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=${ASYNC_PROFILER:-}
ours=sample
args=()
while [ $# -gt 0 ]; do
    case $1 in
        --async-profiler) lib=$2; shift 2 ;;
        --ours) ours=$2; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "agree.sh: no async-profiler library (--async-profiler PATH/libasyncProfiler.so): nothing to compare with" >&2
    exit 2
fi
case " ${args[*]:-} " in *" --n "*) ;; *) args+=(--n 3) ;; esac
runs=${CARGO_TARGET_DIR:-target}/suite-work/runs
# Earlier runs of these modes would mix with this one's.
rm -rf "$runs"/*/sample-[0-9]* "$runs"/*/async-cpu-[0-9]* "$runs"/*/cpu-sampled-[0-9]*
case $ours in
    sample) modes=baseline,sample,sample-1k,async-cpu,async-cpu-1k ;;
    cpu-sampled) modes=baseline,cpu-sampled,async-cpu ;;
    *) echo "agree.sh: --ours sample or cpu-sampled" >&2; exit 2 ;;
esac
bench/suite/run.sh --modes "$modes" --keep --no-doc --async-profiler "$lib" "${args[@]}" >/dev/null
exec python3 bench/sample/agree.py "$runs" --ours "$ours"
