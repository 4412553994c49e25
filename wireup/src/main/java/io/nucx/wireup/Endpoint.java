package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.tag.EagerTagSendHandler;
import io.nucx.protocol.tag.RndvTagSendHandler;
import io.nucx.transport.AmFrame;
import io.nucx.protocol.tag.TagMessage;

import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.util.List;

/**
 * A UCP endpoint as a Netty {@link Channel}: its pipeline is the endpoint's protocol stack, and users add their own
 * handlers at the tail.
 *
 * <pre>
 *   user handlers                                  (tail)
 *   nucx.tag.eager   EagerTagSendHandler           selects the protocol; TagMessage / ByteBuf → eager AM frames
 *   nucx.tag.rndv    RndvTagSendHandler            rendezvous sends → RTS, then data on RTR
 *   nucx.stub        StubHandler ──(lanes up: pipeline.replace)──▶ nucx.lanes LaneDispatcher → AM lane channel
 *                                                  (head)
 * </pre>
 * Lanes are chosen when the endpoint is created (both addresses are known), so protocols fragment for the right lane
 * at once; the stub only waits until the pair's lane is known and connected (see {@link Worker#onRequest} for
 * simultaneous connects, and the p2p handshake in {@link #onReply}). Inbound frames arrive on the lane and go to the
 * worker's tag matching; those routed to this endpoint ({@link EndpointOption#PIPELINE_TAG_MASK}) come up this
 * pipeline as {@link TagMessage}s.
 *
 * <p><b>Failure</b> (error mode {@link ErrorMode#PEER}, the default): the peer's connection closing, an EP_REMOVED
 * from the peer, or NUCX_KEEPALIVE_TIMEOUT of silence fails the endpoint once: every operation outstanding or queued on
 * it (writes still in the stub, in the pipeline or in the lane's outbound buffer, rendezvous, synchronous and
 * zero-copy sends waiting for the peer, partly received messages from it) fails with an {@link EndpointException}
 * naming the peer and the reason ({@link ConnectionResetException}, {@link EndpointTimeoutException}) and its
 * buffers are released; then an {@link EndpointErrorEvent} goes through the pipeline ({@code userEventTriggered}),
 * {@link #errorFuture()} fails with the same cause, and the endpoint closes. Posted receives belong to the worker and
 * stay. The worker and its other endpoints go on.
 *
 * <p><b>Close</b> ({@link #close()}) is graceful: writes queued in the stub go out first, rendezvous, synchronous
 * and zero-copy sends, atomics, unconfirmed frames (failover) and receives whose buffer the peer is writing by PUT
 * wait (at most NUCX_KEEPALIVE_TIMEOUT) for the peer, then the endpoint sends EP_REMOVED after everything it wrote
 * (on every lane) and closes its lanes. The peer's endpoint fails with {@link ConnectionResetException} ("closed by
 * its owner"), so what the peer still had outstanding toward us fails at once instead of waiting for a timeout.
 *
 * <p><b>PUT and the end of an endpoint</b> ({@code rndv/put/zcopy}): a receive whose buffer was offered to the peer
 * in an RTR is not failed when the endpoint ends, only held, until the peer's RNDV_ATP or RNDV_DATA for it or the
 * peer's exit (TagMatcher's PUT safety rule). So that a live peer can say that last word, an ended endpoint holding
 * such receives keeps its AM lane open, sends EP_REMOVED on it (a running peer then cancels its PUTs and answers ATP
 * with status cancelled), reads only ATP and DATA from it, and closes it when the last held receive is released. On
 * the sending side, an ended endpoint cancels its PUTs before their next chunk, starts none, and closes its lane only
 * behind the ATP(cancelled) it wrote for them (at most NUCX_KEEPALIVE_TIMEOUT later).
 */
public final class Endpoint extends AbstractChannel {

    /**
     * WIRING_UP while writes wait in the stub (until the lane the pair will use is known and connected); CLOSING while
     * a graceful close waits for sends and the peer's answer.
     */
    private enum State { WIRING_UP, CONNECTED, CLOSING, CLOSED }

    private static final ChannelMetadata METADATA = new ChannelMetadata(false);

    static final String STUB = "nucx.stub";
    static final String LANES = "nucx.lanes";
    static final String TAG_EAGER = "nucx.tag.eager";
    static final String TAG_RNDV = "nucx.tag.rndv";
    static final String AMO = "nucx.amo";

    private final Worker worker;
    private final long id;
    private final WorkerAddress remote;
    private final EndpointConfig endpointConfig;
    private final LaneSelector.Lanes lanes;
    /** The message lanes (AM, AM_BW, replacements) and what goes on them. Loop only. */
    private final MessageLanes messageLanes;
    private final EndpointChannelConfig config = new EndpointChannelConfig(this);
    private final EndpointAddress localAddress;
    private final EndpointAddress remoteAddress;
    private final ErrorMode errorMode;
    private final io.netty.util.concurrent.Promise<Void> errorPromise;
    private final io.netty.util.concurrent.Promise<Void> wireupPromise;
    private volatile State state;
    private volatile Channel amLane;
    /** This endpoint's number among the connections between the two workers (see {@link EndpointMatch}). */
    private final int connSn;
    /** The lane this endpoint connected itself to carry its REQUEST; null for endpoints created on demand. */
    private Channel ownLane;
    /** p2p AM lane: the transport endpoint, its lane once connected, whether the peer's side is connected. */
    private io.nucx.transport.P2pEndpoint p2pEndpoint;
    private Channel p2pLane;
    private boolean p2pRemoteConnected;
    /** p2p: this side dials the peer's endpoint (it sent the REQUEST that was answered) and sends the ACK. */
    private boolean p2pDialer;
    /** This side's REQUEST was answered: it dials the AM_BW and replacement lanes. Fixed at wireup. Loop only. */
    private boolean laneDialer;
    /** Graceful EP_REMOVED: the lanes it has arrived on (it goes on every lane; acted on once all have it). */
    private java.util.Set<Channel> removedOn;
    private Channel rmaChannel;
    private StubHandler stub;
    /** The peer's id for this endpoint: from the REQUEST (accepted) or the REPLY (connected). Loop only. */
    private long remoteEpId = WireupMessage.INVALID_EP_ID;
    /** Set by any frame from the peer, cleared by each keepalive tick; loop only, so a plain field. */
    private boolean heard = true;
    private int silentTicks;
    /** Why the endpoint failed, set once. Loop only. */
    private EndpointException failure;
    private boolean outstandingReleased;
    /** The graceful close has written EP_REMOVED: the lane closing now is expected. */
    private boolean closeMessageSent;
    private io.netty.util.concurrent.Future<?> closeTimer;
    /** The ATP(cancelled) RndvSends wrote for PUTs it stopped when the endpoint ended; the lane closes behind it. */
    private ChannelFuture putAbortsWritten;
    private boolean putAbortsPending;
    /**
     * Closed, but the AM lane stays open to hear the peer's last word on receive buffers offered to it for PUT (see
     * TagMatcher's PUT safety rule) until the matcher has released them all.
     */
    private boolean awaitingPutRelease;

    private Endpoint(Worker worker, long id, WorkerAddress remote, LaneSelector.Lanes lane, Channel connectedLane,
                     ErrorMode errorMode, long remoteEpId, int connSn) {
        super(null);
        this.worker = worker;
        this.id = id;
        this.connSn = connSn;
        this.remote = remote;
        this.errorMode = errorMode;
        this.remoteEpId = remoteEpId;
        this.errorPromise = worker.eventLoop().newPromise();
        this.wireupPromise = worker.eventLoop().newPromise();
        this.localAddress = new EndpointAddress(worker.uuid(), worker.name());
        this.remoteAddress = new EndpointAddress(remote.uuid(), remote.name());
        this.endpointConfig = lane.endpointConfig();
        this.lanes = lane;
        this.messageLanes = new MessageLanes(this, lane, errorMode == ErrorMode.FAILOVER);
        ChannelPipeline p = pipeline();
        if (connectedLane == null) {
            state = State.WIRING_UP;
            stub = new StubHandler();
            p.addLast(STUB, stub);
        } else {
            state = State.CONNECTED;
            amLane = connectedLane;
            messageLanes.slot(0).channel = connectedLane;
            p.addLast(LANES, new LaneDispatcher(this, messageLanes));
            wireupPromise.setSuccess(null);
        }
        p.addLast(TAG_RNDV, new RndvTagSendHandler(endpointConfig, worker.rndvSends()));
        p.addLast(TAG_EAGER, new EagerTagSendHandler(worker.selectionCache(endpointConfig, lane.locality()),
                worker::nextMessageId, config::sendTag, worker.counters(), worker.syncSends(), worker.zcopySends()));
        p.addLast(AMO, new io.nucx.protocol.amo.AmoSendHandler(worker.atomicRequests(), remote::uuid));
        ChannelHandler init = worker.endpointInitializer();
        if (init != null) {
            p.addLast(init);
        }
    }

    /** An endpoint this worker connects as connection {@code connSn} to the peer; its lane connects after registration. */
    static Endpoint outgoing(Worker worker, long id, WorkerAddress remote, LaneSelector.Lanes lane, ErrorMode mode,
                             int connSn) {
        return new Endpoint(worker, id, remote, lane, null, mode, WireupMessage.INVALID_EP_ID, connSn);
    }

    /** An endpoint for a peer that connected to us, on the lane it came in by; id and number from its REQUEST. */
    static Endpoint incoming(Worker worker, long id, WorkerAddress remote, LaneSelector.Lanes lane, Channel laneCh,
                             ErrorMode mode, long remoteEpId, int connSn) {
        return new Endpoint(worker, id, remote, lane, laneCh, mode, remoteEpId, connSn);
    }

    /** This endpoint's connection number to its peer (UCX's conn_sn): the n-th connect between the two workers. */
    int connSn() {
        return connSn;
    }

    /** This endpoint's error handling: {@link ErrorMode#PEER} runs keepalive on it. */
    public ErrorMode errorMode() {
        return errorMode;
    }

    /** The lanes chosen for this endpoint (AM, RMA, keepalive). */
    public LaneSelector.Lanes lanes() {
        return lanes;
    }

    /**
     * Completes when the endpoint is wired up both ways: for a connected endpoint when the peer's REPLY arrives (it
     * then knows the peer's endpoint id) or its REQUEST paired with ours, for an accepted one at once; with a p2p lane
     * when the stub switches to it (after ACK). Fails if the endpoint fails first.
     */
    public io.netty.util.concurrent.Future<Void> wireupFuture() {
        return wireupPromise;
    }

    /**
     * Completes when the endpoint ends: failed with the {@link EndpointException} that ended it (the same cause every
     * outstanding operation got), or succeeded when it was closed here without failure.
     */
    public io.netty.util.concurrent.Future<Void> errorFuture() {
        return errorPromise;
    }

    /** The worker this endpoint belongs to. */
    public Worker worker() {
        return worker;
    }

    /** This endpoint's id within its worker (UCX's ep id). */
    public long endpointId() {
        return id;
    }

    /** The peer's worker address. */
    public WorkerAddress remoteWorkerAddress() {
        return remote;
    }

    /** The lanes and their limits the protocols work with. */
    public EndpointConfig endpointConfig() {
        return endpointConfig;
    }

    /** "cma/memory" when this endpoint may read the peer's memory (rndv/get/zcopy), else null. */
    public String rmaLane() {
        return endpointConfig.rmaLane();
    }

    /**
     * Why this endpoint has no RMA lane although the peer offered one (the kernel refused: EPERM; another host), or
     * null. Rendezvous then moves the data as active-message fragments ({@code tag/rndv}).
     */
    public String rmaRefusal() {
        return lanes.rmaRefusal();
    }

    /**
     * Takes message lane {@code index} down (0 is the lane carrying active messages now; AM_BW lanes follow), e.g. to
     * drain a device. In error mode failover the endpoint goes on over the others, or a replacement (see
     * {@link ErrorMode#FAILOVER}); otherwise losing a lane fails the endpoint. The future completes when the lane is
     * closed.
     */
    public io.netty.util.concurrent.Future<Void> closeLane(int index) {
        io.netty.util.concurrent.Promise<Void> done = eventLoop().newPromise();
        eventLoop().execute(() -> {
            if (index < 0 || index >= messageLanes.size()) {
                done.tryFailure(new IllegalArgumentException("lane " + index + " of " + this + ": it has "
                        + messageLanes.size() + " message lanes"));
                return;
            }
            MessageLanes.Slot slot = index == 0 ? messageLanes.amSlot() : messageLanes.slot(index);
            if (slot.channel == null || !slot.channel.isOpen()) {
                done.tryFailure(new IllegalStateException("lane " + index + " (" + slot.name() + ") of " + this
                        + " is not connected"));
                return;
            }
            slot.channel.close().addListener(f -> done.trySuccess(null));
        });
        return done;
    }

    /** "transport/device" of each message lane in use (the AM lane first); failed lanes are left out. */
    public io.netty.util.concurrent.Future<List<String>> laneNames() {
        return eventLoop().submit(() -> {
            List<String> out = new java.util.ArrayList<>();
            out.add(messageLanes.amSlot().name());
            for (int i = 0; i < messageLanes.size(); i++) {
                MessageLanes.Slot s = messageLanes.slot(i);
                if (s != messageLanes.amSlot() && s.channel != null && !s.failed) {
                    out.add(s.name());
                }
            }
            return out;
        });
    }

    /**
     * Runs {@code op} with {@code value} on the 8-byte word at {@code address} of the peer's memory registered as
     * {@code key} ({@link Worker#registerMemory} there); the future gets the word's previous value once the peer
     * applied it (UCX's {@code ucp_atomic_op_nbx} with a result, done as active messages: no transport here has device
     * atomics). For {@link io.nucx.protocol.amo.AtomicOp#CSWAP} use {@link #compareAndSwap}. Fails with
     * {@link io.nucx.protocol.amo.RemoteAccessException} if the peer refuses (no such region, outside it,
     * misaligned), or with the endpoint's failure.
     */
    public io.netty.util.concurrent.Future<Long> atomic(io.nucx.protocol.amo.AtomicOp op,
                                                        io.nucx.protocol.amo.RemoteMemoryKey key, long address,
                                                        long value) {
        return atomic(op, key, address, value, 0);
    }

    /** Sets the word at {@code address} to {@code value} if it holds {@code expected}; the future gets what it held. */
    public io.netty.util.concurrent.Future<Long> compareAndSwap(io.nucx.protocol.amo.RemoteMemoryKey key,
                                                                long address, long expected, long value) {
        return atomic(io.nucx.protocol.amo.AtomicOp.CSWAP, key, address, value, expected);
    }

    private io.netty.util.concurrent.Future<Long> atomic(io.nucx.protocol.amo.AtomicOp op,
                                                         io.nucx.protocol.amo.RemoteMemoryKey key, long address,
                                                         long value, long compare) {
        io.netty.util.concurrent.Promise<Long> result = eventLoop().newPromise();
        writeAndFlush(new io.nucx.protocol.amo.AtomicRequest(op, key, address, value, compare, result))
                .addListener(f -> {
                    if (!f.isSuccess()) {
                        result.tryFailure(f.cause());
                    }
                });
        return result;
    }

    /** The AM lane's transport channel, once connected. */
    public Channel amLane() {
        return amLane;
    }

    /** Sends a tagged message; the future completes when the buffer may be reused (bcopy semantics). */
    public ChannelFuture tagSend(long tag, ByteBuf data) {
        return writeAndFlush(new TagMessage(tag, data));
    }

    /**
     * Sends a tagged message whose future completes only once the receiver has matched it (and the data has gone),
     * like {@code ucp_tag_send_sync_nbx}: eager with an acknowledgement ({@code egrsnc/*}) or rendezvous, as the
     * protocol table says.
     */
    public ChannelFuture tagSendSync(long tag, ByteBuf data) {
        return writeAndFlush(new TagMessage(tag, data, true));
    }

    // ------------------------------------------------------------ wireup (event loop only)

    /**
     * Connects this endpoint's own lane to the peer's iface and sends the REQUEST on it. Writes stay in the stub until
     * it is certain which lane the pair will use: at once on the worker with the lower uuid (its own lane always
     * carries the winning REQUEST, see {@link Worker#onRequest}); on the higher-uuid worker only when the REPLY
     * comes or the peer's REQUEST pairs with this endpoint, so nothing is ever written on a lane that is dropped.
     */
    void connectLanes() {
        assert eventLoop().inEventLoop();
        if (state != State.WIRING_UP || remoteEpId != WireupMessage.INVALID_EP_ID) {
            return; // closed, or already paired with the peer's REQUEST
        }
        LaneSelector.Lane lane = lanes.am();
        if (lane.p2p()) {
            p2pEndpoint(); // its address goes in the REQUEST
        }
        LaneHandler handler = new LaneHandler(worker, this);
        ChannelFuture f = lane.iface().connect(lane.remote().deviceAddress(), lane.remote().ifaceAddress(), handler);
        f.addListener((ChannelFutureListener) done -> {
            if (done.isSuccess()) {
                ownLaneConnected(done.channel());
            } else if (remoteEpId == WireupMessage.INVALID_EP_ID) {
                fail(new EndpointException(id, remoteAddress, "connecting " + lane.name() + " failed: " + done.cause(),
                        done.cause()));
            }
        });
    }

    private void ownLaneConnected(Channel lane) {
        if (state != State.WIRING_UP || remoteEpId != WireupMessage.INVALID_EP_ID) {
            lane.close(); // closed while connecting, or the peer's REQUEST paired with us meanwhile: nothing sent on it
            return;
        }
        ownLane = lane;
        lane.write(WireupMessage.request(errorMode, connSn, id, worker.address(), p2pEndpoint != null
                ? p2pEndpoint.address() : WireupMessage.NO_EP_ADDRESS).toFrame(lane.alloc()), lane.voidPromise());
        if (!lanes.am().p2p() && Long.compareUnsigned(worker.uuid(), remote.uuid()) <= 0) {
            switchToLane(lane);
        } else {
            lane.flush();
        }
    }

    /** The pair's lane is known and connected: the stub steps aside and its queued writes replay onto the lane. */
    private void switchToLane(Channel lane) {
        amLane = lane;
        messageLanes.slot(0).channel = lane;
        state = State.CONNECTED;
        StubHandler s = stub;
        stub = null;
        s.ready();
        pipeline().replace(s, LANES, new LaneDispatcher(this, messageLanes));
        lane.flush();
        pipeline().fireChannelActive();
    }

    /**
     * Simultaneous connect, this worker having the higher uuid: the peer's REQUEST (arrived on {@code peerLane}, the
     * lane the peer opened) pairs with this endpoint, and the pair uses that lane. The REPLY goes on our own lane if
     * our REQUEST went there (behind it, so the peer sees our REQUEST, and ignores it, before the REPLY; the peer then
     * closes that lane), else on the peer's lane; our lane, if still connecting, is closed once connected.
     */
    void pairWithRequest(WireupMessage request, Channel peerLane) {
        assert eventLoop().inEventLoop() && state == State.WIRING_UP;
        remoteEpId = request.srcEpId();
        Channel replyOn = ownLane != null && ownLane.isActive() ? ownLane : peerLane;
        replyOn.writeAndFlush(WireupMessage.reply(errorMode, connSn, id, remoteEpId, localEpAddress())
                .toFrame(replyOn.alloc()), replyOn.voidPromise());
        if (failsOnModeMismatch(request)) {
            return; // the REPLY carries our mode: the peer's own check fails its side too
        }
        if (lanes.am().p2p()) {
            return; // the peer dials our p2p endpoint; its ACK on that lane completes the wireup
        }
        switchToLane(peerLane);
        wireupPromise.trySuccess(null);
    }

    /** REPLY to the REQUEST that created this endpoint on demand, on the lane it came by. */
    void replyTo(WireupMessage request, Channel lane) {
        lane.writeAndFlush(WireupMessage.reply(errorMode, connSn, id, remoteEpId, localEpAddress())
                .toFrame(lane.alloc()), lane.voidPromise());
    }

    /** Our p2p endpoint's address for the peer, or none when the AM lane connects to the iface. */
    private byte[] localEpAddress() {
        return lanes.am().p2p() ? p2pEndpoint().address() : WireupMessage.NO_EP_ADDRESS;
    }

    /** The transport endpoint of a p2p AM lane, made on first use; its lane, once connected, waits for the switch. */
    private io.nucx.transport.P2pEndpoint p2pEndpoint() {
        if (p2pEndpoint == null) {
            p2pEndpoint = lanes.am().iface().createEndpoint(new LaneHandler(worker, this));
            p2pEndpoint.connected().addListener(f -> {
                if (f.isSuccess()) {
                    Channel lane = (Channel) f.getNow();
                    if (state == State.CLOSED) {
                        lane.close();
                    } else if (p2pLane == null) {
                        p2pLane = lane;
                        maybeSwitchToP2p();
                    }
                }
            });
        }
        return p2pEndpoint;
    }

    /**
     * UCX's rule: switch the stub to the p2p lane when both sides are connected: ours (the lane is up) and the peer's
     * (the REPLY told the dialer; the ACK tells the other side). The dialer's ACK goes first on the lane, before the
     * replayed writes. The auxiliary lane has done its job then and is closed by its owner.
     */
    private void maybeSwitchToP2p() {
        if (state != State.WIRING_UP || p2pLane == null || !p2pRemoteConnected) {
            return;
        }
        if (p2pDialer) {
            p2pLane.write(WireupMessage.ack(errorMode, connSn, id, remoteEpId).toFrame(p2pLane.alloc()),
                    p2pLane.voidPromise());
        }
        switchToLane(p2pLane);
        wireupPromise.trySuccess(null);
        if (p2pDialer) {
            connectBwLanes();
        }
        if (ownLane != null && ownLane != p2pLane) {
            ownLane.close();
        }
    }

    /** The dialer's ACK arrived on the p2p lane: the peer is connected too. */
    void onAck(WireupMessage ack, Channel lane) {
        if (!lanes.am().p2p() || p2pDialer || p2pRemoteConnected) {
            throw new io.nucx.protocol.ProtocolException("unexpected wireup ACK on " + this);
        }
        if (p2pLane == null) {
            p2pLane = lane;
        }
        p2pRemoteConnected = true;
        maybeSwitchToP2p();
    }

    /** The peer's REPLY: it made (or paired) its endpoint, whose id EP_CHECK will carry. */
    void onReply(WireupMessage reply) {
        if (remoteEpId != WireupMessage.INVALID_EP_ID) {
            throw new io.nucx.protocol.ProtocolException("second wireup REPLY on " + this);
        }
        remoteEpId = reply.srcEpId();
        worker.endpointMatched(this);
        if (failsOnModeMismatch(reply)) {
            return;
        }
        if (lanes.am().p2p()) {
            dialP2p(reply.epAddress());
            return;
        }
        if (state == State.WIRING_UP && ownLane != null) {
            switchToLane(ownLane);
        }
        wireupPromise.trySuccess(null);
        connectBwLanes();
    }

    /**
     * The side whose REQUEST was answered dials the AM_BW lanes (and, after a failover that left no lane, the
     * replacement), so that each lane is connected exactly once: the other side waits for their LANE_ATTACH.
     */
    boolean dialsLanes() {
        return laneDialer;
    }

    /** Connects lanes 1, 2... and announces each with LANE_ATTACH, its first frame; the peer then uses it too. */
    private void connectBwLanes() {
        laneDialer = true;
        for (int i = 1; i < lanes.count(); i++) {
            MessageLanes.Slot slot = messageLanes.slot(i);
            LaneSelector.Lane lane = slot.lane;
            lane.iface().connect(lane.remote().deviceAddress(), lane.remote().ifaceAddress(),
                    new LaneHandler(worker, this, i)).addListener((ChannelFutureListener) f -> {
                        if (!f.isSuccess()) {
                            // The AM lane carries everything still; the peer is reachable through it.
                            worker.laneFailed(new WireupException("AM_BW lane " + lane.name() + " of " + this
                                    + " did not connect: " + f.cause(), f.cause()));
                        } else if (state == State.CLOSED || failure != null) {
                            f.channel().close();
                        } else {
                            messageLanes.attached(slot, f.channel(), true);
                        }
                    });
        }
    }

    /** The peer announced lane {@code index} on {@code ch} (LANE_ATTACH). */
    void onLaneAttach(int index, String transport, Channel ch) {
        messageLanes.onAttach(index, transport, ch);
    }

    /** A frame other than wireup arrived on lane {@code index}: counted for the peer's confirmation (failover). */
    void frameReceived(int index) {
        if (messageLanes.tracking()) {
            messageLanes.received(index);
        }
    }

    /** A read batch ended on lane {@code index}: confirm what arrived (failover). */
    void readBatchEnded(int index, Channel ch) {
        if (messageLanes.tracking() && state != State.CLOSED) {
            messageLanes.confirmReceived(index, ch, id, remoteEpId);
        }
    }

    /** The peer's LANE_ACK. */
    void onLaneAck(int index, long count) {
        if (!messageLanes.tracking()) {
            throw new io.nucx.protocol.ProtocolException("LANE_ACK on " + this + ", which is not in error mode "
                    + "failover");
        }
        messageLanes.onConfirmed(index, count);
    }

    /** The peer's LANE_FAILED. */
    void onLaneFailed(int index, long count) {
        messageLanes.onPeerFinal(index, count);
    }

    /** A failover made {@code lane} the AM lane: keepalive and the graceful close use it. */
    void amLaneChanged(Channel lane) {
        amLane = lane;
    }

    /** The message lanes; for tests and diagnostics. */
    MessageLanes messageLanes() {
        return messageLanes;
    }

    /**
     * Both ends of a pair must handle errors alike: failover confirms every frame, and a peer that does not would
     * leave our sends waiting forever. A pair made of two {@code connect}s in different modes fails at once, naming
     * both (UCX fails such an endpoint too).
     */
    private boolean failsOnModeMismatch(WireupMessage m) {
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

    /** The requester's side of a p2p lane: connect our endpoint to the one the REPLY named; ACK once connected. */
    private void dialP2p(byte[] remoteEpAddress) {
        if (remoteEpAddress == null || remoteEpAddress.length == 0) {
            throw new io.nucx.protocol.ProtocolException("wireup REPLY without an endpoint address for the p2p lane "
                    + lanes.am().name() + " of " + this);
        }
        p2pDialer = true;
        p2pRemoteConnected = true; // the REPLY says the peer's endpoint exists and waits for us
        LaneSelector.Lane lane = lanes.am();
        p2pEndpoint().connect(lane.remote().deviceAddress(), lane.remote().ifaceAddress(), remoteEpAddress)
                .addListener((ChannelFutureListener) f -> {
                    if (!f.isSuccess()) {
                        fail(new EndpointException(id, remoteAddress, "connecting the p2p lane " + lane.name()
                                + " to the peer's endpoint failed: " + f.cause(), f.cause()));
                    }
                });
    }

    /** Whether the pair's lane is the one this endpoint opened (else the peer's). Loop only; for tests. */
    boolean usesOwnLane() {
        return ownLane != null && amLane == ownLane;
    }

    /** Whether this endpoint sent a REQUEST and still waits for its REPLY. Loop only. */
    boolean awaitsReply() {
        return ownLane != null && remoteEpId == WireupMessage.INVALID_EP_ID && state != State.CLOSED;
    }

    /** The peer's id of this endpoint, or -1 before its REPLY. Loop only. */
    long remoteEndpointId() {
        return remoteEpId;
    }

    /** A frame from the peer arrived: it is alive. */
    void heard() {
        heard = true;
    }

    /**
     * One keepalive tick (error mode peer): fail after {@code silentLimit} ticks without a frame from the peer,
     * otherwise send EP_CHECK on the keepalive lane. Before the REPLY there is no id to check, but silence still
     * counts, so a peer that never answers the REQUEST fails the endpoint too.
     */
    void keepaliveTick(int silentLimit, long timeoutNanos) {
        assert eventLoop().inEventLoop();
        if (errorMode == ErrorMode.NONE || failure != null || state == State.CLOSED) {
            return;
        }
        if (heard) {
            heard = false;
            silentTicks = 0;
        } else if (++silentTicks >= silentLimit) {
            fail(new EndpointTimeoutException(id, remoteAddress, "no answer from the peer for "
                    + java.time.Duration.ofNanos(timeoutNanos) + " (NUCX_KEEPALIVE_TIMEOUT) on "
                    + (lanes.keepalive() != null ? lanes.keepalive().name() : lanes.am().name())
                    + (ownLane == null && amLane == null ? ", lane never connected"
                    : remoteEpId == WireupMessage.INVALID_EP_ID ? ", no REPLY to the wireup REQUEST" : "")
                    + ": the peer is hung, stopped or unreachable"));
            return;
        }
        Channel lane = amLane;
        // An unwritable lane already holds frames for the peer; a probe behind them tells it nothing sooner.
        if (lane != null && remoteEpId != WireupMessage.INVALID_EP_ID && lane.isActive() && lane.isWritable()) {
            lane.writeAndFlush(WireupMessage.epCheck(errorMode, id, remoteEpId).toFrame(lane.alloc()),
                    lane.voidPromise());
        }
    }

    /** The peer sent EP_REMOVED: it closed this endpoint's other side, or does not know it. */
    void remoteRemoved(String reason, Channel on, boolean graceful) {
        List<Channel> live = messageLanes.liveChannels();
        if (graceful && live.size() > 1 && live.contains(on)) {
            if (removedOn == null) {
                removedOn = new java.util.HashSet<>();
            }
            removedOn.add(on);
            if (!removedOn.containsAll(live)) {
                return; // the peer's close is behind what its other lanes still carry: read those first
            }
        }
        if (state == State.CLOSING && closeMessageSent) {
            close(); // both sides said goodbye: nothing more will come either way
            return;
        }
        fail(new ConnectionResetException(id, remoteAddress, "the peer removed its endpoint: " + reason, null));
    }

    /**
     * Fails the endpoint once (see the class comment): outstanding operations fail with {@code cause} and release their
     * buffers, the error event fires, {@link #errorFuture()} fails, and the endpoint closes. Loop only.
     */
    void fail(EndpointException cause) {
        assert eventLoop().inEventLoop();
        if (failure != null || state == State.CLOSED) {
            return;
        }
        failure = cause;
        if (stub != null) {
            stub.fail(cause);
        }
        releaseOutstanding(cause);
        wireupPromise.tryFailure(cause);
        if (isRegistered()) {
            pipeline().fireUserEventTriggered(new EndpointErrorEvent(cause));
        }
        errorPromise.tryFailure(cause);
        close();
    }

    /** Why this endpoint failed, or null. Loop only. */
    EndpointException failure() {
        return failure;
    }

    /** Fails what waits on the peer through this endpoint and drops its partial messages; once. */
    private void releaseOutstanding(Throwable cause) {
        if (outstandingReleased) {
            return;
        }
        outstandingReleased = true;
        messageLanes.releaseAll(cause); // first: the ATP(cancelled) written below must not wait for confirmation
        worker.matcher().onSourceClosed(this, cause);
        putAbortsWritten = worker.rndvSends().onEndpointClosed(this, cause);
        worker.syncSends().onEndpointClosed(this, cause);
        worker.zcopySends().onEndpointClosed(this, cause);
        worker.atomicRequests().onEndpointClosed(this, cause);
    }

    /**
     * The graceful close, from the {@link LaneDispatcher} (the bottom of a wired-up pipeline) when a close passes it:
     * waits for this endpoint's rendezvous, synchronous and zero-copy sends (at most {@link Worker#closeWaitNanos}),
     * then writes EP_REMOVED behind everything already written and waits (as long again at most) for the peer to close
     * the lane.
     * The peer closes it once it has read everything before EP_REMOVED; closing it here first could drop what an
     * in-process (self) lane still holds for the peer. The caller's promise completes when the endpoint is closed.
     */
    void closeGracefully(io.netty.channel.ChannelHandlerContext ctx, ChannelPromise promise) {
        Channel lane0 = amLane;
        if (failure != null || state != State.CONNECTED || lane0 == null
                || (!lane0.isActive() && !messageLanes.suspended())) {
            ctx.close(promise);
            return;
        }
        state = State.CLOSING;
        closeFuture().addListener(f -> promise.trySuccess());
        long waitNanos = worker.closeWaitNanos();
        List<io.netty.util.concurrent.Future<?>> waits = new java.util.ArrayList<>(worker.rndvSends().promisesOf(this));
        waits.addAll(worker.syncSends().promisesOf(this));
        waits.addAll(worker.zcopySends().promisesOf(this));
        waits.addAll(worker.atomicRequests().promisesOf(this));
        waits.addAll(messageLanes.awaitingConfirmation()); // failover: sends complete when the peer confirmed them
        waits.add(messageLanes.settled()); // a failover in progress first delivers what it holds
        waits.addAll(worker.matcher().putReleasesOf(this)); // the peer is writing into those buffers: let it finish
        Runnable sendRemoved = () -> {
            Channel lane = amLane; // a failover may have moved it
            if (failure != null || lane == null || !lane.isActive()) {
                close();
                return;
            }
            closeMessageSent = true;
            // On every message lane, behind what each carries: the peer acts once it has read it on all of them, so
            // rendezvous data still queued on an AM_BW lane is not cut off by an EP_REMOVED overtaking it on another.
            for (Channel ch : messageLanes.liveChannels()) {
                ch.writeAndFlush(WireupMessage.epRemoved(id, remoteEpId, "endpoint #" + id + " of " + localAddress
                        + " closed by its owner").toFrame(ch.alloc()), ch.voidPromise());
            }
            closeTimer = eventLoop().schedule(() -> {
                close(); // the peer did not close its side in time
            }, waitNanos, java.util.concurrent.TimeUnit.NANOSECONDS);
        };
        if (waits.isEmpty()) {
            sendRemoved.run();
            return;
        }
        io.netty.util.concurrent.Promise<Void> all = eventLoop().newPromise();
        io.netty.util.concurrent.PromiseCombiner combiner = new io.netty.util.concurrent.PromiseCombiner(eventLoop());
        for (io.netty.util.concurrent.Future<?> w : waits) {
            combiner.add(w);
        }
        combiner.finish(all);
        io.netty.util.concurrent.Future<?> timeout = eventLoop().schedule(() -> all.trySuccess(null), waitNanos,
                java.util.concurrent.TimeUnit.NANOSECONDS);
        all.addListener(f -> {
            timeout.cancel(false);
            sendRemoved.run(); // a failed send is the caller's to see on its own future; the close goes on
        });
    }

    /** Sends a protocol control frame (RTR, ATS) below the protocol handlers; dropped if the endpoint is gone. */
    void sendControl(AmFrame frame) {
        io.netty.channel.ChannelHandlerContext ctx = pipeline().context(TAG_RNDV);
        if (ctx == null || !isOpen()) {
            frame.release();
            return;
        }
        ctx.writeAndFlush(frame, voidPromise());
    }

    /**
     * The AM lane went away. Unless this endpoint closed it, that is a failure: the peer's process or connection went
     * ({@code laneCause} null or an I/O error: {@link ConnectionResetException}), or a frame broke the protocol.
     */
    void laneInactive(Channel laneCh, Throwable laneCause) {
        boolean waitsOnIt = laneCh == ownLane && remoteEpId == WireupMessage.INVALID_EP_ID;
        MessageLanes.Slot slot = messageLanes.slotOf(laneCh);
        if (slot == null && laneCh != amLane && laneCh != p2pLane && !waitsOnIt) {
            return; // a lane dropped after a simultaneous connect, not one the endpoint uses
        }
        if (slot != null && (state == State.CONNECTED || (state == State.CLOSING && !closeMessageSent))
                && failure == null && messageLanes.laneLost(slot)) {
            return; // error mode failover: the endpoint goes on over the lanes left
        }
        if (failure == null && state != State.CLOSED && !(state == State.CLOSING && closeMessageSent)) {
            String lane = slot != null ? slot.name() : lanes.am().name();
            if (laneCause == null) {
                fail(new ConnectionResetException(id, remoteAddress, "the peer closed the " + lane
                        + " connection (its process exited or was killed)", null));
            } else if (laneCause instanceof java.io.IOException) {
                fail(new ConnectionResetException(id, remoteAddress, "the " + lane + " connection failed (peer process "
                        + "gone or network lost): " + laneCause, laneCause));
            } else {
                fail(new EndpointException(id, remoteAddress, "the " + lane + " lane was closed after an error: "
                        + laneCause, laneCause));
            }
        }
        close();
    }

    boolean deliversToPipeline(long tag) {
        return config.deliversToPipeline(tag);
    }

    // ------------------------------------------------------------ Channel

    @Override
    public EndpointChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return state != State.CLOSED;
    }

    @Override
    public boolean isActive() {
        return state == State.CONNECTED;
    }


    @Override
    public boolean isWritable() {
        Channel lane = amLane;
        return super.isWritable() && (lane == null || lane.isWritable());
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
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
     * The RMA lane (a cma channel to the peer process) if lane selection chose one the kernel permits, connected on
     * first use; null otherwise. Loop only.
     */
    Channel rmaChannel() {
        assert eventLoop().inEventLoop();
        LaneSelector.RmaLane sel = lanes.rma();
        if (sel == null || state == State.CLOSED) {
            return null;
        }
        return rmaChannel(sel);
    }

    /**
     * {@link #rmaChannel()} when both sides' entries of the RMA lane have {@code capability} (PUT_ZCOPY for
     * rndv/put/zcopy: lane selection asks only for GET_ZCOPY), else null. Loop only.
     */
    Channel rmaChannel(io.nucx.transport.Capability capability) {
        assert eventLoop().inEventLoop();
        LaneSelector.RmaLane sel = lanes.rma();
        if (sel == null || state == State.CLOSED || !sel.local().has(capability) || !sel.remote().has(capability)) {
            return null;
        }
        return rmaChannel(sel);
    }

    private Channel rmaChannel(LaneSelector.RmaLane sel) {
        if (rmaChannel == null) {
            ChannelFuture f = sel.iface().connect(sel.remote().deviceAddress(), sel.remote().ifaceAddress(),
                    new io.netty.channel.ChannelInboundHandlerAdapter());
            if (!f.isSuccess()) { // a cma lane registers at once on our own loop, or not at all
                return null;
            }
            rmaChannel = f.channel();
        }
        return rmaChannel;
    }

    @Override
    protected void doClose() {
        state = State.CLOSED;
        if (closeTimer != null) {
            closeTimer.cancel(false);
        }
        if (stub != null) {
            stub.fail(failure != null ? failure : new ClosedChannelException());
        }
        // A close without failure: what still waits on the peer cannot complete any more. Before the RMA lane
        // closes, so that its GETs and PUTs are cancelled, not failed (a failed PUT would fall back to fragments).
        releaseOutstanding(failure != null ? failure : new ClosedChannelException());
        if (rmaChannel != null) {
            rmaChannel.close();
        }
        wireupPromise.tryFailure(failure != null ? failure : new ClosedChannelException());
        errorPromise.trySuccess(null);
        Channel lane = amLane;
        if (lane != null) {
            closeAmLane(lane);
        }
        if (!awaitingPutRelease) {
            messageLanes.closeAll(lane);
        } // else the AM_BW lanes stay open too: the peer's fallback RNDV_DATA for held receives may come on them
        if (ownLane != null && ownLane != lane) {
            ownLane.close();
        }
        if (p2pLane != null && p2pLane != lane) {
            p2pLane.close();
        }
        if (p2pEndpoint != null) {
            p2pEndpoint.close();
        }
        worker.endpointClosed(this);
    }

    /**
     * Closes the AM lane of a closed endpoint, unless it must carry one more word: the ATP(cancelled) frames this side
     * wrote for PUTs it stopped (the lane closes behind them, at most NUCX_KEEPALIVE_TIMEOUT later: a lane that does
     * not drain must not stay forever), or the peer's RNDV_ATP / RNDV_DATA for receive buffers offered to it for PUT
     * (it stays open until the matcher released them all: {@link #putOffersReleased}). EP_REMOVED tells the peer,
     * which, if it runs, stops its PUTs and answers ATP(cancelled).
     */
    private void closeAmLane(Channel lane) {
        if (worker.matcher().putOfferedTo(this) && lane.isActive()) {
            awaitingPutRelease = true;
            if (!closeMessageSent) {
                closeMessageSent = true;
                lane.writeAndFlush(WireupMessage.epRemoved(id, remoteEpId, "endpoint #" + id + " of " + localAddress
                        + " ended (" + (failure != null ? failure.getMessage() : "closed") + "); receive buffers "
                        + "offered to you for PUT stay held until your RNDV_ATP or your exit").toFrame(lane.alloc()),
                        lane.voidPromise());
            }
        }
        ChannelFuture aborts = putAbortsWritten;
        if (aborts != null && !aborts.isDone()) {
            putAbortsPending = true;
            io.netty.util.concurrent.Future<?> bound = eventLoop().schedule(() -> putAbortsWritten(lane),
                    worker.closeWaitNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
            aborts.addListener(f -> {
                bound.cancel(false);
                putAbortsWritten(lane);
            });
        }
        if (!awaitingPutRelease && !putAbortsPending) {
            lane.close();
        }
    }

    private void putAbortsWritten(Channel lane) {
        putAbortsPending = false;
        if (!awaitingPutRelease) {
            lane.close();
        }
    }

    /**
     * The matcher released every receive buffer offered to the peer for PUT: if this endpoint has ended and kept its
     * lane open for them, the lane closes now. Loop only.
     */
    void putOffersReleased() {
        if (!awaitingPutRelease) {
            return;
        }
        awaitingPutRelease = false;
        Channel lane = amLane;
        messageLanes.closeAll(lane);
        if (lane != null && !putAbortsPending) {
            lane.close();
        }
    }

    @Override
    protected void doBeginRead() {
        // Inbound messages are pushed by the worker's matching as they arrive.
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
                + (amLane != null ? ", " + lanes.describe() : "") + ")";
    }

    private final class EndpointUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            promise.setFailure(new IllegalStateException("endpoints connect through Worker.connect"));
        }
    }
}
