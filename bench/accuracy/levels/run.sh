#!/bin/sh
# Builds the no-op JNI library and runs Levels for SECONDS (default 20): does a calibration on
# another thread see the JNI-call level a busy thread runs at? Then NanoLevels: what would a
# Java-side timestamp cost instead? (docs/decisions/0004-calibration.md)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
jdk=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -I"$jdk/include" -I"$jdk/include/linux" -o "$work/libnprobe.so" "$here/nprobe.c"
"$jdk/bin/javac" -d "$work" "$here/Levels.java" "$here/NanoLevels.java"
"$jdk/bin/java" -Djava.library.path="$work" -cp "$work" Levels "${1:-20}"
"$jdk/bin/java" -Djava.library.path="$work" -cp "$work" NanoLevels "${1:-20}"
