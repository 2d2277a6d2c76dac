#!/bin/sh
# Builds the no-op JNI library and runs LoopShape (ns per loop iteration, 6 rounds) on a quiet machine.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
jdk=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -I"$jdk/include" -I"$jdk/include/linux" -o "$work/libnprobe.so" "$here/nprobe.c"
"$jdk/bin/javac" -d "$work" "$here/LoopShape.java"
cd "$work" && "$jdk/bin/java" -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,LoopShape::probe -cp "$work" LoopShape
