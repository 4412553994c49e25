package io.nucx.protocol.select;

import io.nucx.protocol.EagerSurcharge;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.RndvSurcharge;
import io.nucx.transport.IfaceAttributes;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Performance figures measured on the running machine ({@code nucx calibrate}), which the cost model uses instead of
 * the transports' static estimates (UCX's published {@code uct_iface_attr_t} values) wherever the profile has them:
 * per lane its latency, per-message overhead, bandwidth, memory registration cost and, for an RMA lane, the rate and
 * size from which its zero-copy transfers outgrow the caches, for an AM lane what a rendezvous over it costs beyond
 * those figures and for an RMA lane what its rendezvous read costs beyond them against eager
 * ({@link io.nucx.protocol.RndvSurcharge}), and the memcpy bandwidth every
 * copy is charged at (UCX's {@code UCX_BCOPY_BW}). A figure the profile lacks keeps its static value. Only protocol
 * selection reads it: lane selection keeps the figures both peers exchanged in their addresses, so the two sides still
 * choose the same lanes whatever profile each one loaded.
 *
 * <p>The file is text, one {@code key = value} a line, {@code #} starting a comment; values are plain numbers in SI
 * units (seconds, bytes per second). Its first setting names the format and its version:
 * <pre>
 * format = nucx-perf-profile 1
 * copy.bandwidth = 6.8E9            # bytes/s: memcpy between direct buffers
 * tcp/lo.latency = 4.1E-6           # s: one way, what neither side's overhead explains
 * tcp/lo.overhead = 1.9E-6          # s: CPU time to send (or receive) one message, protocol stack included
 * tcp/lo.bandwidth = 2.3E9          # bytes/s
 * cma/memory.reg.cost = 1.2E-6      # s: exposing one buffer for the peer's GET or PUT
 * cma/memory.reg.growth = 0.0       # s per byte registered
 * cma/memory.bulk.from = 1.2E6       # bytes: from this size on, zero-copy GET and PUT run at bulk.bandwidth
 * cma/memory.bulk.bandwidth = 9.5E9  # bytes/s: a transfer that outgrew the caches
 * shm/memory.rndv.cost = 2.1E-6      # s: tag/rndv over this AM lane beyond eager beyond its figures, at size 0
 * shm/memory.rndv.growth = 7.9E-12   # s per byte of that line (above 0 charged to tag/rndv, below to eager)
 * </pre>
 * A lane is named as the tables print it ({@code transport/device}); a transport name alone ({@code tcp.latency})
 * applies to each of its devices the profile does not name. Reading is strict: an unknown key or figure, a value that
 * is not a number or is out of range, a key given twice, or a missing or other format line fails naming the file, the
 * line and what is wrong.
 */
public final class PerfProfile {

    /** The format line's value: the name and the version this code reads and writes. */
    public static final String FORMAT = "nucx-perf-profile 1";

    /** The figures a lane may have, as the file names them. */
    public enum Figure {
        LATENCY("latency", "s: one way, what neither side's overhead explains", 0, true),
        OVERHEAD("overhead", "s: CPU time to send (or receive) one message, protocol stack included", 0, true),
        BANDWIDTH("bandwidth", "bytes/s", 0, false),
        REG_COST("reg.cost", "s: exposing one buffer for the peer's zero-copy GET or PUT", 0, true),
        REG_GROWTH("reg.growth", "s per byte registered", 0, true),
        BULK_FROM("bulk.from", "bytes: from this size on, zero-copy GET and PUT run at bulk.bandwidth", 1, true),
        BULK_BANDWIDTH("bulk.bandwidth", "bytes/s: zero-copy GET and PUT from bulk.from on", 0, false),
        RNDV_COST("rndv.cost", "s: a rendezvous over this AM lane (an RMA lane: its read, rndv/get/zcopy) against "
                + "eager, beyond what its figures price, at size 0 (a line with rndv.growth: charged to the rendezvous "
                + "where above 0; an AM lane's to eager's fragments where below)", Double.NEGATIVE_INFINITY, true),
        RNDV_GROWTH("rndv.growth", "s per byte of the message, of rndv.cost's line", Double.NEGATIVE_INFINITY,
                true),
        EAGER_COST("eager.cost", "s: what this AM lane's copy sends took beyond what its figures price (fitted at 8 B), "
                + "charged to every eager protocol from eager.from on", 0, true),
        EAGER_FROM("eager.from", "bytes: from this size on, eager.cost is charged", 0, true);

        private final String key;
        private final String unit;
        /** The least value it may have, and whether that value itself is allowed. */
        private final double min;
        private final boolean minAllowed;

        Figure(String key, String unit, double min, boolean minAllowed) {
            this.key = key;
            this.unit = unit;
            this.min = min;
            this.minAllowed = minAllowed;
        }

        /** The key's suffix in the file, e.g. {@code reg.cost}. */
        public String key() {
            return key;
        }

        /** Whether {@code v} is a value this figure may have. */
        boolean valid(double v) {
            return Double.isFinite(v) && (minAllowed ? v >= min : v > min);
        }

        /** Its values, as an error states them: " > 0", " >= 1"; empty for any finite number. */
        private String bound() {
            return min == Double.NEGATIVE_INFINITY ? "" : (minAllowed ? " >= " : " > ") + (long) min;
        }
    }

    /** The key of the memcpy bandwidth. */
    public static final String COPY_BANDWIDTH = "copy.bandwidth";

    /** No profile: every figure is the transports' static estimate. */
    public static final PerfProfile NONE = new PerfProfile("(none)", Double.NaN, Map.of());

    private static final Pattern LANE = Pattern.compile("[a-z][a-z0-9_]*(/[A-Za-z0-9_.:@-]+)?");

    private final String source;
    private final double copyBandwidth;
    /** Lane (or transport) name to its figures, each NaN where absent. */
    private final Map<String, double[]> lanes;

    private PerfProfile(String source, double copyBandwidth, Map<String, double[]> lanes) {
        this.source = source;
        this.copyBandwidth = copyBandwidth;
        TreeMap<String, double[]> copy = new TreeMap<>();
        lanes.forEach((k, v) -> copy.put(k, v.clone()));
        this.lanes = Collections.unmodifiableMap(copy);
    }

    /** Builds a profile figure by figure (calibration, tests). */
    public static Builder builder(String source) {
        return new Builder(source);
    }

    /** A profile under construction; each setter checks its value as the file reader does. */
    public static final class Builder {
        private final String source;
        private double copyBandwidth = Double.NaN;
        private final Map<String, double[]> lanes = new LinkedHashMap<>();

        private Builder(String source) {
            this.source = source;
        }

        /** The memcpy bandwidth, bytes/s. */
        public Builder copyBandwidth(double bytesPerSecond) {
            if (!Figure.BANDWIDTH.valid(bytesPerSecond)) {
                throw new IllegalArgumentException(COPY_BANDWIDTH + " must be a finite number"
                        + Figure.BANDWIDTH.bound() + ", got "
                        + bytesPerSecond);
            }
            copyBandwidth = bytesPerSecond;
            return this;
        }

        /** One figure of {@code lane} ("tcp/lo", or "tcp" for every tcp device). */
        public Builder figure(String lane, Figure figure, double value) {
            if (!LANE.matcher(lane).matches()) {
                throw new IllegalArgumentException("'" + lane + "' is not a lane name (transport or transport/device)");
            }
            if (!figure.valid(value)) {
                throw new IllegalArgumentException(lane + "." + figure.key + " must be a finite number"
                        + figure.bound() + ", got " + value);
            }
            lanes.computeIfAbsent(lane, k -> nan())[figure.ordinal()] = value;
            return this;
        }

        /** @throws IllegalArgumentException where a lane has one of two figures that go together without the other */
        public PerfProfile build() {
            lanes.forEach((lane, f) -> {
                together(lane, f, Figure.BULK_FROM, Figure.BULK_BANDWIDTH);
                together(lane, f, Figure.RNDV_COST, Figure.RNDV_GROWTH);
                together(lane, f, Figure.EAGER_COST, Figure.EAGER_FROM);
            });
            return new PerfProfile(source, copyBandwidth, lanes);
        }
    }

    private static void together(String lane, double[] f, Figure one, Figure other) {
        if (Double.isNaN(f[one.ordinal()]) != Double.isNaN(f[other.ordinal()])) {
            throw new IllegalArgumentException(lane + "." + one.key + " and " + lane + "." + other.key
                    + " go together: give both or neither");
        }
    }

    private static double[] nan() {
        double[] f = new double[Figure.values().length];
        Arrays.fill(f, Double.NaN);
        return f;
    }

    /** Where the figures come from (the file), for messages and tables. */
    public String source() {
        return source;
    }

    /** Whether this profile has no figure at all. */
    public boolean isEmpty() {
        return Double.isNaN(copyBandwidth) && lanes.isEmpty();
    }

    /** The lanes (and transports) the profile has figures for, sorted. */
    public List<String> lanes() {
        return List.copyOf(lanes.keySet());
    }

    /** The measured memcpy bandwidth, or {@code fallback} when the profile has none. */
    public double copyBandwidth(double fallback) {
        return Double.isNaN(copyBandwidth) ? fallback : copyBandwidth;
    }

    /**
     * {@code figure} of {@code lane} ("tcp/lo"): the lane's own, else its transport's ("tcp"), else NaN.
     */
    public double figure(String lane, Figure figure) {
        double[] own = lanes.get(lane);
        if (own != null && !Double.isNaN(own[figure.ordinal()])) {
            return own[figure.ordinal()];
        }
        int slash = lane.indexOf('/');
        double[] transport = slash < 0 ? null : lanes.get(lane.substring(0, slash));
        return transport == null ? Double.NaN : transport[figure.ordinal()];
    }

    /**
     * {@code attrs} of {@code lane} with the figures this profile has for it in place of the static ones. A profile
     * that fitted the lane's bandwidth along with a memcpy figure also takes the lane's own copy rate away (shm's,
     * measured at start or NUCX_SHM_COPY_BW): calibration fits a lane's bandwidth as what its copy sends take beyond
     * two copies at that figure, so the model charges them so. Without both, the lane keeps its rate.
     */
    public IfaceAttributes apply(String lane, IfaceAttributes attrs) {
        if (attrs.copiesAreTheTransfer() && !Double.isNaN(copyBandwidth)
                && !Double.isNaN(figure(lane, Figure.BANDWIDTH))) {
            attrs = attrs.withCopyBandwidth(0);
        }
        double lat = figure(lane, Figure.LATENCY);
        double ovh = figure(lane, Figure.OVERHEAD);
        double bw = figure(lane, Figure.BANDWIDTH);
        double reg = figure(lane, Figure.REG_COST);
        double growth = figure(lane, Figure.REG_GROWTH);
        if (!(Double.isNaN(lat) && Double.isNaN(ovh) && Double.isNaN(bw) && Double.isNaN(reg)
                && Double.isNaN(growth))) {
            attrs = attrs.withPerf(or(lat, attrs.latencySeconds()), or(ovh, attrs.overheadSeconds()),
                    or(bw, attrs.bandwidth()), or(reg, attrs.regCostSeconds()), or(growth, attrs.regCostPerByte()));
        }
        double bulkFrom = figure(lane, Figure.BULK_FROM);
        double bulkBandwidth = figure(lane, Figure.BULK_BANDWIDTH);
        if (!Double.isNaN(bulkFrom) && !Double.isNaN(bulkBandwidth)) {
            attrs = attrs.withBulk((long) Math.min(bulkFrom, Long.MAX_VALUE - 1), bulkBandwidth);
        }
        return attrs;
    }

    /** Every lane of {@code config} with this profile's figures applied; the lanes' names and limits unchanged. */
    public EndpointConfig apply(EndpointConfig config) {
        if (isEmpty()) {
            return config;
        }
        double rndvCost = figure(config.amLane(), Figure.RNDV_COST);
        double rndvGrowth = figure(config.amLane(), Figure.RNDV_GROWTH);
        double eagerCost = figure(config.amLane(), Figure.EAGER_COST);
        double eagerFrom = figure(config.amLane(), Figure.EAGER_FROM);
        double readCost = config.rmaLane() == null ? Double.NaN : figure(config.rmaLane(), Figure.RNDV_COST);
        double readGrowth = config.rmaLane() == null ? Double.NaN : figure(config.rmaLane(), Figure.RNDV_GROWTH);
        return new EndpointConfig(config.amLane(), apply(config.amLane(), config.amLaneAttrs()), config.rmaLane(),
                config.rmaLane() == null ? null : apply(config.rmaLane(), config.rmaLaneAttrs()),
                apply(config.bwLanes()), apply(config.rmaBwLanes()), Double.isNaN(rndvCost) || Double.isNaN(rndvGrowth)
                        ? config.rndvSurcharge() : new RndvSurcharge(rndvCost, rndvGrowth),
                Double.isNaN(eagerCost) || Double.isNaN(eagerFrom) ? config.eagerSurcharge()
                        : new EagerSurcharge((long) Math.min(eagerFrom, Long.MAX_VALUE - 1), eagerCost),
                Double.isNaN(readCost) || Double.isNaN(readGrowth) ? config.readSurcharge()
                        : new RndvSurcharge(readCost, readGrowth));
    }

    private List<EndpointConfig.BwLane> apply(List<EndpointConfig.BwLane> lanes) {
        List<EndpointConfig.BwLane> out = new ArrayList<>(lanes.size());
        for (EndpointConfig.BwLane l : lanes) {
            out.add(new EndpointConfig.BwLane(l.name(), apply(l.name(), l.attrs())));
        }
        return out;
    }

    private static double or(double v, double fallback) {
        return Double.isNaN(v) ? fallback : v;
    }

    // ---------------------------------------------------------------- the file

    /**
     * Reads a profile file.
     *
     * @throws IllegalArgumentException naming the file, and the line and what is wrong with it, or why the file
     *                                  cannot be read
     */
    public static PerfProfile read(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | UncheckedIOException e) {
            throw new IllegalArgumentException("cannot read performance profile " + file + ": " + e);
        }
        return parse(text, file.toString());
    }

    /** Parses a profile's text; {@code source} names it in errors. */
    public static PerfProfile parse(String text, String source) {
        Builder b = new Builder(source);
        Set<String> seen = new HashSet<>();
        boolean format = false;
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            int hash = line.indexOf('#');
            String content = (hash >= 0 ? line.substring(0, hash) : line).strip();
            if (content.isEmpty()) {
                continue;
            }
            String where = source + " line " + (i + 1) + ": ";
            int eq = content.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException(where + "expected 'key = value', got '" + content + "'");
            }
            String key = content.substring(0, eq).strip();
            String value = content.substring(eq + 1).strip();
            if (!seen.add(key)) {
                throw new IllegalArgumentException(where + "'" + key + "' is given twice");
            }
            if (!format) {
                if (!key.equals("format")) {
                    throw new IllegalArgumentException(where + "the first setting must be 'format = " + FORMAT
                            + "', got '" + key + "'");
                }
                if (!value.equals(FORMAT)) {
                    throw new IllegalArgumentException(where + "format '" + value + "' is not supported; this nucx "
                            + "reads '" + FORMAT + "' (run nucx calibrate again)");
                }
                format = true;
                continue;
            }
            try {
                if (key.equals(COPY_BANDWIDTH)) {
                    b.copyBandwidth(number(key, value));
                    continue;
                }
                Figure figure = null; // the longest that ends the key: "bulk.bandwidth" before "bandwidth"
                for (Figure f : Figure.values()) {
                    if (key.endsWith("." + f.key) && (figure == null || f.key.length() > figure.key.length())) {
                        figure = f;
                    }
                }
                if (figure == null) {
                    throw new IllegalArgumentException("unknown setting '" + key + "'; a lane's figures are "
                            + Arrays.stream(Figure.values()).map(f -> "LANE." + f.key).toList() + ", and "
                            + COPY_BANDWIDTH);
                }
                b.figure(key.substring(0, key.length() - figure.key.length() - 1), figure, number(key, value));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + e.getMessage());
            }
        }
        if (!format) {
            throw new IllegalArgumentException(source + ": empty; a profile starts with 'format = " + FORMAT + "'");
        }
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage());
        }
    }

    private static double number(String key, String value) {
        try {
            return Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the value of '" + key + "' is not a number: '" + value + "'");
        }
    }

    /**
     * The profile as its file holds it: the format line, then {@code comments} (each a {@code #} line: where and when
     * it was measured), then every figure with its unit. {@link #parse} reads back exactly this profile.
     */
    public String format(List<String> comments) {
        StringBuilder b = new StringBuilder("format = ").append(FORMAT).append('\n');
        for (String c : comments) {
            b.append("# ").append(c).append('\n');
        }
        if (!Double.isNaN(copyBandwidth)) {
            b.append(line(COPY_BANDWIDTH, copyBandwidth, "bytes/s: memcpy between direct buffers"));
        }
        lanes.forEach((lane, f) -> {
            for (Figure figure : Figure.values()) {
                if (!Double.isNaN(f[figure.ordinal()])) {
                    b.append(line(lane + "." + figure.key, f[figure.ordinal()], figure.unit));
                }
            }
        });
        return b.toString();
    }

    private static String line(String key, double value, String unit) {
        String kv = key + " = " + value;
        return kv + " ".repeat(Math.max(1, 40 - kv.length())) + "# " + unit + "\n";
    }

    /** Writes {@link #format} to {@code file}. */
    public void write(Path file, List<String> comments) throws IOException {
        Files.writeString(file, format(comments), StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "PerfProfile[" + source + "]";
    }
}
