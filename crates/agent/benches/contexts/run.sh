#!/bin/sh
# Per-call cost of the calling-context probes (ferrofluid/Counts: count mode, sampled timing),
# see ContextBench.java. Usage: crates/agent/benches/contexts/run.sh [REV...] [-- calls]
# Measures this checkout's Counts.java and, side by side, Counts.java of each git REV given.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
agent=$(cd "$here/../.." && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
revs=""
calls=100000000
while [ $# -gt 0 ]; do
    case $1 in
        --) calls=$2; break ;;
        *) revs="$revs $1" ;;
    esac
    shift
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
measure() {
    # $1: label, $2: Counts.java to measure
    mkdir -p "$work/$1"
    "$java_home/bin/javac" -Xlint:-options -source 11 -target 11 \
        --add-exports java.base/jdk.internal.vm.annotation=ALL-UNNAMED \
        --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -d "$work/$1" \
        "$2" "$agent/../../tools/hooks/ferrofluid/Hooks.java" "$here/ContextBench.java"
    printf '%-12s ' "$1:"
    # As the agent does for the class it defines: the probes read thread ids through Unsafe.
    "$java_home/bin/java" --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp "$work/$1" \
        ferrofluid.ContextBench "$calls"
}
measure checkout "$agent/src/probe/contexts/Counts.java"
for rev in $revs; do
    git -C "$agent" show "$rev:crates/agent/src/probe/contexts/Counts.java" > "$work/Counts-$rev.java"
    mkdir -p "$work/src-$rev/ferrofluid"
    cp "$work/Counts-$rev.java" "$work/src-$rev/ferrofluid/Counts.java"
    measure "$rev" "$work/src-$rev/ferrofluid/Counts.java"
done
