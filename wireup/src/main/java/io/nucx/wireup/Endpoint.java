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
 * at once; the stub only waits for the lane channel to connect. Inbound frames arrive on the lane and go to the
 * worker's tag matching; those routed to this endpoint ({@link EndpointOption#PIPELINE_TAG_MASK}) come up this
 * pipeline as {@link TagMessage}s.
 */
public final class Endpoint extends AbstractChannel {

    private enum State { WIRING_UP, CONNECTED, CLOSED }

    private static final ChannelMetadata METADATA = new ChannelMetadata(false);

    static final String STUB = "nucx.stub";
    static final String LANES = "nucx.lanes";
    static final String TAG_EAGER = "nucx.tag.eager";
    static final String TAG_RNDV = "nucx.tag.rndv";

    private final Worker worker;
    private final long id;
    private final WorkerAddress remote;
    private final EndpointConfig endpointConfig;
    private final LaneSelector.Lanes lanes;
    private final EndpointChannelConfig config = new EndpointChannelConfig(this);
    private final EndpointAddress localAddress;
    private final EndpointAddress remoteAddress;
    private volatile State state;
    private volatile Channel amLane;
    private StubHandler stub;

    private Endpoint(Worker worker, long id, WorkerAddress remote, LaneSelector.Lanes lane, Channel connectedLane) {
        super(null);
        this.worker = worker;
        this.id = id;
        this.remote = remote;
        this.localAddress = new EndpointAddress(worker.uuid(), worker.name());
        this.remoteAddress = new EndpointAddress(remote.uuid(), remote.name());
        this.endpointConfig = lane.endpointConfig();
        this.lanes = lane;
        ChannelPipeline p = pipeline();
        if (connectedLane == null) {
            state = State.WIRING_UP;
            stub = new StubHandler();
            p.addLast(STUB, stub);
        } else {
            state = State.CONNECTED;
            amLane = connectedLane;
            p.addLast(LANES, new LaneDispatcher(connectedLane));
        }
        p.addLast(TAG_RNDV, new RndvTagSendHandler(endpointConfig, worker.rndvSends()));
        p.addLast(TAG_EAGER, new EagerTagSendHandler(worker.selectionCache(endpointConfig, lane.locality()),
                worker::nextMessageId, config::sendTag, worker.counters(), worker.syncSends()));
        ChannelHandler init = worker.endpointInitializer();
        if (init != null) {
            p.addLast(init);
        }
    }

    /** An endpoint this worker connects; its AM lane is connected after registration. */
    static Endpoint outgoing(Worker worker, long id, WorkerAddress remote, LaneSelector.Lanes lane) {
        return new Endpoint(worker, id, remote, lane, null);
    }

    /** An endpoint for a peer that connected to us, on the lane it came in by. */
    static Endpoint incoming(Worker worker, long id, WorkerAddress remote, LaneSelector.Lanes lane, Channel laneCh) {
        return new Endpoint(worker, id, remote, lane, laneCh);
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

    void connectLanes(LaneSelector.Lane lane) {
        assert eventLoop().inEventLoop();
        LaneHandler handler = new LaneHandler(worker, this);
        ChannelFuture f = lane.iface().connect(lane.remote().deviceAddress(), lane.remote().ifaceAddress(), handler);
        f.addListener((ChannelFutureListener) done -> {
            if (done.isSuccess()) {
                lanesConnected(done.channel());
            } else {
                wireupFailed(new WireupException("endpoint to " + remoteAddress + ": connecting " + lane.name()
                        + " failed: " + done.cause(), done.cause()));
            }
        });
    }

    private void lanesConnected(Channel lane) {
        if (state != State.WIRING_UP) {
            lane.close(); // closed while connecting
            return;
        }
        WireupMessage request = new WireupMessage(WireupMessage.REQUEST, WireupMessage.ERR_MODE_NONE, 0, id,
                WireupMessage.INVALID_EP_ID, worker.address());
        lane.write(request.toFrame(lane.alloc()), lane.voidPromise());
        amLane = lane;
        state = State.CONNECTED;
        StubHandler s = stub;
        stub = null;
        s.ready();
        pipeline().replace(s, LANES, new LaneDispatcher(lane));
        lane.flush();
        pipeline().fireChannelActive();
    }

    private void wireupFailed(Throwable cause) {
        if (stub != null) {
            stub.fail(cause);
        }
        pipeline().fireExceptionCaught(cause);
        close();
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

    /** The AM lane went away: nothing more can be sent or received. */
    void laneInactive(Throwable cause) {
        Throwable why = cause != null ? cause : new ClosedChannelException();
        worker.matcher().onSourceClosed(this, why);
        worker.rndvSends().onEndpointClosed(this, why);
        worker.syncSends().onEndpointClosed(this, why);
        if (stub != null && cause != null) {
            stub.fail(cause);
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

    @Override
    protected void doClose() {
        state = State.CLOSED;
        Channel lane = amLane;
        if (lane != null) {
            lane.close();
        }
        worker.endpointClosed(this);
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
