package io.nucx.transport;

import io.nucx.transport.config.ConfigEntry;
import io.nucx.transport.config.ConfigSchema;
import io.nucx.transport.config.ConfigTable;

import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The values of every {@code NUCX_*} setting, read from, in order: an explicit override given to {@link #of(Map)},
 * the system property {@code nucx.<name in lower case, '_' as '.'>}, the environment variable {@code NUCX_<NAME>},
 * the default. The settings themselves are declared by each layer as typed {@link ConfigEntry}s in
 * {@link ConfigTable}s ({@link ConfigSchema}: the transport layer's {@link TransportConfig}, each transport's, the
 * protocols', the worker's); docs/CONFIG.md is generated from them.
 *
 * <p>{@link #get(ConfigEntry)} returns an entry's typed value, parsed once. {@link #validate()} parses every entry
 * at start-up, runs each table's cross-setting checks, and rejects unknown {@code NUCX_*} variables and
 * {@code nucx.*} properties naming the closest known one, so a bad value stops start-up with the variable's name and
 * its value instead of surfacing later.
 *
 * <p>The {@link Entry} constants and the untyped accessors ({@link #string}, {@link #bool}, {@link #choice}, ...) are
 * the previous API, kept (delegating to the same parsers) until every caller uses the typed getter.
 */
public final class NucxConfig {

    /** A setting by name: the previous API's handle; prefer the layers' {@link ConfigEntry} constants. */
    public record Entry(String name) {
        /** The environment variable, e.g. {@code NUCX_TLS}. */
        public String envName() {
            return ConfigEntry.envName(name);
        }

        /** The system property, e.g. {@code nucx.tls}. */
        public String propertyName() {
            return ConfigEntry.propertyName(name);
        }

        /** The declared default. */
        public String defaultValue() {
            return declared(name).defaultValue();
        }

        /** The declared one-line doc. */
        public String doc() {
            return declared(name).doc();
        }
    }

    public static final Entry TLS = new Entry("TLS");
    public static final Entry TCP_IO = new Entry("TCP_IO");
    public static final Entry TCP_CONNECT = new Entry("TCP_CONNECT");
    public static final Entry TCP_BIND_ADDR = new Entry("TCP_BIND_ADDR");
    public static final Entry TCP_SEG_SIZE = new Entry("TCP_SEG_SIZE");
    public static final Entry SELF_QUEUE_BYTES = new Entry("SELF_QUEUE_BYTES");
    public static final Entry SHM_SPIN = new Entry("SHM_SPIN");
    public static final Entry SHM_RING_SIZE = new Entry("SHM_RING_SIZE");
    public static final Entry SHM_SEG_SIZE = new Entry("SHM_SEG_SIZE");
    public static final Entry MAX_MSG_SIZE = new Entry("MAX_MSG_SIZE");
    public static final Entry PROTO_INFO = new Entry("PROTO_INFO");
    public static final Entry BCOPY_THRESH = new Entry("BCOPY_THRESH");
    public static final Entry ZCOPY_THRESH = new Entry("ZCOPY_THRESH");
    public static final Entry RNDV_THRESH = new Entry("RNDV_THRESH");
    public static final Entry PROTOS = new Entry("PROTOS");
    public static final Entry RNDV_SCHEME = new Entry("RNDV_SCHEME");
    public static final Entry ERR_MODE = new Entry("ERR_MODE");
    public static final Entry MAX_RNDV_LANES = new Entry("MAX_RNDV_LANES");
    public static final Entry MULTI_LANE_MAX_RATIO = new Entry("MULTI_LANE_MAX_RATIO");
    public static final Entry KEEPALIVE_INTERVAL = new Entry("KEEPALIVE_INTERVAL");
    public static final Entry KEEPALIVE_TIMEOUT = new Entry("KEEPALIVE_TIMEOUT");
    public static final Entry BUSY_POLL = new Entry("BUSY_POLL");
    public static final Entry JAVA_HOME = new Entry("JAVA_HOME");
    public static final Entry JAVA_OPTS = new Entry("JAVA_OPTS");

    /** Shortest keepalive period (the worker's KEEPALIVE_INTERVAL declares it). */
    public static final long MIN_KEEPALIVE_INTERVAL_NANOS = 10_000_000L;

    private final ConfigSchema schema;
    private final Map<String, String> overrides;
    private final Map<String, String> environment;
    /** Parsed values by entry name: each parsed once. */
    private final Map<String, Object> values = new ConcurrentHashMap<>();

    private NucxConfig(ConfigSchema schema, Map<String, String> overrides, Map<String, String> environment) {
        this.schema = schema;
        this.overrides = overrides;
        this.environment = environment;
    }

    /** Configuration from system properties and the process environment. */
    public static NucxConfig fromEnvironment() {
        return of(Map.of());
    }

    /** Configuration with explicit overrides (keys are entry names such as {@code "TLS"}, with or without NUCX_). */
    public static NucxConfig of(Map<String, String> overrides) {
        return of(overrides, System.getenv());
    }

    /** Configuration with explicit overrides over the given environment (tests). */
    public static NucxConfig of(Map<String, String> overrides, Map<String, String> environment) {
        return of(ConfigSchema.all(), overrides, environment);
    }

    /** Configuration of the settings {@code schema} declares (tests of one layer's tables). */
    public static NucxConfig of(ConfigSchema schema, Map<String, String> overrides, Map<String, String> environment) {
        Map<String, String> copy = new TreeMap<>();
        for (Map.Entry<String, String> o : overrides.entrySet()) {
            String key = o.getKey().startsWith("NUCX_") ? o.getKey().substring(5) : o.getKey();
            if (schema.entry(key) == null) {
                throw new NucxConfigException("unknown nucx setting '" + o.getKey() + "'; did you mean "
                        + schema.closest(key) + "?");
            }
            copy.put(key, Objects.requireNonNull(o.getValue(), key));
        }
        return new NucxConfig(schema, Collections.unmodifiableMap(copy), environment);
    }

    /** A copy with one more override on top. */
    public NucxConfig with(String name, String value) {
        Map<String, String> m = new TreeMap<>(overrides);
        m.put(name.startsWith("NUCX_") ? name.substring(5) : name, value);
        return of(schema, m, environment);
    }

    /** The settings this configuration knows. */
    public ConfigSchema schema() {
        return schema;
    }

    /** Every setting, in docs order (previous API; see {@link #schema()}). */
    public static Iterable<Entry> entries() {
        return ConfigSchema.all().entries().stream().map(e -> new Entry(e.name())).toList();
    }

    private static ConfigEntry<?> declared(String name) {
        ConfigEntry<?> e = ConfigSchema.all().entry(name);
        if (e == null) {
            throw new IllegalStateException(ConfigEntry.envName(name) + " is declared by a layer that is not on the "
                    + "class path");
        }
        return e;
    }

    // ---------------------------------------------------------------- typed values

    /**
     * The parsed value of {@code entry}, parsed once.
     *
     * @throws NucxConfigException naming the variable, its value and what was expected
     */
    @SuppressWarnings("unchecked")
    public <T> T get(ConfigEntry<T> entry) {
        Object v = values.get(entry.name());
        if (v == null) {
            try {
                v = entry.parse(raw(entry.name(), entry.defaultValue()));
            } catch (IllegalArgumentException e) {
                throw invalid(entry, e.getMessage());
            }
            values.putIfAbsent(entry.name(), v);
        }
        return (T) v;
    }

    /** The value of the declared setting {@code name}, parsed by its entry (for the previous API's accessors). */
    @SuppressWarnings("unchecked")
    private <T> T declaredValue(String name) {
        ConfigEntry<T> e = (ConfigEntry<T>) (schema.entry(name) != null ? schema.entry(name) : declared(name));
        return get(e);
    }

    // ---------------------------------------------------------------- raw values

    /** The raw value of {@code e}. */
    public String raw(ConfigEntry<?> e) {
        return raw(e.name(), e.defaultValue());
    }

    /** The raw value of {@code e} (previous API). */
    public String raw(Entry e) {
        ConfigEntry<?> declared = schema.entry(e.name());
        return raw(e.name(), declared != null ? declared.defaultValue() : declared(e.name()).defaultValue());
    }

    private String raw(String name, String defaultValue) {
        String v = overrides.get(name);
        if (v != null) {
            return v;
        }
        v = System.getProperty(ConfigEntry.propertyName(name));
        if (v != null) {
            return v;
        }
        v = environment.get(ConfigEntry.envName(name));
        return v != null ? v : defaultValue;
    }

    private String source(String name) {
        if (overrides.containsKey(name)) {
            return "setting " + name;
        }
        if (System.getProperty(ConfigEntry.propertyName(name)) != null) {
            return "system property " + ConfigEntry.propertyName(name);
        }
        return environment.containsKey(ConfigEntry.envName(name)) ? ConfigEntry.envName(name)
                : ConfigEntry.envName(name) + " (default)";
    }

    /** Builds the exception that names the variable, its value and what was expected. */
    public NucxConfigException invalid(ConfigEntry<?> e, String why) {
        String value = e.name().endsWith("_TOKEN") ? "(a secret, not shown)" : "'" + raw(e) + "'";
        return new NucxConfigException("invalid value " + value + " for " + source(e.name()) + ": " + why);
    }

    /** Builds the exception that names the variable, its value and what was expected (previous API). */
    public NucxConfigException invalid(Entry e, String why) {
        return new NucxConfigException("invalid value '" + raw(e) + "' for " + source(e.name()) + ": " + why);
    }

    // ---------------------------------------------------------------- previous API: parse with the caller's bounds

    private <T> T parse(Entry e, ConfigEntry.Parser<T> parser) {
        try {
            return parser.parse(raw(e));
        } catch (IllegalArgumentException ex) {
            throw invalid(e, ex.getMessage());
        }
    }

    /** A string value. */
    public String string(Entry e) {
        return raw(e).trim();
    }

    /** A yes/no value: y, yes, on, 1, true / n, no, off, 0, false. */
    public boolean bool(Entry e) {
        return parse(e, ConfigEntry.bool(e.name(), "n", "")::parse);
    }

    /** One of the given choices, case-insensitive. */
    public String choice(Entry e, String... choices) {
        return parse(e, ConfigEntry.choice(e.name(), choices[0], "", choices)::parse);
    }

    /** A whole number in [min, max]. */
    public int integer(Entry e, int min, int max) {
        return parse(e, ConfigEntry.integer(e.name(), "0", "", min, max)::parse);
    }

    /** A number in [min, max]. */
    public double decimal(Entry e, double min, double max) {
        return parse(e, ConfigEntry.decimal(e.name(), "0", "", min, max)::parse);
    }

    /** A memory size: a number with an optional unit b, k, m, g (powers of 1024). */
    public long memunits(Entry e) {
        return parse(e, ConfigEntry::parseSize);
    }

    /** A memory size bounded to [min, max]. */
    public long memunits(Entry e, long min, long max) {
        return parse(e, ConfigEntry.size(e.name(), "0", "", min, max)::parse);
    }

    /** A memory size, or -1 for "auto". */
    public long memunitsOrAuto(Entry e, long min, long max) {
        return parse(e, ConfigEntry.sizeOrAuto(e.name(), "auto", "", min, max)::parse);
    }

    /** A size threshold: -1 for "auto", {@link Long#MAX_VALUE} for "inf", else a size. */
    public long threshold(Entry e) {
        return parse(e, ConfigEntry.threshold(e.name(), "auto", "")::parse);
    }

    /** A duration in nanoseconds: a number with a unit ns, us, ms or s ("0" alone is allowed). */
    public long nanos(Entry e, long maxNanos) {
        return parse(e, ConfigEntry.duration(e.name(), "0", "", maxNanos)::parse);
    }

    /** Parses "64k", "1m", "4096", "2g". */
    public static long parseMemunits(String text) {
        return ConfigEntry.parseSize(text);
    }

    /** NUCX_SHM_RING_SIZE (the shm transport's typed value). */
    public int shmRingSize() {
        return (int) (long) declaredValue("SHM_RING_SIZE");
    }

    /** NUCX_SHM_SEG_SIZE, checked against the ring (the shm transport's typed value and check). */
    public int shmSegSize() {
        long seg = declaredValue("SHM_SEG_SIZE");
        for (ConfigTable t : schema.tables()) {
            if (t.entries().contains(schema.entry("SHM_SEG_SIZE"))) {
                t.conclude(this);
            }
        }
        return (int) seg;
    }

    /** NUCX_KEEPALIVE_INTERVAL in nanoseconds, {@code Long.MAX_VALUE} for "inf" (the worker's typed value). */
    public long keepaliveIntervalNanos() {
        return declaredValue("KEEPALIVE_INTERVAL");
    }

    /** NUCX_KEEPALIVE_TIMEOUT in nanoseconds, checked against the interval (the worker's typed value and check). */
    public long keepaliveTimeoutNanos() {
        long timeout = declaredValue("KEEPALIVE_TIMEOUT");
        for (ConfigTable t : schema.tables()) {
            if (t.entries().contains(schema.entry("KEEPALIVE_TIMEOUT"))) {
                t.conclude(this);
            }
        }
        return timeout;
    }

    // ---------------------------------------------------------------- start-up

    /**
     * Rejects unknown NUCX_* environment variables and nucx.* properties (naming the closest known setting), parses
     * every declared entry, and runs each table's cross-setting checks. Called once when a context starts.
     */
    public NucxConfig validate() {
        for (String key : environment.keySet()) {
            if (key.startsWith("NUCX_") && schema.entry(key.substring(5)) == null) {
                throw new NucxConfigException("unknown environment variable " + key + "; did you mean NUCX_"
                        + schema.closest(key.substring(5)) + "?");
            }
        }
        for (String key : System.getProperties().stringPropertyNames()) {
            if (key.startsWith("nucx.") && schema.entries().stream().noneMatch(e -> e.propertyName().equals(key))) {
                String name = key.substring(5).toUpperCase(Locale.ROOT).replace('.', '_');
                throw new NucxConfigException("unknown system property " + key + "; did you mean "
                        + ConfigEntry.propertyName(schema.closest(name)) + "?");
            }
        }
        for (ConfigEntry<?> e : schema.entries()) {
            get(e);
        }
        for (ConfigTable t : schema.tables()) {
            t.conclude(this);
        }
        return this;
    }
}
