#!/usr/bin/env bash
# Live-server benchmark: throughput of a real server under load before, during and after
# `ferrofluid attach` with a root (or a region) on its request path. See bench/README.md.
#
#   bench/server/run.sh [--ferrofluid DIR[=LABEL]]... [--servers h2,jetty] [--modes root,region]
#                       [--threads N] [--warmup S] [--before S] [--during S] [--after S] [--reps N]
#                       [--push-every S] [--out FILE] [--work DIR]
#
# Each (rep, server, mode, ferrofluid) run starts a fresh server JVM, warms it up under load,
# measures --before seconds, runs `ferrofluid attach PID --root|--region METHOD --duration D -o
# profile.json` while the load goes on, measures --after seconds after the CLI exited, and stops
# the server. Rows (tab-separated) go to --out; a markdown table is printed at the end.
# Modes: root, region, root-adaptive, count (with the server's root), alloc-0 and alloc-bytes
# (`--mode alloc` over the whole program, counting only or tracked by bytes, 512k), none.
# Modes ending in -push add `--push URL --every --push-every` to a sink (sink.py) that logs each
# push's size to WORK/sink.log.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$JAVA_HOME/bin/java
target=${CARGO_TARGET_DIR:-$repo/target}

variants=()
servers=h2,jetty
modes=root,region
threads=8
warmup=10
before=10
during=20s
after=10
reps=1
push_every=10s
out=
work=$target/server-bench
while [ $# -gt 0 ]; do
    case $1 in
        --ferrofluid) variants+=("$2"); shift 2 ;;
        --servers) servers=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --before) before=$2; shift 2 ;;
        --during) during=$2; shift 2 ;;
        --after) after=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --push-every) push_every=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#variants[@]} -gt 0 ] || variants=("$target/release")
mkdir -p "$work"
out=${out:-$work/results.tsv}

source "$here/lib.sh"
build_classes "$work"

if [[ $modes == *-push* ]]; then
    sink_port=$(free_port)
    python3 "$here/sink.py" "$sink_port" "$work/sink.log" >"$work/sink.out" 2>&1 &
    sink_pid=$!
    trap 'kill $sink_pid 2>/dev/null || true' EXIT
    for _ in $(seq 1 100); do grep -q listening "$work/sink.out" 2>/dev/null && break; sleep 0.1; done
    sink_url=http://127.0.0.1:$sink_port/ingest
fi

for ((rep = 1; rep <= reps; rep++)); do
    for server in ${servers//,/ }; do
        for mode in ${modes//,/ }; do
            for v in "${variants[@]}"; do
                dir=${v%%=*}
                label=${v#*=}
                [ "$label" != "$v" ] || label=$(basename "$(dirname "$dir")")/$(basename "$dir")
                run_dir=$work/runs/$server-$mode-${label//\//_}-$rep
                rm -rf "$run_dir"
                mkdir -p "$run_dir"
                start_server "$server" "$run_dir"
                root=$(server_root "$server")
                case $mode in
                    root) flags=(--root "$root") ;;
                    region) flags=(--region "$root") ;;
                    root-adaptive) flags=(--root "$root" --skip-trivial --adaptive) ;;
                    root-push) flags=(--root "$root" --push "$sink_url" --every "$push_every") ;;
                    region-push) flags=(--region "$root" --push "$sink_url" --every "$push_every") ;;
                    count-push) flags=(--mode count --root "$root" --push "$sink_url" --every "$push_every") ;;
                    count) flags=(--mode count --root "$root") ;;
                    alloc-0) flags=(--mode alloc --track-every 0) ;;
                    alloc-bytes) flags=(--mode alloc --track-bytes 512k) ;;
                    none) flags=() ;;
                    *) echo "run.sh: unknown mode $mode" >&2; stop_server; exit 2 ;;
                esac
                if [ "$mode" = none ]; then
                    cmd=(sleep "${during%s}")
                else
                    cmd=("$dir/ferrofluid" attach "$SERVER_PID" "${flags[@]}" --duration "$during" -o "$run_dir/profile.json")
                fi
                echo "== $server $mode $label (rep $rep): ${cmd[*]}" >&2
                status=0
                "$java" -cp "$LOAD_CP" Load --kind "$(server_kind "$server")" --port "$SERVER_PORT" \
                    --threads "$threads" --warmup "$warmup" --before "$before" --after "$after" \
                    --label "$server $mode $label" --out "$out" --timeline "$run_dir/timeline.csv" \
                    --cmd-log "$run_dir/attach.log" --agent-log "/tmp/.ferrofluid-$SERVER_PID/agent.log" -- "${cmd[@]}" >"$run_dir/load.out" 2>&1 || status=$?
                tail -n +2 "$run_dir/load.out" | head -1 >&2
                [ $status -eq 0 ] || { echo "   load client: exit $status (wrong answers or failures; see $run_dir/load.out)" >&2; }
                cp "/tmp/.ferrofluid-$SERVER_PID/agent.log" "$run_dir/agent.log" 2>/dev/null || true
                stop_server
            done
        done
    done
done

echo
echo "Results: $out"
python3 - "$out" <<'PY'
import sys, csv
rows = list(csv.reader(open(sys.argv[1]), delimiter='\t'))
head, rows = rows[0], rows[1:]
print('| ' + ' | '.join(head) + ' |')
print('|' + '---|' * len(head))
for r in rows:
    print('| ' + ' | '.join(r) + ' |')
PY
