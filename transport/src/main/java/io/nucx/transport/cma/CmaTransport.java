package io.nucx.transport.cma;

import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;

import java.util.List;

/**
 * Cross-memory attach as a transport (UCX's {@code cma} in {@code uct/sm/scopy}): an RMA-only lane between
 * processes of one host. It carries no active messages, so it is never an AM lane; the rendezvous protocol reads the
 * sender's buffer through it ({@code rndv/get/zcopy}). Available when {@link Cma#availability()} says so.
 */
public final class CmaTransport implements Transport {

    public static final String NAME = "cma";
    public static final Device MEMORY = new Device("memory", "cma");

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean carriesActiveMessages() {
        return false;
    }

    @Override
    public Availability availability() {
        return Cma.availability();
    }

    @Override
    public List<Device> devices(NucxConfig config) {
        return availability().isAvailable() ? List.of(MEMORY) : List.of();
    }

    @Override
    public Iface openIface(IfaceParams params) {
        if (!availability().isAvailable()) {
            throw new IllegalStateException("cma is unavailable: " + availability().reason());
        }
        return new CmaIface(this, params);
    }
}
