# Shared by the compare-*.sh scripts: run a server and a client of one tool, print the client's Final line.
final() { grep '^Final:' | awk '{print $2, $3, $4, $5, $6, $7, $8, $9}'; }

port=${BENCH_BASE_PORT:-13500}

pair() { # name, server command, client command...
    local name=$1 server=$2; shift 2
    port=$((port + 1))
    timeout 300 bash -c "$server -p $port" >/dev/null 2>&1 &
    local spid=$!
    sleep 1
    local out
    out=$(timeout 300 "$@" 127.0.0.1 -p $port)
    wait $spid || true
    echo "$name $(echo "$out" | final)"
    if echo "$out" | grep -q '^Tail'; then echo "${name}_tail $(echo "$out" | grep '^Tail' | cut -d: -f2-)"; fi
}
