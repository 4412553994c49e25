#!/usr/bin/env bash
# What the Micrometer binder costs on the hot path (issue #14 item 6): nucx perftest with and without
# --metrics-port (both processes bind their worker's WorkerMetrics to a Prometheus registry served while the test
# runs), in alternating order per round, same build, same transport. Prints each Final line and the ratios of the
# averages (with / without). Needs bin/build first.
# Usage: bench/metrics-cost.sh [ROUNDS (2)] [LAT_ITERS (1000000)] [NUCX_TLS (shm)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
n=${2:-1000000}
tls=${3:-shm}
warm="-w 1000000000 --warmup-time ${WARMUP_SECONDS:-20}"
. bench/lib.sh
mport=${METRICS_BASE_PORT:-19400}

run() { # variant test size
    local variant=$1 test=$2 size=$3 extra_s="" extra_c=""
    if [ "$variant" = metrics ]; then
        mport=$((mport + 2))
        extra_s="--metrics-port $mport"
        extra_c="--metrics-port $((mport + 1))"
    fi
    pair "${variant}_${test}_$size" "env NUCX_TLS=$tls bin/nucx perftest $extra_s" \
        env NUCX_TLS="$tls" bin/nucx perftest $extra_c $warm -t "$test" -s "$size" -n "$n"
}

echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) NUCX_TLS=$tls iterations $n"
results=$(mktemp)
for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then order="plain metrics"; else order="metrics plain"; fi
    for v in $order; do
        run "$v" tag_lat 8 | tee -a "$results"
        run "$v" tag_bw 8 | tee -a "$results"
    done
done
# Final columns: iterations, typical (p50) latency, average latency, overall latency (usec), bandwidth, msg rate
awk '{ key = $1; sub(/^(plain|metrics)_/, "", key); v = ($1 ~ /^metrics_/) ? "m" : "p";
       sum[v, key] += $4; cnt[v, key]++; keys[key] = 1 }
     END { for (k in keys) if (cnt["p", k] && cnt["m", k])
             printf "ratio %s: average latency with metrics / without = %.2f\n", k,
                    (sum["m", k] / cnt["m", k]) / (sum["p", k] / cnt["p", k]) }' "$results"
rm -f "$results"
