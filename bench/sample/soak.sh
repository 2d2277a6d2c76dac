#!/usr/bin/env bash
# Crash containment over minutes: runs the suite's Groovy or Jython workload (bench/suite/programs,
# Debian's groovy / jython jars; both generate and load classes as they run and keep the JIT
# busy) under `ferrofluid run --mode sample` at 1 kHz, CPU clock and wall clock, and prints per run
# how long it took, the JVM's exit status and checksum (the same in every run of one workload and
# scale: the profiled program computed what it computes unprofiled), and the profile's sampling
# summary: samples, those with a stack, those without one by reason, those lost, faults contained.
# Exit status 1 if a JVM failed or printed no checksum, or the checksums differ.
# Usage: bench/sample/soak.sh [--workload groovy|jython] [--scale N] [--interval 1ms]
#        [--clocks cpu,wall] [--out DIR]
# Groovy at its default scale runs 2-3 minutes per clock on a loaded 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
workload=groovy scale= interval=1ms clocks=cpu,wall out=${CARGO_TARGET_DIR:-target}/sample-soak
while [ $# -gt 0 ]; do
    case $1 in
        --workload) workload=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        --interval) interval=$2; shift 2 ;;
        --clocks) clocks=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "soak.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
java=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}/bin/java
case $workload in
    groovy)
        jar=/usr/share/java/groovy-all.jar
        cmd=(-cp "$jar" groovy.ui.GroovyMain "$root/bench/suite/programs/bench.groovy" "${scale:-1500}") ;;
    jython)
        jar=/usr/share/java/jython.jar
        cmd=(-Dpython.cachedir.skip=true -Dpython.home=/usr/share/jython -cp "$jar"
             org.python.util.jython "$root/bench/suite/programs/bench.py" "${scale:-60}") ;;
    *) echo "soak.sh: --workload groovy or jython" >&2; exit 2 ;;
esac
[ -f "$jar" ] || { echo "soak.sh: $jar missing (apt-get install $workload)" >&2; exit 2; }
cargo build --release -p ferrofluid -p ferrofluid-agent >&2
bin=${CARGO_TARGET_DIR:-target}/release
mkdir -p "$out"
status=0 checksums=()
echo "load: $(uptime | sed 's/.*load average: //')"
for clock in ${clocks//,/ }; do
    flags=(--mode sample --interval "$interval")
    [ "$clock" = wall ] && flags+=(--wall)
    json=$out/$workload-$clock.json
    log=$out/$workload-$clock.out
    start=$(date +%s.%N)
    rc=0
    "$bin/ferrofluid" run --agent "$bin/libferrofluid_agent.so" "${flags[@]}" -o "$json" \
        --log "$out/$workload-$clock.agent.log" \
        -- "$java" -Duser.language=en -Duser.country=US "${cmd[@]}" >"$log" 2>&1 || rc=$?
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    sum=$(grep -o "^checksum $workload [0-9a-f]*" "$log" | awk '{print $3}' || true)
    printf '%s %s: %.0f s, exit %d, checksum %s\n' "$workload" "$clock" "$secs" "$rc" "${sum:-none}"
    if [ "$rc" != 0 ] || [ -z "$sum" ]; then
        status=1
        tail -20 "$log"
        continue
    fi
    checksums+=("$sum")
    python3 - "$json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["sampling"]
stack = ", ".join(f"{k} {v}" for k, v in sorted(s.get("without_stack", {}).items(), key=lambda kv: -kv[1]))
lost = ", ".join(f"{k} {v}" for k, v in s.get("lost", {}).items()) or "0"
print(f"  {s['samples']} samples ({s['clock']}, every {s['interval_ns'] / 1e6:g} ms, {s['source']}), "
      f"{s['walked']} with a stack ({100 * s['walked'] / max(s['samples'], 1):.1f}%)")
print(f"  without a stack: {stack or '0'}")
print(f"  lost: {lost}; faults contained: {s.get('faults_contained', 0)}")
EOF
done
if [ "${#checksums[@]}" -gt 1 ] && [ "$(printf '%s\n' "${checksums[@]}" | sort -u | wc -l)" != 1 ]; then
    echo "checksums differ: ${checksums[*]}"
    status=1
fi
echo "load: $(uptime | sed 's/.*load average: //')"
exit $status
