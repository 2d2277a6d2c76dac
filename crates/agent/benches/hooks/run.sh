#!/bin/sh
# Per-call probe cost of the agent's hooks, driven from Java (see HookBench.java and the
# "Agent hot path" section of docs/PERFORMANCE.md). Usage: crates/agent/benches/hooks/run.sh [calls]
# AGENT=path/libferrofluid_agent.so measures that library instead of building this checkout's.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
calls=${1:-10000000}
if [ -n "${AGENT:-}" ]; then
    so=$AGENT
else
    cargo build --release -q -p ferrofluid-agent --manifest-path "$root/Cargo.toml"
    so="$target/release/libferrofluid_agent.so"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
javac -d "$work" "$here/HookBench.java"
agent() {
    echo "-agentpath:$so=$1,include=HookBench,log=$work/agent.log,socket=$work/ctl/control.sock,file=$work/$2.json"
}
echo "uninstrumented:"
java -cp "$work" HookBench tiny "$calls"
java -cp "$work" HookBench guarded "$calls"
echo "instrumented, outside any root (hook returns at once):"
java "$(agent root=HookBench::never,scheme=total outside)" -cp "$work" HookBench tiny "$calls"
echo "instrumented, inside the root (every call recorded):"
java "$(agent root=HookBench::root,scheme=lazy inside)" -cp "$work" HookBench root "$calls"
python3 - "$work/inside.json" "$calls" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
def walk(n):
    yield n
    for c in n.get("children", []):
        yield from walk(c)
calls = sum(n["calls"] for t in doc["threads"] for n in walk(t["root"]) if n.get("method") == "tiny")
print(f"recorded calls of tiny: {calls} of {8 * int(sys.argv[2])} ({8 * int(sys.argv[2]) - calls} lost)")
PY
grep -h "dropped" "$work/agent.log" || true
