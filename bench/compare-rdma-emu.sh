#!/usr/bin/env bash
# Side by side over nucx's verbs emulator (transport/src/test/c/verbs-emu; no RDMA hardware): nucx perftest over its
# rdma lanes (NUCX_TLS=rdma,tcp, NUCX_VERBS_LIB = the emulator) and UCX's ucx_perftest at UCT level (rc_verbs on
# emu0:1; UCP-level UCX needs ud_verbs for its wireup, which the emulator does not carry). Emulator figures: what the
# emulator's "NIC" threads cost on this machine, nothing about hardware.
#   latency:  nucx tag_lat 8 B (UCP level, rdma AM lane)      vs  UCT am_lat 8 B
#   put:      nucx ucp_put_bw 1 MiB (RMA API; one rail, then   vs  UCT put_bw 1 MiB zcopy
#             both rails: NUCX_MAX_RNDV_LANES=1 / 2)
#   get:      nucx ucp_get 1 MiB (one rail, then both)         vs  UCT get 1 MiB zcopy
#   nucx tag_bw 1 MiB (rendezvous GET over both rails; no UCT counterpart)
# Needs bin/build (or a reactor `mvn verify`) first; UCX needs /dev/infiniband/uverbs0..1 (--make-dev-nodes as root
# makes them and removes them on exit). Usage: bench/compare-rdma-emu.sh [--make-dev-nodes] [LAT_ITERS] [BW_ITERS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/emu-lib.sh "$@"
set -- "${args[@]}"
lat_n=${1:-20000}
bw_n=${2:-500}
. bench/lib.sh
warm="--warmup-time ${WARMUP_SECONDS:-5}"
ucx="env LD_LIBRARY_PATH=$emu ucx_perftest -x rc_verbs -d emu0:1"
nucx1="env NUCX_TLS=rdma,tcp NUCX_VERBS_LIB=$emu/libibverbs.so.1 NUCX_MAX_RNDV_LANES=1 bin/nucx perftest"
nucx2="env NUCX_TLS=rdma,tcp NUCX_VERBS_LIB=$emu/libibverbs.so.1 NUCX_MAX_RNDV_LANES=2 bin/nucx perftest"

echo "name iterations p50_us avg_us overall_us avg_MBps overall_MBps avg_msgps overall_msgps"
pair ucx_am_lat8      "$ucx"   $ucx -t am_lat -s 8 -n "$lat_n"
pair nucx_tag_lat8    "$nucx1" $nucx1 $warm -t tag_lat -s 8 -n "$lat_n"
pair ucx_put_bw1m     "$ucx"   $ucx -t put_bw -D zcopy -s 1048576 -n "$bw_n"
pair nucx_put_bw1m_1  "$nucx1" $nucx1 $warm -t ucp_put_bw -s 1048576 -n "$bw_n"
pair nucx_put_bw1m_2  "$nucx2" $nucx2 $warm -t ucp_put_bw -s 1048576 -n "$bw_n"
pair ucx_get1m        "$ucx"   $ucx -t get -D zcopy -s 1048576 -n "$bw_n"
pair nucx_get1m_1     "$nucx1" $nucx1 $warm -t ucp_get -s 1048576 -n "$bw_n"
pair nucx_get1m_2     "$nucx2" $nucx2 $warm -t ucp_get -s 1048576 -n "$bw_n"
pair nucx_tag_bw1m_2  "$nucx2" $nucx2 $warm -t tag_bw -s 1048576 -n "$bw_n"
