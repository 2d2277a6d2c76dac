#!/usr/bin/env bash
# Accuracy of ferrofluid's CPU times (issue 4, "How it is checked"): runs Accuracy.java without
# the agent (true costs, timed by the program itself) and under `ferrofluid run --root
# Accuracy::driver` (lazy scheme), REPS times each, interleaved, and prints best-of-REPS
# compensated times against true ones. Not a test: run it on a quiet machine.
#
#   cargo build --release -p ferrofluid -p ferrofluid-agent && bench/accuracy/run.sh [CALLS] [REPS] [FLAGS...]
#
# FLAGS go to `ferrofluid run` after the roots, e.g. `--scheme total --include Accuracy`: every
# method of the class instrumented as it loads, so no revelation retransforms the class while
# it runs (each retransformation sends its compiled code back to the interpreter).
#
# The work directory keeps each profiled run's JSON and agent log (agent-R.log, with every
# calibration batch); estimators.py re-scores saved copies of it under other calibrations.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
ferrofluid=$target/release/ferrofluid
java_home=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
calls=${1:-100}
reps=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
flags=("$@")
work=$target/bench-accuracy

[ -x "$ferrofluid" ] || { echo "$0: $ferrofluid not found; cargo build --release -p ferrofluid -p ferrofluid-agent" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work/classes"
"$java_home/bin/javac" -d "$work/classes" "$here/Accuracy.java"
java=("$java_home/bin/java" -cp "$work/classes" Accuracy "$calls")
for r in $(seq 1 "$reps"); do
    timeout 600 "${java[@]}" > "$work/base-$r.txt"
    timeout 600 "$ferrofluid" run --root 'Accuracy::driver' --root 'Accuracy::graded' ${flags[@]+"${flags[@]}"} --log "$work/agent-$r.log" -o "$work/prof-$r.json" -- "${java[@]}" > "$work/prof-$r.txt"
    cmp -s <(grep '^sink' "$work/base-$r.txt") <(grep '^sink' "$work/prof-$r.txt") || { echo "$0: profiled output differs" >&2; exit 1; }
    grep -v '^sink' -- "$work/base-$r.txt" > "$work/base-$r.tmp" && mv "$work/base-$r.tmp" "$work/base-$r.txt"
    grep -v '^sink' -- "$work/prof-$r.txt" > "$work/prof-$r.tmp" && mv "$work/prof-$r.tmp" "$work/prof-$r.txt"
done
echo "ferrofluid run --root Accuracy::driver --root Accuracy::graded ${flags[*]-}"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $("$java_home/bin/java" -version 2>&1 | head -1); commit $(git -C "$root" rev-parse --short HEAD)"
python3 "$here/compare.py" "$work" "$reps"
