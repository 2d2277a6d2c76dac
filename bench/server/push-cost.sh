#!/usr/bin/env bash
# What continuous pushing costs a live server, in CPU: a server JVM started with the agent
# (`-agentpath:…=mode=M,root=R,push=SINK,every=E`) runs under load; over a window after the
# warm-up, the CPU time of the agent's two push threads (`ferrofluid-push` takes, diffs and
# encodes the snapshots, `ferrofluid-send` sends them) is read beside the whole JVM's. Their share
# of the JVM's CPU is what pushing takes from a CPU-bound server (a throughput comparison on a
# shared 2-core machine varies more between repetitions than the 1% goal; this does not).
#
#   bench/server/push-cost.sh [--servers h2,jetty] [--modes count,root] [--every 10s]
#                             [--warmup S] [--window S] [--threads N] [--work DIR]
#
# Prints a markdown table: server, mode, window, JVM CPU s, push threads CPU s, share, pushes,
# median push KiB.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$JAVA_HOME/bin/java
target=${CARGO_TARGET_DIR:-$repo/target}

servers=h2,jetty
modes=count,root
every=10s
warmup=30
window=60
threads=8
work=$target/push-cost
while [ $# -gt 0 ]; do
    case $1 in
        --servers) servers=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --every) every=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --window) window=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "push-cost.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
agent=$target/release/libferrofluid_agent.so
[ -f "$agent" ] || { echo "no $agent: cargo build --release" >&2; exit 2; }
mkdir -p "$work"

source "$here/lib.sh"
build_classes "$work"

sink_port=$(free_port)
sink_log=$work/sink.log
python3 "$here/sink.py" "$sink_port" "$sink_log" >"$work/sink.out" 2>&1 &
sink_pid=$!
load_pid=
cleanup() {
    kill "$sink_pid" 2>/dev/null || true
    [ -z "$load_pid" ] || kill "$load_pid" 2>/dev/null || true
    [ -z "${SERVER_PID:-}" ] || stop_server
}
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q listening "$work/sink.out" 2>/dev/null && break; sleep 0.1; done

ticks=$(getconf CLK_TCK)
# cpu_of PID [THREAD-NAME-PREFIX]: CPU seconds (user + system) of the process, or of its
# threads whose name starts with the prefix.
cpu_of() {
    local pid=$1 prefix=${2:-} sum=0 t stat
    if [ -z "$prefix" ]; then
        stat=$(cat "/proc/$pid/stat")
        stat=${stat##*) }
        set -- $stat
        sum=$(( ${12} + ${13} ))
    else
        for t in /proc/"$pid"/task/*; do
            [[ $(cat "$t/comm" 2>/dev/null) == "$prefix"* ]] || continue
            stat=$(cat "$t/stat")
            stat=${stat##*) }
            set -- $stat
            sum=$(( sum + ${12} + ${13} ))
        done
    fi
    echo "$sum"
}

rows=()
for server in ${servers//,/ }; do
    for mode in ${modes//,/ }; do
        run_dir=$work/$server-$mode
        rm -rf "$run_dir"
        mkdir -p "$run_dir"
        : >"$sink_log"
        root=$(server_root "$server")
        case $mode in
            count) opts="mode=count,root=$root" ;;
            root) opts="root=$root" ;;
            region) opts="region=$root" ;;
            alloc) opts="mode=alloc" ;;
            *) echo "push-cost.sh: unknown mode $mode" >&2; exit 2 ;;
        esac
        SERVER_JAVA_OPTS="-agentpath:$agent=$opts,push=http://127.0.0.1:$sink_port/ingest,every=$every,log=$run_dir/agent.log" \
            start_server "$server" "$run_dir"
        "$java" -cp "$LOAD_CP" Load --kind "$(server_kind "$server")" --port "$SERVER_PORT" \
            --threads "$threads" --until "$run_dir/stop" --status "$run_dir/status" >"$run_dir/load.out" 2>&1 &
        load_pid=$!
        # The load's set-up (H2's tables) runs first; the warm-up counts from its first requests.
        until [ -s "$run_dir/status" ]; do
            kill -0 "$load_pid" 2>/dev/null || { echo "load failed: $(cat "$run_dir/load.out")" >&2; exit 2; }
            sleep 0.2
        done
        sleep "$warmup"
        jvm0=$(cpu_of "$SERVER_PID"); push0=$(cpu_of "$SERVER_PID" ferrofluid-push)
        send0=$(cpu_of "$SERVER_PID" ferrofluid-send); pushes0=$(wc -l <"$sink_log")
        done0=$(cut -d' ' -f1 "$run_dir/status")
        sleep "$window"
        jvm1=$(cpu_of "$SERVER_PID"); push1=$(cpu_of "$SERVER_PID" ferrofluid-push)
        send1=$(cpu_of "$SERVER_PID" ferrofluid-send); pushes1=$(wc -l <"$sink_log")
        done1=$(cut -d' ' -f1 "$run_dir/status")
        touch "$run_dir/stop"
        wait "$load_pid" || true
        load_pid=
        stop_server
        SERVER_PID=
        rows+=("$(python3 - "$server" "$mode" "$window" "$ticks" "$jvm0" "$jvm1" "$push0" "$push1" \
            "$send0" "$send1" "$pushes0" "$pushes1" "$sink_log" "$done0" "$done1" <<'PY'
import statistics, sys
server, mode, window, ticks = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
jvm0, jvm1, push0, push1, send0, send1, p0, p1 = map(int, sys.argv[5:13])
sizes = [int(l.split('\t')[2]) for l in open(sys.argv[13]).read().splitlines()[p0:p1]]
done0, done1 = int(sys.argv[14]), int(sys.argv[15])
jvm = (jvm1 - jvm0) / ticks
push = (push1 - push0 + send1 - send0) / ticks
median = statistics.median(sizes) / 1024 if sizes else 0
print(f"| {server} | {mode} | {window:.0f} s | {(done1 - done0) / window:.0f} | {jvm:.1f} | "
      f"{push:.2f} | {100 * push / jvm if jvm else 0:.2f}% | {p1 - p0} | {median:.1f} |")
PY
)")
        echo "${rows[-1]}" >&2
    done
done

echo
echo "| server | mode | window | requests/s | JVM CPU s | push threads CPU s | share | pushes | median KiB |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
