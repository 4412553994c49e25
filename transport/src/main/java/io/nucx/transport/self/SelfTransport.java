package io.nucx.transport.self;

import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;

import java.util.List;

/** In-process transport: endpoints between workers of one JVM, over {@link SelfChannel} pairs. */
public final class SelfTransport implements Transport {

    public static final String NAME = "self";
    public static final Device MEMORY = new Device("memory", "self");

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        return Availability.available();
    }

    @Override
    public List<Device> devices(NucxConfig config) {
        return List.of(MEMORY);
    }

    @Override
    public Iface openIface(IfaceParams params) {
        return SelfIface.open(this, params);
    }
}
