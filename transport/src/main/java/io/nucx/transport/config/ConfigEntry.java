package io.nucx.transport.config;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * One {@code NUCX_*} setting (UCX's {@code ucs_config_field_t}, Aeron's {@code Configuration} constant): its name, its
 * default, a one-line doc, and a typed parser with its bounds. Values come from the environment ({@code NUCX_<NAME>}),
 * system properties ({@code nucx.<name>}, lower case, '_' as '.') or overrides, and are parsed once, when the
 * configuration is validated at start-up ({@link io.nucx.transport.NucxConfig#get}).
 *
 * <p>Each layer declares its own entries in a {@link ConfigTable}: the transport layer and each transport (through the
 * Transport SPI), the protocols, the worker. The factories below give the parsers nucx uses; a parser throws
 * {@link IllegalArgumentException} saying what was expected, and the configuration names the variable and the value.
 *
 * @param <T> the parsed type
 */
public final class ConfigEntry<T> {

    /** Turns a value's text into its typed value, or throws {@link IllegalArgumentException} saying why not. */
    @FunctionalInterface
    public interface Parser<T> {
        T parse(String text);
    }

    private final String name;
    private final String defaultValue;
    private final String doc;
    private final String values;
    private final Parser<T> parser;

    private ConfigEntry(String name, String defaultValue, String doc, String values, Parser<T> parser) {
        if (!name.matches("[A-Z][A-Z0-9_]*")) {
            throw new IllegalArgumentException("setting names are upper case with underscores: " + name);
        }
        this.name = name;
        this.defaultValue = Objects.requireNonNull(defaultValue, "defaultValue");
        this.doc = doc;
        this.values = values;
        this.parser = parser;
    }

    /** An entry with a parser of its own; {@code values} describes what it accepts, for the docs. */
    public static <T> ConfigEntry<T> of(String name, String defaultValue, String doc, String values,
                                        Parser<T> parser) {
        return new ConfigEntry<>(name, defaultValue, doc, values, parser);
    }

    /** Any text, trimmed. */
    public static ConfigEntry<String> string(String name, String defaultValue, String doc) {
        return of(name, defaultValue, doc, "text", String::trim);
    }

    /** y, yes, on, 1, true / n, no, off, 0, false, any case. */
    public static ConfigEntry<Boolean> bool(String name, String defaultValue, String doc) {
        return of(name, defaultValue, doc, "y | n", ConfigEntry::parseBool);
    }

    /** One of {@code choices}, any case; the value is the choice's text. */
    public static ConfigEntry<String> choice(String name, String defaultValue, String doc, String... choices) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String c : choices) {
            m.put(c, c);
        }
        return choice(name, defaultValue, doc, m);
    }

    /**
     * One of the keys of {@code choices} (lower case, listed in the map's order: give an ordered map), any case; the
     * value is the key's value.
     */
    public static <E> ConfigEntry<E> choice(String name, String defaultValue, String doc, Map<String, E> choices) {
        Map<String, E> copy = new LinkedHashMap<>(choices);
        String list = String.join(" | ", copy.keySet());
        return of(name, defaultValue, doc, list, text -> {
            E v = copy.get(text.trim().toLowerCase(Locale.ROOT));
            if (v == null) {
                throw new IllegalArgumentException("expected one of " + list);
            }
            return v;
        });
    }

    /** One of {@code choices}, spelled as their names in lower case, listed in that order; any case. */
    public static <E extends Enum<E>> ConfigEntry<E> choice(String name, String defaultValue, String doc,
                                                            List<E> choices) {
        Map<String, E> m = new LinkedHashMap<>();
        for (E c : choices) {
            m.put(c.name().toLowerCase(Locale.ROOT), c);
        }
        return choice(name, defaultValue, doc, m);
    }

    /** A whole number in [min, max]. */
    public static ConfigEntry<Integer> integer(String name, String defaultValue, String doc, int min, int max) {
        return of(name, defaultValue, doc, integerRange(min, max), text -> boundedInteger(text, min, max));
    }

    /** {@link #integer}, or "auto" (the setting's user decides), which parses to -1. */
    public static ConfigEntry<Integer> integerOrAuto(String name, String defaultValue, String doc, int min, int max) {
        return of(name, defaultValue, doc, "auto | " + integerRange(min, max),
                text -> text.trim().equalsIgnoreCase("auto") ? -1 : boundedInteger(text, min, max));
    }

    private static String integerRange(int min, int max) {
        return "a whole number, " + min + " to " + max;
    }

    private static int boundedInteger(String text, int min, int max) {
        long v;
        try {
            v = Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a whole number");
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException("must be between " + min + " and " + max);
        }
        return (int) v;
    }

    /** A number in [min, max]. */
    public static ConfigEntry<Double> decimal(String name, String defaultValue, String doc, double min, double max) {
        return of(name, defaultValue, doc, "a number, " + min + " to " + max, text -> {
            double v;
            try {
                v = Double.parseDouble(text.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a number");
            }
            if (!(v >= min && v <= max)) {
                throw new IllegalArgumentException("must be between " + min + " and " + max);
            }
            return v;
        });
    }

    /** A memory size in bytes: a number with an optional unit b, k, m, g (powers of 1024), in [min, max]. */
    public static ConfigEntry<Long> size(String name, String defaultValue, String doc, long min, long max) {
        return of(name, defaultValue, doc, sizeRange(min, max), text -> boundedSize(text, min, max));
    }

    /** {@link #size}, or "auto" (the cost model decides), which parses to -1. */
    public static ConfigEntry<Long> sizeOrAuto(String name, String defaultValue, String doc, long min, long max) {
        return of(name, defaultValue, doc, "auto | " + sizeRange(min, max),
                text -> text.trim().equalsIgnoreCase("auto") ? -1L : boundedSize(text, min, max));
    }

    /**
     * A size threshold as UCX reads them: "auto" (-1: the cost model decides), "inf" ({@link Long#MAX_VALUE}: never),
     * or a size up to {@code Long.MAX_VALUE - 1}.
     */
    public static ConfigEntry<Long> threshold(String name, String defaultValue, String doc) {
        return of(name, defaultValue, doc, "auto | inf | a size", text -> {
            String v = text.trim();
            if (v.equalsIgnoreCase("inf")) {
                return Long.MAX_VALUE;
            }
            if (v.equalsIgnoreCase("auto")) {
                return -1L;
            }
            long size;
            try {
                size = parseSize(v);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("expected auto, inf or a size (e.g. 8192, 64k, 1m)");
            }
            if (size > Long.MAX_VALUE - 1) {
                throw new IllegalArgumentException("must be at most " + (Long.MAX_VALUE - 1) + " bytes, or inf");
            }
            return size;
        });
    }

    /** A duration in nanoseconds, in [0, maxNanos]: a number with a unit ns, us, ms or s ("0" alone too). */
    public static ConfigEntry<Long> duration(String name, String defaultValue, String doc, long maxNanos) {
        return of(name, defaultValue, doc, "a duration (ns, us, ms, s), at most " + durationText(maxNanos),
                text -> parseDuration(text, maxNanos));
    }

    /** {@link #duration}, or "auto", which parses to -1: the reader decides (e.g. by the loop it configures). */
    public static ConfigEntry<Long> durationOrAuto(String name, String defaultValue, String doc, long maxNanos) {
        return of(name, defaultValue, doc, "auto | a duration (ns, us, ms, s), at most " + durationText(maxNanos),
                text -> text.trim().equalsIgnoreCase("auto") ? -1L : parseDuration(text, maxNanos));
    }

    /**
     * {@link #duration}, at least {@code minNanos} (a shorter one is refused with {@code tooShort}), or "inf", which
     * parses to {@link Long#MAX_VALUE}.
     */
    public static ConfigEntry<Long> durationOrInf(String name, String defaultValue, String doc, long minNanos,
                                                  long maxNanos, String tooShort) {
        return of(name, defaultValue, doc, "inf | a duration (ns, us, ms, s), " + durationText(minNanos) + " to "
                + durationText(maxNanos), text -> {
                    if (text.trim().equalsIgnoreCase("inf")) {
                        return Long.MAX_VALUE;
                    }
                    long v = parseDuration(text, maxNanos);
                    if (v < minNanos) {
                        throw new IllegalArgumentException(tooShort);
                    }
                    return v;
                });
    }

    /** This entry with one more check on the parsed value; {@code why} says what a value must be. */
    public ConfigEntry<T> require(Predicate<? super T> check, String why) {
        Parser<T> p = parser;
        return new ConfigEntry<>(name, defaultValue, doc, values + ", " + why.replaceFirst("^must be ", ""), text -> {
            T v = p.parse(text);
            if (!check.test(v)) {
                throw new IllegalArgumentException(why);
            }
            return v;
        });
    }

    /** The name without the prefix, e.g. {@code RNDV_THRESH}. */
    public String name() {
        return name;
    }

    /** The environment variable, e.g. {@code NUCX_RNDV_THRESH}. */
    public String envName() {
        return envName(name);
    }

    /** The system property, e.g. {@code nucx.rndv.thresh}. */
    public String propertyName() {
        return propertyName(name);
    }

    public static String envName(String name) {
        return "NUCX_" + name;
    }

    public static String propertyName(String name) {
        return "nucx." + name.toLowerCase(Locale.ROOT).replace('_', '.');
    }

    /** The default, as text (parsed like any value). */
    public String defaultValue() {
        return defaultValue;
    }

    /** One line saying what the setting does. */
    public String doc() {
        return doc;
    }

    /** What the parser accepts, e.g. {@code "a size, 8k to 16m"}. */
    public String values() {
        return values;
    }

    /**
     * Parses {@code text}.
     *
     * @throws IllegalArgumentException saying what was expected
     */
    public T parse(String text) {
        return parser.parse(text);
    }

    @Override
    public String toString() {
        return envName();
    }

    // ---------------------------------------------------------------- the parsers' pieces

    static boolean parseBool(String text) {
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "y", "yes", "on", "1", "true" -> true;
            case "n", "no", "off", "0", "false" -> false;
            default -> throw new IllegalArgumentException("expected y or n");
        };
    }

    /** Parses "64k", "1m", "4096", "2g" (binary units, an optional trailing b). */
    public static long parseSize(String text) {
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

    static long boundedSize(String text, long min, long max) {
        long v = parseSize(text);
        if (v < min || v > max) {
            throw new IllegalArgumentException("must be between " + min + " and " + max + " bytes");
        }
        return v;
    }

    static long parseDuration(String text, long maxNanos) {
        String v = text.trim().toLowerCase(Locale.ROOT);
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
            throw new IllegalArgumentException("expected a duration with a unit, e.g. 100us, 2ms, 1s");
        }
        long n;
        try {
            n = Math.multiplyExact(Long.parseLong(num.trim()), mult);
        } catch (NumberFormatException | ArithmeticException ex) {
            throw new IllegalArgumentException("not a duration (expected e.g. 100us, 2ms, 1s)");
        }
        if (n < 0 || n > maxNanos) {
            throw new IllegalArgumentException("must be between 0 and " + maxNanos + " ns");
        }
        return n;
    }

    /** What a size entry accepts, for the docs: "a size, 8k to 16m", or "a size" when nothing bounds it. */
    static String sizeRange(long min, long max) {
        return min == 0 && max >= Long.MAX_VALUE - 1 ? "a size" : "a size, " + units(min) + " to " + units(max);
    }

    /** A size for the docs: 65536 as 64k. */
    static String units(long bytes) {
        for (String[] u : List.of(new String[] {"g", "30"}, new String[] {"m", "20"}, new String[] {"k", "10"})) {
            int shift = Integer.parseInt(u[1]);
            if (bytes >= 1L << shift && bytes % (1L << shift) == 0) {
                return (bytes >> shift) + u[0];
            }
        }
        return Long.toString(bytes);
    }

    /** A duration for the docs: 10000000 ns as 10ms. */
    static String durationText(long nanos) {
        long[] scale = {1_000_000_000L, 1_000_000L, 1_000L};
        String[] unit = {"s", "ms", "us"};
        for (int i = 0; i < scale.length; i++) {
            if (nanos >= scale[i] && nanos % scale[i] == 0) {
                return nanos / scale[i] + unit[i];
            }
        }
        return nanos + "ns";
    }
}
