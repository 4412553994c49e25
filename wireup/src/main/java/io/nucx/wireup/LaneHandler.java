package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

/**
 * The last handler of every lane channel: hands each arriving frame to the worker by its AM id. A lane someone
 * connected to us starts without an endpoint; its first frame must be a wireup REQUEST, which creates one. A frame
 * that breaks the protocol closes this lane only; the worker and its other endpoints go on. Every frame tells the
 * endpoint's keepalive that the peer is alive. Wireup messages are dispatched by type, one method each. After its
 * endpoint has ended, a lane still open (it waits for the peer's last word on receive buffers offered to it for PUT)
 * passes on only RNDV_ATP and RNDV_DATA, to release those; other protocol frames are dropped.
 */
final class LaneHandler extends ChannelInboundHandlerAdapter {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(LaneHandler.class);

    private final Worker worker;
    private Endpoint endpoint;
    /** This lane's index among its endpoint's message lanes (0: the AM lane chosen at wireup). */
    private int laneIndex;
    private Throwable failure;
    /**
     * The peer's REQUEST on this lane lost a simultaneous connect (its uuid is higher): the uuid it came from. The
     * peer's REPLY to our own REQUEST follows on this lane, after which we close it. Valid when requestIgnored.
     */
    private long ignoredFrom;
    private boolean requestIgnored;
    /** Frames that arrived behind a REQUEST whose handling had to wait; null when not waiting. */
    private java.util.ArrayDeque<AmFrame> held;

    LaneHandler(Worker worker, Endpoint endpoint) {
        this(worker, endpoint, 0);
    }

    LaneHandler(Worker worker, Endpoint endpoint, int laneIndex) {
        this.worker = worker;
        this.endpoint = endpoint;
        this.laneIndex = laneIndex;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof AmFrame frame)) {
            ReferenceCountUtil.release(msg);
            throw new ProtocolException("lane received " + msg.getClass().getName() + ", not a frame");
        }
        if (held != null) {
            held.add(frame); // behind a REQUEST that waits: keep the lane's order
            return;
        }
        switch (frame.amId()) {
            case AmIds.WIREUP -> {
                try {
                    if (endpoint != null) {
                        endpoint.heard();
                    }
                    WireupMessage m = WireupMessage.from(frame);
                    switch (m.type()) {
                        case WireupMessage.REQUEST -> onRequest(ctx, m);
                        case WireupMessage.REPLY -> onReply(ctx, m);
                        case WireupMessage.ACK -> onAck(ctx, m);
                        case WireupMessage.EP_CHECK -> onEpCheck(ctx, m);
                        case WireupMessage.EP_REMOVED -> onEpRemoved(m, ctx.channel());
                        case WireupMessage.LANE_ATTACH -> onLaneAttach(ctx, m);
                        case WireupMessage.LANE_ACK -> laneEndpoint(m).onLaneAck(m.lane(), m.value());
                        case WireupMessage.LANE_FAILED -> laneEndpoint(m).onLaneFailed(m.lane(), m.value());
                        default -> throw new ProtocolException("wireup " + WireupMessage.typeName(m.type())
                                + " is not handled");
                    }
                } finally {
                    frame.release();
                }
            }
            case AmIds.EAGER_ONLY, AmIds.EAGER_FIRST, AmIds.EAGER_MIDDLE, AmIds.EAGER_SYNC_ONLY, AmIds.EAGER_SYNC_FIRST,
                 AmIds.EAGER_SYNC_ACK, AmIds.EAGER_ZCOPY_ONLY, AmIds.EAGER_ZCOPY_FIRST, AmIds.EAGER_ZCOPY_ACK -> {
                if (endpoint == null) {
                    frame.release();
                    throw new ProtocolException(AmIds.name(frame.amId()) + " before the wireup REQUEST");
                }
                if (!endpoint.isOpen()) {
                    frame.release(); // the endpoint has ended; its lane only lingers for the peer's last PUT words
                    return;
                }
                endpoint.heard();
                endpoint.frameReceived(laneIndex);
                worker.eagerReceiver().onFrame(endpoint, frame);
            }
            case AmIds.RNDV_RTS, AmIds.RNDV_RTR, AmIds.RNDV_DATA, AmIds.RNDV_ATS, AmIds.RNDV_ATP -> {
                if (endpoint == null) {
                    frame.release();
                    throw new ProtocolException(AmIds.name(frame.amId()) + " before the wireup REQUEST");
                }
                if (!endpoint.isOpen()) {
                    // Ended, lane open while receive buffers offered to the peer for PUT are held: only its ATP or
                    // DATA for them counts now (TagMatcher's PUT safety rule); the rest is dropped.
                    refuseLateOffer(ctx, frame);
                    worker.rndvReceiver().onFrameAfterClose(endpoint, frame);
                    return;
                }
                endpoint.heard();
                endpoint.frameReceived(laneIndex);
                worker.rndvReceiver().onFrame(endpoint, frame);
            }
            case AmIds.ATOMIC_REQ, AmIds.ATOMIC_REP -> {
                if (endpoint == null) {
                    frame.release();
                    throw new ProtocolException(AmIds.name(frame.amId()) + " before the wireup REQUEST");
                }
                endpoint.heard();
                endpoint.frameReceived(laneIndex);
                worker.amoReceiver().onFrame(endpoint, frame);
            }
            default -> {
                frame.release();
                throw new ProtocolException("unknown active message id " + frame.amId());
            }
        }
    }

    private void onRequest(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint != null || requestIgnored) {
            throw new ProtocolException("second wireup REQUEST on a lane of " + (endpoint != null ? endpoint
                    : "worker " + worker.name()));
        }
        if (m.dstEpId() != WireupMessage.INVALID_EP_ID) {
            throw new ProtocolException("wireup REQUEST naming endpoint #" + m.dstEpId() + " (reconnecting an "
                    + "existing endpoint is not supported)");
        }
        switch (worker.onRequest(m, ctx.channel())) {
            case Worker.RequestOutcome.Accepted a -> endpoint = a.endpoint();
            case Worker.RequestOutcome.Ignored i -> {
                requestIgnored = true;
                ignoredFrom = m.address().uuid();
                i.expected().heard();
            }
            case Worker.RequestOutcome.Retry r -> {
                // Our endpoint for this (uuid, conn_sn) is being registered on this loop by another thread's
                // connect; its registration task is queued, so ask again behind it, holding later frames meanwhile.
                if (held == null) {
                    held = new java.util.ArrayDeque<>();
                    ctx.channel().config().setAutoRead(false);
                }
                ctx.executor().execute(() -> retryRequest(ctx, m));
            }
        }
    }

    private void retryRequest(ChannelHandlerContext ctx, WireupMessage m) {
        java.util.ArrayDeque<AmFrame> waiting = held;
        held = null;
        if (waiting == null) {
            return; // the lane closed meanwhile and released them
        }
        try {
            onRequest(ctx, m);
        } catch (RuntimeException e) {
            releaseAll(waiting);
            exceptionCaught(ctx, e);
            return;
        }
        if (held != null) {
            held.addAll(waiting); // still waiting: keep them, in order
            return;
        }
        ctx.channel().config().setAutoRead(true);
        replayHeld(ctx, waiting);
    }

    private void replayHeld(ChannelHandlerContext ctx, java.util.ArrayDeque<AmFrame> waiting) {
        for (AmFrame f; (f = waiting.poll()) != null; ) {
            if (held != null || !ctx.channel().isOpen()) {
                f.release();
                continue;
            }
            try {
                channelRead(ctx, f);
            } catch (RuntimeException e) {
                releaseAll(waiting);
                exceptionCaught(ctx, e);
                return;
            }
        }
        if (endpoint != null) {
            endpoint.readBatchEnded(laneIndex, ctx.channel()); // these arrived outside a read batch: confirm them now
        }
    }

    /**
     * The peer offered a receive buffer for PUT (an RTR with a key) to an endpoint that has ended: it would hold that
     * buffer until our process exits. Tell it at once that nothing will be written: ATP(cancelled).
     */
    private static void refuseLateOffer(ChannelHandlerContext ctx, AmFrame frame) {
        io.netty.buffer.ByteBuf h = frame.header();
        // A key-carrying RTR is longer than a plain one (24 bytes, length-prefixed key after them).
        if (frame.amId() != AmIds.RNDV_RTR || h.readableBytes() <= io.nucx.protocol.tag.RndvHeaders.RTR_LENGTH + 2
                || !ctx.channel().isActive()) {
            return;
        }
        long receiverReqId = h.getLongLE(h.readerIndex() + 8);
        ctx.writeAndFlush(AmFrame.of(AmIds.RNDV_ATP, ctx.alloc().buffer(io.nucx.protocol.tag.RndvHeaders.ATP_LENGTH)
                .writeLongLE(receiverReqId).writeByte(io.nucx.protocol.tag.RndvHeaders.STATUS_CANCELED)
                .writeLongLE(0)), ctx.voidPromise());
    }

    private static void releaseAll(java.util.ArrayDeque<AmFrame> frames) {
        for (AmFrame f; (f = frames.poll()) != null; ) {
            f.release();
        }
    }

    /**
     * The REPLY to our REQUEST: on our own lane, or (simultaneous connect) on the peer's lane whose REQUEST we ignored,
     * behind that REQUEST. Then the peer's lane has done its job and we close it: the reader closes, so nothing the
     * peer wrote on it can be dropped by an early close (self lanes drop what the reader has not read yet).
     */
    private void onReply(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint != null) {
            if (m.dstEpId() != endpoint.endpointId()) {
                throw new ProtocolException("wireup REPLY for endpoint #" + m.dstEpId() + " on the lane of "
                        + endpoint);
            }
            endpoint.onReply(m);
            return;
        }
        if (!requestIgnored) {
            throw new ProtocolException("wireup REPLY on a lane without endpoint");
        }
        Endpoint target = worker.endpoint(m.dstEpId());
        if (target == null || target.remoteWorkerAddress().uuid() != ignoredFrom || !target.awaitsReply()) {
            throw new ProtocolException("wireup REPLY for endpoint #" + m.dstEpId() + ", which waits for no REPLY "
                    + "from " + Long.toHexString(ignoredFrom));
        }
        target.heard();
        target.onReply(m);
        ctx.close();
    }

    /**
     * The peer connected this lane for one of its endpoint's lanes (an AM_BW lane, or a replacement after a failover):
     * the first frame names our endpoint, and the peer's uuid and endpoint id must be the ones it was wired up with.
     */
    private void onLaneAttach(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint != null || requestIgnored) {
            throw new ProtocolException("LANE_ATTACH on a lane of " + (endpoint != null ? endpoint
                    : "worker " + worker.name()) + " that carries wireup already");
        }
        Endpoint target = worker.endpoint(m.dstEpId());
        if (target == null || target.remoteWorkerAddress().uuid() != m.value()
                || target.remoteEndpointId() != m.srcEpId()) {
            throw new ProtocolException("LANE_ATTACH from endpoint #" + m.srcEpId() + " of "
                    + Long.toHexString(m.value())
                    + " for endpoint #" + m.dstEpId() + ", which " + (target == null ? "does not exist"
                    : "is wired to #" + target.remoteEndpointId() + " of "
                    + Long.toHexString(target.remoteWorkerAddress().uuid())));
        }
        target.heard();
        target.onLaneAttach(m.lane(), m.reason(), ctx.channel());
        endpoint = target;
        laneIndex = m.lane();
    }

    /** The endpoint a LANE_ACK or LANE_FAILED is for: this lane's, named by id. */
    private Endpoint laneEndpoint(WireupMessage m) {
        if (endpoint == null || m.dstEpId() != endpoint.endpointId()) {
            throw new ProtocolException("wireup " + WireupMessage.typeName(m.type()) + " for endpoint #" + m.dstEpId()
                    + " on a lane of " + (endpoint != null ? endpoint : "no endpoint"));
        }
        return endpoint;
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (endpoint != null) {
            endpoint.readBatchEnded(laneIndex, ctx.channel());
        }
        ctx.fireChannelReadComplete();
    }

    private void onAck(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint == null || m.dstEpId() != endpoint.endpointId()) {
            throw new ProtocolException("wireup ACK for endpoint #" + m.dstEpId() + " on a lane of "
                    + (endpoint != null ? endpoint : "no endpoint"));
        }
        endpoint.onAck(m, ctx.channel());
    }

    /**
     * Keepalive probe: nothing to do if we know the endpoint it names (its arrival was the point); otherwise answer
     * EP_REMOVED so the peer fails its endpoint at once instead of waiting (UCX's ucp_wireup_send_ep_removed).
     */
    private void onEpCheck(ChannelHandlerContext ctx, WireupMessage m) {
        Endpoint known = worker.endpoint(m.dstEpId());
        if (known != null && known == endpoint) { // also while it closes gracefully: it still takes frames
            return;
        }
        String reason = "worker " + worker.name() + " (" + Long.toHexString(worker.uuid()) + ") has no endpoint #"
                + m.dstEpId() + (known != null && known != endpoint ? " on this connection" : "");
        ctx.writeAndFlush(WireupMessage.epRemoved(WireupMessage.INVALID_EP_ID, m.srcEpId(), reason)
                .toFrame(ctx.alloc()), ctx.voidPromise());
    }

    /** The peer removed the endpoint of this lane (closed it, or did not know it): ours fails with a reset. */
    private void onEpRemoved(WireupMessage m, io.netty.channel.Channel channel) {
        if (endpoint != null && (m.dstEpId() == endpoint.endpointId() || m.dstEpId() == WireupMessage.INVALID_EP_ID)) {
            endpoint.remoteRemoved(m.reason(), channel, m.srcEpId() != WireupMessage.INVALID_EP_ID);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (failure == null) {
            failure = cause;
            worker.laneFailed(cause);
            LOG.warn("closing lane {} -> {} of worker {}: {}", ctx.channel().localAddress(),
                    ctx.channel().remoteAddress(), worker.name(), cause.toString());
        }
        ctx.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (held != null) {
            releaseAll(held);
            held = null;
        }
        if (endpoint != null) {
            endpoint.laneInactive(ctx.channel(), failure);
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (endpoint != null) {
            endpoint.pipeline().fireChannelWritabilityChanged();
        }
        ctx.fireChannelWritabilityChanged();
    }
}
