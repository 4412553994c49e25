#!/usr/bin/env bash
# Fast from the first message (issue #15 goal 1): short runs as a person tries them first, each a fresh pair of
# processes, nucx variants alternating with ucx_perftest in the same round. Prints one line per run: variant,
# transport, iterations, the Final line's p50 / average / overall (usec, one-way), the time to steady state (ms from
# process start until three 10k-iteration windows in a row average within 10 % of the measured run's windows; before
# 2026-12-04: until each of three was within 10 % of the last tenth of the windows), the
# client's allocation per iteration, the 1-minute load average when it started, and the machine's mode: a cache line's
# round trip between the two cores before and after the run (`bin/nucx cores`; this VM's host moves its vCPUs between
# cores that share a level-3 cache, about 55-150 ns, and cores that do not, about 315-360 ns, split at 200; shm latency
# follows for both nucx and ucx_perftest: about 0.15 us one way, or 0.35-0.65). At the end, each variant's median by mode and its ratio to
# ucx_perftest's in the same mode (runs whose mode changed between before and after are left out there).
# Usage: bench/cold-start.sh [ROUNDS (3)] [SHM_ITERS (50000)] [TCP_ITERS (20000)]
# VARIANTS overrides the nucx variants: ';'-separated, each "name:ENV=VALUE ENV=VALUE ..." for both processes.
# CLIENT_ARGS adds perftest options to every nucx client, e.g. "--settle-time 0" to measure without waiting for the
# JIT compilers to be quiet after the warm-up (as before 2026-11-27).
# Needs bin/build (or a reactor build plus examples/target/nucx.aot for the AOT variants); ucx_perftest is optional.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shm_n=${2:-50000}
tcp_n=${3:-20000}
# The variants: no AOT cache and no start-up warm-up (a plain JVM), the AOT cache alone, and what bin/nucx perftest
# does by default (the AOT cache and each worker warming up for 2 s before the first message, --jit-warmup).
variants=${VARIANTS:-"plain:NUCX_AOT=n NUCX_WARMUP=0;aot:NUCX_AOT=y NUCX_WARMUP=0;aot+warmup:NUCX_AOT=y NUCX_WARMUP=2s"}
port=${BENCH_BASE_PORT:-14600}
load() { cut -d' ' -f1 /proc/loadavg; }
cores() { NUCX_AOT=y timeout 60 bin/nucx cores --ns 2>/dev/null || echo "?"; }
mode() { # before after: shared, apart or mixed
    if ! [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]]; then echo unknown
    elif [ "$1" -lt 200 ] && [ "$2" -lt 200 ]; then echo shared
    elif [ "$1" -ge 200 ] && [ "$2" -ge 200 ]; then echo apart
    else echo mixed; fi
}

nucx_run() { # name tls iters env...
    local name=$1 tls=$2 n=$3; shift 3
    port=$((port + 1))
    local l; l=$(load)
    local before; before=$(cores)
    env "$@" NUCX_TLS="$tls" timeout 600 bin/nucx perftest -p $port >/dev/null 2>&1 &
    local spid=$!
    sleep 1
    local out
    # shellcheck disable=SC2086
    out=$(env "$@" NUCX_TLS="$tls" timeout 600 bin/nucx perftest 127.0.0.1 -p $port -t tag_lat -s 8 -n "$n" \
        --windows 10000 ${CLIENT_ARGS:-} 2>&1 || true)
    wait $spid || true
    local fin steady alloc
    fin=$(echo "$out" | awk '/^Final:/ {print $3, $4, $5}')
    steady=$(echo "$out" | sed -n 's/^Steady state: \([0-9]*\) ms.*/\1/p')
    alloc=$(echo "$out" | sed -n 's/^Allocated.*client \([0-9.]*\),.*/\1/p')
    local after; after=$(cores)
    echo "$name $tls $n ${fin:-failed} steady_ms=${steady:-none} alloc=${alloc:-?} load=$l" \
        "cores_ns=$before/$after mode=$(mode "$before" "$after")"
}

ucx_run() { # tls iters
    command -v ucx_perftest >/dev/null || return 0
    local ucx_tls=$1 n=$2
    port=$((port + 1))
    local l; l=$(load)
    local before; before=$(cores)
    UCX_TLS=$ucx_tls timeout 300 ucx_perftest -p $port >/dev/null 2>&1 &
    local spid=$!
    sleep 1
    local fin
    fin=$(UCX_TLS=$ucx_tls timeout 300 ucx_perftest 127.0.0.1 -p $port -t tag_lat -s 8 -n "$n" 2>&1 \
        | awk '/^Final:/ {print $3, $4, $5}' || true)
    wait $spid || true
    local after; after=$(cores)
    echo "ucx_perftest $ucx_tls $n ${fin:-failed} steady_ms=- alloc=- load=$l" \
        "cores_ns=$before/$after mode=$(mode "$before" "$after")"
}

echo "variant transport iterations p50_us avg_us overall_us steady alloc_B load1 cores mode"
for r in $(seq 1 "$rounds"); do
    IFS=';' read -ra vs <<<"$variants"
    for tls in shm tcp; do
        n=$shm_n; [ "$tls" = tcp ] && n=$tcp_n
        if [ "$tls" = shm ]; then ucx_run posix,self "$n"; else ucx_run tcp "$n"; fi
        for v in "${vs[@]}"; do
            # shellcheck disable=SC2086
            nucx_run "${v%%:*}" "$tls" "$n" ${v#*:}
        done
    done
done | awk '
    { print; fflush() }
    # Medians of avg_us by variant, transport and mode; each against ucx_perftest in the same transport and mode.
    $4 ~ /^[0-9.]+$/ && $NF ~ /^mode=(shared|apart)$/ {
        m = substr($NF, 6); t = ($2 == "posix,self") ? "shm" : $2; k = $1 SUBSEP t SUBSEP m
        v[k, ++c[k]] = $5 + 0; keys[k] = 1
    }
    function median(k,   n, i, j, x, a) {
        n = c[k]; for (i = 1; i <= n; i++) a[i] = v[k, i]
        for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        print "\nby mode (median of avg_us; runs whose mode did not change):"
        sort = "sort"
        for (k in keys) {
            split(k, p, SUBSEP); u = "ucx_perftest" SUBSEP p[2] SUBSEP p[3]
            if (p[1] == "ucx_perftest") continue
            r = (u in keys) ? sprintf("%.2f x ucx_perftest (%.3f us, %d runs)", median(k) / median(u), median(u), c[u]) \
                : "no ucx_perftest run in this mode"
            printf "%s %s %s: %.3f us (%d runs), %s\n", p[1], p[2], p[3], median(k), c[k], r | sort
        }
        close(sort)
    }'
