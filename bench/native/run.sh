#!/bin/sh
# The cost of native-method wrappers (docs/decisions/0055-native-mode.md): NativeBench's workloads
# uninstrumented and with every native of NativeBench, java.util.zip.Deflater/Inflater and
# java.io.RandomAccessFile statically wrapped by `ferrofluid instrument --probe native`, under
# each hooks variant of hooks/, with stick.c setting the JVMTI native prefix.
#
#   bench/native/run.sh [REPS] [VARIANTS]     (VARIANTS: orig,prefix,empty,gate,native,java)
#
# Run it at high priority on a quiet machine:
#   setsid sh -c 'echo -20 > /proc/self/autogroup; exec bench/native/run.sh 3'
set -e
REPS=${1:-3}
VARIANTS=${2:-orig,prefix,empty,gate,native,java}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FERROFLUID=${FERROFLUID:-$ROOT/target/release/ferrofluid}
B=${CARGO_TARGET_DIR:-$ROOT/target}/native-bench
WORK=tiny,upcall,zip,file
rm -rf "$B" && mkdir -p "$B"
CFLAGS="-O2 -shared -fPIC -I$JAVA_HOME/include -I$JAVA_HOME/include/linux"
"$JAVA_HOME/bin/javac" -d "$B/orig" "$HERE/java/NativeBench.java"
cc $CFLAGS -o "$B/libnativebench.so" "$HERE/nativebench.c"
cc $CFLAGS -o "$B/libstick.so" "$HERE/stick.c"
"$FERROFLUID" instrument "$B/orig" "$B/wrapped" --probe native >/dev/null
"$FERROFLUID" instrument "$JAVA_HOME/jmods/java.base.jmod" "$B/base" --probe native \
    --include 'java.util.zip.Deflater,java.util.zip.Inflater,java.io.RandomAccessFile' >/dev/null
for v in empty gate native java; do
    mkdir -p "$B/patch-$v/java/util/zip" "$B/patch-$v/java/io"
    "$JAVA_HOME/bin/javac" -d "$B/patch-$v" "$HERE/hooks/$v/ferrofluid/Hooks.java"
    cp "$B/base/java/util/zip/Deflater.class" "$B/base/java/util/zip/Inflater.class" "$B/patch-$v/java/util/zip/"
    cp "$B/base/java/io/RandomAccessFile.class" "$B/patch-$v/java/io/"
done
run() {
    v=$1
    case $v in
    orig) set -- -cp "$B/orig" ;;
    prefix) set -- -agentpath:"$B/libstick.so" -cp "$B/orig" ;;
    native) set -- --patch-module "java.base=$B/patch-$v" --add-exports java.base/ferrofluid=ALL-UNNAMED \
        -agentpath:"$B/libstick.so=jni" -cp "$B/wrapped" ;;
    *) set -- --patch-module "java.base=$B/patch-$v" --add-exports java.base/ferrofluid=ALL-UNNAMED \
        -agentpath:"$B/libstick.so" -cp "$B/wrapped" ;;
    esac
    timeout 300 "$JAVA_HOME/bin/java" "$@" NativeBench "$B/libnativebench.so" $WORK 5
}
uptime
r=1
while [ $r -le "$REPS" ]; do
    for v in $(echo "$VARIANTS" | tr , ' '); do
        run "$v" 2>&1 | sed "s/^/$v /" | tee -a "$B/results.txt"
    done
    r=$((r + 1))
done
uptime
# Median per variant and workload.
python3 - "$B/results.txt" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[3] == "ns/iter":
        v, w, ns = f[0], f[1], float(f[2])
        runs[(v, w)].append(ns)
        if v not in order: order.append(v)
works = ["tiny", "upcall", "zip", "file"]
print("%-8s" % "variant" + "".join("%16s" % w for w in works))
base = {w: statistics.median(runs[("orig", w)]) for w in works if runs.get(("orig", w))}
for v in order:
    cells = []
    for w in works:
        xs = runs.get((v, w))
        if not xs: cells.append("%16s" % "-"); continue
        m = statistics.median(xs)
        cells.append("%16s" % ("%.1f (%.2fx)" % (m, m / base[w]) if w in base else "%.1f" % m))
    print("%-8s" % v + "".join(cells))
PY
