#!/usr/bin/env bash
# Builds the verbs emulator (a stand-in libibverbs.so.1) into $1 for the transport tests. Run by the test build
# (exec-maven-plugin, phase process-test-classes). Without gcc or the rdma-core headers it builds nothing and says why
# in $1/UNAVAILABLE; the tests that need the emulator then skip with that reason.
set -euo pipefail
out=${1:?output directory}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rm -f "$out/UNAVAILABLE"
if ! command -v gcc >/dev/null 2>&1; then
    echo "gcc is not installed" > "$out/UNAVAILABLE"
    exit 0
fi
if ! echo '#include <infiniband/verbs.h>' | gcc -E -x c - >/dev/null 2>&1; then
    echo "the rdma-core headers are not installed (apt-get install libibverbs-dev)" > "$out/UNAVAILABLE"
    exit 0
fi
# build PATH SOURCE MAP [CFLAGS...]: $out/PATH from SOURCE with the version nodes in MAP, unless it is newer than
# both and this script
build() {
    local lib="$out/$1" src="$here/$2" map="$here/$3"
    shift 3
    if [[ -f "$lib" && "$lib" -nt "$src" && "$lib" -nt "$map" && "$lib" -nt "$0" ]]; then
        return
    fi
    mkdir -p "$(dirname "$lib")"
    gcc -std=gnu11 -shared -fPIC -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -fvisibility=hidden "$@" \
        -Wl,--version-script="$map" -Wl,-soname,"$(basename "$lib")" -o "$lib.tmp" "$src" -lpthread
    mv "$lib.tmp" "$lib"
}
build libibverbs.so.1 verbs_emu.c libibverbs.map
# the same without ibv_reg_mr_iova2, as rdma-core before 28: nucx must fall back to ibv_reg_mr
build pre-rdma-core-28/libibverbs.so.1 verbs_emu.c libibverbs.map -DVERBS_EMU_NO_IOVA2
# only for UCX's own tools over the emulator (bench/ucx-perftest-emu.sh); nucx does not load it
build libmlx5.so.1 mlx5_stub.c libmlx5.map
