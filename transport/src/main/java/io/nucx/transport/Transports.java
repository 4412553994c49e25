package io.nucx.transport;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;

/**
 * The transports on the class path, in a fixed order (by name) so that every process lists them alike, and
 * the subset {@code NUCX_TLS} asks for.
 */
public final class Transports {

    private Transports() {
    }

    /** Every transport found by {@link ServiceLoader}, sorted by name. */
    public static List<Transport> all() {
        List<Transport> list = new ArrayList<>();
        ServiceLoader.load(Transport.class, Transports.class.getClassLoader()).forEach(list::add);
        list.sort(Comparator.comparing(Transport::name));
        return list;
    }

    /**
     * The transports {@code NUCX_TLS} selects. "all" selects every available one that is {@link
     * Transport#includedInAll() included in all}; a named transport that is
     * unknown fails, and one that is unavailable fails with its reason.
     */
    public static List<Transport> selected(NucxConfig config) {
        List<Transport> all = all().stream().map(t -> t.forConfig(config)).toList();
        List<String> tls = config.get(TransportConfig.TLS);
        List<Transport> out = new ArrayList<>();
        if (tls.equals(List.of("all"))) {
            for (Transport t : all) {
                if (t.includedInAll() && t.availability().isAvailable()) {
                    out.add(t);
                }
            }
            return out;
        }
        for (String n : tls) {
            Transport t = all.stream().filter(x -> x.name().equals(n)).findFirst().orElseThrow(() ->
                    config.invalid(TransportConfig.TLS, "unknown transport '" + n + "'; known: "
                            + all.stream().map(Transport::name).toList()));
            if (!t.availability().isAvailable()) {
                throw config.invalid(TransportConfig.TLS, "transport '" + n + "' is unavailable: "
                        + t.availability().reason());
            }
            if (!out.contains(t)) {
                out.add(t);
            }
        }
        return out;
    }
}
