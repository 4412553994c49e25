#!/usr/bin/env bash
# Fast from the first message (issue #15 goal 1) as an application sees it: a fresh JVM per run starts two workers,
# connects one to the other and sends 8 bytes (`bin/nucx first-message`, no JIT warm-up: NUCX_WARMUP=0), trees
# alternating run by run. Prints each run's line, then per tree the medians of: the server's start, connect() plus the
# first message's arrival, and the time from the JVM's start to that arrival.
# Usage: bench/first-message.sh [ROUNDS (8)] [TLS (shm)] [TREE...] (default: this checkout); each TREE built with
# bin/build (its AOT cache is what bin/nucx starts from).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
tls=${2:-shm}
shift $(( $# < 2 ? $# : 2 ))
trees=("$@")
[ ${#trees[@]} -eq 0 ] && trees=(.)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
    for t in "${trees[@]}"; do
        line=$(cd "$t" && NUCX_WARMUP=0 timeout 120 bin/nucx first-message --tls "$tls" 2>&1 | grep '^first-message:' \
            || echo "failed")
        echo "$t $line" | tee -a "$out"
    done
done
python3 - "$out" "${trees[@]}" <<'PY'
import re, statistics, sys
rows = {}
pat = re.compile(r"^(\S+) first-message: JVM up (\d+) ms at the command; server start ([\d.]+), client start ([\d.]+), "
                 r"connect\(\) ([\d.]+), first message received ([\d.]+) \(from the command ([\d.]+), from the JVM's "
                 r"start (\d+)\)")
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        rows.setdefault(m.group(1), []).append((float(m.group(3)), float(m.group(5)) + float(m.group(6)),
                                                 float(m.group(8))))
for tree in sys.argv[2:]:
    r = rows.get(tree, [])
    if not r:
        print(f"{tree}: no run completed")
        continue
    med = [statistics.median(x[i] for x in r) for i in range(3)]
    print(f"{tree}: {len(r)} runs, medians: server start {med[0]:.0f} ms, connect + first message {med[1]:.0f} ms, "
          f"JVM start to first message {med[2]:.0f} ms")
PY
