#!/usr/bin/env bash
# UCX's own ucx_perftest (apt ucx-utils; UCX 1.13 here) over nucx's verbs emulator, UCT level, rc_verbs on emu0:1.
# Figures of the emulator on this machine, not of any RDMA hardware.
#
# What UCX needs beyond the emulator's libibverbs.so.1 (the transport test build makes both into
# transport/target/verbs-emu):
#  - libmlx5.so.1: Debian's libuct_ib links the real libmlx5, which needs libibverbs' private provider ABI
#    (IBVERBS_PRIVATE_34); the emulator's stand-in says "not mlx5" and UCX uses plain verbs.
#  - /dev/infiniband/uverbs0 and uverbs1 as character devices UCX may open (uct_ib_device_is_accessible stat()s
#    them). Nothing is read from them. --make-dev-nodes creates them (root; /dev/null's numbers) and removes them
#    on exit; without it the script stops if they are missing.
# UCP-level tests (tag_lat...) fail with "no auxiliary transport": UCX wires RC up over UD (ud_verbs), which the
# emulator does not carry.
#
# Usage: bench/ucx-perftest-emu.sh [--make-dev-nodes] [LAT_ITERS] [BW_ITERS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/emu-lib.sh "$@"
set -- "${args[@]}"
lat_n=${1:-20000}
bw_n=${2:-500}
port=$((20000 + RANDOM % 10000))
run() {
    LD_LIBRARY_PATH=$emu ucx_perftest -p "$port" -x rc_verbs -d emu0:1 "$@" >/dev/null 2>&1 &
    local server=$!
    sleep 1
    LD_LIBRARY_PATH=$emu ucx_perftest localhost -p "$port" -x rc_verbs -d emu0:1 "$@" 2>&1 | grep Final \
        | sed "s/^/$* : /"
    wait "$server" || true
    port=$((port + 1))
}
run -t am_lat -n "$lat_n"
run -t put_lat -D short -n "$lat_n"
run -t put_bw -D zcopy -s 1048576 -n "$bw_n"
run -t get -D zcopy -s 1048576 -n "$bw_n"
