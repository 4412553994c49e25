#!/usr/bin/env bash
# What multi-lane and failover cost or give, same run, nucx perftest only (UCX 1.13 has neither to compare with):
#  - error mode peer against failover over shm: tag_lat 8 B, tag_bw 8 B (failover confirms every read batch with a
#    LANE_ACK and completes sends on it);
#  - tag_bw 4 MiB by rendezvous over shm alone against shm + tcp as an AM_BW lane (data split by bandwidth).
# Needs bin/build first. Usage: bench/compare-lanes.sh [LAT_ITERS] [BW_ITERS (4 MiB)]; WARMUP_SECONDS (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
lat_n=${1:-500000}
bw_n=${2:-2000}
warm="-w 1000000000 --warmup-time ${WARMUP_SECONDS:-10}"
. bench/lib.sh
two="NUCX_TLS=shm,tcp NUCX_MULTI_LANE_MAX_RATIO=20 NUCX_RNDV_THRESH=256k"

results=$(
    pair peer_lat8      "env NUCX_TLS=shm bin/nucx perftest" env NUCX_TLS=shm bin/nucx perftest $warm -t tag_lat -s 8 \
        -n "$lat_n"
    pair failover_lat8  "env NUCX_TLS=shm bin/nucx perftest" env NUCX_TLS=shm bin/nucx perftest -e failover $warm \
        -t tag_lat -s 8 -n "$lat_n"
    pair peer_rate8     "env NUCX_TLS=shm bin/nucx perftest" env NUCX_TLS=shm bin/nucx perftest $warm -t tag_bw -s 8 \
        -n "$lat_n"
    pair failover_rate8 "env NUCX_TLS=shm bin/nucx perftest" env NUCX_TLS=shm bin/nucx perftest -e failover $warm \
        -t tag_bw -s 8 -n "$lat_n"
    pair shm_bw4m       "env NUCX_TLS=shm NUCX_RNDV_THRESH=256k bin/nucx perftest" env NUCX_TLS=shm \
        NUCX_RNDV_THRESH=256k bin/nucx perftest $warm -t tag_bw -s 4194304 -n "$bw_n"
    pair shm_tcp_bw4m   "env $two bin/nucx perftest" env $two bin/nucx perftest $warm -t tag_bw -s 4194304 -n "$bw_n"
)
echo "name iterations p50_us avg_us overall_us avg_MBps overall_MBps avg_msgps overall_msgps"
echo "$results"
echo "$results" | awk '
    {v[$1"_lat"]=$5; v[$1"_bw"]=$7; v[$1"_rate"]=$9}
    END {
        printf "tag_lat 8 B failover/peer (lower is better): %.2f\n", v["failover_lat8_lat"]/v["peer_lat8_lat"];
        printf "tag_bw 8 B failover/peer message rate (higher is better): %.2f\n",
            v["failover_rate8_rate"]/v["peer_rate8_rate"];
        printf "tag_bw 4 MiB shm+tcp/shm (higher is better): %.2f\n", v["shm_tcp_bw4m_bw"]/v["shm_bw4m_bw"];
    }'
