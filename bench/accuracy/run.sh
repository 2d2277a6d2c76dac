#!/usr/bin/env bash
# Accuracy of ferrofluid's CPU times: runs Accuracy.java without
# the agent (true costs, timed by the program itself) and under `ferrofluid run --root
# Accuracy::driver` (lazy scheme), REPS times each, interleaved, and prints best-of-REPS
# compensated times against true ones. Not a test: run it on a quiet machine.
#
#   cargo build --release -p ferrofluid -p ferrofluid-agent && [WARMUP=N] bench/accuracy/run.sh [CALLS] [REPS] [FLAGS...]
#
# FLAGS go to `ferrofluid run` after the roots, e.g. `--scheme total --include Accuracy`: every
# method of the class instrumented as it loads, so no revelation retransforms the class while
# it runs (each retransformation sends its compiled code back to the interpreter).
#
# WARMUP=N (environment) first makes N untimed calls of both roots in every run, then resets
# the profile (`ferrofluid attach PID --reset`) before the CALLS timed ones, as JFluid's paper
# measured: a warm-up run first. Lazy revelation retransforms Accuracy at the first calls, and
# each retransformation sends the class's compiled code back to the interpreter; WARMUP leaves
# that one-time cost out of both sides and compares the steady state.
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
warmup=${WARMUP:-0}
java=("$java_home/bin/java" -cp "$work/classes" Accuracy "$calls")

# run OUT RESET CMD...: CMD > OUT; with WARMUP, once it says `warm PID`, resets the profile if
# RESET is 1, then lets it go on.
run() {
    local out=$1 reset=$2 go=$work/go
    shift 2
    if [ "$warmup" -eq 0 ]; then
        timeout 600 "$@" > "$out"
        return
    fi
    rm -f "$go"
    timeout 600 "$@" "$warmup" "$go" > "$out" &
    local job=$!
    until grep -q '^warm ' "$out"; do
        kill -0 "$job" 2>/dev/null || break
        sleep 0.05
    done
    if [ "$reset" = 1 ] && grep -q '^warm ' "$out"; then
        "$ferrofluid" attach "$(awk '/^warm /{print $2}' "$out")" --reset > /dev/null
    fi
    touch "$go"
    wait "$job"
    sed -i '/^warm /d' "$out"
}

for r in $(seq 1 "$reps"); do
    run "$work/base-$r.txt" 0 "${java[@]}"
    run "$work/prof-$r.txt" 1 "$ferrofluid" run --root 'Accuracy::driver' --root 'Accuracy::graded' ${flags[@]+"${flags[@]}"} --log "$work/agent-$r.log" -o "$work/prof-$r.json" -- "${java[@]}"
    cmp -s <(grep '^sink' "$work/base-$r.txt") <(grep '^sink' "$work/prof-$r.txt") || { echo "$0: profiled output differs" >&2; exit 1; }
    grep -v '^sink' -- "$work/base-$r.txt" > "$work/base-$r.tmp" && mv "$work/base-$r.tmp" "$work/base-$r.txt"
    grep -v '^sink' -- "$work/prof-$r.txt" > "$work/prof-$r.tmp" && mv "$work/prof-$r.tmp" "$work/prof-$r.txt"
done
echo "ferrofluid run --root Accuracy::driver --root Accuracy::graded ${flags[*]-}; $calls calls, warm-up ${warmup} calls (reset after)"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $("$java_home/bin/java" -version 2>&1 | head -1); commit $(git -C "$root" rev-parse --short HEAD)"
python3 "$here/compare.py" "$work" "$reps"
