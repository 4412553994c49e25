package io.nucx.transport.config;

import io.nucx.transport.Transport;
import io.nucx.transport.Transports;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * Every setting nucx knows: the {@link ConfigTable}s found by {@link ServiceLoader} (the transport layer's, the
 * protocols', the worker's) and the transports' own, ordered by rank then title. A name declared twice is a bug,
 * refused when the schema is built.
 */
public final class ConfigSchema {

    private static volatile ConfigSchema all;

    private final List<ConfigTable> tables;
    private final Map<String, ConfigEntry<?>> entries = new LinkedHashMap<>();

    private ConfigSchema(List<ConfigTable> tables) {
        List<ConfigTable> sorted = new ArrayList<>(tables);
        sorted.sort(Comparator.comparingInt(ConfigTable::rank).thenComparing(ConfigTable::title));
        this.tables = List.copyOf(sorted);
        Map<String, ConfigTable> owner = new LinkedHashMap<>();
        for (ConfigTable t : this.tables) {
            for (ConfigEntry<?> e : t.entries()) {
                ConfigTable first = owner.putIfAbsent(e.name(), t);
                if (first != null) {
                    throw new IllegalStateException(e.envName() + " is declared twice: by " + first.title() + " and by "
                            + t.title());
                }
                entries.put(e.name(), e);
            }
        }
    }

    /** The schema of everything on the class path (built once). */
    public static ConfigSchema all() {
        ConfigSchema s = all;
        if (s == null) {
            synchronized (ConfigSchema.class) {
                s = all;
                if (s == null) {
                    List<ConfigTable> tables = new ArrayList<>();
                    ServiceLoader.load(ConfigTable.class, ConfigSchema.class.getClassLoader()).forEach(tables::add);
                    for (Transport t : Transports.all()) {
                        ConfigTable table = t.configTable();
                        if (!table.entries().isEmpty()) {
                            tables.add(table);
                        }
                    }
                    all = s = new ConfigSchema(tables);
                }
            }
        }
        return s;
    }

    /** A schema of the given tables only (tests). */
    public static ConfigSchema of(List<ConfigTable> tables) {
        return new ConfigSchema(tables);
    }

    /** The tables, in docs order. */
    public List<ConfigTable> tables() {
        return tables;
    }

    /** Every entry, in docs order. */
    public Collection<ConfigEntry<?>> entries() {
        return Collections.unmodifiableCollection(entries.values());
    }

    /** The entry named {@code name} ({@code RNDV_THRESH}), or null. */
    public ConfigEntry<?> entry(String name) {
        return entries.get(name);
    }

    /**
     * The known name closest to {@code name}, for "did you mean": fewest single-character edits, a name cut short
     * counting as one ({@code SHM_RING} is closer to {@code SHM_RING_SIZE} than to {@code SHM_SPIN}).
     */
    public String closest(String name) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String known : entries.keySet()) {
            int d = known.startsWith(name) ? 1 : distance(name, known);
            if (d < bestDistance) {
                bestDistance = d;
                best = known;
            }
        }
        return best;
    }

    /** Levenshtein distance. */
    static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int subst = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(subst, Math.min(prev[j] + 1, cur[j - 1] + 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
