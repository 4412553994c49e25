package io.nucx.transport.rdma;

/** Prints what {@link RdmaTransport#availability()} says for the library in {@code args[0]}, and the devices. */
public final class RdmaAvailabilityProbe {

    public static void main(String[] args) {
        RdmaTransport t = new RdmaTransport(args[0]);
        System.out.println(t.availability());
        System.out.println(t.devices(io.nucx.transport.NucxConfig.of(java.util.Map.of(), java.util.Map.of())));
    }
}
