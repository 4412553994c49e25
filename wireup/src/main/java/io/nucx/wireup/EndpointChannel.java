package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.netty.util.concurrent.ScheduledFuture;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.EndpointAddress;
import io.nucx.EndpointErrorEvent;
import io.nucx.EndpointException;
import io.nucx.EndpointTimeoutException;
import io.nucx.ErrorMode;
import io.nucx.WorkerAddress;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.AtomicRequest;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.rma.RmaLane;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The {@link Endpoint} implementation: a child channel multiplexed over its lanes (Netty's
 * {@code AbstractHttp2StreamChannel} over a connection is the model). Its lanes' {@link LaneInboundHandler}s fire
 * arriving frames into this pipeline at the head; its writes leave at the head through the {@link LaneDispatcher}.
 * Everything runs on the worker's loop.
 *
 * <p><b>Lifecycle</b>, decided in {@link #transition} alone (Aeron's {@code NetworkPublication} is the model):
 * <pre>
 *   WIRING_UP ──lanes ready──▶ CONNECTED ──close()──▶ DRAINING ──sends answered, or the bound──▶ CLOSING
 *       │                          │                     │                                          │
 *       └──────────────── failure ─┴─────────────────────┴──── the peer closed, or the bound ──────┤
 *                                                                                                   ▼
 *                                         LINGER ◀── a codec still waits for the peer's last word ── end
 *                                           └──────────── that word, the peer's exit, or park ─────▶ CLOSED
 * </pre>
 * WIRING_UP: writes wait in the {@link StubHandler} while the {@link WireupHandler} connects the lanes. DRAINING: a
 * graceful close waits (at most NUCX_KEEPALIVE_TIMEOUT) for what its codecs and lanes still owe the peer. CLOSING:
 * EP_REMOVED went out behind everything written, on every lane; the peer closes its side (or the bound passes).
 * LINGER: the channel is closed for the user and its pipeline gone, but a codec still expects the peer's last word on
 * memory the peer may be writing into (rendezvous PUT, see {@code RndvReceiver}): the AM lane stays open and the
 * frames it brings go to {@link ProtocolCodec#lingerRead}. CLOSED: lanes closed.
 */
final class EndpointChannel extends AbstractChannel implements Endpoint, EndpointServices {

    enum State { WIRING_UP, CONNECTED, DRAINING, CLOSING, LINGER, CLOSED }

    private static final ChannelMetadata METADATA = new ChannelMetadata(false);

    static final String STUB = "nucx.stub";
    static final String WIREUP = "nucx.wireup";
    static final String LANES = "nucx.lanes";
    static final String ERRORS = "nucx.errors";

    private final DefaultWorker worker;
    private final long id;
    /** This endpoint's number among the connections between the two workers (see {@link EndpointMatch}). */
    private final int connSn;
    private final WorkerAddress remote;
    private final ErrorMode errorMode;
    private final EndpointAddress localAddress;
    private final EndpointAddress remoteAddress;
    private final LaneSelector.Lanes selection;
    private final EndpointConfig endpointConfig;
    private final EndpointLanes lanes;
    private final EndpointChannelConfig config = new EndpointChannelConfig(this);
    private final Promise<Void> errorPromise;
    private final Promise<Void> wireupPromise;
    private final Promise<Void> closedPromise;
    private final List<ProtocolCodec> codecs;
    private final PeerLiveness liveness = new PeerLiveness();
    private volatile State state;
    /** Why the endpoint failed, set once; null for a close without failure. Loop only. */
    private EndpointException failure;
    /** The peer's id for this endpoint: from the REQUEST (accepted) or the REPLY (connected). Loop only. */
    private long remoteEpId;
    /** The lane whose frame is going up the pipeline now: a protocol error there closes that lane. */
    private LaneInboundHandler delivering;
    private ScheduledFuture<?> closeTimer;

    private EndpointChannel(DefaultWorker worker, long id, WorkerAddress remote, LaneSelector.Lanes selection,
                            ErrorMode errorMode, long remoteEpId, int connSn, boolean wiringUp) {
        super(null);
        this.worker = worker;
        this.id = id;
        this.connSn = connSn;
        this.remote = remote;
        this.errorMode = errorMode;
        this.remoteEpId = remoteEpId;
        this.selection = selection;
        this.endpointConfig = selection.endpointConfig();
        this.lanes = new EndpointLanes(this, selection, errorMode == ErrorMode.FAILOVER);
        this.errorPromise = worker.eventLoop().newPromise();
        this.wireupPromise = worker.eventLoop().newPromise();
        this.closedPromise = worker.eventLoop().newPromise();
        this.localAddress = new EndpointAddress(worker.uuid(), worker.name());
        this.remoteAddress = new EndpointAddress(remote.uuid(), remote.name());
        this.state = wiringUp ? State.WIRING_UP : State.CONNECTED;
        ChannelPipeline p = pipeline();
        if (wiringUp) {
            p.addLast(STUB, new StubHandler());
        } else {
            p.addLast(LANES, new LaneDispatcher(this));
            wireupPromise.setSuccess(null);
        }
        this.codecs = worker.registry().initPipeline(p, this, worker.protocols());
        p.addLast(ERRORS, new ProtocolErrorHandler(this));
        ChannelHandler init = worker.endpointInitializer();
        if (init != null) {
            p.addLast(init);
        }
    }

    /** An endpoint this worker connects as connection {@code connSn}; its wireup starts once it is registered. */
    static EndpointChannel outgoing(DefaultWorker worker, long id, WorkerAddress remote, LaneSelector.Lanes lanes,
                                    ErrorMode mode, int connSn) {
        EndpointChannel ep = new EndpointChannel(worker, id, remote, lanes, mode, WireupMessage.INVALID_EP_ID, connSn,
                true);
        ep.pipeline().addAfter(STUB, WIREUP, WireupHandler.connecting(ep));
        return ep;
    }

    /**
     * An endpoint for a peer whose REQUEST arrived on {@code lane}. With a connect-to-iface AM lane it is connected at
     * once, on that lane; with a p2p AM lane it waits in its stub for the peer to dial its transport endpoint.
     */
    static EndpointChannel accepted(DefaultWorker worker, long id, WorkerAddress remote, LaneSelector.Lanes lanes,
                                    ErrorMode mode, WireupMessage request, Channel lane) {
        boolean p2p = lanes.am().p2p();
        EndpointChannel ep = new EndpointChannel(worker, id, remote, lanes, mode, request.srcEpId(), request.connSn(),
                p2p);
        if (p2p) {
            ep.pipeline().addAfter(STUB, WIREUP, WireupHandler.accepting(ep));
        } else {
            ep.lanes.amConnected(lane);
        }
        return ep;
    }

    // ------------------------------------------------------------ lifecycle (loop only)

    /** The one place the state changes. */
    private void transition(State to) {
        assert worker.eventLoop().inEventLoop();
        State from = state;
        boolean allowed = switch (to) {
            case WIRING_UP -> false;
            case CONNECTED -> from == State.WIRING_UP;
            case DRAINING -> from == State.CONNECTED;
            case CLOSING -> from == State.DRAINING;
            case LINGER -> from != State.LINGER && from != State.CLOSED;
            case CLOSED -> from != State.CLOSED;
        };
        if (!allowed) {
            throw new IllegalStateException(this + ": " + from + " -> " + to);
        }
        state = to;
        switch (to) {
            case LINGER -> worker.lingering(this, true);
            case CLOSED -> {
                worker.lingering(this, false);
                closedPromise.trySuccess(null);
            }
            default -> {
            }
        }
    }

    State state() {
        return state;
    }

    /** The wireup handler, while wiring up; null after. */
    WireupHandler wireup() {
        return pipeline().get(WireupHandler.class);
    }

    /**
     * Wireup has connected the pair's AM lane: the stub steps aside for the {@link LaneDispatcher} (its queued writes
     * replay through it, in order) and the endpoint is connected.
     */
    void lanesReady(Channel amLane) {
        lanes.amConnected(amLane);
        transition(State.CONNECTED);
        StubHandler stub = pipeline().get(StubHandler.class);
        stub.ready();
        pipeline().replace(stub, LANES, new LaneDispatcher(this));
        amLane.flush();
        pipeline().fireChannelActive();
    }

    /** The peer answered (its REPLY, its REQUEST paired with ours, or its ACK on a p2p lane). */
    void wiredUp() {
        wireupPromise.trySuccess(null);
    }

    /** The peer's id of this endpoint became known (its REPLY, or its REQUEST paired with ours). */
    void remoteEndpointId(long remoteEpId) {
        if (this.remoteEpId != WireupMessage.INVALID_EP_ID) {
            throw new ProtocolException("second wireup REPLY on " + this);
        }
        this.remoteEpId = remoteEpId;
        worker.endpointMatched(this);
    }

    /**
     * Fails the endpoint once: outstanding operations fail with {@code cause} and release their buffers, the error
     * event fires, {@link #errorFuture()} fails, and the endpoint closes.
     */
    void fail(EndpointException cause) {
        assert eventLoop().inEventLoop();
        if (failure != null || state == State.LINGER || state == State.CLOSED) {
            return;
        }
        failure = cause;
        wireupPromise.tryFailure(cause);
        unsafe().close(unsafe().voidPromise()); // doClose fails what is outstanding
        if (isRegistered()) {
            pipeline().fireUserEventTriggered(new EndpointErrorEvent(cause));
        }
        errorPromise.tryFailure(cause);
    }

    /** Why this endpoint failed, or null. Loop only. */
    EndpointException failure() {
        return failure;
    }

    /**
     * The graceful close, from the {@link LaneDispatcher} when a close passes it: waits for what the codecs and lanes
     * still owe the peer (at most NUCX_KEEPALIVE_TIMEOUT), then writes EP_REMOVED behind everything on every lane and
     * waits (as long again at most) for the peer to close: closing first could drop what an in-process lane still
     * holds for the peer. {@code promise} completes when the endpoint is closed.
     */
    void closeGracefully(ChannelPromise promise) {
        Channel am = lanes.amChannel();
        if (failure != null || state != State.CONNECTED || am == null || (!am.isActive() && !lanes.holding())) {
            unsafe().close(promise);
            return;
        }
        transition(State.DRAINING);
        closeFuture().addListener(f -> promise.trySuccess());
        List<Future<?>> waits = new ArrayList<>();
        for (ProtocolCodec c : codecs) {
            c.collectOutstanding(waits);
        }
        lanes.collectOutstanding(waits);
        if (waits.isEmpty()) {
            sayGoodbye();
            return;
        }
        Promise<Void> all = eventLoop().newPromise();
        PromiseCombiner combiner = new PromiseCombiner(eventLoop());
        waits.forEach(combiner::add);
        combiner.finish(all);
        Future<?> bound = eventLoop().schedule(() -> all.trySuccess(null), closeWaitNanos(), TimeUnit.NANOSECONDS);
        all.addListener(f -> {
            bound.cancel(false);
            sayGoodbye(); // a failed send is the caller's to see on its own future; the close goes on
        });
    }

    private void sayGoodbye() {
        Channel am = lanes.amChannel(); // a failover may have moved it
        if (state != State.DRAINING || am == null || !am.isActive()) {
            unsafe().close(unsafe().voidPromise());
            return;
        }
        transition(State.CLOSING);
        // On every lane, behind what each carries: the peer acts once it has read it on all of them.
        for (Channel ch : lanes.liveChannels()) {
            ch.writeAndFlush(WireupMessage.epRemoved(id, remoteEpId, "endpoint #" + id + " of " + localAddress
                    + " closed by its owner").toFrame(ch.alloc()), ch.voidPromise());
        }
        closeTimer = eventLoop().schedule(() -> unsafe().close(unsafe().voidPromise()), closeWaitNanos(),
                TimeUnit.NANOSECONDS); // the peer did not close its side in time
    }

    /** The peer sent EP_REMOVED on {@code on}: it closed this endpoint's other side, or does not know it. */
    void remoteRemoved(String reason, Channel on, boolean graceful) {
        if (graceful && !lanes.removedOnEveryLane(on)) {
            return; // the peer's close is behind what its other lanes still carry: read those first
        }
        if (state == State.CLOSING) {
            unsafe().close(unsafe().voidPromise()); // both sides said goodbye: nothing more will come either way
            return;
        }
        fail(new ConnectionResetException(id, remoteAddress, "the peer removed its endpoint: " + reason, null));
    }

    /**
     * A lane went inactive. Unless this endpoint closed it, or failover replaces it, that is a failure: the peer's
     * process or connection went ({@code laneCause} null or an I/O error: {@link ConnectionResetException}), or a
     * frame broke the protocol.
     */
    void laneInactive(Channel ch, Throwable laneCause) {
        WireupHandler w = wireup();
        if (w != null && w.laneInactive(ch, laneCause)) {
            return;
        }
        Lane lane = lanes.laneOf(ch);
        if (lane == null || state == State.LINGER || state == State.CLOSED) {
            return; // a lane dropped after a simultaneous connect or the p2p auxiliary lane; or the end is known
        }
        if ((state == State.CONNECTED || state == State.DRAINING) && failure == null && lanes.laneLost(lane)) {
            return; // error mode failover: the endpoint goes on over the lanes left
        }
        if (state != State.CLOSING) {
            fail(laneFailure(lane.name(), laneCause));
        }
        unsafe().close(unsafe().voidPromise());
    }

    EndpointException laneFailure(String lane, Throwable laneCause) {
        if (laneCause == null) {
            return new ConnectionResetException(id, remoteAddress, "the peer closed the " + lane
                    + " connection (its process exited or was killed)", null);
        }
        if (laneCause instanceof IOException) {
            return new ConnectionResetException(id, remoteAddress, "the " + lane + " connection failed (peer process "
                    + "gone or network lost): " + laneCause, laneCause);
        }
        return new EndpointException(id, remoteAddress, "the " + lane + " lane was closed after an error: "
                + laneCause, laneCause);
    }

    /** Both ends of a pair must handle errors alike; a pair of {@code connect}s in two modes fails, naming both. */
    boolean failsOnModeMismatch(WireupMessage m) {
        ErrorMode theirs = ErrorMode.fromWire(m.errMode());
        if (theirs == errorMode) {
            return false;
        }
        fail(new EndpointException(id, remoteAddress, "error mode mismatch: this side connected in error mode "
                + errorMode.name().toLowerCase(java.util.Locale.ROOT) + ", the peer in "
                + theirs.name().toLowerCase(java.util.Locale.ROOT) + "; both sides must use the same (NUCX_ERR_MODE)",
                null));
        return true;
    }

    // ------------------------------------------------------------ inbound (from the lanes)

    /** A frame other than wireup arrived on {@code lane} ({@code from} its channel's handler). Owns {@code frame}. */
    void frameArrived(LaneInboundHandler from, Lane lane, AmFrame frame) {
        switch (state) {
            case LINGER -> lingerRead(frame);
            case CLOSED -> frame.release();
            default -> {
                liveness.heard();
                lanes.received(lane);
                delivering = from;
                try {
                    pipeline().fireChannelRead(frame);
                } finally {
                    delivering = null;
                }
            }
        }
    }

    /** A read batch ended on a lane: confirm what arrived (failover), and let the handlers flush what they answered. */
    void readBatchEnded(Lane lane, Channel ch) {
        if (state == State.LINGER || state == State.CLOSED) {
            return;
        }
        lanes.readBatchEnded(lane, ch);
        pipeline().fireChannelReadComplete();
    }

    /** A codec threw on a frame, or reported an error of its own: the lane it came by closes, naming the error. */
    void protocolError(Throwable cause) {
        LaneInboundHandler lane = delivering;
        if (lane != null) {
            lane.closeAfterError(cause);
        } else {
            worker.laneFailed(cause);
            fail(new EndpointException(id, remoteAddress, "protocol error: " + cause, cause));
        }
    }

    /** Any frame from the peer arrived (wireup ones too): it is alive. */
    void heard() {
        liveness.heard();
    }

    /**
     * One keepalive tick (error modes peer and failover): fail after NUCX_KEEPALIVE_TIMEOUT without a frame from the
     * peer, otherwise send EP_CHECK on the AM lane. Before the REPLY there is no id to check, but silence still counts,
     * so a peer that never answers the REQUEST fails the endpoint too.
     */
    void keepaliveTick(Keepalive keepalive) {
        if (errorMode == ErrorMode.NONE || failure != null || state.compareTo(State.CLOSING) > 0) {
            return;
        }
        if (keepalive.tick(liveness) == Keepalive.Verdict.EXPIRED) {
            fail(new EndpointTimeoutException(id, remoteAddress, "no answer from the peer for "
                    + Duration.ofNanos(keepalive.timeoutNanos()) + " (NUCX_KEEPALIVE_TIMEOUT) on "
                    + (selection.keepalive() != null ? selection.keepalive().name() : selection.am().name())
                    + (lanes.amChannel() == null ? ", lane never connected"
                    : remoteEpId == WireupMessage.INVALID_EP_ID ? ", no REPLY to the wireup REQUEST" : "")
                    + ": the peer is hung, stopped or unreachable"));
            return;
        }
        Channel am = lanes.amChannel();
        // An unwritable lane already holds frames for the peer; a probe behind them tells it nothing sooner.
        if (am != null && remoteEpId != WireupMessage.INVALID_EP_ID && am.isActive() && am.isWritable()) {
            am.writeAndFlush(WireupMessage.epCheck(errorMode, id, remoteEpId).toFrame(am.alloc()), am.voidPromise());
        }
    }

    // ------------------------------------------------------------ LINGER

    private void lingerRead(AmFrame frame) {
        for (ProtocolCodec c : codecs) {
            if (c.lingers()) {
                c.lingerRead(frame.retain());
            }
        }
        frame.release();
    }

    @Override
    public void lingerEnded() {
        if (state != State.LINGER) {
            return;
        }
        for (ProtocolCodec c : codecs) {
            if (c.lingers()) {
                return;
            }
        }
        closeLanes();
        transition(State.CLOSED);
    }

    /** Completes when the endpoint is CLOSED: at its close, or when its linger ends. */
    Future<Void> closedFuture() {
        return closedPromise;
    }

    /** Receives its codecs hold past its end. */
    int heldCount() {
        int n = 0;
        for (ProtocolCodec c : codecs) {
            n += c.heldCount();
        }
        return n;
    }

    /** The worker closes and stops waiting: what lingers is parked for the life of the JVM, the lanes close. */
    int park() {
        if (state != State.LINGER) {
            return 0;
        }
        int n = 0;
        for (ProtocolCodec c : codecs) {
            n += c.park();
        }
        closeLanes();
        transition(State.CLOSED);
        return n;
    }

    // ------------------------------------------------------------ EndpointServices (for the codecs)

    @Override
    public EndpointConfig endpointConfig() {
        return endpointConfig;
    }

    @Override
    public SelectionKey.Locality locality() {
        return selection.locality();
    }

    @Override
    public long peerUuid() {
        return remote.uuid();
    }

    @Override
    public RmaLane rmaLane(Capability capability) {
        return state.compareTo(State.CLOSING) > 0 ? null : lanes.rmaLane(capability);
    }

    @Override
    public boolean acceptsOffers() {
        return state == State.CONNECTED;
    }

    @Override
    public ChannelFuture writeDirect(AmFrame frame) {
        return lanes.writeDirect(frame);
    }

    @Override
    public long closeWaitNanos() {
        return worker.closeWaitNanos();
    }

    @Override
    public void rmaFailed(String what, Throwable cause) {
        worker.rmaFailed(what + " on " + this, cause);
    }

    @Override
    public long sendTag() {
        return config.sendTag();
    }

    @Override
    public boolean deliversToPipeline(long tag) {
        return config.deliversToPipeline(tag);
    }

    // ------------------------------------------------------------ Endpoint

    @Override
    public DefaultWorker worker() {
        return worker;
    }

    @Override
    public long endpointId() {
        return id;
    }

    @Override
    public WorkerAddress remoteWorkerAddress() {
        return remote;
    }

    @Override
    public ErrorMode errorMode() {
        return errorMode;
    }

    @Override
    public Future<Void> wireupFuture() {
        return wireupPromise;
    }

    @Override
    public Future<Void> errorFuture() {
        return errorPromise;
    }

    @Override
    public ChannelFuture tagSend(long tag, ByteBuf data) {
        return writeAndFlush(new TagMessage(tag, data));
    }

    @Override
    public ChannelFuture tagSendSync(long tag, ByteBuf data) {
        return writeAndFlush(new TagMessage(tag, data, true));
    }

    @Override
    public Future<Long> atomic(AtomicOp op, RemoteMemoryKey key, long address, long value) {
        return atomic(op, key, address, value, 0);
    }

    @Override
    public Future<Long> compareAndSwap(RemoteMemoryKey key, long address, long expected, long value) {
        return atomic(AtomicOp.CSWAP, key, address, value, expected);
    }

    private Future<Long> atomic(AtomicOp op, RemoteMemoryKey key, long address, long value, long compare) {
        Promise<Long> result = eventLoop().newPromise();
        writeAndFlush(new AtomicRequest(op, key, address, value, compare, result)).addListener(f -> {
            if (!f.isSuccess()) {
                result.tryFailure(f.cause());
            }
        });
        return result;
    }

    @Override
    public Future<List<String>> laneNames() {
        return eventLoop().submit(lanes::names);
    }

    @Override
    public Future<Void> closeLane(int index) {
        Promise<Void> done = eventLoop().newPromise();
        eventLoop().execute(() -> {
            if (index < 0 || index >= lanes.size()) {
                done.tryFailure(new IllegalArgumentException("lane " + index + " of " + this + ": it has "
                        + lanes.size() + " message lanes"));
                return;
            }
            Lane l = index == 0 ? lanes.am() : lanes.lane(index);
            if (l.state() != Lane.State.ACTIVE || !l.channel().isOpen()) {
                done.tryFailure(new IllegalStateException("lane " + index + " (" + l.name() + ") of " + this
                        + " is not connected"));
                return;
            }
            l.channel().close().addListener(f -> done.trySuccess(null));
        });
        return done;
    }

    @Override
    public String describeLanes() {
        return selection.describe();
    }

    @Override
    public String rmaLane() {
        return endpointConfig.rmaLane();
    }

    @Override
    public String rmaRefusal() {
        return selection.rmaRefusal();
    }

    // ------------------------------------------------------------ internals for the package

    int connSn() {
        return connSn;
    }

    LaneSelector.Lanes selection() {
        return selection;
    }

    EndpointLanes lanes() {
        return lanes;
    }

    /** The peer's id of this endpoint, or -1 before its REPLY. Loop only. */
    long remoteEndpointId() {
        return remoteEpId;
    }

    /** Whether the pair's lane is the one this endpoint opened for its REQUEST (else the peer's); for tests. */
    boolean usesOwnLane() {
        return lanes.ownLane() != null && lanes.amChannel() == lanes.ownLane();
    }

    /** The AM lane's channel, once connected. */
    Channel amLane() {
        return lanes.amChannel();
    }

    List<ProtocolCodec> codecs() {
        return codecs;
    }

    // ------------------------------------------------------------ Channel

    @Override
    public EndpointChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        State s = state;
        return s != State.LINGER && s != State.CLOSED;
    }

    @Override
    public boolean isActive() {
        return state == State.CONNECTED;
    }

    @Override
    public boolean isWritable() {
        return super.isWritable() && lanes.isWritable();
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public EndpointAddress localAddress() {
        return localAddress;
    }

    @Override
    public EndpointAddress remoteAddress() {
        return remoteAddress;
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new EndpointUnsafe();
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return loop == worker.eventLoop();
    }

    @Override
    protected SocketAddress localAddress0() {
        return localAddress;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remoteAddress;
    }

    @Override
    protected void doBind(SocketAddress localAddress) {
        throw new IllegalStateException("an endpoint is created by Worker.connect; it cannot be bound");
    }

    @Override
    protected void doDisconnect() {
        doClose();
    }

    /**
     * The end, whatever led here: every request still outstanding is aborted by its codec as its stage says (failed
     * with the endpoint's failure, or {@link ClosedChannelException} for a close), then the endpoint lingers if a codec
     * must hear the peer's last word, else its lanes close.
     */
    @Override
    protected void doClose() {
        State before = state;
        if (closeTimer != null) {
            closeTimer.cancel(false);
        }
        Throwable cause = failure != null ? failure : new ClosedChannelException();
        StubHandler stub = pipeline().get(StubHandler.class);
        if (stub != null) {
            stub.fail(cause);
        }
        lanes.releaseAll(cause); // first: a codec's last words below must not wait for confirmation
        boolean lingers = false;
        for (ProtocolCodec c : codecs) {
            c.endpointEnded(cause);
            lingers |= c.lingers();
        }
        lanes.closeRma(); // after the codecs: their RMA operations were cancelled, not failed
        wireupPromise.tryFailure(cause);
        if (failure == null) {
            errorPromise.trySuccess(null); // a failure fails it once its event has gone through the pipeline
        }
        worker.endpointClosed(this);
        Channel am = lanes.amChannel();
        if (lingers && am != null && am.isActive()) {
            transition(State.LINGER);
            if (before != State.CLOSING) {
                am.writeAndFlush(WireupMessage.epRemoved(id, remoteEpId, "endpoint #" + id + " of " + localAddress
                        + " ended (" + (failure != null ? failure.getMessage() : "closed") + "); it waits for your "
                        + "last word on rendezvous transfers in progress").toFrame(am.alloc()), am.voidPromise());
            }
            return;
        }
        closeLanes();
        transition(State.CLOSED);
    }

    private void closeLanes() {
        lanes.closeBwLanes();
        Channel am = lanes.amChannel();
        if (am != null) {
            am.close();
        }
        lanes.closeAuxiliary();
    }

    @Override
    protected void doBeginRead() {
        // Frames are pushed up the pipeline by the lanes as they arrive.
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) {
        // Only messages no handler turned into frames get here.
        for (Object m; (m = in.current()) != null; ) {
            in.remove(new UnsupportedMessageTypeException(m, TagMessage.class, ByteBuf.class));
        }
    }

    @Override
    public String toString() {
        return "Endpoint(#" + id + " " + localAddress + " -> " + remoteAddress + ", " + state
                + (lanes.amChannel() != null ? ", " + selection.describe() : "") + ")";
    }

    private final class EndpointUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            promise.setFailure(new IllegalStateException("endpoints connect through Worker.connect"));
        }
    }
}
