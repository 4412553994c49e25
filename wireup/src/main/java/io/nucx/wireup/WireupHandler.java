package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.EndpointException;
import io.nucx.protocol.ProtocolException;

import java.util.List;

/**
 * An endpoint's wireup (UCX's {@code wireup_ep}): it connects the endpoint's wireup lane and runs REQUEST / REPLY /
 * ACK, then replaces the {@link StubHandler} with the {@link LaneDispatcher} (the queued writes replay through it) and
 * removes itself once the peer has answered. It sits in the endpoint's pipeline only while wiring up.
 *
 * <p><b>Connect-to-iface AM lane.</b> The endpoint connects its own lane to the peer's iface and sends the REQUEST on
 * it. Writes stay in the stub until it is certain which lane the pair will use: at once on the worker with the lower
 * uuid (its own lane always carries the winning REQUEST, see {@link RequestProcessor}); on the higher-uuid worker only
 * when the REPLY comes or the peer's REQUEST pairs with this endpoint ({@link #pairWithRequest}), so nothing is ever
 * written on a lane that is dropped. {@code wireupFuture()} completes on the REPLY or the pairing.
 *
 * <p><b>p2p lanes</b> (both entries offer CONNECT_TO_EP: rdma, tcp in p2p mode): the own lane is the selection's
 * wireup lane (the AM transport's own connect-to-iface lane, or an auxiliary lane of another transport for rdma,
 * which has no CONNECT_TO_IFACE) and carries only wireup; the REQUEST and REPLY carry each side's transport endpoint
 * addresses, one per p2p connection ({@link P2pConnections}: the AM lane and rdma's RMA and AMO lanes). The responder
 * connects the transports whose two sides both connect (rdma) when the REQUEST arrives, before its REPLY; the
 * requester connects everything when the REPLY arrives, writes ACK first on the new AM lane and switches to it; the
 * responder switches when the ACK arrives (UCX: both sides connected). The requester then closes its wireup lane.
 */
final class WireupHandler extends ChannelInboundHandlerAdapter {

    private final EndpointChannel endpoint;
    private final boolean connects;
    private ChannelHandlerContext ctx;
    /** The lane this endpoint connected itself to carry its REQUEST; null for endpoints created on demand. */
    private Channel ownLane;
    /** p2p AM lane: its channel once connected on our side, whether the peer's side is connected. */
    private Channel p2pLane;
    private boolean p2pRemoteConnected;
    /** p2p: this side's REQUEST was answered: it connects last, sends the ACK and closes its wireup lane. */
    private boolean p2pDialer;

    private WireupHandler(EndpointChannel endpoint, boolean connects) {
        this.endpoint = endpoint;
        this.connects = connects;
    }

    /** The wireup of an endpoint made by {@code connect}: it connects its lane and sends the REQUEST. */
    static WireupHandler connecting(EndpointChannel ep) {
        return new WireupHandler(ep, true);
    }

    /** The wireup of an endpoint a peer's REQUEST created, whose AM lane is p2p: it waits for the ACK. */
    static WireupHandler accepting(EndpointChannel ep) {
        return new WireupHandler(ep, false);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        if (endpoint.selection().am().p2p()) {
            watchAmLane(); // its address goes in the REQUEST or the REPLY
        }
        if (connects && endpoint.state() == EndpointLifecycle.State.WIRING_UP) {
            connectOwnLane();
        }
    }

    /** Connects this endpoint's wireup lane to the peer's iface and sends the REQUEST on it. */
    private void connectOwnLane() {
        LaneSelector.Lane lane = endpoint.selection().wireup();
        ChannelFuture f = lane.iface().connect(lane.remote().deviceAddress(), lane.remote().ifaceAddress(),
                new LaneInboundHandler(endpoint.worker(), endpoint, 0));
        f.addListener((ChannelFutureListener) done -> {
            if (done.isSuccess()) {
                ownLaneConnected(done.channel());
            } else if (endpoint.remoteEndpointId() == WireupMessage.INVALID_EP_ID) {
                endpoint.fail(new EndpointException(endpoint.endpointId(), endpoint.remoteAddress(), "connecting "
                        + lane.name() + " failed: " + done.cause(), done.cause()));
            }
        });
    }

    private void ownLaneConnected(Channel lane) {
        if (endpoint.state() != EndpointLifecycle.State.WIRING_UP
                || endpoint.remoteEndpointId() != WireupMessage.INVALID_EP_ID) {
            lane.close(); // closed while connecting, or the peer's REQUEST paired with us meanwhile: nothing sent on it
            return;
        }
        ownLane = lane;
        endpoint.lanes().ownLane(lane);
        WireupAuth auth = endpoint.worker().auth();
        lane.write(WireupMessage.request(endpoint.errorMode(), endpoint.listened(), endpoint.connSn(),
                endpoint.endpointId(), endpoint.worker().address(), localEpAddresses(endpoint),
                auth == null ? null : auth.proof(endpoint.worker().uuid(), endpoint.remoteWorkerAddress().uuid(),
                        endpoint.connSn())).toFrame(lane.alloc()), lane.voidPromise());
        if (!endpoint.selection().am().p2p()
                && Long.compareUnsigned(endpoint.worker().uuid(), endpoint.remoteWorkerAddress().uuid()) <= 0) {
            endpoint.lanesReady(lane); // the lower uuid: its own lane is the pair's whatever the peer does
        } else {
            lane.flush();
        }
    }

    /** Whether this endpoint sent a REQUEST and still waits for its REPLY. */
    boolean awaitsReply() {
        return ownLane != null && endpoint.remoteEndpointId() == WireupMessage.INVALID_EP_ID && endpoint.isOpen();
    }

    /** The peer's REPLY: it made (or paired) its endpoint, whose id EP_CHECK will carry. */
    void onReply(WireupMessage reply) {
        endpoint.remoteEndpointId(reply.srcEpId());
        if (endpoint.lifecycle().failsOnModeMismatch(reply)) {
            return;
        }
        if (P2pConnections.needed(endpoint.selection())) {
            if (endpoint.selection().am().p2p()) {
                p2pDialer = true;
                p2pRemoteConnected = true; // the REPLY says the peer's endpoint exists and waits for us
            }
            try {
                endpoint.lanes().p2p().connect(reply, true);
            } catch (ProtocolException e) {
                endpoint.fail(new EndpointException(endpoint.endpointId(), endpoint.remoteAddress(), e.getMessage(),
                        e));
                throw e;
            }
            if (endpoint.selection().am().p2p()) {
                maybeSwitchToP2p(); // our side may be connected at once
                return;
            }
        }
        if (endpoint.state() == EndpointLifecycle.State.WIRING_UP && ownLane != null) {
            endpoint.lanesReady(ownLane);
        }
        done();
        endpoint.lanes().connectBwLanes();
    }

    /**
     * Simultaneous connect, this worker having the higher uuid: the peer's REQUEST (arrived on {@code peerLane}, the
     * lane the peer opened) pairs with this endpoint, and the pair uses that lane. The REPLY goes on our own lane if
     * our REQUEST went there (behind it, so the peer sees our REQUEST, and ignores it, before the REPLY; the peer then
     * closes that lane), else on the peer's lane; our lane, if still connecting, is closed once connected. Our p2p
     * endpoints, whose addresses our own REQUEST carried too, connect to the ones the peer's REQUEST names.
     */
    void pairWithRequest(WireupMessage request, Channel peerLane) {
        assert endpoint.state() == EndpointLifecycle.State.WIRING_UP;
        endpoint.remoteEndpointId(request.srcEpId());
        Channel replyOn = ownLane != null && ownLane.isActive() ? ownLane : peerLane;
        sendReply(endpoint, replyOn, answer(endpoint, request));
        if (endpoint.lifecycle().failsOnModeMismatch(request)) {
            return; // the REPLY carries our mode: the peer's own check fails its side too
        }
        if (endpoint.selection().am().p2p()) {
            return; // the peer connects our p2p endpoint; its ACK on that lane completes the wireup
        }
        endpoint.lanesReady(peerLane);
        done();
    }

    /**
     * The responder's side of the p2p connections of {@code ep}, whose peer's REQUEST is {@code request}: connects
     * those whose two sides both connect (before the REPLY goes, so the peer's first frames find our side ready) and
     * returns our addresses for the REPLY.
     */
    static List<WireupMessage.P2pAddress> answer(EndpointChannel ep, WireupMessage request) {
        if (!P2pConnections.needed(ep.selection())) {
            return WireupMessage.NO_EP_ADDRESS;
        }
        ep.lanes().p2p().connect(request, false);
        return ep.lanes().p2p().addresses();
    }

    /** REPLY on {@code lane} to the REQUEST that made {@code ep}, with our p2p endpoint addresses, or none. */
    static void sendReply(EndpointChannel ep, Channel lane, List<WireupMessage.P2pAddress> epAddresses) {
        lane.writeAndFlush(WireupMessage.reply(ep.errorMode(), ep.connSn(), ep.endpointId(), ep.remoteEndpointId(),
                epAddresses).toFrame(lane.alloc()), lane.voidPromise());
    }

    /** Our p2p endpoints' addresses for the peer, or none when every lane connects to the peer's iface. */
    static List<WireupMessage.P2pAddress> localEpAddresses(EndpointChannel ep) {
        return P2pConnections.needed(ep.selection()) ? ep.lanes().p2p().addresses() : WireupMessage.NO_EP_ADDRESS;
    }

    /** The p2p AM lane, once connected on our side, waits for the switch. */
    private void watchAmLane() {
        P2pConnections.Conn am = endpoint.lanes().p2p().get(endpoint.selection().am().pair());
        am.ep.connected().addListener(f -> {
            if (!f.isSuccess()) {
                return;
            }
            Channel lane = (Channel) f.getNow();
            if (!endpoint.isOpen()) {
                lane.close();
            } else if (p2pLane == null) {
                p2pLane = lane;
                endpoint.lanes().keepUntilClose(lane);
                maybeSwitchToP2p();
            }
        });
    }

    /** The dialler's ACK arrived on the p2p lane: the peer is connected too. */
    void onAck(WireupMessage ack, Channel lane) {
        if (!endpoint.selection().am().p2p() || p2pDialer || p2pRemoteConnected) {
            throw new ProtocolException("unexpected wireup ACK on " + endpoint);
        }
        if (p2pLane == null) {
            p2pLane = lane;
        }
        p2pRemoteConnected = true;
        maybeSwitchToP2p();
    }

    /**
     * UCX's rule: switch to the p2p lane when both sides are connected: ours (the lane is up) and the peer's (the
     * REPLY told the dialler; the ACK tells the other side). The dialler's ACK goes first on the lane, before the
     * replayed writes; the wireup lane has done its job then and is closed by its owner.
     */
    private void maybeSwitchToP2p() {
        if (endpoint.state() != EndpointLifecycle.State.WIRING_UP || p2pLane == null || !p2pRemoteConnected) {
            return;
        }
        if (p2pDialer) {
            p2pLane.write(WireupMessage.ack(endpoint.errorMode(), endpoint.connSn(), endpoint.endpointId(),
                    endpoint.remoteEndpointId()).toFrame(p2pLane.alloc()), p2pLane.voidPromise());
        }
        endpoint.lanesReady(p2pLane);
        done();
        if (p2pDialer) {
            endpoint.lanes().connectBwLanes();
            if (ownLane != null && ownLane != p2pLane) {
                ownLane.close();
            }
        }
    }
    /**
     * A lane of this endpoint went inactive while wiring up. Returns whether that settles it: the lane carrying our
     * REQUEST died before the REPLY, or the p2p lane before the switch (the endpoint fails), or it was a leftover of
     * wireup (ignored). False: the endpoint's lanes decide.
     */
    boolean laneInactive(Channel ch, Throwable cause) {
        boolean waitsOnIt = (ch == ownLane && endpoint.remoteEndpointId() == WireupMessage.INVALID_EP_ID)
                || (ch == p2pLane && endpoint.state() == EndpointLifecycle.State.WIRING_UP);
        if (waitsOnIt) {
            endpoint.fail(endpoint.lifecycle().laneFailure(endpoint.selection().am().name(), cause));
            return true;
        }
        return endpoint.lanes().laneOf(ch) == null;
    }

    /** The peer answered: the endpoint is wired up both ways, and wireup steps out of the pipeline. */
    private void done() {
        endpoint.wiredUp();
        if (!ctx.isRemoved()) {
            ctx.pipeline().remove(this);
        }
    }
}
