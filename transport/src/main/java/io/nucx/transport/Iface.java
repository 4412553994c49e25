package io.nucx.transport;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.util.concurrent.Future;

/**
 * An opened transport on one device, bound to one event loop (UCT's {@code uct_iface}). Lanes are the
 * {@link Channel}s it connects or accepts; each carries {@link AmFrame}s in both directions.
 */
public interface Iface {

    Transport transport();

    Device device();

    IfaceAttributes attributes();

    /** Device address packed into the worker address (tcp: host id + IP; self: process id). */
    byte[] deviceAddress();

    /** Iface address packed into the worker address (tcp: port; self: iface id). */
    byte[] ifaceAddress();

    /** This transport's own reachability check of a remote iface with the same transport name. */
    boolean isReachable(byte[] remoteDeviceAddress, byte[] remoteIfaceAddress);

    /**
     * Whether this process may operate on the remote iface's memory, checked when lanes are selected (cma: the
     * kernel's ptrace permission). Null when allowed; otherwise the reason, naming the error. Transports that touch
     * no remote memory allow everything.
     */
    default String accessRefusal(byte[] remoteDeviceAddress, byte[] remoteIfaceAddress) {
        return null;
    }

    /**
     * Connects a lane to a remote iface (connect-to-iface). The lane's pipeline gets the transport's framing
     * handlers followed by {@code laneHandler}; the future completes when the lane is active.
     */
    ChannelFuture connect(byte[] remoteDeviceAddress, byte[] remoteIfaceAddress, ChannelHandler laneHandler);

    /**
     * Creates an endpoint to be connected endpoint to endpoint (ifaces with {@link Capability#CONNECT_TO_EP}); its
     * lane's pipeline gets the transport's framing handlers followed by {@code laneHandler}, whichever side connects.
     */
    default P2pEndpoint createEndpoint(ChannelHandler laneHandler) {
        throw new UnsupportedOperationException(transport().name() + " does not connect endpoint to endpoint");
    }

    /** Closes the listening side; lanes already connected stay open until their owners close them. */
    Future<?> close();
}
