#!/usr/bin/env bash
# Where a tcp tag_lat 8 B one-way trip goes, nucx against UCX in alternating rounds: each pair runs pinned (server
# CPU 0, client CPU 1, both busy-polling), and after its warm-up `perf record` takes the send, receive and
# epoll_wait system calls of both processes for one second; bench/tcp-hops.py splits a one-way trip into each call's
# own time and the user-space time between them. Tracing adds its cost to every step alike, so compare the steps, not
# the totals with untraced runs. Needs perf (apt-get install linux-perf) and ucx_perftest (ucx-utils); run as root.
# Usage: bench/tcp-hops.sh [ROUNDS]   (SIZE, default 8)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2} size=${SIZE:-8}
command -v perf >/dev/null || { echo "perf missing: apt-get install -y linux-perf" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "ucx_perftest missing: apt-get install -y ucx-utils" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=${BENCH_BASE_PORT:-18500}
events=()
for call in sendto sendmsg recvfrom recvmsg epoll_wait; do
    events+=(-e "syscalls:sys_enter_$call" -e "syscalls:sys_exit_$call")
done

trace() { # label, server pid, client pid
    perf record -q -a "${events[@]}" -o "$out/$1.data" -- sleep 1 >/dev/null 2>&1
    perf script --ns -i "$out/$1.data" -F pid,tid,time,event,trace 2>/dev/null | python3 bench/tcp-hops.py "$1" "$2,$3"
}

run() { # label, warm-up seconds, server command, client command (without host and port)
    local label=$1 settle=$2 server=$3 client=$4
    port=$((port + 1))
    taskset -c 0 bash -c "exec $server -p $port" >/dev/null 2>&1 &
    local spid=$!
    sleep 1.5
    taskset -c 1 bash -c "exec $client 127.0.0.1 -p $port" > "$out/$label.out" 2>&1 &
    local cpid=$!
    sleep "$settle"
    trace "$label" "$spid" "$cpid"
    wait $cpid || true
    wait $spid || true
    echo "$label Final: $(grep '^Final:' "$out/$label.out" | sed 's/Final: *//')"
}

for round in $(seq 1 "$rounds"); do
    echo "# round $round"
    run nucx 6 "env NUCX_TLS=tcp bin/nucx perftest" \
        "env NUCX_TLS=tcp bin/nucx perftest --warmup-time 3 -t tag_lat -s $size -n 500000"
    run ucx 3 "env UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest" \
        "env UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest -w 20000 -t tag_lat -s $size -n 600000"
done
