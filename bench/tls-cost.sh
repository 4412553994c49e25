#!/usr/bin/env bash
# What TLS on tcp lanes costs: nucx perftest over tcp on loopback, plain against NUCX_TCP_TLS=y with OpenSSL
# (netty-tcnative-boringssl-static) and with the JDK's TLS; tag_lat 8 B, tag_bw 64 KiB and 1 MiB. Certificates are
# made here by the openssl command (one CA, one node certificate both sides use; mutual authentication on).
# Needs bin/build (or a reactor verify) first. Usage: bench/tls-cost.sh [LAT_ITERS] [BW_ITERS (1 MiB)]
set -euo pipefail
cd "$(dirname "$0")/.."
lat_n=${1:-200000}
bw_n=${2:-1000}
. bench/lib.sh
certs=$(mktemp -d)
trap 'rm -rf "$certs"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$certs/ca.key" -out "$certs/ca.pem" -days 2 \
    -subj "/CN=nucx bench CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$certs/node.rsa" -out "$certs/node.csr" -subj "/CN=node" 2>/dev/null
openssl x509 -req -in "$certs/node.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" -CAcreateserial \
    -out "$certs/node.pem" -days 2 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$certs/node.rsa" -out "$certs/node.key"
tls="NUCX_TCP_TLS=y NUCX_TCP_TLS_CERT=$certs/node.pem NUCX_TCP_TLS_KEY=$certs/node.key NUCX_TCP_TLS_CA=$certs/ca.pem"
tls="$tls NUCX_TCP_TLS_MUTUAL=y"

run_all() {
    for variant in plain openssl jdk; do
        case $variant in
            plain) e="NUCX_TLS=tcp" ;;
            *) e="NUCX_TLS=tcp $tls NUCX_TCP_TLS_PROVIDER=$variant" ;;
        esac
        pair "${variant}_lat"  "env $e bin/nucx perftest" env $e bin/nucx perftest -t tag_lat -s 8 -n "$lat_n"
        pair "${variant}_bw64" "env $e bin/nucx perftest" env $e bin/nucx perftest -t tag_bw -s 65536 \
            -n $((bw_n * 16))
        pair "${variant}_bw"   "env $e bin/nucx perftest" env $e bin/nucx perftest -t tag_bw -s 1048576 -n "$bw_n"
    done
}

echo "name iterations p50_us avg_us overall_us avg_MBps overall_MBps avg_msgps overall_msgps"
run_all
