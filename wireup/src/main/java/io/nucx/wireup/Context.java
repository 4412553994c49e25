package io.nucx.wireup;

import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.TransportConfig;
import io.nucx.transport.Transports;

import java.util.List;

/**
 * UCP's context: the validated configuration and the transports it selects. Every worker made from it opens one
 * iface per transport. Creating it parses every {@code NUCX_*} setting, so a bad value stops here, by name.
 */
public final class Context {

    private final NucxConfig config;
    private final List<Transport> transports;

    private Context(NucxConfig config) {
        this.config = config.validate();
        this.transports = List.copyOf(Transports.selected(config));
        if (transports.isEmpty()) {
            throw config.invalid(TransportConfig.TLS, "selects no available transport");
        }
    }

    /** A context from system properties and the environment. */
    public static Context create() {
        return new Context(NucxConfig.fromEnvironment());
    }

    public static Context create(NucxConfig config) {
        return new Context(config);
    }

    public NucxConfig config() {
        return config;
    }

    /** Whether NUCX_TLS is "all": transports that cannot run on a worker's loop are then left out, not refused. */
    public boolean allTransports() {
        return config.get(TransportConfig.TLS).equals(List.of("all"));
    }

    /** The selected transports, sorted by name. */
    public List<Transport> transports() {
        return transports;
    }
}
