#!/usr/bin/env bash
# Live-server benchmark: throughput of a real server under load before, during and after
# `ferrofluid attach` with a root (or a region) on its request path. See bench/README.md.
#
#   bench/server/run.sh [--ferrofluid DIR[=LABEL]]... [--servers h2,jetty] [--loads point,rows]
#                       [--modes root,count,alloc,region,asprof] [--async-profiler LIB]
#                       [--threads N] [--warmup S] [--before S] [--during S] [--after S] [--reps N]
#                       [--push-every S] [--out FILE] [--work DIR]
#
# Each (rep, server, load, mode, ferrofluid) run starts a fresh server JVM, warms it up under
# load, measures --before seconds, runs `ferrofluid attach PID --root|--region METHOD --duration
# D -o profile.json` (or attaches async-profiler for D: mode asprof) while the load goes on,
# measures --after seconds after the tool exited, and stops the server. Rows (tab-separated) go
# to --out; a markdown table is printed at the end.
# Modes alloc-0 and alloc-bytes attach `--mode alloc` over the whole program, counting only
# or tracked by bytes (512k).
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
loads=point
modes=root,region
async_lib=${ASYNC_PROFILER:-}
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
        --loads) loads=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --async-profiler) async_lib=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --before) before=$2; shift 2 ;;
        --during) during=$2; shift 2 ;;
        --after) after=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --push-every) push_every=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#variants[@]} -gt 0 ] || variants=("$target/release")
case ,$modes, in
    *,asprof,*) [ -f "$async_lib" ] || { echo "run.sh: mode asprof needs --async-profiler PATH/libasyncProfiler.so" >&2; exit 2; } ;;
esac
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
      for load in ${loads//,/ }; do
        kind=$(server_kind "$server" "$load")
        for mode in ${modes//,/ }; do
            for v in "${variants[@]}"; do
                dir=${v%%=*}
                label=${v#*=}
                [ "$label" != "$v" ] || label=$(basename "$(dirname "$dir")")/$(basename "$dir")
                # async-profiler and no-attach runs do not depend on the ferrofluid build.
                if [ "$mode" = asprof ] || [ "$mode" = none ]; then
                    [ "$v" = "${variants[0]}" ] || continue
                    label=-
                fi
                run_dir=$work/runs/$server-$load-$mode-${label//\//_}-$rep
                rm -rf "$run_dir"
                mkdir -p "$run_dir"
                # A `boot` directory beside a build goes on the server's boot class path: classes
                # there (variants of the agent's Java classes) win over those the agent defines.
                saved_opts=${SERVER_JAVA_OPTS:-}
                [ ! -d "$dir/boot" ] || [ "$mode" = asprof ] || SERVER_JAVA_OPTS="$saved_opts -Xbootclasspath/a:$dir/boot"
                start_server "$server" "$run_dir"
                SERVER_JAVA_OPTS=$saved_opts
                root=$(server_root "$server")
                case $mode in
                    root) flags=(--root "$root") ;;
                    root-all) flags=(--root "$root" --record all) ;;
                    root-probes) flags=(--root "$root" --timing probes) ;;
                    root-budget) flags=(--root "$root" --timing sampled --adaptive) ;;
                    root-full) flags=(--root "$root" --no-presample) ;;
                    root-trivial) flags=(--root "$root" --skip-trivial) ;;
                    count) flags=(--mode count --root "$root") ;;
                    alloc) flags=(--mode alloc --root "$root") ;;
                    region) flags=(--region "$root") ;;
                    root-adaptive) flags=(--root "$root" --skip-trivial --adaptive) ;;
                    root-push) flags=(--root "$root" --push "$sink_url" --every "$push_every") ;;
                    region-push) flags=(--region "$root" --push "$sink_url" --every "$push_every") ;;
                    count-push) flags=(--mode count --root "$root" --push "$sink_url" --every "$push_every") ;;
                    alloc-0) flags=(--mode alloc --track-every 0) ;;
                    alloc-bytes) flags=(--mode alloc --track-bytes 512k) ;;
                    none|asprof) flags=() ;;
                    *) echo "run.sh: unknown mode $mode" >&2; stop_server; exit 2 ;;
                esac
                case $mode in
                    none) cmd=(sleep "${during%s}") ;;
                    asprof) cmd=("$java" -cp "$CLASSES" AsyncAttach "$SERVER_PID" "$async_lib" "${during%s}" "$run_dir/async.collapsed") ;;
                    *) cmd=("$dir/ferrofluid" attach "$SERVER_PID" "${flags[@]}" --duration "$during" -o "$run_dir/profile.json") ;;
                esac
                echo "== $server $load $mode $label (rep $rep): ${cmd[*]}" >&2
                status=0
                "$java" -cp "$LOAD_CP" Load --kind "$kind" --port "$SERVER_PORT" \
                    --threads "$threads" --warmup "$warmup" --before "$before" --after "$after" \
                    --label "$server $load $mode $label" --out "$out" --timeline "$run_dir/timeline.csv" \
                    --cmd-log "$run_dir/attach.log" --agent-log "/tmp/.ferrofluid-$SERVER_PID/agent.log" \
                    --agent-log-copy "$run_dir/agent.log" --pid "$SERVER_PID" -- "${cmd[@]}" >"$run_dir/load.out" 2>&1 || status=$?
                tail -n +2 "$run_dir/load.out" | head -1 >&2
                [ $status -eq 0 ] || { echo "   load client: exit $status (wrong answers or failures; see $run_dir/load.out)" >&2; }
                stop_server
            done
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
