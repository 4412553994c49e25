#!/usr/bin/env bash
# Builds the nucx node image offline (no image registry is needed or reachable) and prints its tag last:
#   base  nucx-base:<hash of the recipe below>: a Debian root filesystem made by debootstrap from Debian's package
#         mirror (the one apt uses here), imported with `docker import`;
#   node  nucx-node:<hash of everything copied in>: the base, plus the JDK 25 that bin/jdk25.sh finds (without sources
#         and man pages) at /opt/jdk, nucx's distribution (examples/target: the jar bin/nucx runs and its lib/) at
#         /opt/nucx/lib, and /usr/local/bin/nucx; made with docker create + cp + commit, so no builder or FROM pull.
# Each image is built only when no image has its tag yet, so a second run with the same inputs builds nothing.
# Needs a running Docker engine, debootstrap (first build only) and a packaged examples module (mvn package/verify).
# Usage: integration-tests/image/build.sh [--base]     (--base: only the base image)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/bin/jdk25.sh"
suite=bookworm
packages=iproute2,iptables # tc, ip and iptables inside a node: tests degrade its links there
mirror=${NUCX_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources \
    2>/dev/null | head -n 1)}
mirror=${mirror:-http://deb.debian.org/debian}
log() { echo "image: $*" >&2; }

recipe=2 # bump when the base recipe below changes
base_hash=$(printf "%s\n" "$recipe" "$suite" minbase "$packages" | sha256sum | cut -c1-12)
base="nucx-base:$base_hash"
if ! docker image inspect "$base" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { log "debootstrap is needed for the first build (apt-get install debootstrap)"; exit 1; }
    tree=$(mktemp -d /tmp/nucx-rootfs.XXXXXX)
    trap 'rm -rf "$tree"' EXIT
    log "debootstrap $suite (minbase + $packages) from $mirror"
    t0=$(date +%s)
    debootstrap --variant=minbase --include="$packages" "$suite" "$tree" "$mirror" >"$tree.log" 2>&1 \
        || { tail -n 20 "$tree.log" >&2; rm -f "$tree.log"; exit 1; }
    rm -f "$tree.log"
    rm -rf "$tree"/var/cache/apt/archives/*.deb "$tree"/var/lib/apt/lists/* "$tree"/usr/share/{doc,man,locale}/*
    tar -C "$tree" -c . | docker import - "$base" >/dev/null
    rm -rf "$tree"
    trap - EXIT
    log "built $base in $(( $(date +%s) - t0 )) s"
    docker images nucx-base --format '{{.Repository}}:{{.Tag}}' | grep -vx "$base" | xargs -r docker rmi >/dev/null 2>&1 || true
else
    log "cached $base"
fi
if [ "${1:-}" = "--base" ]; then
    echo "$base"
    exit 0
fi

jar=$(ls "$root"/examples/target/nucx-examples-*.jar 2>/dev/null | grep -v -e sources -e tests | head -n 1 || true)
if [ -z "$jar" ] || [ ! -d "$root/examples/target/lib" ]; then
    log "examples is not packaged: run mvn package (or verify) first"
    exit 1
fi
# What goes in decides the tag: the base, this script, the JDK (file names, sizes and its release file) and every jar
# (built reproducibly, project.build.outputTimestamp).
node_hash=$( {
    echo "$base"
    sha256sum "$0" | cut -c1-64
    cat "$JAVA_HOME/release"
    (cd "$JAVA_HOME" && find . -type f ! -path ./lib/src.zip ! -path './man/*' -printf '%P %s\n' | LC_ALL=C sort)
    sha256sum "$jar" "$root"/examples/target/lib/*.jar | sed 's|  .*/|  |'
} | sha256sum | cut -c1-12)
node="nucx-node:$node_hash"
if docker image inspect "$node" >/dev/null 2>&1; then
    log "cached $node"
    echo "$node"
    exit 0
fi
t0=$(date +%s)
stage=$(mktemp -d /tmp/nucx-image.XXXXXX)
cid=""
cleanup() { [ -n "$cid" ] && docker rm -f "$cid" >/dev/null 2>&1; rm -rf "$stage"; }
trap cleanup EXIT
mkdir -p "$stage/opt/nucx/lib" "$stage/usr/local/bin"
cp -a "$JAVA_HOME" "$stage/opt/jdk"
rm -rf "$stage/opt/jdk/lib/src.zip" "$stage/opt/jdk/man"
cp "$jar" "$root"/examples/target/lib/*.jar "$stage/opt/nucx/lib/"
cat > "$stage/usr/local/bin/nucx" <<'LAUNCHER'
#!/bin/sh
# nucx in the node image: info | perftest | demo | node. JVM options from NUCX_JAVA_OPTS.
exec /opt/jdk/bin/java --enable-native-access=ALL-UNNAMED ${NUCX_JAVA_OPTS:-} -cp '/opt/nucx/lib/*' \
    io.nucx.examples.NucxMain "$@"
LAUNCHER
chmod 755 "$stage/usr/local/bin/nucx"
cid=$(docker create --label io.nucx.image-build=1 "$base" /bin/true)
tar -C "$stage" -c . | docker cp - "$cid:/"
docker commit \
    --change 'ENV JAVA_HOME=/opt/jdk' \
    --change 'ENV PATH=/opt/jdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NUCX_JAVA_OPTS=-Xmx256m' \
    --change 'ENTRYPOINT ["/usr/local/bin/nucx"]' \
    --change 'CMD ["node", "--control", "tcp:7000"]' \
    --change 'LABEL io.nucx.image=node' \
    "$cid" "$node" >/dev/null
log "built $node in $(( $(date +%s) - t0 )) s"
# Older node images of this project are outdated by this one (the base stays: it changes with the recipe only).
docker images nucx-node --format '{{.Repository}}:{{.Tag}}' | grep -vx "$node" | xargs -r docker rmi >/dev/null 2>&1 || true
echo "$node"
