package io.nucx.transport.self;

import io.nucx.transport.AbstractTransport;
import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.config.ConfigTable;

/** In-process transport: endpoints between workers of one JVM, over {@link SelfChannel} pairs. */
public final class SelfTransport extends AbstractTransport {

    public static final String NAME = "self";
    public static final Device MEMORY = memoryDevice(NAME);

    public SelfTransport() {
        super(NAME);
    }

    @Override
    public Availability availability() {
        return Availability.available();
    }

    @Override
    public ConfigTable configTable() {
        return SelfConfig.TABLE;
    }

    @Override
    public Iface openIface(IfaceParams params) {
        return SelfIface.open(this, params);
    }
}
