package io.nucx.transport;

import java.util.List;

/**
 * What every transport shares: its name and, for transports whose only device is this host's memory (shm, self,
 * cma), that device while the transport is available.
 */
public abstract class AbstractTransport implements Transport {

    private final String name;
    private final Device memory;

    protected AbstractTransport(String name) {
        this.name = name;
        this.memory = memoryDevice(name);
    }

    /** The device "memory" of transport {@code name}. */
    public static Device memoryDevice(String name) {
        return new Device("memory", name);
    }

    @Override
    public final String name() {
        return name;
    }

    /** The memory device while the transport is available; transports on network devices list those instead. */
    @Override
    public List<Device> devices(NucxConfig config) {
        return availability().isAvailable() ? List.of(memory) : List.of();
    }

    /** Throws with the reason when the transport cannot run here; ifaces call it before opening. */
    protected final void ensureAvailable() {
        Availability a = availability();
        if (!a.isAvailable()) {
            throw new IllegalStateException(name + " is unavailable: " + a.reason());
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
