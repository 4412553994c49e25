package io.nucx.transport.cma;

import io.nucx.transport.AbstractTransport;
import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.config.ConfigTable;

/**
 * Cross-memory attach as a transport (UCX's {@code cma} in {@code uct/sm/scopy}): an RMA-only lane between
 * processes of one host. It carries no active messages, so it is never an AM lane; the rendezvous protocol reads the
 * sender's buffer through it ({@code rndv/get/zcopy}). Available when {@link Cma#availability()} says so.
 */
public final class CmaTransport extends AbstractTransport {

    public static final String NAME = "cma";
    public static final Device MEMORY = memoryDevice(NAME);

    public CmaTransport() {
        super(NAME);
    }

    @Override
    public ConfigTable configTable() {
        return CmaConfig.TABLE;
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
    public Iface openIface(IfaceParams params) {
        ensureAvailable();
        return new CmaIface(this, params);
    }
}
