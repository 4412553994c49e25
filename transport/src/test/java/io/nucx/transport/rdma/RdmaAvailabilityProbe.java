package io.nucx.transport.rdma;

import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;

import java.util.Map;

/**
 * Prints what {@link RdmaTransport#availability()} says for the library in {@code args[0]}, and the devices; with
 * {@code args[1] = "select"}, the transports {@code NUCX_TLS=all} and {@code NUCX_TLS=tcp,rdma} select (the
 * ServiceLoader's rdma reads NUCX_VERBS_LIB).
 */
public final class RdmaAvailabilityProbe {

    public static void main(String[] args) {
        if (args.length > 1 && args[1].equals("select")) {
            for (String tls : new String[] {"all", "tcp,rdma"}) {
                System.out.println(tls + " -> " + Transports.selected(NucxConfig.of(Map.of("TLS", tls)))
                        .stream().map(Transport::name).toList());
            }
            return;
        }
        RdmaTransport t = new RdmaTransport(args[0]);
        System.out.println(t.availability());
        System.out.println(t.devices(NucxConfig.of(Map.of(), Map.of())));
    }
}
