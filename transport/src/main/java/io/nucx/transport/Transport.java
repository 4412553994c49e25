package io.nucx.transport;

import io.netty.channel.EventLoop;
import io.nucx.transport.config.ConfigTable;

import java.util.List;

/**
 * A UCT transport: a Netty channel type plus what it can do. Implementations are found with
 * {@link java.util.ServiceLoader}
 * ({@code META-INF/services/io.nucx.transport.Transport}); {@link Transports} lists them in a fixed order.
 *
 * <p>Nothing here knows about endpoints or protocols: a transport moves {@link AmFrame}s between two ifaces.
 */
public interface Transport {

    /** The name used in {@code NUCX_TLS} and in worker addresses ("tcp", "self"). */
    String name();

    /**
     * This transport as {@code config} sets it up, where a setting decides what it can do before an iface is opened
     * (rdma: NUCX_VERBS_LIB, the library probed for devices); this instance when nothing changes.
     */
    default Transport forConfig(NucxConfig config) {
        return this;
    }

    /** Whether it can run in this process, probed once; with a reason when not. */
    Availability availability();

    /** Devices an iface can be opened on; empty when unavailable. */
    List<Device> devices(NucxConfig config);

    /** The device a worker opens its iface on when nothing else is said: the first device. */
    default Device defaultDevice(NucxConfig config) throws Exception {
        List<Device> devices = devices(config);
        if (devices.isEmpty()) {
            throw new IllegalStateException(name() + " has no device");
        }
        return devices.get(0);
    }

    /**
     * The devices a worker opens an iface on, one iface each (UCX opens one per device: two RDMA ports are two
     * rails). The default device only, unless the transport says otherwise.
     */
    default List<Device> ifaceDevices(NucxConfig config) throws Exception {
        return List.of(defaultDevice(config));
    }

    /**
     * Whether {@code NUCX_TLS=all} includes this transport when it is available. A transport the upper layers cannot
     * drive says false; naming it in {@code NUCX_TLS} still selects it.
     */
    default boolean includedInAll() {
        return true;
    }

    /** False for RMA-only transports (cma): they never carry active messages, so they cannot be a worker's only one. */
    default boolean carriesActiveMessages() {
        return true;
    }

    /**
     * Whether an iface can be opened on {@code loop}: some transports need their own kind of event loop (shm
     * polls rings, so its loops run a {@code ShmIoHandler}).
     */
    default Availability availabilityOn(EventLoop loop) {
        return Availability.available();
    }

    /**
     * This transport's own settings ({@code NUCX_<NAME>_*}), validated with every other layer's at start-up and listed
     * in docs/CONFIG.md; none by default.
     */
    default ConfigTable configTable() {
        return ConfigTable.EMPTY;
    }

    /** Opens an iface on the event loop in {@code params}; the returned iface is bound and ready to connect. */
    Iface openIface(IfaceParams params) throws Exception;
}
