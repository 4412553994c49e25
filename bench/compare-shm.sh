#!/usr/bin/env bash
# Side by side, same run: nucx perftest over shm vs ucx_perftest (apt ucx-utils) with UCX_TLS=posix,self,cma.
# tag_lat 8 B and 64 KiB, tag_bw 8 B (message rate), 64 KiB and 1 MiB; prints each Final line and the ratios.
# Needs bin/build first. Usage: bench/compare-shm.sh [LAT_ITERS] [BW_ITERS (1 MiB)] [NUCX_TLS (default shm)]
# WARMUP_SECONDS (default 30) warms nucx up that long first: on two cores busy with two spinning loops, the JIT
# compiler needs tens of seconds to finish; ucx_perftest has nothing to warm up. WARMUP_SECONDS=0.1 measures cold.
set -euo pipefail
cd "$(dirname "$0")/.."
lat_n=${1:-1000000}
bw_n=${2:-5000}
tls=${3:-shm}
warm="-w 1000000000 --warmup-time ${WARMUP_SECONDS:-30} --tail"
command -v ucx_perftest >/dev/null || { echo "ucx_perftest missing: apt-get install -y ucx-utils" >&2; exit 1; }
. bench/lib.sh
ucx="UCX_TLS=posix,self,cma ucx_perftest"
nucx="NUCX_TLS=$tls bin/nucx perftest"

run_all() {
    pair ucx_lat8     "$ucx"  env UCX_TLS=posix,self,cma ucx_perftest -t tag_lat -s 8 -n "$lat_n"
    pair nucx_lat8    "$nucx" env NUCX_TLS="$tls" bin/nucx perftest $warm -t tag_lat -s 8 -n "$lat_n"
    pair ucx_rate8    "$ucx"  env UCX_TLS=posix,self,cma ucx_perftest -t tag_bw -s 8 -n "$lat_n"
    pair nucx_rate8   "$nucx" env NUCX_TLS="$tls" bin/nucx perftest $warm -t tag_bw -s 8 -n "$lat_n"
    pair ucx_lat64k   "$ucx"  env UCX_TLS=posix,self,cma ucx_perftest -t tag_lat -s 65536 -n $((bw_n * 16))
    pair nucx_lat64k  "$nucx" env NUCX_TLS="$tls" bin/nucx perftest $warm -t tag_lat -s 65536 -n $((bw_n * 16))
    pair ucx_bw64k    "$ucx"  env UCX_TLS=posix,self,cma ucx_perftest -t tag_bw -s 65536 -n $((bw_n * 16))
    pair nucx_bw64k   "$nucx" env NUCX_TLS="$tls" bin/nucx perftest $warm -t tag_bw -s 65536 -n $((bw_n * 16))
    pair ucx_bw1m     "$ucx"  env UCX_TLS=posix,self,cma ucx_perftest -t tag_bw -s 1048576 -n "$bw_n"
    pair nucx_bw1m    "$nucx" env NUCX_TLS="$tls" bin/nucx perftest $warm -t tag_bw -s 1048576 -n "$bw_n"
}

results=$(run_all)
echo "name iterations p50_us avg_us overall_us avg_MBps overall_MBps avg_msgps overall_msgps"
echo "$results"
echo "$results" | awk '
    {v[$1"_p50"]=$3; v[$1"_lat"]=$5; v[$1"_bw"]=$7; v[$1"_rate"]=$9}
    END {
        printf "tag_lat 8 B nucx/ucx (overall, lower is better): %.2f; median %.2f\n",
            v["nucx_lat8_lat"]/v["ucx_lat8_lat"], v["nucx_lat8_p50"]/v["ucx_lat8_p50"];
        printf "tag_bw 8 B message rate nucx/ucx (higher is better): %.2f\n", v["nucx_rate8_rate"]/v["ucx_rate8_rate"];
        printf "tag_lat 64 KiB nucx/ucx (overall, lower is better): %.2f; median %.2f\n",
            v["nucx_lat64k_lat"]/v["ucx_lat64k_lat"], v["nucx_lat64k_p50"]/v["ucx_lat64k_p50"];
        printf "tag_bw 64 KiB nucx/ucx (higher is better): %.2f\n", v["nucx_bw64k_bw"]/v["ucx_bw64k_bw"];
        printf "tag_bw 1 MiB nucx/ucx (higher is better): %.2f\n", v["nucx_bw1m_bw"]/v["ucx_bw1m_bw"];
    }'
