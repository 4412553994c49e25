# Shared by the scripts that run UCX's ucx_perftest over nucx's verbs emulator (sourced after `cd` to the project
# root, with the script's arguments): builds the emulator into $emu, and gives UCX the /dev/infiniband/uverbsN
# character devices it stat()s (--make-dev-nodes, as root: /dev/null's numbers, removed on exit; nothing is read from
# them). Leaves the remaining arguments in "${args[@]}".
make_nodes=no
args=("$@")
if [[ ${args[0]:-} == --make-dev-nodes ]]; then
    make_nodes=yes
    args=("${args[@]:1}")
fi
emu=$PWD/transport/target/verbs-emu
command -v ucx_perftest >/dev/null || { echo "ucx_perftest missing: apt-get install -y ucx-utils" >&2; exit 1; }
bash transport/src/test/c/verbs-emu/build.sh "$emu"
[[ -f $emu/libibverbs.so.1 && -f $emu/libmlx5.so.1 ]] || { cat "$emu/UNAVAILABLE" >&2; exit 1; }
made=()
cleanup() {
    for n in "${made[@]}"; do rm -f "$n"; done
    rmdir /dev/infiniband 2>/dev/null || true
}
trap cleanup EXIT
for i in 0 1; do
    node=/dev/infiniband/uverbs$i
    if [[ ! -c $node ]]; then
        [[ $make_nodes == yes ]] || { echo "$node missing: run with --make-dev-nodes (as root)" >&2; exit 1; }
        mkdir -p /dev/infiniband
        mknod "$node" c 1 3
        made+=("$node")
    fi
done
