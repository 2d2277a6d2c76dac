#!/usr/bin/env bash
# Benchmark: ferrofluid's entry-exit probe vs ASM doing the same transformation, both on one
# thread over every class of the JDK 17 jmods, warmed up, in the same run.
#
#   bench/classfile/run.sh [--warmup N] [--passes N]
#
# Needs: cargo, a JDK 17 (JAVA_HOME or /usr/lib/jvm/java-17-openjdk-amd64), Debian's
# libasm-java (apt-get install -y libasm-java openjdk-17-jdk-headless).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
java_home=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
target=${CARGO_TARGET_DIR:-$here/target}
work=$target/bench-classfile
warmup=3
passes=5
while [ $# -gt 0 ]; do
    case $1 in
        --warmup) warmup=$2; shift 2 ;;
        --passes) passes=$2; shift 2 ;;
        *) echo "usage: $0 [--warmup N] [--passes N]" >&2; exit 2 ;;
    esac
done

asm=/usr/share/java/asm.jar:/usr/share/java/asm-tree.jar:/usr/share/java/asm-commons.jar
for jar in ${asm//:/ }; do
    [ -f "$jar" ] || { echo "$0: $jar missing; apt-get install -y libasm-java" >&2; exit 2; }
done
[ -f "$java_home/jmods/java.base.jmod" ] || { echo "$0: no jmods in $java_home; set JAVA_HOME to a JDK 17" >&2; exit 2; }

jmods=("$java_home"/jmods/*.jmod)
mkdir -p "$work/java"
CARGO_TARGET_DIR=$target cargo build --quiet --release --manifest-path "$here/Cargo.toml"
"$java_home/bin/javac" -d "$work/java" -cp "$asm" "$here/java/ferrofluid/bench/AsmBench.java"

# Both single-threaded; the JVM gets a fixed heap so GC sizing does not vary between runs.
rust_line=$("$target/release/ferrofluid-bench-classfile" --warmup "$warmup" --passes "$passes" "${jmods[@]}")
asm_line=$("$java_home/bin/java" -Xms2g -Xmx2g -XX:+UseParallelGC -XX:ParallelGCThreads=1 \
    -cp "$asm:$work/java" ferrofluid.bench.AsmBench --warmup "$warmup" --passes "$passes" "${jmods[@]}")

field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }
echo "| engine | classes | MB in | best pass (s) | classes/s | MB/s |"
echo "|---|---:|---:|---:|---:|---:|"
for line in "$rust_line" "$asm_line"; do
    name=$(cut -d' ' -f1 <<<"$line")
    [ "$name" = asm ] && name="ASM $(basename "$(readlink -f /usr/share/java/asm.jar)" .jar | sed 's/asm-//') (AdviceAdapter + COMPUTE_FRAMES)"
    mb=$(awk -v b="$(field "$line" bytes)" 'BEGIN { printf "%.1f", b / 1e6 }')
    echo "| $name | $(field "$line" classes) | $mb | $(field "$line" best_seconds) | $(field "$line" classes_per_second) | $(field "$line" mb_per_second) |"
done
ratio=$(awk -v a="$(field "$rust_line" classes_per_second)" -v b="$(field "$asm_line" classes_per_second)" 'BEGIN { printf "%.2f", a / b }')
echo
echo "ferrofluid / ASM classes per second: ${ratio}x (warmup $warmup passes, best of $passes, one thread each)"
echo "command: bench/classfile/run.sh --warmup $warmup --passes $passes"
echo "machine: $(nproc) cpus, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1); JDK: $("$java_home/bin/java" -version 2>&1 | head -1); $(date -u +%Y-%m-%dT%H:%MZ)"
