#!/usr/bin/env bash
# Soak: N attach -> profile -> detach cycles against one server under load (not part of
# `cargo test`). See bench/README.md.
#
#   bench/server/soak.sh [--n 200] [--server h2|jetty] [--ferrofluid DIR] [--profile S]
#                        [--grace S] [--threads N] [--work DIR]
#
# Cycles alternate four ways of ending and two roots (i = cycle number):
#   i%4 == 0  --root R --duration S -o FILE           (ends by itself)
#   i%4 == 1  --region R --duration S -o FILE         (ends by itself)
#   i%4 == 2  --root R -o FILE, SIGINT after S        (Ctrl-C)
#   i%4 == 3  --root R -o FILE, SIGKILL after S       (the tool disappears: the agent must remove
#                                                      its probes itself within --grace seconds)
# R alternates between two request-path methods every 4 cycles. After each cycle it checks that
# nothing is left instrumented (the agent's socket is gone, or its status says 0 classes),
# that every answer the load client got was right, and records the server's RSS and thread
# count. A SIGKILLed cycle whose agent is still instrumented after --grace is counted and
# cleaned up with `ferrofluid attach PID --detach`, so the soak goes on.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$JAVA_HOME/bin/java
target=${CARGO_TARGET_DIR:-$repo/target}

n=200
server=h2
ff=$target/release
profile=2
grace=15
threads=4
work=$target/server-soak
while [ $# -gt 0 ]; do
    case $1 in
        --n) n=$2; shift 2 ;;
        --server) server=$2; shift 2 ;;
        --ferrofluid) ff=$2; shift 2 ;;
        --profile) profile=$2; shift 2 ;;
        --grace) grace=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "soak.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$work"
source "$here/lib.sh"
build_classes "$work"
ferrofluid=$ff/ferrofluid

case $server in
    h2) roots=('org.h2.server.TcpServerThread::process' 'org.h2.command.Command::executeQuery') ;;
    jetty) roots=('org.eclipse.jetty.server.HttpChannel::handle' 'org.eclipse.jetty.server.handler.ResourceHandler::handle') ;;
    *) echo "soak.sh: unknown server $server" >&2; exit 2 ;;
esac

run_dir=$work/$server
rm -rf "$run_dir"
mkdir -p "$run_dir"
start_server "$server" "$run_dir"
stop_file=$run_dir/stop
"$java" -cp "$LOAD_CP" Load --kind "$(server_kind "$server")" --port "$SERVER_PORT" --threads "$threads" \
    --until "$stop_file" --status "$run_dir/status" >"$run_dir/load.out" 2>&1 &
load_pid=$!
cleanup() {
    touch "$stop_file"
    wait "$load_pid" 2>/dev/null
    stop_server
}
trap cleanup EXIT

proc_field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$SERVER_PID/status"; }
errors() { awk '{ print $2 }' "$run_dir/status" 2>/dev/null || echo 0; }
done_requests() { awk '{ print $1 }' "$run_dir/status" 2>/dev/null || echo 0; }
socket=/tmp/.ferrofluid-$SERVER_PID/control.sock

# Instrumented classes of the agent in the server: 0 when no agent answers (dormant or never
# loaded; `ferrofluid attach PID` would load one).
instrumented() {
    [ -S "$socket" ] || { echo 0; return; }
    timeout 30 "$ferrofluid" attach "$SERVER_PID" 2>/dev/null | awk '/^instrumented:/ { print $2 }' | grep . || echo "?"
}

sleep 10 # warm-up under load
nmt() { "$JAVA_HOME/bin/jcmd" "$SERVER_PID" VM.native_memory summary >"$run_dir/nmt-$1.txt" 2>&1 || true; }
[[ ${SERVER_JAVA_OPTS:-} == *NativeMemoryTracking* ]] && nmt before
rss0=$(proc_field VmRSS)
thr0=$(proc_field Threads)
echo "soak: $server pid $SERVER_PID, $n cycles; before: RSS $((rss0 / 1024)) MiB, $thr0 threads" >&2
log=$run_dir/cycles.tsv
printf 'cycle\tmode\troot\tend\tcli_exit\tsecs\tleft_instrumented\twaited_s\trss_mib\tthreads\trequests\terrors\n' >"$log"
left=0; failed=0; rss_max=$rss0; thr_max=$thr0
for ((i = 0; i < n; i++)); do
    root=${roots[$(((i / 4) % 2))]}
    out=$run_dir/p.json
    rm -f "$out"
    t0=$(date +%s.%N)
    end=duration
    case $((i % 4)) in
        0) mode=root; timeout 300 "$ferrofluid" attach "$SERVER_PID" --root "$root" --duration "${profile}s" -o "$out" \
               >"$run_dir/cli.out" 2>&1; rc=$? ;;
        1) mode=region; timeout 300 "$ferrofluid" attach "$SERVER_PID" --region "$root" --duration "${profile}s" -o "$out" \
               >"$run_dir/cli.out" 2>&1; rc=$? ;;
        *) mode=root
           if [ $((i % 4)) -eq 2 ]; then end=SIGINT; sig=INT; else end=SIGKILL; sig=KILL; fi
           # stdin stays open (no Enter): the session ends by the signal. Job control on, so
           # that the background tool does not start with SIGINT ignored.
           set -m
           "$ferrofluid" attach "$SERVER_PID" --root "$root" -o "$out" < <(sleep $((profile + 300))) >"$run_dir/cli.out" 2>&1 &
           cli=$!
           set +m
           sleep "$profile"
           # Past attaching and instrumenting (signals before that are another test).
           for _ in $(seq 1 300); do grep -q "profiling" "$run_dir/cli.out" && break; sleep 0.1; done
           kill -s "$sig" "$cli" 2>/dev/null
           for _ in $(seq 1 300); do kill -0 "$cli" 2>/dev/null || break; sleep 0.1; done
           kill -KILL "$cli" 2>/dev/null
           wait "$cli" 2>/dev/null; rc=$? ;;
    esac
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    # Nothing may stay instrumented; after SIGKILL the agent has --grace seconds to notice.
    waited=0
    inst=$(instrumented)
    while [ "$inst" != 0 ] && [ "$end" = SIGKILL ] && [ "$waited" -lt "$grace" ]; do
        sleep 1; waited=$((waited + 1)); inst=$(instrumented)
    done
    if [ "$inst" != 0 ]; then
        left=$((left + 1))
        echo "cycle $i ($mode $end $root): still instrumented ($inst classes) after ${waited}s; detaching" >&2
        timeout 60 "$ferrofluid" attach "$SERVER_PID" --detach >/dev/null 2>&1
    fi
    if [ "$end" = duration ] && [ "$rc" -ne 0 ]; then
        failed=$((failed + 1))
        echo "cycle $i ($mode $root): ferrofluid exit $rc: $(tail -1 "$run_dir/cli.out")" >&2
    fi
    sleep 2
    rss=$(proc_field VmRSS); thr=$(proc_field Threads)
    [ "$rss" -gt "$rss_max" ] && rss_max=$rss
    [ "$thr" -gt "$thr_max" ] && thr_max=$thr
    printf '%d\t%s\t%s\t%s\t%d\t%.1f\t%s\t%d\t%d\t%d\t%s\t%s\n' "$i" "$mode" "$root" "$end" "$rc" "$secs" "$inst" \
        "$waited" $((rss / 1024)) "$thr" "$(done_requests)" "$(errors)" >>"$log"
    [ $((i % 10)) -eq 9 ] && echo "soak: $((i + 1))/$n cycles; RSS $((rss / 1024)) MiB, $thr threads, $(errors) wrong answers, $left left instrumented" >&2
done
rss1=$(proc_field VmRSS); thr1=$(proc_field Threads)
[[ ${SERVER_JAVA_OPTS:-} == *NativeMemoryTracking* ]] && nmt after
errs=$(errors)
printf '\n| server | cycles | wrong answers | left instrumented (cleaned up) | duration runs failed | RSS before/max/after (MiB) | threads before/max/after |\n|---|---|---|---|---|---|---|\n'
printf '| %s | %d | %s | %d | %d | %d / %d / %d | %d / %d / %d |\n' "$server" "$n" "$errs" "$left" "$failed" \
    $((rss0 / 1024)) $((rss_max / 1024)) $((rss1 / 1024)) "$thr0" "$thr_max" "$thr1"
echo "per cycle: $log"
[ "$errs" = 0 ] && [ "$left" -eq 0 ] && [ "$failed" -eq 0 ]
