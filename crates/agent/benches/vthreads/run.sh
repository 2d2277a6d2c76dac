#!/bin/sh
# Cost of virtual-thread switches under the agent (docs/decisions/0025-virtual-threads.md).
# Usage: crates/agent/benches/vthreads/run.sh JDK21_HOME [AGENT.so] [yields]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
jdk=$1
so=${2:-${CARGO_TARGET_DIR:-$root/target}/release/libferrofluid_agent.so}
yields=${3:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
javac --release 17 -d "$work" "$here/VThreadBench.java"
agent() {
    echo "-agentpath:$so=$1,include=VThreadBench,reveal=sync,log=$work/agent.log,socket=$work/ctl/control.sock,file=$work/$2.json"
}
printf "no agent: "
"$jdk/bin/java" -cp "$work" VThreadBench "$yields"
printf "agent, outside any root: "
"$jdk/bin/java" "$(agent root=VThreadBench::never outside)" -cp "$work" VThreadBench "$yields"
printf "agent, inside the root (every leaf call recorded): "
"$jdk/bin/java" "$(agent root=VThreadBench::work inside)" -cp "$work" VThreadBench "$yields"
