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
lib="$out/libibverbs.so.1"
if [[ -f "$lib" && "$lib" -nt "$here/verbs_emu.c" && "$lib" -nt "$here/libibverbs.map" && "$lib" -nt "$0" ]]; then
    exit 0
fi
gcc -std=gnu11 -shared -fPIC -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -fvisibility=hidden \
    -Wl,--version-script="$here/libibverbs.map" -Wl,-soname,libibverbs.so.1 \
    -o "$lib.tmp" "$here/verbs_emu.c" -lpthread
mv "$lib.tmp" "$lib"
