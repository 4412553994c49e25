package io.nucx.transport;

import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The transport layer's own settings: which transports to use (UCX_TLS), and the launcher's. Each transport declares
 * its own ({@link Transport#configTable()}).
 */
public final class TransportConfig extends AbstractConfigTable {

    /** Transports to use, like UCX_TLS: names in lower case, or the one name "all". */
    public static final ConfigEntry<List<String>> TLS = ConfigEntry.of("TLS", "all",
            "Transports to use, comma-separated, or 'all': tcp, shm (shared-memory rings between processes of one "
                    + "host), self (in-process), cma (same-host zero-copy reads and writes for rendezvous; RMA only), "
                    + "rdma (RC verbs, the library NUCX_VERBS_LIB names)",
            "all | a comma list of transport names",
            text -> {
                List<String> names = Arrays.stream(text.toLowerCase(Locale.ROOT).split(",")).map(String::trim)
                        .filter(s -> !s.isEmpty()).toList();
                if (names.isEmpty()) {
                    throw new IllegalArgumentException("empty transport list");
                }
                return names;
            });
    /**
     * The socket engine of the worker's event loops (tcp lanes, and the loops nucx creates), or empty for auto
     * (io_uring, then epoll, then nio). Declared here, not by tcp: the engines ({@link IoEngine}) are the transport
     * SPI's, shared by every transport that runs on a socket loop.
     */
    public static final ConfigEntry<Optional<IoEngine>> TCP_IO = ConfigEntry.choice("TCP_IO", "auto",
            "TCP engine; auto takes the first that loads: io_uring, epoll, nio (epoll first for a loop that "
                    + "polls: NUCX_BUSY_POLL, or NUCX_SHM_SPIN above 0, the default)", engines());
    /**
     * Where the processes of one host share the rates measured at start ({@link SharedRates}). Checked at start-up:
     * a directory that does not exist stops it.
     */
    public static final ConfigEntry<String> RATES_DIR = ConfigEntry.string("RATES_DIR", "auto",
            "Where the processes of one host share the rates they measure at start (shm's copy rate, cma's read "
                    + "rates; about 60 ms, 175-235 in a fresh JVM), so that one measures and the others read its "
                    + "figures, and both ends of a connection price protocols alike: auto (/dev/shm, else the JVM's "
                    + "temporary directory), a directory, or none (each process measures its own)");
    /** How long shared rates are used before a starting process measures them again. */
    public static final ConfigEntry<Long> RATES_MAX_AGE = ConfigEntry.duration("RATES_MAX_AGE", "600s",
            "How old the shared rates (NUCX_RATES_DIR) may be for a starting process to use them; older ones, or "
                    + "none, it measures and shares. 0: measure at every start",
            365L * 24 * 3600 * 1_000_000_000L);
    /** Launcher only: the JDK bin/nucx and bin/build use. */
    public static final ConfigEntry<String> JAVA_HOME = ConfigEntry.string("JAVA_HOME", "",
            "Launcher only: JDK 25+ used by bin/build, bin/test and bin/nucx");
    /** Launcher only: extra JVM options. */
    public static final ConfigEntry<String> JAVA_OPTS = ConfigEntry.string("JAVA_OPTS", "",
            "Launcher only: extra JVM options for bin/nucx");

    /** Launcher only: start from the AOT cache bin/build trained. */
    public static final ConfigEntry<Boolean> AOT = ConfigEntry.bool("AOT", "y",
            "Launcher only: bin/nucx starts the JVM from the AOT cache bin/build trained (examples/target/nucx.aot: "
                    + "classes loaded and linked, JEP 483; no method profiles) when it is newer than the jars");

    public TransportConfig() {
        super("Transports and launcher", RANK_TRANSPORT_LAYER, TLS, TCP_IO, RATES_DIR, RATES_MAX_AGE, JAVA_HOME,
                JAVA_OPTS, AOT);
    }

    @Override
    public void conclude(NucxConfig config) {
        Path dir = SharedRates.directory(config);
        if (dir != null && !Files.isDirectory(dir)) {
            throw config.invalid(RATES_DIR, "no such directory: " + dir + " (auto, none, or a directory)");
        }
    }

    private static Map<String, Optional<IoEngine>> engines() {
        Map<String, Optional<IoEngine>> m = new LinkedHashMap<>();
        m.put("auto", Optional.empty());
        for (IoEngine engine : IoEngine.values()) {
            m.put(engine.configName(), Optional.of(engine));
        }
        return m;
    }
}
