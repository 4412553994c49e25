#!/usr/bin/env bash
# Side by side, same run: nucx perftest vs ucx_perftest (apt ucx-utils) over tcp on loopback.
# tag_lat 8 B, tag_bw 64 KiB and tag_bw 1 MiB (nucx also with -D zcopy: eager zero-copy forced); prints each tool's
# Final line and the ratios. Needs bin/build first. WARMUP_SECONDS (default 30) warms each nucx run up that long first,
# as compare-shm.sh does (the JIT compiler needs tens of seconds on two busy cores; ucx_perftest has nothing to warm
# up); WARMUP_SECONDS=0.1 measures cold.
# Usage: bench/compare-tcp.sh [LAT_ITERS] [BW_ITERS (1 MiB; 64 KiB runs 16x as many)]
set -euo pipefail
cd "$(dirname "$0")/.."
lat_n=${1:-1000000}
bw_n=${2:-2000}
command -v ucx_perftest >/dev/null || { echo "ucx_perftest missing: apt-get install -y ucx-utils" >&2; exit 1; }
. bench/lib.sh
warm="-w 1000000000 --warmup-time ${WARMUP_SECONDS:-30}"

run_all() {
    pair "ucx_lat"      "UCX_TLS=tcp ucx_perftest"                      env UCX_TLS=tcp ucx_perftest -t tag_lat -s 8 -n "$lat_n"
    pair "nucx_lat"     "NUCX_TLS=tcp bin/nucx perftest"                env NUCX_TLS=tcp bin/nucx perftest $warm -t tag_lat -s 8 -n "$lat_n"
    pair "ucx_lo_lat"   "UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest"   env UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest -t tag_lat -s 8 -n "$lat_n"
    pair "ucx_bw"       "UCX_TLS=tcp ucx_perftest"                      env UCX_TLS=tcp ucx_perftest -t tag_bw -s 1048576 -n "$bw_n"
    pair "nucx_bw"      "NUCX_TLS=tcp bin/nucx perftest"                env NUCX_TLS=tcp bin/nucx perftest $warm -t tag_bw -s 1048576 -n "$bw_n"
    pair "ucx_lo_bw"    "UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest"   env UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest -t tag_bw -s 1048576 -n "$bw_n"
    pair "ucx_bw64"     "UCX_TLS=tcp ucx_perftest"                      env UCX_TLS=tcp ucx_perftest -t tag_bw -s 65536 -n $((bw_n * 16))
    pair "nucx_bw64"    "NUCX_TLS=tcp bin/nucx perftest"                env NUCX_TLS=tcp bin/nucx perftest $warm -t tag_bw -s 65536 -n $((bw_n * 16))
    pair "ucx_lo_bw64"  "UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest"   env UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest -t tag_bw -s 65536 -n $((bw_n * 16))
    pair "nucx_zc_bw"   "NUCX_TLS=tcp bin/nucx perftest"                env NUCX_TLS=tcp bin/nucx perftest $warm -D zcopy -t tag_bw -s 1048576 -n "$bw_n"
    pair "nucx_zc_bw64" "NUCX_TLS=tcp bin/nucx perftest"                env NUCX_TLS=tcp bin/nucx perftest $warm -D zcopy -t tag_bw -s 65536 -n $((bw_n * 16))
}

results=$(run_all)
echo "name iterations p50_us avg_us overall_us avg_MBps overall_MBps avg_msgps overall_msgps"
echo "$results"
echo "$results" | awk '
    {v[$1"_p50"]=$3; v[$1"_lat"]=$5; v[$1"_bw"]=$7}
    END {
        printf "latency ratio nucx/ucx (overall, lower is better): %.2f (vs ucx lo only: %.2f); median ratio %.2f\n",
            v["nucx_lat_lat"]/v["ucx_lat_lat"], v["nucx_lat_lat"]/v["ucx_lo_lat_lat"], v["nucx_lat_p50"]/v["ucx_lat_p50"];
        printf "bandwidth ratio 1 MiB nucx/ucx (overall, higher is better): %.2f (vs ucx lo only: %.2f)\n",
            v["nucx_bw_bw"]/v["ucx_bw_bw"], v["nucx_bw_bw"]/v["ucx_lo_bw_bw"];
        printf "bandwidth ratio 64 KiB nucx/ucx (overall, higher is better): %.2f (vs ucx lo only: %.2f)\n",
            v["nucx_bw64_bw"]/v["ucx_bw64_bw"], v["nucx_bw64_bw"]/v["ucx_lo_bw64_bw"];
        printf "with -D zcopy, 1 MiB: %.2f, 64 KiB: %.2f (nucx/ucx overall)\n",
            v["nucx_zc_bw_bw"]/v["ucx_bw_bw"], v["nucx_zc_bw64_bw"]/v["ucx_bw64_bw"];
    }'
