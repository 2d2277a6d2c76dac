#!/usr/bin/env bash
# Instruments the bundled demo program with every probe and runs each copy under
# -Xverify:all beside the original: the outputs must be identical.
#
#   cargo build --release && demo/run.sh [PROBE...]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
ferrofluid=${CARGO_TARGET_DIR:-$root/target}/release/ferrofluid
out=$root/target/demo
probes=("$@")
[ ${#probes[@]} -gt 0 ] || probes=(entry-exit blocks blocks-precise alloc native)

if [ ! -x "$ferrofluid" ]; then
    echo "demo/run.sh: $ferrofluid not found; run 'cargo build --release' first" >&2
    exit 2
fi
command -v javac >/dev/null || { echo "demo/run.sh: javac not found; apt-get install -y openjdk-17-jdk-headless" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/classes" "$out/hooks"
javac -d "$out/classes" "$root"/demo/src/demo/*.java
javac -d "$out/hooks" "$root/tools/hooks/ferrofluid/Hooks.java"
(cd "$out/classes" && jar --create --file "$out/demo.jar" --main-class demo.Main .)

java -Xverify:all -jar "$out/demo.jar" > "$out/original.txt"
for probe in "${probes[@]}"; do
    echo "== $probe"
    echo "\$ ferrofluid instrument target/demo/demo.jar target/demo/demo-$probe.jar --probe $probe"
    "$ferrofluid" instrument "$out/demo.jar" "$out/demo-$probe.jar" --probe "$probe"
    # The no-op hooks go on the boot class path so classes of any loader can call them.
    java -Xverify:all -Xbootclasspath/a:"$out/hooks" -jar "$out/demo-$probe.jar" > "$out/$probe.txt"
    diff -u "$out/original.txt" "$out/$probe.txt"
    echo "same output as the original under -Xverify:all"
done
echo
cat "$out/original.txt"
