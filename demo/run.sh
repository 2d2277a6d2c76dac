#!/usr/bin/env bash
# Profiles the bundled demo program from its main method (exact call counts and
# compensated times, reports in text and HTML), then instruments it statically with
# every probe and runs each copy under -Xverify:all beside the original: the outputs
# must be identical.
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
# The JDK 17, installed if it is missing.
source "$root/tools/setup.sh" jdk

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
echo "== profile: the call subgraph of demo.Main::main, instrumented as it runs"
echo "\$ ferrofluid run --root 'demo.Main::main' -o target/demo/profile.json -- java -jar target/demo/demo.jar"
"$ferrofluid" run --root 'demo.Main::main' -o "$out/profile.json" -- java -jar "$out/demo.jar" > "$out/profiled.txt"
diff -u "$out/original.txt" "$out/profiled.txt"
echo "same output as the original while profiled"
"$ferrofluid" report "$out/profile.json" -o "$out/profile.html"
"$ferrofluid" report "$out/profile.json" -o "$out/profile.txt"
echo "reports: target/demo/profile.txt, target/demo/profile.html (flame graph, call tree, hot spots)"
echo
sed -n '1,16p' "$out/profile.txt"
