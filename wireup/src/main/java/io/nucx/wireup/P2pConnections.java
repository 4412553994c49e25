package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.util.concurrent.Future;
import io.nucx.EndpointException;
import io.nucx.WireupException;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.Iface;
import io.nucx.transport.P2pEndpoint;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An endpoint's transport connections that connect endpoint to endpoint (UCT's CONNECT_TO_EP: rdma's RC queue pairs,
 * tcp in p2p mode), one per pair of address entries, whatever roles the selection gives it: the AM lane, RMA lanes, the
 * AMO lane (one rdma queue pair may be all three, as one UCT endpoint serves several UCP lanes).
 *
 * <p>Both sides make a transport endpoint for each pair and send its address in the REQUEST and the REPLY
 * ({@link WireupMessage.P2pAddress}). Transports whose two sides both connect ({@link
 * P2pEndpoint#connectFromBothSides()}, rdma) are connected by the responder when the REQUEST arrives, before its REPLY,
 * and by the requester when the REPLY arrives (UCX's {@code connect_to_ep} on each side); the others by the requester
 * alone, the responder's side completing when it is reached. The AM pair's switch from the stub to the lane (the
 * ACK) stays the {@link WireupHandler}'s. Loop only.
 */
final class P2pConnections {

    /** One p2p connection: its transport endpoint and, once made, its lane channel. */
    static final class Conn {
        final LaneSelector.Pair pair;
        final Iface iface;
        final byte[] remoteDevice;
        final byte[] remoteIface;
        final String name;
        final P2pEndpoint ep;
        boolean connecting;

        Conn(LaneSelector.Pair pair, Iface iface, byte[] remoteDevice, byte[] remoteIface, String name,
             P2pEndpoint ep) {
            this.pair = pair;
            this.iface = iface;
            this.remoteDevice = remoteDevice;
            this.remoteIface = remoteIface;
            this.name = name;
            this.ep = ep;
        }

        /** The lane, once this side of it is ready; null before. */
        Channel channel() {
            Future<Channel> f = ep.connected();
            return f.isSuccess() ? f.getNow() : null;
        }
    }

    private final EndpointChannel endpoint;
    private final Map<LaneSelector.Pair, Conn> conns = new LinkedHashMap<>();
    private boolean made;
    private boolean closed;

    P2pConnections(EndpointChannel endpoint) {
        this.endpoint = endpoint;
    }

    /** Whether the selection has any p2p connection. */
    static boolean needed(LaneSelector.Lanes sel) {
        if (sel.am().p2p()) {
            return true;
        }
        for (LaneSelector.RmaLane r : sel.rmaLanes()) {
            if (r.p2p()) {
                return true;
            }
        }
        return sel.amo() != null && sel.amo().p2p();
    }

    /**
     * Makes (once) a transport endpoint for every p2p pair of the selection: the AM lane's gets the endpoint's lane
     * handler (its frames go up the endpoint), the others a handler for RMA lanes. Returns their addresses for the
     * peer, each naming its pair as we see it.
     */
    List<WireupMessage.P2pAddress> addresses() {
        make();
        List<WireupMessage.P2pAddress> out = new ArrayList<>(conns.size());
        for (Conn c : conns.values()) {
            out.add(new WireupMessage.P2pAddress(c.pair.local(), c.pair.remote(), c.ep.address()));
        }
        return out;
    }

    private void make() {
        if (made || closed) {
            return;
        }
        made = true;
        LaneSelector.Lanes sel = endpoint.selection();
        LaneSelector.Lane am = sel.am();
        if (am.p2p()) {
            add(am.pair(), am.iface(), am.remote().deviceAddress(), am.remote().ifaceAddress(), am.name(),
                    new LaneInboundHandler(endpoint.worker(), endpoint, 0));
        }
        List<LaneSelector.RmaLane> rma = new ArrayList<>(sel.rmaLanes());
        if (sel.amo() != null) {
            rma.add(sel.amo());
        }
        for (LaneSelector.RmaLane r : rma) {
            if (r.p2p() && !conns.containsKey(r.pair())) {
                add(r.pair(), r.iface(), r.remote().deviceAddress(), r.remote().ifaceAddress(), r.name(),
                        new RmaLaneHandler(endpoint.worker(), r.name() + " of " + endpoint));
            }
        }
    }

    private void add(LaneSelector.Pair pair, Iface iface, byte[] remoteDevice, byte[] remoteIface, String name,
                     ChannelHandler handler) {
        P2pEndpoint ep = iface.createEndpoint(handler);
        Conn c = new Conn(pair, iface, remoteDevice, remoteIface, name, ep);
        conns.put(pair, c);
        ep.connected().addListener(f -> {
            if (f.isSuccess() && (closed || !endpoint.isOpen())) {
                ((Channel) f.getNow()).close(); // the endpoint ended while it connected
            }
        });
    }

    /**
     * Connects our side of each connection to the peer's address in {@code m} (its REQUEST when we answer it, its
     * REPLY when we asked). The responder connects only transports whose two sides both connect.
     *
     * @throws ProtocolException when the peer's message lacks the address of a connection the selection has
     */
    void connect(WireupMessage m, boolean requester) {
        make();
        // The AM lane last: its connection may complete the wireup at once, and what waits for that (the RMA API)
        // finds the RMA lanes connected.
        List<Conn> order = new ArrayList<>(conns.values());
        LaneSelector.Pair am = endpoint.selection().am().pair();
        order.sort((x, y) -> Boolean.compare(x.pair.equals(am), y.pair.equals(am)));
        for (Conn c : order) {
            if (c.connecting || (!requester && !c.ep.connectFromBothSides())) {
                continue;
            }
            byte[] remote = m.epAddress(c.pair.local(), c.pair.remote());
            if (remote == null) {
                throw new ProtocolException("wireup " + WireupMessage.typeName(m.type()) + " without an endpoint "
                        + "address for the p2p lane " + c.name + " of " + endpoint);
            }
            c.connecting = true;
            c.ep.connect(c.remoteDevice, c.remoteIface, remote).addListener((ChannelFutureListener) f -> {
                if (!f.isSuccess()) {
                    connectFailed(c, f.cause());
                }
            });
        }
    }

    private void connectFailed(Conn c, Throwable cause) {
        if (c.pair.equals(endpoint.selection().am().pair())) {
            endpoint.fail(new EndpointException(endpoint.endpointId(), endpoint.remoteAddress(),
                    "connecting the p2p lane " + c.name + " to the peer's endpoint failed: " + cause, cause));
        } else {
            // Only RMA goes on it: transfers use the other rails, or active messages.
            endpoint.worker().laneFailed(new WireupException("RMA lane " + c.name + " of " + endpoint
                    + " did not connect: " + cause, cause));
        }
    }

    /** The connection of {@code pair}, or null when the selection has none there (yet). */
    Conn get(LaneSelector.Pair pair) {
        make();
        return conns.get(pair);
    }

    /** The lane of {@code pair} once this side is connected, else null. */
    Channel channel(LaneSelector.Pair pair) {
        Conn c = get(pair);
        return c == null ? null : c.channel();
    }

    /** Closes every connection but the AM lane's (its owner, the endpoint's lanes, closes that one). */
    void close(Channel amLane) {
        closed = true;
        for (Conn c : conns.values()) {
            Channel ch = c.channel();
            if (ch != null && ch != amLane) {
                ch.close();
            }
            c.ep.close();
        }
    }
}
