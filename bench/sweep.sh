#!/usr/bin/env bash
# The protocol-choice sweep and its side-by-side with UCX (issue #15), in one run:
#  1. bin/nucx calibrate: this machine's figures into OUT/perf-profile.txt, which both sides of every nucx run then
#     load (PROFILE=static sweeps the static model instead; PROFILE=FILE uses a profile made earlier);
#  2. per transport set (tcp, shm, shm+cma): ucx_perftest at every power of two from 1 B to MAX_SIZE, then
#     bin/nucx perftest --sweep (the engine's choice and each protocol forced by hand, in alternating rounds, at the
#     same powers of two and at both sides of every crossover of its table), then ucx_perftest again: UCX's two rounds
#     bracket nucx's, so a change of load between them shows;
#  3. bin/nucx sweep-report: the tables (choice against the best forced protocol; nucx against UCX) and the plots;
#  4. every miss where another protocol was faster run again in turns, the choice against that protocol
#     (bench/interleave.py; RECHECK=0 skips it, RECHECK_WARMUP and RECHECK_MEASURE set its seconds, 10 and 30);
#     With UPDATE_DOCS=1 (the default) the BENCHMARKS.md section between the sweep markers is replaced by the report
#     and the plots it shows are copied to bench/plots/.
# Everything the run writes goes to OUT (default bench/out/sweep-DATE): runs.csv per tool, summaries, plots, logs.
# Needs bin/build first (in a worktree: mvn verify -DskipTests). Usage: bench/sweep.sh [OUT]
# Environment: TEST (tag_lat | tag_bw; tag_lat), ROUNDS (3), RUN_TIME (seconds per run, 0.4), WARMUP (seconds of
#   unrecorded nucx runs per set, 20), MAX_SIZE (67108864), SETS ("tcp;shm;shm,cma"), PROFILE (calibrate | static |
#   FILE; calibrate), UPDATE_DOCS (1 | 0), METRIC (overall | percentile; overall) and PERCENTILE (-R of both tools and
#   of calibrate's ping-pongs; 50): on a machine busy with other work, METRIC=percentile PERCENTILE=10 compares the
#   iterations nothing preempted, where averages measure the other work. FRESH=1 has nucx's runs, calibrate's too,
#   write their send buffers before every send (perftest and calibrate --fresh-data); ucx_perftest has no such mode,
#   so its curves stay the same-data ones. Without a profile, nucx prices cma's read for fresh data either way
#   (NUCX_CMA_DATA=fresh, the default); NUCX_CMA_DATA=same prices it for the unchanged buffer a FRESH=0 sweep sends.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/sweep-$(date -u +%Y%m%d-%H%M%S)}
test_name=${TEST:-tag_lat}
rounds=${ROUNDS:-3}
run_time=${RUN_TIME:-0.4}
warmup=${WARMUP:-20}
max_size=${MAX_SIZE:-67108864}
sets=${SETS:-tcp;shm;shm,cma}
profile=${PROFILE:-calibrate}
metric=${METRIC:-overall}
percentile=${PERCENTILE:-50}
fresh_flag=()
[ "${FRESH:-0}" = 1 ] && fresh_flag=(--fresh-data)
if ! command -v ucx_perftest >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y ucx-utils >/dev/null
    else
        echo "ucx_perftest missing: apt-get install -y ucx-utils" >&2
        exit 1
    fi
fi
. bench/lib.sh
mkdir -p "$out"
out=$(cd "$out" && pwd)
ucx_csv="$out/ucx-runs.csv"
echo "tool,tls,test,size,config,round,iterations,percentile,pct_us,overall_us,bandwidth_mbs,msg_rate,carried_by,chosen,load1,time" \
    >"$ucx_csv"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load_start=$(cut -d' ' -f1 /proc/loadavg)

case "$profile" in
    calibrate)
        bin/nucx calibrate -R "$percentile" ${fresh_flag[@]+"${fresh_flag[@]}"} -o "$out/perf-profile.txt" | tee "$out/calibrate.log"
        export NUCX_PERF_PROFILE="$out/perf-profile.txt" ;;
    static) unset NUCX_PERF_PROFILE ;;
    *) export NUCX_PERF_PROFILE=$(cd "$(dirname "$profile")" && pwd)/$(basename "$profile") ;;
esac

ucx_env() { # the UCX transports beside a nucx set: one loopback device for tcp, as nucx uses
    case "$1" in
        tcp) echo "UCX_TLS=tcp UCX_NET_DEVICES=lo" ;;
        shm) echo "UCX_TLS=posix,self" ;;
        shm,cma) echo "UCX_TLS=posix,self,cma" ;;
        *) echo "no UCX counterpart for nucx transports '$1'" >&2; return 1 ;;
    esac
}

iterations() { # enough for about RUN_TIME seconds, guessing 5 us + 2 GB/s each way; at least 20
    awk -v s="$1" -v t="$run_time" 'BEGIN { per = 2 * (5e-6 + s / 2e9); n = int(t / per);
        if (n < 20) n = 20; if (n > 1000000) n = 1000000; print n }'
}

ucx_round() { # tls label round
    local envs size n line it p50 avg overall avgbw bw avgmr mr load t
    envs=$(ucx_env "$1")
    for ((size = 1; size <= max_size; size *= 2)); do
        port=$((port + 1)) # pair's own increment is lost in the $( ) subshell
        n=$(iterations "$size")
        load=$(cut -d' ' -f1 /proc/loadavg)
        t=$(date -u +%Y-%m-%dT%H:%M:%SZ)
        # shellcheck disable=SC2086
        line=$(pair ucx "env $envs ucx_perftest" env $envs ucx_perftest -t "$test_name" -s "$size" -n "$n" \
            -R "$percentile" || true)
        read -r _ it p50 avg overall avgbw bw avgmr mr <<<"$line" || true
        if [ -z "${mr:-}" ]; then
            echo "ucx_perftest $envs -t $test_name -s $size: no Final line" >&2
            continue
        fi
        echo "ucx,$2,$test_name,$size,ucx,$3,$it,$percentile,$p50,$overall,$bw,$mr,-,-,$load,$t" >>"$ucx_csv"
        echo "ucx      $2 $size r$3: $overall us, p$percentile $p50 us (load $load)"
    done
}

IFS=';' read -r -a set_list <<<"$sets"
for tls in "${set_list[@]}"; do
    label=${tls//,/+}
    ucx_round "$tls" "$label" 0
    bin/nucx perftest --sweep -t "$test_name" --tls "$tls" --rounds "$rounds" --run-time "$run_time" \
        -R "$percentile" --metric "$metric" \
        --sweep-warmup "$warmup" --max-size "$max_size" ${fresh_flag[@]+"${fresh_flag[@]}"} --out "$out/nucx-$label" | tee "$out/nucx-$label.log"
    ucx_round "$tls" "$label" 1
done

bin/nucx sweep-report --metric "$metric" --out "$out/report" --plot-prefix bench/plots/ "$out"/nucx-*/runs.csv \
    "$ucx_csv"

# The misses where another protocol forced by hand was faster, run again in turns: runs one after the other compare a
# machine that may have changed speed between them (this one switches within seconds), turns of a fraction of a second
# compare the same one. bench/interleave.py runs the choice and that protocol as two pairs of processes taking turns.
recheck_md="$out/report/recheck.md"
: >"$recheck_md"
if [ "${RECHECK:-1}" = 1 ] && [ "$(wc -l <"$out/report/recheck.csv")" -gt 1 ]; then
    recheck_warmup=${RECHECK_WARMUP:-10}
    recheck_measure=${RECHECK_MEASURE:-30}
    # the tolerance the report judged by (SweepSummary.TOLERANCE), as its recheck.csv gives it with every row
    within_pct=$(awk -F, 'NR == 2 { printf "%d", ($6 - 1) * 100 + 0.5 }' "$out/report/recheck.csv")
    {
        echo "**The misses where another protocol was faster, run again in turns** (\`bench/interleave.py --warmup"
        echo "$recheck_warmup --measure $recheck_measure $test_name SIZE . .+SETTINGS\`: the engine's choice and the"
        echo "best forced protocol as two pairs of processes, one pair running at a time in turns; the ratio of each"
        echo "couple of rows nearest in time, its median and quartiles):"
        echo
        echo "| set | size | engine's choice | best forced | auto / best in turns (quartiles) | within $within_pct % |"
        echo "|---|---|---|---|---|---|"
    } >>"$recheck_md"
    while IFS=, read -r r_tls r_test r_size r_chosen r_best r_bound r_settings; do
        [ "$r_tls" = tls ] && continue
        line=$(NUCX_TLS=${r_tls//+/,} NUCX_ARGS="${fresh_flag[*]+${fresh_flag[*]}}" python3 bench/interleave.py \
            --warmup "$recheck_warmup" --measure "$recheck_measure" "$r_test" "$r_size" . ".+$r_settings" 2>&1 \
            </dev/null | grep -E ' / [^:]+: ratio median' | tail -n 1 || true)
        # interleave reports forced / auto; the table's ratio is auto / best
        verdict=$(awk -v l="$line" -v bound="$r_bound" 'BEGIN { if (match(l, /ratio median [0-9.]+ \(quartiles [0-9.]+, [0-9.]+\)/)) {
                split(substr(l, RSTART, RLENGTH), f, /[ (),]+/); m = f[3]; lo = f[5]; hi = f[6];
                printf "%.3f (%.3f, %.3f) | %s", 1 / m, 1 / hi, 1 / lo, (1 / m <= bound ? "yes" : "**no**") }
            else print "not measured | -" }')
        echo "| $r_tls | $r_size | $r_chosen | $r_best | $verdict |" >>"$recheck_md"
        echo "in turns: $r_tls $r_size $r_chosen against $r_best: $verdict"
    done <"$out/report/recheck.csv"
    echo >>"$recheck_md"
fi
load_end=$(cut -d' ' -f1 /proc/loadavg)
echo "report: $out/report/report.md"

if [ "${UPDATE_DOCS:-1}" = 1 ]; then
    mkdir -p bench/plots
    section="$out/benchmarks-section.md"
    {
        echo "## Protocol choice and UCX side by side, 1 B to $((max_size / 1048576)) MiB (issue #15): \`bench/sweep.sh\`"
        echo
        echo "Run of $started, 1-minute load average $load_start at the start and $load_end at the end (2 cores;"
        echo "each row's own load is in the runs files). Command: \`TEST=$test_name ROUNDS=$rounds RUN_TIME=$run_time"
        echo "WARMUP=$warmup MAX_SIZE=$max_size SETS='$sets' PROFILE=$profile METRIC=$metric PERCENTILE=$percentile"
        echo "bench/sweep.sh\`. Per transport set:"
        echo "ucx_perftest 1.13 at each power of two, then \`bin/nucx perftest --sweep\` ($rounds rounds, the order of"
        echo "the protocols rotated each round, about $run_time s per run), then ucx_perftest again; times are per"
        echo "message (one way for tag_lat; METRIC=$metric: each run's average, or its ${percentile}th percentile of"
        echo "iterations), medians of the rounds. \"auto\" is the protocol nucx's engine picks by"
        echo "itself; \"best forced\" the fastest of the protocols it could have picked, each forced by hand"
        echo "(NUCX_PROTOS and thresholds, checked against the sender's protocol counters)."
        if [ -n "${NUCX_PERF_PROFILE:-}" ]; then
            echo
            echo "Cost model figures: the profile \`bin/nucx calibrate\` measured in this run:"
            echo
            echo '```'
            grep -v '^#' "$NUCX_PERF_PROFILE" | sed 's/ *#.*//'
            echo '```'
        else
            echo
            echo "Cost model figures: the transports' static estimates (no profile)."
        fi
        echo
        cat "$out/report/report.md"
        cat "$recheck_md"
        for tls in "${set_list[@]}"; do
            label=${tls//,/+}
            png="sweep-$label-$test_name.png"
            cp "$out/nucx-$label/$png" bench/plots/
            echo "![nucx $test_name over $tls: the engine's choice and each protocol forced](bench/plots/$png)"
            echo
        done
    } >"$section"
    cp "$out"/report/compare-*.png bench/plots/
    python3 - "$section" <<'EOF'
import re, sys
section = open(sys.argv[1]).read()
begin = "<!-- sweep:begin: bench/sweep.sh rewrites this section -->"
end = "<!-- sweep:end -->"
doc = open("BENCHMARKS.md").read()
block = begin + "\n" + section.rstrip() + "\n" + end
if begin in doc and end in doc:
    doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
else:
    doc = doc.rstrip() + "\n\n" + block + "\n"
open("BENCHMARKS.md", "w").write(doc)
EOF
    echo "BENCHMARKS.md updated; plots in bench/plots/"
fi
