package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.Worker;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.PayloadPlacement;
import io.nucx.transport.ShortFrameHandler;
import io.nucx.transport.ShortPayload;

import io.netty.util.concurrent.ScheduledFuture;
import io.nucx.WireupException;

import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * The bottom handler of every lane channel (after the transport's framing): it demultiplexes the lane onto its
 * endpoint, as {@code Http2MultiplexHandler} does streams onto child channels. Wireup frames are handled here, one
 * method per message type (a REQUEST goes to the worker's {@link RequestProcessor}, REPLY and ACK to the endpoint's
 * {@link WireupHandler}, EP_CHECK and EP_REMOVED to the endpoint's lifecycle, LANE_* to its lanes); every other frame
 * goes up the endpoint's pipeline ({@link EndpointChannel#frameArrived}), whose codecs registered its AM id.
 *
 * <p>A lane a peer connected to us starts without an endpoint: its first frame is a REQUEST (it creates or pairs an
 * endpoint) or a LANE_ATTACH (it joins one). Any other frame first, an unknown wireup type or a malformed payload is a
 * {@link ProtocolException}: this lane closes, nothing else is hurt.
 */
final class LaneInboundHandler extends ChannelInboundHandlerAdapter implements ShortFrameHandler, PayloadPlacement {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(LaneInboundHandler.class);

    /**
     * NEW: a lane a peer connected, before its first frame. RETRYING: its REQUEST waits behind another thread's
     * connect, later frames held in order. IGNORED: its REQUEST lost a simultaneous connect; the peer's REPLY to ours
     * comes next on it. REFUSED: its REQUEST was answered with the reason it cannot be accepted; the lane closes
     * once that is written. ENDPOINT: it is one of an endpoint's lanes. GOODBYE: announced for an endpoint that closed
     * gracefully since ({@link #onLaneAttach}): told so, open until the peer closes it, what it brings dropped.
     */
    private enum Role { NEW, RETRYING, IGNORED, REFUSED, ENDPOINT, GOODBYE }

    private final DefaultWorker worker;
    /** NUCX_LANE_BATCH, read once: it is asked per frame. */
    private final int laneBatch;
    /** The iface that accepted this lane from a peer; null for lanes we connected. */
    private final Iface acceptedBy;
    private Role role;
    private EndpointChannel endpoint;
    /** This lane's index among its endpoint's message lanes (0: the AM lane chosen at wireup). */
    private int laneIndex;
    private Throwable failure;
    private ChannelHandlerContext ctx;
    /** IGNORED: the uuid of the peer whose REQUEST was ignored. */
    private long ignoredFrom;
    /** RETRYING: frames that arrived behind the REQUEST, in order. */
    private ArrayDeque<AmFrame> held;
    /** Frames handled since this loop turn began (NUCX_LANE_BATCH at most). */
    private int handledThisTurn;
    /** Frames a read brought beyond this turn's share, handled in the next turns; null when none wait. */
    private ArrayDeque<AmFrame> backlog;
    /** EP_REMOVED answers were written in this read batch and wait for its end to be flushed. */
    private boolean answered;
    /** A lane a peer connected must carry its wireup within NUCX_WIREUP_TIMEOUT; null once it has (or ours). */
    private ScheduledFuture<?> wireupTimer;
    /** GOODBYE: closes the lane if the peer has not by the close bound. */
    private ScheduledFuture<?> goodbyeBound;

    LaneInboundHandler(DefaultWorker worker, EndpointChannel endpoint, int laneIndex) {
        this(worker, endpoint, laneIndex, null);
    }

    private LaneInboundHandler(DefaultWorker worker, EndpointChannel endpoint, int laneIndex,
                               Iface acceptedBy) {
        this.worker = worker;
        this.laneBatch = worker.settings().laneBatch();
        this.endpoint = endpoint;
        this.role = endpoint == null ? Role.NEW : Role.ENDPOINT;
        this.laneIndex = laneIndex;
        this.acceptedBy = acceptedBy;
    }

    /**
     * The handler of a lane a peer connected to our iface {@code iface}: it learns its endpoint from the first frame.
     */
    static LaneInboundHandler accepted(DefaultWorker worker, Iface iface) {
        return new LaneInboundHandler(worker, null, 0, iface);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        if (endpoint == null) {
            long timeout = worker.settings().wireupTimeoutNanos();
            wireupTimer = ctx.executor().schedule(() -> {
                wireupTimer = null;
                if (endpoint == null && ctx.channel().isOpen()) {
                    exceptionCaught(ctx, new WireupException("connection from " + ctx.channel().remoteAddress()
                            + " carried no wireup " + (role == Role.IGNORED ? "REPLY" : "REQUEST") + " within "
                            + Duration.ofNanos(timeout) + " (NUCX_WIREUP_TIMEOUT)", null));
                }
            }, timeout, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        cancelWireupTimer();
        if (backlog != null) {
            releaseAll(backlog);
            backlog = null;
        }
    }

    private void cancelWireupTimer() {
        if (wireupTimer != null) {
            wireupTimer.cancel(false);
            wireupTimer = null;
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof AmFrame frame)) {
            ReferenceCountUtil.release(msg);
            throw new ProtocolException("lane received " + msg.getClass().getName() + ", not a frame");
        }
        if (role == Role.RETRYING) {
            held.add(frame); // behind a REQUEST that waits: keep the lane's order
            return;
        }
        if (role == Role.GOODBYE) {
            frame.release(); // sent before the peer read our goodbye, to an endpoint that is gone
            return;
        }
        if (backlog != null) {
            backlog.add(frame); // this turn's share is used: the next turn takes it, in order
            return;
        }
        if (++handledThisTurn > laneBatch) {
            backlog = new ArrayDeque<>();
            backlog.add(frame);
            ctx.channel().config().setAutoRead(false); // what this read brought waits here; nothing more is read
            ctx.executor().schedule(() -> drainBacklog(ctx), 0, TimeUnit.NANOSECONDS);
            return;
        }
        dispatch(ctx, frame);
    }

    /**
     * A short frame as its parts ({@link ShortFrameHandler}), taken when {@code channelRead} would hand the frame
     * straight to an endpoint's codec that takes it so; anything else (wireup, a lane not yet an endpoint's, this
     * turn's share used, a codec that wants the frame) comes as a frame.
     */
    @Override
    public boolean shortFrameArrived(int amId, long header, ShortPayload payload) {
        if (role != Role.ENDPOINT || backlog != null || handledThisTurn >= laneBatch
                || endpoint == null || amId == AmIds.WIREUP) {
            return false;
        }
        if (!endpoint.shortFrameArrived(this, amId, header, payload)) {
            return false;
        }
        handledThisTurn++;
        return true;
    }

    /**
     * Frames this turn's share has left ({@link ShortFrameHandler#turnShareLeft}): tcp's decoder leaves the rest of a
     * read in its cumulation for the next turn, where {@code channelRead} would keep them in the backlog as objects.
     */
    @Override
    public int turnShareLeft() {
        return backlog != null ? 0 : Math.max(0, laneBatch - handledThisTurn);
    }

    /**
     * Where a large payload goes before it arrives ({@link PayloadPlacement}): asked of the endpoint's codec when the
     * frame would go straight to it ({@link #dispatch}); not while frames wait in the backlog (the codec has not seen
     * them yet) nor before the lane is an endpoint's.
     */
    @Override
    public ByteBuf placePayload(int amId, ByteBuf header, int length) {
        if (role != Role.ENDPOINT || backlog != null || endpoint == null || amId == AmIds.WIREUP) {
            return null;
        }
        return endpoint.placePayload(amId, header, length);
    }

    private void dispatch(ChannelHandlerContext ctx, AmFrame frame) {
        if (frame.amId() == AmIds.WIREUP) {
            try {
                onWireup(ctx, WireupMessage.from(frame));
            } finally {
                frame.release();
            }
            return;
        }
        if (worker.registry().owner(frame.amId()) == null) {
            frame.release();
            throw new ProtocolException("unknown active message id " + frame.amId());
        }
        if (endpoint == null) {
            frame.release();
            throw new ProtocolException(AmIds.name(frame.amId()) + " before the wireup REQUEST");
        }
        endpoint.frameArrived(this, frame);
    }

    /**
     * The next loop turn's share of the frames a read brought beyond NUCX_LANE_BATCH: a scheduled task runs after the
     * turn's I/O, so the loop's other lanes and timers get their turn between two shares (a task that queued itself
     * with {@code execute} could run again before any I/O). Reading resumes once the backlog is empty.
     */
    private void drainBacklog(ChannelHandlerContext ctx) {
        ArrayDeque<AmFrame> frames = backlog;
        if (frames == null) {
            return; // the lane closed meanwhile and released them
        }
        handledThisTurn = 0;
        int batch = laneBatch;
        for (AmFrame f; handledThisTurn < batch && (f = frames.poll()) != null; ) {
            if (!ctx.channel().isOpen()) {
                f.release();
                continue;
            }
            if (role == Role.RETRYING) {
                held.add(f);
                continue;
            }
            handledThisTurn++;
            try {
                dispatch(ctx, f);
            } catch (RuntimeException e) {
                releaseAll(frames);
                backlog = null;
                exceptionCaught(ctx, e);
                return;
            }
        }
        if (answered) {
            answered = false;
            ctx.flush();
        }
        if (endpoint != null) {
            endpoint.readBatchEnded(this, ctx.channel()); // these arrived outside a read batch: confirm them now
        }
        if (!frames.isEmpty()) {
            ctx.executor().schedule(() -> drainBacklog(ctx), 0, TimeUnit.NANOSECONDS);
            return;
        }
        backlog = null;
        handledThisTurn = 0;
        if (role != Role.RETRYING && ctx.channel().isOpen()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    /** The endpoint's lane this handler's channel is, or null when it is none of them (any more). */
    Lane lane() {
        EndpointLanes lanes = endpoint.lanes();
        return laneIndex < lanes.size() && lanes.lane(laneIndex).channel() == ctx.channel() ? lanes.lane(laneIndex)
                : null;
    }

    private void onWireup(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint != null) {
            endpoint.heard();
            Lane lane = lane();
            if (lane != null) {
                lane.heard = true; // EP_CHECK and LANE_ACK keep a lane alive for failover's keepalive
            }
        }
        switch (m.type()) {
            case WireupMessage.REQUEST -> onRequest(ctx, m);
            case WireupMessage.REPLY -> onReply(ctx, m);
            case WireupMessage.ACK -> onAck(ctx, m);
            case WireupMessage.EP_CHECK -> onEpCheck(ctx, m);
            case WireupMessage.EP_REMOVED -> onEpRemoved(ctx, m);
            case WireupMessage.LANE_ATTACH -> onLaneAttach(ctx, m);
            case WireupMessage.LANE_ACK -> reliability(m).onLaneAck(m.lane(), m.value());
            case WireupMessage.LANE_FAILED -> reliability(m).onLaneFailed(m.lane(), m.value());
            default -> throw new ProtocolException("wireup " + WireupMessage.typeName(m.type()) + " is not handled");
        }
    }

    private void onRequest(ChannelHandlerContext ctx, WireupMessage m) {
        if (role != Role.NEW) {
            throw new ProtocolException("second wireup REQUEST on a lane of " + (endpoint != null ? endpoint
                    : "worker " + worker.name()));
        }
        if (m.dstEpId() != WireupMessage.INVALID_EP_ID) {
            throw new ProtocolException("wireup REQUEST naming endpoint #" + m.dstEpId() + " (reconnecting an "
                    + "existing endpoint is not supported)");
        }
        RequestProcessor.Outcome outcome;
        try {
            outcome = worker.requests().onRequest(m, ctx.channel());
        } catch (ProtocolException e) {
            throw e; // the peer broke the protocol (a replayed REQUEST, a bad proof): closed at once, nothing answered
        } catch (RuntimeException e) {
            // The endpoint could not be made (e.g. the worker's endpoint handler is not @Sharable and went to another
            // endpoint already): the peer's endpoint fails with this reason, not with a lost connection.
            role = Role.REFUSED;
            refuse(ctx, m.srcEpId(), "worker " + worker.name() + " could not accept the endpoint: " + e, e);
            return;
        }
        switch (outcome) {
            case RequestProcessor.Outcome.Accepted a -> {
                endpoint = a.endpoint();
                role = Role.ENDPOINT;
                cancelWireupTimer();
            }
            case RequestProcessor.Outcome.Ignored i -> {
                role = Role.IGNORED;
                ignoredFrom = m.address().uuid();
                i.expected().heard();
            }
            case RequestProcessor.Outcome.Refused r -> role = Role.REFUSED;
            case RequestProcessor.Outcome.Retry r -> {
                // Our endpoint for this (uuid, conn_sn) is being registered on this loop by another thread's connect;
                // its registration task is queued, so ask again behind it, holding later frames meanwhile.
                if (role != Role.RETRYING) {
                    role = Role.RETRYING;
                    held = new ArrayDeque<>();
                    ctx.channel().config().setAutoRead(false);
                }
                ctx.executor().execute(() -> retryRequest(ctx, m));
            }
        }
    }

    private void retryRequest(ChannelHandlerContext ctx, WireupMessage m) {
        if (role != Role.RETRYING) {
            return; // the lane closed meanwhile and released them
        }
        ArrayDeque<AmFrame> waiting = held;
        held = null;
        role = Role.NEW;
        try {
            onRequest(ctx, m);
        } catch (RuntimeException e) {
            releaseAll(waiting);
            exceptionCaught(ctx, e);
            return;
        }
        if (role == Role.RETRYING) {
            held.addAll(waiting); // still waiting: keep them, in order
            return;
        }
        if (backlog == null) {
            ctx.channel().config().setAutoRead(true);
        }
        for (AmFrame f; (f = waiting.poll()) != null; ) {
            if (role == Role.RETRYING || !ctx.channel().isOpen()) {
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
            endpoint.readBatchEnded(this, ctx.channel()); // these arrived outside a read batch: confirm them now
        }
    }

    private static void releaseAll(ArrayDeque<AmFrame> frames) {
        for (AmFrame f; (f = frames.poll()) != null; ) {
            f.release();
        }
    }

    /**
     * The REPLY to our REQUEST: on our own lane, or (simultaneous connect) on the peer's lane whose REQUEST we ignored,
     * behind that REQUEST. That lane has then done its job and we close it: the reader closes, so nothing the peer
     * wrote on it can be dropped by an early close (self lanes drop what the reader has not read yet).
     */
    private void onReply(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint != null) {
            if (m.dstEpId() != endpoint.endpointId()) {
                throw new ProtocolException("wireup REPLY for endpoint #" + m.dstEpId() + " on the lane of "
                        + endpoint);
            }
            wireupOf(endpoint, "REPLY").onReply(m);
            return;
        }
        if (role != Role.IGNORED) {
            throw new ProtocolException("wireup REPLY on a lane without endpoint");
        }
        EndpointChannel target = worker.endpoint(m.dstEpId());
        WireupHandler w = target == null ? null : target.wireup();
        if (target == null || target.remoteWorkerAddress().uuid() != ignoredFrom || w == null || !w.awaitsReply()) {
            throw new ProtocolException("wireup REPLY for endpoint #" + m.dstEpId() + ", which waits for no REPLY "
                    + "from " + Long.toHexString(ignoredFrom));
        }
        target.heard();
        w.onReply(m);
        ctx.close();
    }

    private void onAck(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint == null || m.dstEpId() != endpoint.endpointId()) {
            throw new ProtocolException("wireup ACK for endpoint #" + m.dstEpId() + " on a lane of "
                    + (endpoint != null ? endpoint : "no endpoint"));
        }
        wireupOf(endpoint, "ACK").onAck(m, ctx.channel());
    }

    private static WireupHandler wireupOf(EndpointChannel ep, String what) {
        WireupHandler w = ep.wireup();
        if (w == null) {
            throw new ProtocolException("unexpected wireup " + what + " on " + ep + ", which is wired up");
        }
        return w;
    }

    /**
     * Keepalive probe: nothing to do if we know the endpoint it names (its arrival was the point); otherwise answer
     * EP_REMOVED so the peer fails its endpoint at once instead of waiting (UCX's ucp_wireup_send_ep_removed). The
     * answer only hastens what the peer's keepalive finds anyway, so a lane that takes no more (a peer that does not
     * read) gets none: probes never pile up answers here.
     */
    private void onEpCheck(ChannelHandlerContext ctx, WireupMessage m) {
        EndpointChannel known = worker.endpoint(m.dstEpId());
        if (known != null && known == endpoint) { // also while it closes gracefully: it still takes frames
            return;
        }
        if (!ctx.channel().isWritable()) {
            worker.counters().counter(Worker.EP_CHECK_UNANSWERED).increment();
            return;
        }
        String reason = "worker " + worker.name() + " (" + Long.toHexString(worker.uuid()) + ") has no endpoint #"
                + m.dstEpId() + (known != null ? " on this connection" : "");
        ctx.write(WireupMessage.epRemoved(WireupMessage.INVALID_EP_ID, m.srcEpId(), reason).toFrame(ctx.alloc()),
                ctx.voidPromise());
        answered = true; // flushed once, at the end of the read batch
    }

    /** The peer removed the endpoint of this lane (closed it, or did not know it): ours fails with a reset. */
    private void onEpRemoved(ChannelHandlerContext ctx, WireupMessage m) {
        if (endpoint != null && (m.dstEpId() == endpoint.endpointId() || m.dstEpId() == WireupMessage.INVALID_EP_ID)) {
            endpoint.lifecycle().remoteRemoved(m.reason(), ctx.channel(), m.srcEpId() != WireupMessage.INVALID_EP_ID);
        }
    }

    /**
     * The peer connected this lane for one of its endpoint's lanes (an AM_BW lane, or a replacement after a failover):
     * the first frame names our endpoint, and the peer's uuid and endpoint id must be the ones it was wired up with.
     */
    private void onLaneAttach(ChannelHandlerContext ctx, WireupMessage m) {
        if (role != Role.NEW) {
            throw new ProtocolException("LANE_ATTACH on a lane of " + (endpoint != null ? endpoint
                    : "worker " + worker.name()) + " that carries wireup already");
        }
        if (worker.auth() != null) { // before anything is looked up: a stranger learns nothing of our endpoints
            worker.auth().checkLane(m.proof(), m.value(), worker.uuid(), m.srcEpId(), m.dstEpId(), m.lane());
        }
        EndpointChannel target = worker.endpoint(m.dstEpId());
        if (target == null && worker.saidGoodbye(m.dstEpId(), m.value(), m.srcEpId())) {
            // Closed gracefully here while the peer's lane connected: the goodbye went on the lanes we knew of. The
            // peer acts on a goodbye once each of its lanes has brought one, so this lane says it too, and stays open
            // until the peer closes it (at most the close bound): closed now, the peer could take its close for a
            // reset before it has read what our other lanes carried ahead of their goodbye.
            role = Role.GOODBYE;
            cancelWireupTimer();
            LOG.debug("lane {} -> {} of worker {} was announced for endpoint #{}, closed gracefully since",
                    ctx.channel().localAddress(), ctx.channel().remoteAddress(), worker.name(), m.dstEpId());
            ctx.writeAndFlush(WireupMessage.epRemoved(m.dstEpId(), m.srcEpId(), "endpoint #" + m.dstEpId()
                    + " of worker " + worker.name() + " closed by its owner").toFrame(ctx.alloc()), ctx.voidPromise());
            goodbyeBound = ctx.executor().schedule(() -> ctx.close(), worker.closeWaitNanos(), TimeUnit.NANOSECONDS);
            return;
        }
        if (target == null && worker.hadEndpoint(m.dstEpId())) {
            // Closed here (not gracefully) while the peer's lane connected: the peer's announcement crossed the close.
            // Not a fault of the peer's: the lane goes, saying so, without a warning.
            role = Role.REFUSED;
            failure = new WireupException("LANE_ATTACH for endpoint #" + m.dstEpId() + ", closed", null);
            LOG.debug("closing lane {} -> {} of worker {}: it was announced for endpoint #{}, closed since",
                    ctx.channel().localAddress(), ctx.channel().remoteAddress(), worker.name(), m.dstEpId());
            tellAndClose(ctx, m.srcEpId(), "worker " + worker.name() + " (" + Long.toHexString(worker.uuid())
                    + ") has closed endpoint #" + m.dstEpId());
            return;
        }
        if (target == null || target.remoteWorkerAddress().uuid() != m.value()
                || target.remoteEndpointId() != m.srcEpId()) {
            throw new ProtocolException("LANE_ATTACH from endpoint #" + m.srcEpId() + " of "
                    + Long.toHexString(m.value()) + " for endpoint #" + m.dstEpId() + ", which "
                    + (target == null ? "does not exist" : "is wired to #" + target.remoteEndpointId() + " of "
                    + Long.toHexString(target.remoteWorkerAddress().uuid())));
        }
        target.heard();
        target.lanes().onAttach(m.lane(), m.reason(), ctx.channel(), acceptedBy);
        target.lifecycle().laneAttached(ctx.channel());
        endpoint = target;
        role = Role.ENDPOINT;
        laneIndex = m.lane();
        cancelWireupTimer();
    }

    /** The failover reliability a LANE_ACK or LANE_FAILED is for: this lane's endpoint's, named by id. */
    private FailoverReliability reliability(WireupMessage m) {
        if (endpoint == null || m.dstEpId() != endpoint.endpointId()) {
            throw new ProtocolException("wireup " + WireupMessage.typeName(m.type()) + " for endpoint #" + m.dstEpId()
                    + " on a lane of " + (endpoint != null ? endpoint : "no endpoint"));
        }
        FailoverReliability r = endpoint.lanes().reliability();
        if (r == null) {
            throw new ProtocolException(WireupMessage.typeName(m.type()) + " on " + endpoint + ", which is not in "
                    + "error mode failover");
        }
        return r;
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (answered) {
            answered = false;
            ctx.flush();
        }
        if (endpoint != null) {
            endpoint.readBatchEnded(this, ctx.channel());
        }
        if (backlog == null) {
            handledThisTurn = 0; // the next turn's reads get a share of their own
        }
        ctx.fireChannelReadComplete();
    }

    /** A codec found an error in a frame this lane brought: the lane closes, naming it. */
    void closeAfterError(Throwable cause) {
        exceptionCaught(ctx, cause);
    }

    /**
     * The lane closes after an error. When it carries an endpoint, the peer is told why first: EP_REMOVED with the
     * reason, acted on at once (its endpoint fails with {@link io.nucx.ConnectionResetException} naming it, e.g. a
     * message over our NUCX_MAX_MSG_SIZE), written before the lane closes.
     */
    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (failure != null) {
            return;
        }
        if (role == Role.GOODBYE) {
            // The peer's close of a lane it may not have read (a reset): the endpoint is gone and the peer told.
            failure = cause;
            LOG.debug("closing lane {} -> {} of worker {}, told goodbye: {}", ctx.channel().localAddress(),
                    ctx.channel().remoteAddress(), worker.name(), cause.toString());
            ctx.close();
            return;
        }
        if (cause instanceof ClosedChannelException && !ctx.channel().isOpen()) {
            // A write that waited in the lane, failed by its close (a void promise reports here): a consequence of the
            // close, not its cause. What closed it (an error before, or the peer) is what the endpoint is told.
            return;
        }
        failure = cause;
        if (worker.laneFailed(cause)) {
            LOG.warn("closing lane {} -> {} of worker {}: {}", ctx.channel().localAddress(),
                    ctx.channel().remoteAddress(), worker.name(), cause.toString());
        }
        if (endpoint == null || !ctx.channel().isActive()) {
            ctx.close();
            return;
        }
        tellAndClose(ctx, endpoint.remoteEndpointId(), "it closed the lane after an error: " + cause.getMessage());
    }

    /** Answers a REQUEST that could not be accepted with why, then closes the lane (see {@link #exceptionCaught}). */
    private void refuse(ChannelHandlerContext ctx, long requesterEpId, String reason, Throwable cause) {
        failure = cause;
        if (worker.laneFailed(cause)) {
            LOG.warn("refusing the wireup REQUEST on lane {} -> {} of worker {}: {}", ctx.channel().localAddress(),
                    ctx.channel().remoteAddress(), worker.name(), cause.toString());
        }
        tellAndClose(ctx, requesterEpId, reason);
    }

    private void tellAndClose(ChannelHandlerContext ctx, long peerEpId, String reason) {
        ctx.writeAndFlush(WireupMessage.epRemoved(WireupMessage.INVALID_EP_ID, peerEpId, reason).toFrame(ctx.alloc()))
                .addListener(f -> ctx.close());
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        cancelWireupTimer();
        if (goodbyeBound != null) {
            goodbyeBound.cancel(false);
        }
        if (backlog != null) {
            releaseAll(backlog);
            backlog = null;
        }
        if (role == Role.RETRYING) {
            releaseAll(held);
            held = null;
            role = Role.NEW;
        }
        if (endpoint != null) {
            endpoint.lifecycle().laneInactive(ctx.channel(), failure);
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (endpoint != null && endpoint.isRegistered()) {
            endpoint.pipeline().fireChannelWritabilityChanged();
        }
        ctx.fireChannelWritabilityChanged();
    }

    /** Wireup pointed this lane at {@code ep} (our own lane, or a p2p lane reached by the peer). */
    void endpoint(EndpointChannel ep, int index) {
        this.endpoint = ep;
        this.role = Role.ENDPOINT;
        this.laneIndex = index;
        cancelWireupTimer();
    }

    Channel channel() {
        return ctx.channel();
    }
}
