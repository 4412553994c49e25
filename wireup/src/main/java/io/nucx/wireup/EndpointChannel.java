package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandler;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.nucx.Endpoint;
import io.nucx.EndpointAddress;
import io.nucx.EndpointException;
import io.nucx.NucxClosedException;
import io.nucx.ErrorMode;
import io.nucx.WorkerAddress;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.LimitExceededException;
import io.nucx.protocol.MemoryBudget;
import io.nucx.protocol.MemoryDomain;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.ProtocolFamily;
import io.nucx.protocol.RmaRail;
import io.nucx.protocol.am.AmCodec;
import io.nucx.protocol.am.AmData;
import io.nucx.protocol.am.AmHeaders;
import io.nucx.protocol.am.AmSendRefusedException;
import io.nucx.protocol.amo.AmoCodec;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.AtomicRequest;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.rma.RmaRequest;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.stream.StreamCodec;
import io.nucx.protocol.stream.StreamData;
import io.nucx.protocol.tag.EagerCodec;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.ShortPayload;
import io.nucx.transport.rma.RmaLane;

import java.lang.foreign.MemorySegment;
import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The {@link Endpoint} implementation: a child channel multiplexed over its lanes (Netty's
 * {@code AbstractHttp2StreamChannel} over a connection is the model). Its lanes' {@link LaneInboundHandler}s fire
 * arriving frames into this pipeline at the head; its writes leave at the head through the {@link LaneDispatcher}.
 * It also serves its protocol codecs ({@link EndpointServices}).
 *
 * <p>Its lifecycle, and every rule that ends it or keeps part of it alive, is {@link EndpointLifecycle}'s. Its lanes
 * and what goes on them are {@link EndpointLanes}'. Everything runs on the worker's loop.
 */
final class EndpointChannel extends AbstractChannel implements Endpoint, EndpointServices {

    private static final ChannelMetadata METADATA = new ChannelMetadata(false);

    static final String STUB = "nucx.stub";
    static final String WIREUP = "nucx.wireup";
    static final String LANES = "nucx.lanes";
    static final String ENDED = "nucx.ended";
    static final String ERRORS = "nucx.errors";

    /**
     * Whether a codec class acts on {@code channelReadComplete} (overrides Netty's pass-through), and so whether an
     * endpoint must ask it {@link ProtocolCodec#readCompletePending} before it skips the pass.
     */
    private static final ClassValue<Boolean> ACTS_ON_READ_COMPLETE = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            return overrides(type, "channelReadComplete", ChannelHandlerContext.class);
        }
    };

    /** Whether {@code type}'s public method {@code name} is declared by a class of neither Netty nor the interface. */
    static boolean overrides(Class<?> type, String name, Class<?>... parameters) {
        try {
            Class<?> declaring = type.getMethod(name, parameters).getDeclaringClass();
            return !declaring.getName().startsWith("io.netty.") && declaring != ProtocolCodec.class;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    private final DefaultWorker worker;
    private final long id;
    /**
     * This endpoint's number among the connections between the two workers (see {@link EndpointMatch}), or for an
     * endpoint made through a listener the listener's token.
     */
    private final int connSn;
    /** Made through a listener ({@link DefaultWorker#connectListened}): never matched. */
    private boolean listened;
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
    private final List<ProtocolCodec> codecs;
    private final PeerLiveness liveness = new PeerLiveness();
    /** Receive memory its peer holds here that no posted receive owns (NUCX_RX_EP_BYTES). */
    private final MemoryBudget receiveBudget;
    private final EndpointLifecycle lifecycle;
    /** The peer's id for this endpoint: from the REQUEST (accepted) or the REPLY (connected). Loop only. */
    private long remoteEpId;
    private final long createdNanos = System.nanoTime();
    /** The lane whose frame is going up the pipeline now: a protocol error there closes that lane. */
    private LaneInboundHandler delivering;
    /** The codec that owns each AM id, for frames handed to it directly ({@link ProtocolCodec#frameArrived}). */
    private final ProtocolCodec[] frameOwners = new ProtocolCodec[256];
    /**
     * The lane dispatcher is in place and the stub's queued writes have replayed: codecs may write frames straight to
     * the lanes ({@link #writeToLane}). Loop only.
     */
    private boolean lanesDirect;
    /** The last of nucx's handlers: a pipeline ending with it has none of the user's ({@link #walkNotNeeded}). */
    private final ProtocolErrorHandler errorHandler;
    /** The codecs that act on {@code channelReadComplete} ({@link ProtocolCodec#readCompletePending}). */
    private final ProtocolCodec[] readCompleteCodecs;
    /** One of them does not say when it needs the call: every read batch ends with the pass. */
    private final boolean alwaysReadComplete;
    /**
     * Inside a {@code writeAndFlush} on the short path: a short send is published as soon as it is in the transport,
     * not after the rest of the send's work (its completion, the buffer's release) has run. Loop only.
     */
    private boolean flushFollows;
    /** What {@code write(msg)} returns for a send done at once: Netty's cached succeeded future of this channel. */
    private final ChannelFuture sentNow = newSucceededFuture();
    /** EagerCodec's place in the pipeline (null with a registry without it). */
    private final ChannelHandlerContext eagerContext;
    /** The error handler's place: tail-side of it are the user's handlers ({@link UserWriteHandlers}). */
    private final ChannelHandlerContext errorContext;
    /** The byte stream's codec (null with a registry without it): a short stream write's credit is taken there. */
    private final StreamCodec stream;

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
        // Failover lanes place no payload (placePayload), so neither this side's RTRs nor its model may count on it.
        this.endpointConfig = errorMode == ErrorMode.FAILOVER ? failoverConfig(selection)
                : selection.endpointConfig();
        this.lanes = new EndpointLanes(this, selection, errorMode == ErrorMode.FAILOVER);
        this.errorPromise = worker.eventLoop().newPromise();
        this.wireupPromise = worker.eventLoop().newPromise();
        this.localAddress = new EndpointAddress(worker.uuid(), worker.name());
        this.remoteAddress = new EndpointAddress(remote.uuid(), remote.name());
        this.lifecycle = new EndpointLifecycle(this, wiringUp);
        this.receiveBudget = worker.protocols().newEndpointBudget();
        ChannelPipeline p = pipeline();
        if (wiringUp) {
            p.addLast(STUB, new StubHandler(worker.pendingWrites(), worker.newStubBudget()));
        } else {
            p.addLast(LANES, new LaneDispatcher(this));
            wireupPromise.setSuccess(null);
            lanesDirect = true;
        }
        this.codecs = worker.registry().initPipeline(p, this, worker.protocols());
        List<ProtocolFamily> families = worker.registry().families();
        for (int amId = 0; amId < frameOwners.length; amId++) {
            ProtocolFamily owner = worker.registry().owner(amId);
            frameOwners[amId] = owner == null ? null : codecs.get(families.indexOf(owner));
        }
        this.readCompleteCodecs = codecs.stream().filter(c -> ACTS_ON_READ_COMPLETE.get(c.getClass()))
                .toArray(ProtocolCodec[]::new);
        this.alwaysReadComplete = Arrays.stream(readCompleteCodecs)
                .anyMatch(c -> !overrides(c.getClass(), "readCompletePending"));
        p.addLast(ENDED, new WriteAfterEndHandler(this));
        this.errorHandler = new ProtocolErrorHandler(this);
        p.addLast(ERRORS, errorHandler);
        this.eagerContext = p.context(EagerCodec.class);
        this.errorContext = p.context(errorHandler);
        this.stream = p.get(StreamCodec.class);
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

    /** An endpoint this worker connects through a listener that gave it {@code token}; never matched. */
    static EndpointChannel listened(DefaultWorker worker, long id, WorkerAddress remote, LaneSelector.Lanes lanes,
                                    ErrorMode mode, int token) {
        EndpointChannel ep = outgoing(worker, id, remote, lanes, mode, token);
        ep.listened = true;
        ep.config().setAutoRead(false); // its channel's read() paces the stream from the first byte (NucxChannel)
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

    // ------------------------------------------------------------ lifecycle (EndpointLifecycle decides)

    EndpointLifecycle lifecycle() {
        return lifecycle;
    }

    EndpointLifecycle.State state() {
        return lifecycle.state();
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
        lifecycle.connected();
        StubHandler stub = pipeline().get(StubHandler.class);
        stub.ready();
        pipeline().replace(stub, LANES, new LaneDispatcher(this));
        lanesDirect = true; // after the replay: a direct write must not overtake the queued ones
        amLane.flush();
        pipeline().fireChannelActive();
    }

    /** The peer answered (its REPLY, its REQUEST paired with ours, or its ACK on a p2p lane). */
    void wiredUp() {
        if (wireupPromise.trySuccess(null)) {
            worker.wiredUp(System.nanoTime() - createdNanos);
        }
    }

    /** The peer's id of this endpoint became known (its REPLY, or its REQUEST paired with ours). */
    void remoteEndpointId(long remoteEpId) {
        if (this.remoteEpId != WireupMessage.INVALID_EP_ID) {
            throw new ProtocolException("second wireup REPLY on " + this);
        }
        this.remoteEpId = remoteEpId;
        worker.endpointMatched(this);
    }

    /** Fails the endpoint once ({@link EndpointLifecycle#fail}). */
    void fail(EndpointException cause) {
        lifecycle.fail(cause);
    }

    /** Why this endpoint failed, or null. Loop only. */
    EndpointException failure() {
        return lifecycle.failure();
    }

    void wireupFailed(Throwable cause) {
        wireupPromise.tryFailure(cause);
    }

    Promise<Void> errorPromise() {
        return errorPromise;
    }

    // ------------------------------------------------------------ inbound (from the lanes)

    /** A frame other than wireup arrived on the lane whose handler is {@code from}. Owns {@code frame}. */
    void frameArrived(LaneInboundHandler from, AmFrame frame) {
        switch (lifecycle.state()) {
            case LINGER -> lifecycle.lingerRead(frame);
            case CLOSED -> frame.release();
            default -> {
                liveness.heard();
                lanes.received(from);
                delivering = from;
                try {
                    ProtocolCodec owner = frameOwners[frame.amId()];
                    if (owner == null || !owner.frameArrived(frame)) {
                        pipeline().fireChannelRead(frame);
                    }
                } catch (Throwable t) {
                    protocolError(t); // what the pipeline's ProtocolErrorHandler does with a codec's exception
                } finally {
                    delivering = null;
                }
            }
        }
    }

    /**
     * A short frame as its parts, from a lane's {@link LaneInboundHandler}: taken (its payload copied where it goes)
     * when the endpoint is open and the id's codec takes short frames (as {@link #frameArrived} would hand it the
     * frame); false, having done nothing, otherwise.
     */
    boolean shortFrameArrived(LaneInboundHandler from, int amId, long header,
                              ShortPayload payload) {
        ProtocolCodec owner = frameOwners[amId];
        if (!isOpen() || owner == null || !owner.takesShortFrames(amId)) {
            return false;
        }
        liveness.heard();
        lanes.received(from);
        delivering = from;
        try {
            owner.shortFrameArrived(amId, header, payload);
        } catch (Throwable t) {
            protocolError(t);
        } finally {
            delivering = null;
        }
        return true;
    }

    /**
     * Where a frame's large payload goes before it arrives, from a lane that can read it there: the codec of its id
     * says, while the endpoint is open. Not in error mode failover, whose lanes may bring a frame again after a
     * failover: what a codec finds in place must be what arrived once.
     */
    ByteBuf placePayload(int amId, ByteBuf header, int length) {
        ProtocolCodec owner = frameOwners[amId];
        if (owner == null || !isOpen() || lifecycle.ended() || errorMode() == ErrorMode.FAILOVER) {
            return null;
        }
        return owner.placePayload(amId, header, length);
    }

    /** A read batch ended on a lane: confirm what arrived (failover), and let the handlers flush what they answered. */
    void readBatchEnded(LaneInboundHandler from, Channel ch) {
        if (lifecycle.ended()) {
            return;
        }
        lanes.readBatchEnded(from, ch);
        if (!alwaysReadComplete && walkNotNeeded() && !readCompletePending()) {
            return; // no handler of the user's to tell and no codec with work: the pass would only walk the pipeline
        }
        pipeline().fireChannelReadComplete();
    }

    private boolean readCompletePending() {
        for (ProtocolCodec c : readCompleteCodecs) {
            if (c.readCompletePending()) {
                return true;
            }
        }
        return false;
    }

    /**
     * A codec threw on a frame, or reported an error of its own: the lane it came by closes, naming the error. A peer
     * that went over a bound fails the endpoint itself (no failover: another lane would bring the same).
     */
    void protocolError(Throwable cause) {
        if (cause instanceof LimitExceededException limit) {
            worker.laneFailed(limit);
            fail(new EndpointException(id, remoteAddress, "the peer went over a bound: " + limit.getMessage(),
                    limit));
            return;
        }
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

    /** One keepalive tick ({@link EndpointLifecycle#keepaliveTick}). */
    void keepaliveTick(Keepalive keepalive) {
        lifecycle.keepaliveTick(keepalive, liveness);
    }

    @Override
    public void lingerEnded() {
        lifecycle.lingerEnded();
    }

    /** Receives its codecs hold past its end. */
    int heldCount() {
        int n = 0;
        for (ProtocolCodec c : codecs) {
            n += c.heldCount();
        }
        return n;
    }

    // ------------------------------------------------------------ EndpointServices (for the codecs)

    /**
     * Error mode failover's configuration: no payload placed, and the AM lane's size limits the tightest of the
     * message lanes' and of the replacements a failover may connect, as any of them may carry the active messages and
     * what is sent again after a takeover (an eager frame sized for self or a 128k tcp segment does not fit a lane of
     * 8k: its write fails and that lane closes, but a smaller frame behind it may reach the peer first).
     */
    private static EndpointConfig failoverConfig(LaneSelector.Lanes selection) {
        EndpointConfig c = selection.endpointConfig().withoutPlacement();
        int maxShort = Integer.MAX_VALUE;
        int maxBcopy = Integer.MAX_VALUE;
        for (int i = 0; i < selection.count(); i++) {
            maxShort = Math.min(maxShort, selection.lane(i).maxShort());
            maxBcopy = Math.min(maxBcopy, selection.lane(i).maxBcopy());
        }
        for (LaneSelector.Lane r : selection.replacements()) {
            maxShort = Math.min(maxShort, r.maxShort());
            maxBcopy = Math.min(maxBcopy, r.maxBcopy());
        }
        return new EndpointConfig(c.amLane(), c.amLaneAttrs().withAmLimits(maxShort, maxBcopy), c.rmaLane(),
                c.rmaLaneAttrs(), c.bwLanes(), c.rmaBwLanes(), c.rndvSurcharge(), c.eagerSurcharge(),
                c.readSurcharge());
    }

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
        List<RmaRail> rails = rmaRails(capability);
        return rails.isEmpty() ? null : rails.get(0).lane();
    }

    @Override
    public List<RmaRail> rmaRails(Capability capability) {
        return lifecycle.ended() ? List.of() : lanes.rmaRails(capability);
    }

    @Override
    public List<MemoryDomain> memoryDomains(Capability capability) {
        return lifecycle.ended() ? List.of() : lanes.memoryDomains(capability);
    }

    @Override
    public boolean hasAmoLane() {
        return selection.amo() != null;
    }

    @Override
    public RmaRail amoRail() {
        return lifecycle.ended() ? null : lanes.amoRail();
    }

    @Override
    public String noRmaLaneReason(Capability capability) {
        return lifecycle.ended() ? this + " has ended" : lanes.noRmaLaneReason(capability);
    }

    @Override
    public boolean acceptsOffers() {
        return lifecycle.state() == EndpointLifecycle.State.CONNECTED;
    }

    @Override
    public ChannelFuture writeDirect(AmFrame frame) {
        return lanes.writeDirect(frame);
    }

    @Override
    public boolean writeToLane(AmFrame frame, ChannelPromise promise) {
        if (!framesGoDirect()) {
            return false; // the pipeline's LaneDispatcher (or the stub) decides, as for any write
        }
        lanes.write(frame, promise);
        return true;
    }

    @Override
    public boolean flushLanes() {
        if (!framesGoDirect()) {
            return false;
        }
        lanes.flush(); // what LaneDispatcher.flush does, the only handler that acts on a flush
        return true;
    }

    @Override
    public boolean writeShortToLane(int amId, long header, ByteBuf payload, ChannelPromise promise) {
        return framesGoDirect() && lanes.writeShort(amId, header, payload, promise, flushFollows);
    }

    /** Whether a codec's frames may skip the pipeline: connected, its queue replayed, neither ended nor failed. */
    private boolean framesGoDirect() {
        return lanesDirect && !lifecycle.ended() && lifecycle.failure() == null;
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
    public MemoryBudget receiveBudget() {
        return receiveBudget;
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

    // ------------------------------------------------------------ writes after the end name it

    /** What a write on this endpoint may be; anything else fails naming these. */
    static final Class<?>[] WRITABLE = {ByteBuf.class, TagMessage.class, StreamData.class, AmData.class};

    @Override
    public ChannelFuture write(Object msg) {
        if (lifecycle.takesSends() && shortNow(msg, false)) {
            return sentNow;
        }
        return write(msg, newPromise(), false);
    }

    @Override
    public boolean trySendShort(long tag, ByteBuf data) {
        return lifecycle.takesSends() && writeWalkNotNeeded()
                && ((EagerCodec) eagerContext.handler()).sendShortNow(eagerContext, tag, data);
    }

    @Override
    public boolean tryAmSendShort(int id, ByteBuf header, ByteBuf data, boolean reply) {
        String bad = AmCodec.refusal(id, header.readableBytes());
        if (bad != null) {
            throw new AmSendRefusedException(bad);
        }
        return lifecycle.takesSends() && writeWalkNotNeeded()
                && ((EagerCodec) eagerContext.handler()).sendAmShortNow(eagerContext,
                        AmHeaders.pack(id, reply ? AmHeaders.FLAG_REPLY : 0,
                                header.readableBytes()), header, data);
    }

    /**
     * A short message sent at once by the endpoint's fast route, before any promise exists ({@link
     * io.nucx.protocol.tag.EagerCodec#writeShortNow}): then the caller gets {@link #sentNow}, one succeeded future
     * for all such sends, as UCX's send returns no request for what it completed inline. False: not sent, the message
     * untouched for an ordinary write. {@code flushFollows}: a writeAndFlush. A stream write goes so too, its credit
     * taken from the stream's codec ({@link #sendStreamShort}).
     */
    private boolean shortNow(Object msg, boolean flushFollows) {
        boolean streamWrite = msg instanceof StreamData;
        boolean open = streamWrite ? !((StreamData) msg).isEnd() && streamRouteOpen()
                : fastRoute(msg) && lanes.takesShortWrites();
        if (!open) {
            return false;
        }
        this.flushFollows = flushFollows;
        try {
            if (!streamWrite) {
                return ((EagerCodec) eagerContext.handler()).writeShortNow(eagerContext, msg);
            }
            StreamData d = (StreamData) msg;
            if (!sendStreamShort(d.content())) {
                return false;
            }
            d.release();
            return true;
        } finally {
            this.flushFollows = false;
        }
    }

    @Override
    public boolean trySendStreamShort(ByteBuf data) {
        return lifecycle.takesSends() && streamRouteOpen() && sendStreamShort(data);
    }

    /**
     * A stream write's bytes sent at once, as {@code StreamCodec} would send them through the pipeline: only while
     * nothing waits for credit and the credit covers them (else its write keeps them waiting, in order), and only
     * when the engine picks eager short for them and the lane takes them now; then their credit is spent there.
     */
    private boolean sendStreamShort(ByteBuf data) {
        int n = data.readableBytes();
        if (!stream.takesNow(n) || !((EagerCodec) eagerContext.handler())
                .sendStreamShortNow(eagerContext, data)) {
            return false;
        }
        stream.sentPast(n);
        return true;
    }

    /** The short route open to stream writes: a stream codec, no user handler that takes writes, a short lane. */
    private boolean streamRouteOpen() {
        return stream != null && writeWalkNotNeeded() && lanes.takesShortWrites();
    }

    @Override
    public ChannelFuture write(Object msg, ChannelPromise promise) {
        return write(msg, promise, true);
    }

    /** {@code shortUntried}: a stream write may still go by {@link #shortNow} (not tried already by the caller). */
    private ChannelFuture write(Object msg, ChannelPromise promise, boolean shortUntried) {
        if (refuses(msg)) {
            return writeAfterEnd(msg, promise);
        }
        if (walkNotNeeded(msg, promise)) {
            writeToEager(msg, promise);
            return promise;
        }
        if (shortUntried && msg instanceof StreamData && isFresh(promise) && shortNow(msg, false)) {
            promise.trySuccess(); // a void one (NucxChannel's writes) stays as it is
            return promise;
        }
        super.write(msg, namingTheEnd(promise));
        return promise;
    }

    @Override
    public Channel flush() {
        if (writeWalkNotNeeded()) {
            lanes.flush(); // what LaneDispatcher.flush does, the only handler that acts on a flush
            return this;
        }
        return super.flush();
    }

    @Override
    public ChannelFuture writeAndFlush(Object msg) {
        if (lifecycle.takesSends() && shortNow(msg, true)) {
            lanes.flush();
            return sentNow;
        }
        return writeAndFlush(msg, newPromise(), false);
    }

    @Override
    public ChannelFuture writeAndFlush(Object msg, ChannelPromise promise) {
        return writeAndFlush(msg, promise, true);
    }

    private ChannelFuture writeAndFlush(Object msg, ChannelPromise promise, boolean shortUntried) {
        if (refuses(msg)) {
            return writeAfterEnd(msg, promise);
        }
        if (walkNotNeeded(msg, promise)) {
            flushFollows = true;
            try {
                writeToEager(msg, promise);
            } finally {
                flushFollows = false;
            }
            lanes.flush();
            return promise;
        }
        if (shortUntried && msg instanceof StreamData && isFresh(promise) && shortNow(msg, true)) {
            lanes.flush();
            promise.trySuccess();
            return promise;
        }
        super.writeAndFlush(msg, namingTheEnd(promise));
        return promise;
    }

    /**
     * A write off the loop walks the pipeline later, as a task; if the endpoint ends and deregisters before it runs,
     * its pipeline is emptied (WriteAfterEndHandler gone with it) and Netty's head fails it with a
     * ClosedChannelException that says nothing. Such a write's promise then fails with why the endpoint ended, as one
     * refused at once does. On the loop, with a void promise, or one the pipeline would refuse (done, another
     * channel's), {@code promise} itself. A cancel of {@code promise} reaches the write, as it would have.
     */
    private ChannelPromise namingTheEnd(ChannelPromise promise) {
        if (promise.isVoid() || eventLoop().inEventLoop() || !isFresh(promise)) {
            return promise;
        }
        ChannelPromise walk = newPromise();
        promise.addListener(f -> {
            if (f.isCancelled()) {
                walk.cancel(false);
            }
        });
        walk.addListener(f -> {
            if (f.isSuccess()) {
                promise.trySuccess();
            } else {
                Throwable c = f.cause();
                promise.tryFailure(saysNothing(c) && !isOpen() ? endCause() : c);
            }
        });
        return walk;
    }

    /**
     * The pipeline's own route taken without the walk, as {@link #frameArrived} does inbound: on the loop of a connected
     * endpoint whose pipeline has no handler of the user's that takes writes, a ByteBuf or TagMessage reaches
     * EagerCodec, the first handler that acts on it (the codecs tail-side of it pass both on untouched), and a flush
     * reaches only LaneDispatcher. A stream write goes by {@link #shortNow} or walks; any other message, a user handler
     * that takes writes, or a write off the loop walks the pipeline.
     */
    private boolean walkNotNeeded(Object msg, ChannelPromise promise) {
        return fastRoute(msg) && isFresh(promise);
    }

    /**
     * A ByteBuf or TagMessage, and {@link #writeWalkNotNeeded()}: what the route without the walk takes, promise
     * aside.
     */
    private boolean fastRoute(Object msg) {
        return (msg instanceof ByteBuf || msg instanceof TagMessage) && writeWalkNotNeeded();
    }

    /** No user handler at all, connected, on the loop: an inbound event need not walk the pipeline either. */
    private boolean walkNotNeeded() {
        return pipeline().last() == errorHandler && nucxRouteOpen();
    }

    /**
     * No user handler that takes writes (a stream's reader takes none), connected, on the loop: what a write's route
     * without the walk needs.
     */
    private boolean writeWalkNotNeeded() {
        return nucxRouteOpen() && UserWriteHandlers.noneTakeWrites(pipeline(), errorContext);
    }

    private boolean nucxRouteOpen() {
        return lanesDirect && eagerContext != null && eventLoop().inEventLoop() && !eagerContext.isRemoved();
    }

    /** A promise the pipeline would take: this endpoint's void promise, or one of its own not yet done. */
    private boolean isFresh(ChannelPromise promise) {
        return promise.channel() == this && (promise.isVoid() || !promise.isDone());
    }

    /** EagerCodec's write, as the pipeline invokes a handler's (a throw fails the promise). */
    private void writeToEager(Object msg, ChannelPromise promise) {
        try {
            ((ChannelOutboundHandler) eagerContext.handler()).write(eagerContext, msg, promise);
        } catch (Throwable t) {
            promise.tryFailure(t);
        }
    }

    /**
     * Whether a write of {@code msg} fails: the endpoint ended, or {@code msg} is a send (what {@link #WRITABLE}
     * names) and its owner closed it ({@link EndpointLifecycle#takesSends}). RMA operations and atomics are still taken
     * while a graceful close drains, as a worker's flush covers its closing endpoints too.
     */
    boolean refuses(Object msg) {
        if (lifecycle.takesSends()) {
            return false;
        }
        if (!isOpen()) {
            return true;
        }
        for (Class<?> send : WRITABLE) {
            if (send.isInstance(msg)) {
                return true;
            }
        }
        return false;
    }

    /** A write on an ended endpoint fails with why it ended (Netty's own says "closed", without a message). */
    ChannelFuture writeAfterEnd(Object msg, ChannelPromise promise) {
        ReferenceCountUtil.release(msg);
        promise.tryFailure(endCause());
        return promise;
    }

    /** Netty's own closed channel exception, which names neither the channel nor why it closed. */
    static boolean saysNothing(Throwable c) {
        return c instanceof ClosedChannelException && c.getMessage() == null;
    }

    /** Why a write on this ended endpoint fails. */
    private NucxClosedException endCause() {
        EndpointException failed = lifecycle.failure();
        return failed != null ? new NucxClosedException(this + " failed before this write: " + failed.getMessage(),
                failed) : new NucxClosedException(this + " was closed by its owner before this write", null);
    }

    @Override
    public ChannelFuture streamSend(ByteBuf data) {
        return writeAndFlush(new StreamData(data));
    }

    @Override
    public ChannelFuture amSend(int id, ByteBuf header, ByteBuf data, boolean reply) {
        return writeAndFlush(new AmData(id, header, data, reply));
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
    public Future<Void> put(MemorySegment local, RemoteMemoryKey key, long remoteAddress) {
        return rma(RmaRequest.put(local, key, remoteAddress, eventLoop().newPromise()));
    }

    @Override
    public Future<Void> get(MemorySegment local, RemoteMemoryKey key, long remoteAddress) {
        return rma(RmaRequest.get(local, key, remoteAddress, eventLoop().newPromise()));
    }

    @Override
    public Future<Void> flushRma() {
        Promise<Void> done = eventLoop().newPromise();
        if (eventLoop().inEventLoop()) {
            flushRma(done);
        } else {
            eventLoop().execute(() -> flushRma(done));
        }
        return done;
    }

    /**
     * The RMA operations' flush and the atomics outstanding now: UCX's flush covers every operation of the endpoint.
     * The atomics are taken in the step that issues the flush, not once it is over: by then the endpoint may have
     * ended and failed them, and a flush must not succeed over operations that failed.
     */
    private void flushRma(Promise<Void> done) {
        List<Future<?>> atomics = new ArrayList<>();
        for (ProtocolCodec c : codecs) {
            if (c instanceof AmoCodec) {
                c.collectOutstanding(atomics);
            }
        }
        PromiseCombiner all = new PromiseCombiner(eventLoop());
        all.add(rma(RmaRequest.flush(eventLoop().newPromise())));
        atomics.forEach(all::add);
        all.finish(done);
    }

    @Override
    public Future<Void> fenceRma() {
        return rma(RmaRequest.fence(eventLoop().newPromise()));
    }

    private Future<Void> rma(RmaRequest r) {
        if (!isOpen()) {
            r.result().tryFailure(new IllegalStateException(r.kind() + " on " + this + ": the endpoint is closed"
                    + (failure() != null ? " (" + failure().getMessage() + ")" : "")));
            return r.result();
        }
        writeAndFlush(r).addListener(f -> {
            if (!f.isSuccess()) {
                r.result().tryFailure(f.cause());
            }
        });
        return r.result();
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
        return endpointConfig.rmaLane() == null ? null : endpointConfig.rmaLanes();
    }

    @Override
    public String rmaRefusal() {
        return selection.rmaRefusal();
    }

    // ------------------------------------------------------------ internals for the package

    int connSn() {
        return connSn;
    }

    /** Whether this endpoint was made through a listener (its REQUEST says so). */
    boolean listened() {
        return listened;
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
        return lifecycle.isOpen();
    }

    @Override
    public boolean isActive() {
        return lifecycle.state() == EndpointLifecycle.State.CONNECTED;
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

    /** Its owner's close: from now on no {@code connect} adopts it ({@link DefaultWorker#endpointClosing}). */
    @Override
    public ChannelFuture close() {
        worker.endpointClosing(this);
        return super.close();
    }

    @Override
    public ChannelFuture close(ChannelPromise promise) {
        worker.endpointClosing(this);
        return super.close(promise);
    }

    /** The end, whatever led here: {@link EndpointLifecycle#end}. */
    @Override
    protected void doClose() {
        lifecycle.end();
    }

    @Override
    protected void doBeginRead() {
        // Frames are pushed up the pipeline by the lanes as they arrive.
    }

    /**
     * Auto-read was turned off: the stream's read asked and not yet served is withdrawn, as a socket channel clears
     * its pending read, so no more of the stream comes up until the next {@code read()}.
     */
    void autoReadCleared() {
        if (stream == null || !isRegistered()) {
            return; // no stream, or no read asked of it yet
        }
        if (eventLoop().inEventLoop()) {
            clearStreamDemand();
        } else {
            eventLoop().execute(this::clearStreamDemand);
        }
    }

    private void clearStreamDemand() {
        if (!config().isAutoRead()) { // not turned on again meanwhile
            stream.clearReadDemand();
        }
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) {
        // Only messages no handler turned into frames get here.
        for (Object m; (m = in.current()) != null; ) {
            in.remove(new UnsupportedMessageTypeException(m, WRITABLE));
        }
    }

    @Override
    public String toString() {
        return "Endpoint(#" + id + " " + localAddress + " -> " + remoteAddress + ", " + lifecycle.state()
                + (lanes.amChannel() != null ? ", " + selection.describe() : "") + ")";
    }

    private final class EndpointUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            promise.setFailure(new IllegalStateException("endpoints connect through Worker.connect"));
        }
    }
}
