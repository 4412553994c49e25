package io.nucx.transport;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Every {@code NUCX_*} setting in one table: name, default, one line of documentation and a typed parser,
 * in the manner of UCX's {@code ucp_context.c} config table and Aeron's {@code Configuration}.
 *
 * <p>A value comes from, in order: an explicit override given to {@link #of(Map)}, the system property
 * {@code nucx.<name in lower case, '_' as '.'>}, the environment variable {@code NUCX_<NAME>}, the default.
 * {@link #validate()} parses every entry at start and rejects unknown {@code NUCX_*} variables, so a bad value
 * stops start-up with the variable's name instead of surfacing later.
 */
public final class NucxConfig {

    /** One entry of the table. */
    public record Entry(String name, String defaultValue, String doc) {
        /** The environment variable, e.g. {@code NUCX_TLS}. */
        public String envName() {
            return "NUCX_" + name;
        }

        /** The system property, e.g. {@code nucx.tls}. */
        public String propertyName() {
            return "nucx." + name.toLowerCase(Locale.ROOT).replace('_', '.');
        }
    }

    private static final Map<String, Entry> TABLE = new LinkedHashMap<>();

    /** Transports to use, like UCX_TLS: a comma list of names, or "all". */
    public static final Entry TLS = define("TLS", "all",
            "Comma-separated transports to use (tcp, self, ...), or 'all'");
    /** TCP engine: auto picks io_uring, then epoll, then nio. */
    public static final Entry TCP_IO = define("TCP_IO", "auto",
            "TCP I/O engine: auto | io_uring | epoll | nio");
    /** How tcp lanes connect: to the peer's iface (listening socket), or endpoint to endpoint (p2p wireup). */
    public static final Entry TCP_CONNECT = define("TCP_CONNECT", "iface",
            "How tcp lanes connect: iface (to the peer's listening socket at once) | p2p (endpoint to endpoint after "
                    + "a REQUEST/REPLY/ACK exchange on an auxiliary connect-to-iface lane)");
    /** Address the tcp iface listens on. */
    public static final Entry TCP_BIND_ADDR = define("TCP_BIND_ADDR", "127.0.0.1",
            "IP address the tcp iface binds to (comma-separated: one tcp iface per address, e.g. one per network); "
                    + "its port is chosen by the system");
    /** Largest active-message payload one tcp frame carries (UCT's seg size). */
    public static final Entry TCP_SEG_SIZE = define("TCP_SEG_SIZE", "64k",
            "Largest payload of one tcp active-message frame (bcopy fragment size)");
    /** Bytes a self channel's receiver may hold before its writer sees backpressure. */
    public static final Entry SELF_QUEUE_BYTES = define("SELF_QUEUE_BYTES", "1m",
            "Bytes a self (in-process) channel's receiver may hold before the writer stops");
    /** How long an idle shm loop keeps polling its rings before it parks and asks to be woken. */
    public static final Entry SHM_SPIN = define("SHM_SPIN", "100us",
            "Time an idle event loop with shm channels polls its rings before parking (e.g. 0, 50us, 1ms)");
    /** Bytes of each shm ring (one per direction per connection). */
    public static final Entry SHM_RING_SIZE = define("SHM_RING_SIZE", "4m",
            "Bytes of each shm ring, a power of two (one ring per direction per connection)");
    /** Largest active-message payload one shm record carries. */
    public static final Entry SHM_SEG_SIZE = define("SHM_SEG_SIZE", "64k",
            "Largest payload of one shm active-message record (bcopy fragment size); at most ring size / 8");
    /** The verbs library the rdma transport binds: the system's, or a stand-in such as nucx's test emulator. */
    public static final Entry VERBS_LIB = define("VERBS_LIB", "libibverbs.so.1",
            "Verbs library the rdma transport loads: a soname or a path (the system's libibverbs.so.1 by default)");
    /** Largest active message one rdma SEND carries; each receive buffer has this size. */
    public static final Entry RDMA_SEG_SIZE = define("RDMA_SEG_SIZE", "8k",
            "Largest active-message frame of one rdma SEND, header included; the size of each receive buffer "
                    + "(1k..1m)");
    /** Receives each rdma lane keeps posted: the credits its peer starts with. */
    public static final Entry RDMA_RX_DEPTH = define("RDMA_RX_DEPTH", "128",
            "Receive buffers each rdma lane keeps posted, the peer's send credits (16..4096)");
    /** Largest tagged message a receiver accepts; checked before any allocation. */
    public static final Entry MAX_MSG_SIZE = define("MAX_MSG_SIZE", "1g",
            "Largest tagged message a receiver accepts (checked before allocating)");
    /** Print each protocol table when it is built, like UCX_PROTO_INFO. */
    public static final Entry PROTO_INFO = define("PROTO_INFO", "n",
            "Print each protocol selection table when it is first built (y/n)");
    /** Size from which bcopy protocols are forced (and below which they are not used), like UCX_BCOPY_THRESH. */
    public static final Entry BCOPY_THRESH = define("BCOPY_THRESH", "auto",
            "Force copy-in/copy-out protocols from this message size on: auto or a size");
    /**
     * Size from which the eager zero-copy protocols are forced (and below which they are not used), like
     * UCX_ZCOPY_THRESH; its priority (30) lies between the copy protocols' (20) and rendezvous' (60).
     */
    public static final Entry ZCOPY_THRESH = define("ZCOPY_THRESH", "auto",
            "Force eager zero-copy protocols (tcp, native memory) from this message size on: auto (the cost model's "
                    + "crossover), a size, or inf (never)");
    /** Size from which rendezvous is forced (and below which it is not used), like UCX_RNDV_THRESH. */
    public static final Entry RNDV_THRESH = define("RNDV_THRESH", "auto",
            "Force rendezvous from this message size on: auto (the cost model's crossover) or a size");
    /** Which protocols may be selected, like UCX_PROTOS: names or globs, comma-separated; '^' excludes them. */
    public static final Entry PROTOS = define("PROTOS", "all",
            "Protocols that may be selected: all, a comma list of names/globs (egr/*,tag/rndv), or ^list to exclude");
    /**
     * Which data protocol a rendezvous receiver asks for, like UCX_RNDV_SCHEME: auto (read the sender's memory when
     * it offered a key and we may, else RTR and active-message fragments), get_zcopy (the same), put_zcopy (offer the
     * receive buffer's key in the RTR so the sender writes into it), am (always fragments).
     */
    public static final Entry RNDV_SCHEME = define("RNDV_SCHEME", "auto",
            "Rendezvous data protocol the receiver asks for: auto | get_zcopy | put_zcopy | am");
    /**
     * Error handling of new endpoints, like ucp_ep_params.err_mode: peer (keepalive, fail on peer loss), failover
     * (peer, and a lost lane is replaced with nothing lost or duplicated) or none.
     */
    public static final Entry ERR_MODE = define("ERR_MODE", "peer",
            "Error handling of new endpoints: peer (keepalive; a lost peer fails the endpoint's operations), failover "
                    + "(as peer, and a failed lane is replaced by another transport, resending what it had not "
                    + "confirmed) or none");
    /** Lanes rendezvous data may be spread over, the AM lane included, like UCX_MAX_RNDV_LANES. */
    public static final Entry MAX_RNDV_LANES = define("MAX_RNDV_LANES", "2",
            "Lanes (transports) a rendezvous transfer may be spread over, the AM lane included (1..8)");
    /** A lane much slower than the fastest holds a split transfer back more than it adds. */
    public static final Entry MULTI_LANE_MAX_RATIO = define("MULTI_LANE_MAX_RATIO", "4",
            "An AM_BW lane is used only if its bandwidth is at least the fastest lane's divided by this (1..1000)");
    /** How often a worker checks its error-mode-peer endpoints (UCX_KEEPALIVE_INTERVAL; UCX's 20 s is for clusters). */
    public static final Entry KEEPALIVE_INTERVAL = define("KEEPALIVE_INTERVAL", "1s",
            "Keepalive period: each tick sends EP_CHECK on every peer-mode endpoint (10ms..1h, or inf for none)");
    /** Silence after which a peer is declared hung; a few intervals, so one late tick is not a failure. */
    public static final Entry KEEPALIVE_TIMEOUT = define("KEEPALIVE_TIMEOUT", "5s",
            "A peer-mode endpoint that hears nothing from its peer this long fails (at least 2 x KEEPALIVE_INTERVAL)");
    /** Progress mode of workers created by nucx: spin (busy-poll) or block. */
    public static final Entry BUSY_POLL = define("BUSY_POLL", "n",
            "Busy-poll the worker's event loop (y) or block until woken (n)");
    /** Launcher only: the JDK 25 bin/nucx and bin/build use. */
    public static final Entry JAVA_HOME = define("JAVA_HOME", "",
            "Launcher only: JDK 25+ used by bin/build, bin/test and bin/nucx");
    /** Launcher only: extra JVM options. */
    public static final Entry JAVA_OPTS = define("JAVA_OPTS", "",
            "Launcher only: extra JVM options for bin/nucx");

    private static Entry define(String name, String defaultValue, String doc) {
        Entry e = new Entry(name, defaultValue, doc);
        TABLE.put(name, e);
        return e;
    }

    private final Map<String, String> overrides;
    private final Map<String, String> environment;

    private NucxConfig(Map<String, String> overrides, Map<String, String> environment) {
        this.overrides = overrides;
        this.environment = environment;
    }

    /** Configuration from system properties and the process environment. */
    public static NucxConfig fromEnvironment() {
        return of(Map.of());
    }

    /** Configuration with explicit overrides (keys are entry names such as {@code "TLS"}). */
    public static NucxConfig of(Map<String, String> overrides) {
        return of(overrides, System.getenv());
    }

    /** Configuration with explicit overrides over the given environment (tests). */
    public static NucxConfig of(Map<String, String> overrides, Map<String, String> environment) {
        Map<String, String> copy = new TreeMap<>();
        for (Map.Entry<String, String> o : overrides.entrySet()) {
            String key = o.getKey().startsWith("NUCX_") ? o.getKey().substring(5) : o.getKey();
            if (!TABLE.containsKey(key)) {
                throw new NucxConfigException("unknown nucx setting '" + o.getKey() + "'; known: " + TABLE.keySet());
            }
            copy.put(key, Objects.requireNonNull(o.getValue(), key));
        }
        return new NucxConfig(Collections.unmodifiableMap(copy), environment);
    }

    /** A copy with more overrides on top. */
    public NucxConfig with(String name, String value) {
        Map<String, String> m = new TreeMap<>(overrides);
        m.put(name, value);
        return of(m, environment);
    }

    /** All entries, in table order. */
    public static Iterable<Entry> entries() {
        return TABLE.values();
    }

    /** The raw value and where it came from. */
    public String raw(Entry e) {
        String v = overrides.get(e.name());
        if (v != null) {
            return v;
        }
        v = System.getProperty(e.propertyName());
        if (v != null) {
            return v;
        }
        v = environment.get(e.envName());
        return v != null ? v : e.defaultValue();
    }

    private String source(Entry e) {
        if (overrides.containsKey(e.name())) {
            return "setting " + e.name();
        }
        if (System.getProperty(e.propertyName()) != null) {
            return "system property " + e.propertyName();
        }
        return environment.containsKey(e.envName()) ? e.envName() : e.envName() + " (default)";
    }

    /** A string value. */
    public String string(Entry e) {
        return raw(e).trim();
    }

    /** A yes/no value: y, yes, on, 1, true / n, no, off, 0, false. */
    public boolean bool(Entry e) {
        String v = raw(e).trim().toLowerCase(Locale.ROOT);
        return switch (v) {
            case "y", "yes", "on", "1", "true" -> true;
            case "n", "no", "off", "0", "false" -> false;
            default -> throw invalid(e, "expected y or n");
        };
    }

    /** One of the given choices, case-insensitive. */
    public String choice(Entry e, String... choices) {
        String v = raw(e).trim().toLowerCase(Locale.ROOT);
        for (String c : choices) {
            if (c.equals(v)) {
                return c;
            }
        }
        throw invalid(e, "expected one of " + String.join(" | ", choices));
    }

    /** A whole number in [min, max]. */
    public int integer(Entry e, int min, int max) {
        try {
            long v = Long.parseLong(raw(e).trim());
            if (v < min || v > max) {
                throw invalid(e, "must be between " + min + " and " + max);
            }
            return (int) v;
        } catch (NumberFormatException ex) {
            throw invalid(e, "not a whole number");
        }
    }

    /** A number in [min, max]. */
    public double decimal(Entry e, double min, double max) {
        try {
            double v = Double.parseDouble(raw(e).trim());
            if (!(v >= min && v <= max)) {
                throw invalid(e, "must be between " + min + " and " + max);
            }
            return v;
        } catch (NumberFormatException ex) {
            throw invalid(e, "not a number");
        }
    }

    /** A memory size: a number with an optional unit b, k, m, g (powers of 1024). */
    public long memunits(Entry e) {
        try {
            return parseMemunits(raw(e));
        } catch (IllegalArgumentException ex) {
            throw invalid(e, ex.getMessage());
        }
    }

    /** A memory size, or -1 for "auto". */
    public long memunitsOrAuto(Entry e, long min, long max) {
        if (raw(e).trim().equalsIgnoreCase("auto")) {
            return -1;
        }
        return memunits(e, min, max);
    }

    /**
     * A size threshold as UCX reads them: -1 for "auto" (the cost model decides), {@link Long#MAX_VALUE} for "inf"
     * (never), otherwise a memory size up to {@code Long.MAX_VALUE - 1}.
     */
    public long threshold(Entry e) {
        String v = raw(e).trim();
        if (v.equalsIgnoreCase("inf")) {
            return Long.MAX_VALUE;
        }
        if (v.equalsIgnoreCase("auto")) {
            return -1;
        }
        long size;
        try {
            size = parseMemunits(v);
        } catch (IllegalArgumentException ex) {
            throw invalid(e, "expected auto, inf or a size (e.g. 8192, 64k, 1m)");
        }
        if (size > Long.MAX_VALUE - 1) {
            throw invalid(e, "must be at most " + (Long.MAX_VALUE - 1) + " bytes, or inf");
        }
        return size;
    }

    /** A memory size bounded to [min, max]. */
    public long memunits(Entry e, long min, long max) {
        long v = memunits(e);
        if (v < min || v > max) {
            throw invalid(e, "must be between " + min + " and " + max + " bytes");
        }
        return v;
    }

    /** A duration in nanoseconds: a number with a unit ns, us, ms or s ("0" alone is allowed). */
    public long nanos(Entry e, long maxNanos) {
        String v = raw(e).trim().toLowerCase(Locale.ROOT);
        long mult;
        String num;
        if (v.endsWith("ns")) {
            mult = 1;
            num = v.substring(0, v.length() - 2);
        } else if (v.endsWith("us")) {
            mult = 1_000;
            num = v.substring(0, v.length() - 2);
        } else if (v.endsWith("ms")) {
            mult = 1_000_000;
            num = v.substring(0, v.length() - 2);
        } else if (v.endsWith("s")) {
            mult = 1_000_000_000;
            num = v.substring(0, v.length() - 1);
        } else if (v.equals("0")) {
            return 0;
        } else {
            throw invalid(e, "expected a duration with a unit, e.g. 100us, 2ms, 1s");
        }
        try {
            long n = Math.multiplyExact(Long.parseLong(num.trim()), mult);
            if (n < 0 || n > maxNanos) {
                throw invalid(e, "must be between 0 and " + maxNanos + " ns");
            }
            return n;
        } catch (NumberFormatException | ArithmeticException ex) {
            throw invalid(e, "not a duration (expected e.g. 100us, 2ms, 1s)");
        }
    }

    /** Parses "64k", "1m", "4096", "2g". */
    public static long parseMemunits(String text) {
        String v = text.trim().toLowerCase(Locale.ROOT);
        if (v.endsWith("b")) {
            v = v.substring(0, v.length() - 1);
        }
        long mult = 1;
        if (!v.isEmpty()) {
            switch (v.charAt(v.length() - 1)) {
                case 'k' -> mult = 1L << 10;
                case 'm' -> mult = 1L << 20;
                case 'g' -> mult = 1L << 30;
                default -> mult = 1;
            }
            if (mult != 1) {
                v = v.substring(0, v.length() - 1);
            }
        }
        try {
            long n = Long.parseLong(v);
            if (n < 0) {
                throw new IllegalArgumentException("negative size '" + text + "'");
            }
            return Math.multiplyExact(n, mult);
        } catch (NumberFormatException | ArithmeticException ex) {
            throw new IllegalArgumentException("not a size: '" + text + "' (expected e.g. 8192, 64k, 1m)");
        }
    }

    /** {@link #SHM_RING_SIZE}, checked to be a power of two between 64 KiB and 1 GiB. */
    public int shmRingSize() {
        long v = memunits(SHM_RING_SIZE, 64 << 10, 1 << 30);
        if (Long.bitCount(v) != 1) {
            throw invalid(SHM_RING_SIZE, "must be a power of two");
        }
        return (int) v;
    }

    /** {@link #SHM_SEG_SIZE}, checked against the ring: one record takes at most an eighth of it. */
    public int shmSegSize() {
        long v = memunits(SHM_SEG_SIZE, 4096, 128L << 20);
        long max = shmRingSize() / 8 - 64;
        if (v > max) {
            throw invalid(SHM_SEG_SIZE, "at most " + max + " bytes with NUCX_SHM_RING_SIZE=" + raw(SHM_RING_SIZE)
                    + " (one record takes at most an eighth of the ring)");
        }
        return (int) v;
    }

    /** {@link #RDMA_SEG_SIZE}: 1 KiB to 1 MiB. */
    public int rdmaSegSize() {
        return (int) memunits(RDMA_SEG_SIZE, 1024, 1 << 20);
    }

    /** {@link #RDMA_RX_DEPTH}: 16 to 4096. */
    public int rdmaRxDepth() {
        return integer(RDMA_RX_DEPTH, 16, 4096);
    }

    /** {@link #VERBS_LIB}, not empty. */
    public String verbsLib() {
        String v = string(VERBS_LIB);
        if (v.isEmpty()) {
            throw invalid(VERBS_LIB, "empty library name");
        }
        return v;
    }

    /** Shortest keepalive period: a tick walks every endpoint, so a shorter one costs more than it detects. */
    public static final long MIN_KEEPALIVE_INTERVAL_NANOS = 10_000_000L;
    private static final long MAX_KEEPALIVE_NANOS = 3_600_000_000_000L;

    /** {@link #KEEPALIVE_INTERVAL} in nanoseconds, 10 ms to 1 h; {@code Long.MAX_VALUE} for "inf" (no keepalive). */
    public long keepaliveIntervalNanos() {
        if (string(KEEPALIVE_INTERVAL).equalsIgnoreCase("inf")) {
            return Long.MAX_VALUE;
        }
        long v = nanos(KEEPALIVE_INTERVAL, MAX_KEEPALIVE_NANOS);
        if (v < MIN_KEEPALIVE_INTERVAL_NANOS) {
            throw invalid(KEEPALIVE_INTERVAL, "must be at least 10ms (or inf to turn keepalive off)");
        }
        return v;
    }

    /** {@link #KEEPALIVE_TIMEOUT} in nanoseconds, checked to be at least twice the interval (when there is one). */
    public long keepaliveTimeoutNanos() {
        long v = nanos(KEEPALIVE_TIMEOUT, MAX_KEEPALIVE_NANOS);
        long interval = keepaliveIntervalNanos();
        if (interval != Long.MAX_VALUE && v < 2 * interval) {
            throw invalid(KEEPALIVE_TIMEOUT, "must be at least twice NUCX_KEEPALIVE_INTERVAL=" + raw(KEEPALIVE_INTERVAL)
                    + ", so that one late tick does not fail a live peer");
        }
        return v;
    }

    /** Builds the exception that names the variable, its value and what was expected. */
    public NucxConfigException invalid(Entry e, String why) {
        return new NucxConfigException("invalid value '" + raw(e) + "' for " + source(e) + ": " + why);
    }

    /**
     * Parses every entry with its parser and rejects unknown NUCX_* environment variables and nucx.* properties.
     * Called once when a context starts.
     */
    public NucxConfig validate() {
        for (String key : environment.keySet()) {
            if (key.startsWith("NUCX_") && !TABLE.containsKey(key.substring(5))) {
                throw new NucxConfigException("unknown environment variable " + key + "; known: "
                        + TABLE.values().stream().map(Entry::envName).toList());
            }
        }
        for (String key : System.getProperties().stringPropertyNames()) {
            if (key.startsWith("nucx.") && TABLE.values().stream().noneMatch(e -> e.propertyName().equals(key))) {
                throw new NucxConfigException("unknown system property " + key);
            }
        }
        choice(TCP_IO, "auto", "io_uring", "epoll", "nio");
        choice(TCP_CONNECT, "iface", "p2p");
        memunits(TCP_SEG_SIZE, 8192, 16L << 20);
        memunits(SELF_QUEUE_BYTES, 4096, 1L << 30);
        nanos(SHM_SPIN, 10_000_000_000L);
        shmRingSize();
        shmSegSize();
        memunits(MAX_MSG_SIZE, 1, Integer.MAX_VALUE - 64);
        verbsLib();
        rdmaSegSize();
        rdmaRxDepth();
        bool(BUSY_POLL);
        bool(PROTO_INFO);
        choice(ERR_MODE, "peer", "failover", "none");
        integer(MAX_RNDV_LANES, 1, 8);
        decimal(MULTI_LANE_MAX_RATIO, 1, 1000);
        keepaliveTimeoutNanos(); // checks the interval too
        memunitsOrAuto(BCOPY_THRESH, 0, Long.MAX_VALUE - 1);
        memunitsOrAuto(RNDV_THRESH, 0, Long.MAX_VALUE - 1);
        threshold(ZCOPY_THRESH);
        choice(RNDV_SCHEME, "auto", "get_zcopy", "put_zcopy", "am");
        if (string(TLS).isEmpty()) {
            throw invalid(TLS, "empty transport list");
        }
        return this;
    }
}
