#!/usr/bin/env bash
# The same apps (Netty HTTP/1.1 codecs, Reactor Netty, gRPC-java; io.nucx.examples.frameworks) over plain Netty TCP on
# loopback (epoll) and over nucx (the channel pair; NUCX_TLS, default shm,cma: two processes of this host), server and
# client in two processes. Per framework and stack: latency (one request at a time, 64 B each way) and throughput
# (8 in flight, 64 KiB and 1 MiB request bodies; 64 KiB takes ten times the 1 MiB count). Runs every pair ROUNDS
# times, alternating the stacks, because the machine is shared and noisy. Each run warms up for WARM (default 20s, a
# time: the JIT compilers of both processes took over 10 s to settle HTTP's and gRPC's 64 KiB paths here, so a count
# that warms one test leaves another cold; WARM=count warms up by counts instead, as the figures before 2026-12-04 22:40 UTC
# did: a quarter of the latency count, an eighth of the 64 KiB count, a fifth of the 1 MiB count). Needs `mvn verify`
# (examples/target/lib) first.
# Usage: bench/compare-frameworks.sh [ROUNDS (2)] [LAT_ITERS (20000)] [BW_ITERS_1M (4000)] [NUCX_TLS (shm,cma)]
# FRAMEWORKS (default "http reactor grpc"), TESTS (default "lat bw64k bw1m") and STACKS (default "tcp nucx") choose
# a part; NUCX_* variables in the environment reach both processes (e.g. NUCX_SHM_SPIN=0). A stack written as a list
# (STACKS=tcp,nucx) runs those stacks in turns within one run (FrameworkBench: 40 turns each, one server process
# serving both), which compares them on the same machine; it prints each stack's line and their ratios turn by turn.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
lat_n=${2:-20000}
bw_n=${3:-4000}
warm=${WARM:-20s}
tls=${4:-shm,cma}
. bin/jdk25.sh
cpfile=$(mktemp)
trap 'rm -f "$cpfile"' EXIT
# The frameworks are provided dependencies of examples: bring them from the local repository.
mvn -q -o -pl examples dependency:build-classpath -Dmdep.includeScope=provided -Dmdep.excludeGroupIds=io.nucx -Dmdep.outputFile="$cpfile" >/dev/null
cp="examples/target/classes:examples/target/lib/*:$(cat "$cpfile")"
java=(java --enable-native-access=ALL-UNNAMED -Xmx2g -cp "$cp")

run() { # framework stack mode size iterations warmup
    local fw=$1 stack=$2; shift 2
    local fifo out port spid
    fifo=$(mktemp -u) && mkfifo "$fifo"
    out=$(mktemp)
    env NUCX_TLS="$tls" "${java[@]}" io.nucx.examples.frameworks.FrameworkServer "$fw" "$stack" <"$fifo" >"$out" 2>&1 &
    spid=$!
    exec 9>"$fifo"
    for _ in $(seq 100); do grep -q '^PORT' "$out" && break; sleep 0.1; done
    port=$(awk '/^PORT/ {print $2}' "$out")
    env NUCX_TLS="$tls" timeout 600 "${java[@]}" io.nucx.examples.frameworks.FrameworkBench "$fw" "$stack" "$port" "$@" \
        2>/dev/null | grep '^RESULT' || echo "RESULT $fw $stack $* FAILED"
    echo stop >&9
    exec 9>&-
    wait "$spid" || true
    rm -f "$fifo" "$out"
}

warmup() { # the warm-up: WARM, or the count given where WARM=count
    if [ "$warm" = count ]; then echo "$1"; else echo "$warm"; fi
}

frameworks=${FRAMEWORKS:-http reactor grpc}
tests=${TESTS:-lat bw64k bw1m}
stacks=${STACKS:-tcp nucx}
for round in $(seq "$rounds"); do
    echo "# round $round"
    order=$stacks
    [ $((round % 2)) -eq 0 ] && order=$(echo "$stacks" | awk '{for (i = NF; i > 0; i--) printf "%s ", $i}')
    for fw in $frameworks; do
        for stack in $order; do
            for t in $tests; do
                case $t in
                    lat) run "$fw" "$stack" lat 64 "$lat_n" "$(warmup $((lat_n / 4)))" ;;
                    bw64k) run "$fw" "$stack" bw 65536 $((bw_n * 10)) "$(warmup $((bw_n * 10 / 8)))" ;;
                    bw1m) run "$fw" "$stack" bw 1048576 "$bw_n" "$(warmup $((bw_n / 5)))" ;;
                    *) echo "unknown test $t (lat, bw64k, bw1m)" >&2; exit 2 ;;
                esac
            done
        done
    done
done
