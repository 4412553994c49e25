package io.nucx.transport;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;

/**
 * A transport endpoint that connects endpoint to endpoint (UCT's CONNECT_TO_EP: {@code uct_ep_create}, then
 * {@code uct_ep_connect_to_ep} with the peer endpoint's address). Each side creates one and sends its
 * {@link #address()} to the other through wireup. Two kinds:
 * <ul>
 *   <li>one side dials ({@link #connectFromBothSides()} false; tcp): the lane exists once one side's {@link #connect}
 *       has reached the other side's endpoint, whose {@link #connected()} then completes with the same connection's
 *       other end;</li>
 *   <li>both sides connect (true; rdma's RC queue pairs, UCX's {@code connect_to_ep} on each side): each side calls
 *       {@link #connect} with the other's address, and its {@link #connected()} completes when its own connect has
 *       made its side of the lane ready. The responder of a wireup connects when the REQUEST arrives, before its
 *       REPLY; the requester when the REPLY arrives.</li>
 * </ul>
 * Made and used on the iface's loop only.
 */
public interface P2pEndpoint {

    /** This endpoint's address, for the peer's {@link #connect}. */
    byte[] address();

    /**
     * Connects to the peer's endpoint at {@code remoteEpAddress} on its iface; the future completes when the lane is
     * active and the peer can tell which of its endpoints it belongs to. This endpoint stops waiting to be reached.
     */
    ChannelFuture connect(byte[] remoteDeviceAddress, byte[] remoteIfaceAddress, byte[] remoteEpAddress);

    /** Completes with the lane when the peer's endpoint connected to this one; fails if this endpoint closes first. */
    Future<Channel> connected();

    /** Whether both sides must {@link #connect} (see the class comment); false: one side dials the other. */
    default boolean connectFromBothSides() {
        return false;
    }

    /** Stops waiting to be reached (a lane already made stays open: its owner closes it). */
    void close();
}
