# Sourced by bin/build, bin/test and bin/nucx: sets JAVA_HOME to a JDK 25+ without asking anyone to edit files.
# Order: NUCX_JAVA_HOME, JAVA_HOME, `java` on PATH, then every JDK under /usr/lib/jvm and /opt.
nucx_java_major() {
    "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -n 1
}
nucx_find_jdk25() {
    local candidates=() c major
    [ -n "${NUCX_JAVA_HOME:-}" ] && candidates+=("$NUCX_JAVA_HOME")
    [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
    if command -v java >/dev/null 2>&1; then
        candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
    fi
    for c in /usr/lib/jvm/* /opt/java/* /opt/jdk*; do [ -d "$c" ] && candidates+=("$c"); done
    for c in "${candidates[@]}"; do
        [ -x "$c/bin/java" ] && [ -x "$c/bin/javac" ] || continue
        major=$(nucx_java_major "$c")
        case "$major" in ''|1.*) continue ;; esac
        if [ "${major%%.*}" -ge 25 ] 2>/dev/null; then
            echo "$c"
            return 0
        fi
    done
    return 1
}
if ! JAVA_HOME=$(nucx_find_jdk25); then
    echo "nucx needs JDK 25 or newer and none was found (looked at NUCX_JAVA_HOME, JAVA_HOME, java on PATH," >&2
    echo "/usr/lib/jvm/*, /opt). Install one, e.g. Temurin 25, or point NUCX_JAVA_HOME at it." >&2
    exit 1
fi
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"
