#!/usr/bin/env bash
# Builds against each other and UCX, alternating in every round: each TREE (a checkout built with bin/build) runs
# nucx perftest TEST at SIZE bytes for ITERS iterations, server pinned to CPU 0 and client to CPU 1, then
# ucx_perftest the same way; one line per run (the Final line, and nucx's tail percentiles). The machine here
# switches between a fast and a slow mode from run to run (UCX shm tag_lat 8 B: 0.10 or 0.48 us), so compare
# within a round. Usage: bench/alternate.sh TEST SIZE ITERS ROUNDS TREE...
# NUCX_TLS (default shm) and UCX_TLS (default posix,self,cma) choose the transports; WARMUP_SECONDS (default 10)
# is nucx's warm-up, UCX_WARMUP (default 1000000) ucx_perftest's warm-up iterations (fewer for large messages).
set -euo pipefail
cd "$(dirname "$0")/.."
test=$1 size=$2 iters=$3 rounds=$4
shift 4
tls=${NUCX_TLS:-shm}
ucx_tls=${UCX_TLS:-posix,self,cma}
warm=${WARMUP_SECONDS:-10}
ucx_warm=${UCX_WARMUP:-1000000}
command -v ucx_perftest >/dev/null || { echo "ucx_perftest missing: apt-get install -y ucx-utils" >&2; exit 1; }
port=${BENCH_BASE_PORT:-17500}

run() { # label, server command, client command...
    local label=$1 server=$2; shift 2
    port=$((port + 1))
    timeout 600 taskset -c 0 bash -c "$server -p $port" >/dev/null 2>&1 &
    local spid=$!
    sleep 1.5
    local out
    out=$(timeout 600 taskset -c 1 "$@" 127.0.0.1 -p $port 2>&1 || true)
    wait $spid || true
    printf '%-12s %s %s\n' "$label" "$(echo "$out" | grep '^Final:' | sed 's/Final: *//')" \
        "$(echo "$out" | grep '^Tail' | cut -d: -f2-)"
}

for r in $(seq 1 "$rounds"); do
    echo "round $r: $test $size B, $iters iterations, NUCX_TLS=$tls / UCX_TLS=$ucx_tls"
    for tree in "$@"; do
        run "$(basename "$tree")" "NUCX_TLS=$tls $tree/bin/nucx perftest" env NUCX_TLS="$tls" "$tree/bin/nucx" \
            perftest --tail -w 1000000000 --warmup-time "$warm" -t "$test" -s "$size" -n "$iters"
    done
    run ucx "UCX_TLS=$ucx_tls ucx_perftest" env UCX_TLS="$ucx_tls" ucx_perftest -w "$ucx_warm" -t "$test" -s "$size" \
        -n "$iters"
done
