package io.nucx.transport.rdma;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.channel.epoll.EpollIoHandle;
import io.netty.channel.epoll.EpollIoOps;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.uring.IoUringIoEvent;
import io.netty.channel.uring.IoUringIoHandle;
import io.netty.channel.uring.IoUringIoOps;
import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.transport.AbstractIface;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.Transport;
import io.nucx.transport.rma.RmaIface;
import io.nucx.transport.PolledIoHandle;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * An rdma iface: one opened device port, its protection domain and one completion channel, on one event loop.
 * Lanes are {@link RdmaChannel}s, one RC queue pair each, made endpoint to endpoint ({@link #createEndpoint}; RC
 * has no connect-to-iface).
 *
 * <p>Progress: the completion channel's fd and the device's async-event fd are registered with the loop's epoll
 * engine (an {@link EpollIoHandle} each, level-triggered, both made non-blocking), so a blocked loop wakes on a
 * completion. On a loop made with {@code ShmIoHandler} the iface also registers a polled handle: every pass of the
 * loop polls every lane's CQ directly (busy-poll, or the spin before parking), and before the loop parks it arms
 * each CQ and polls once more.
 *
 * <pre>
 * device address (20 bytes, little-endian)                          iface address: empty
 *  +---------+---------------+-----------+--------------------+
 *  | ver:u8  | link layer:u8 |  lid:u16  |      gid[16]       |
 *  +---------+---------------+-----------+--------------------+
 * </pre>
 * Reachable: the same link layer and, on InfiniBand, the same subnet (the GID's upper 64 bits).
 */
final class RdmaIface extends AbstractIface implements RmaIface {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(RdmaIface.class);
    static final int DEVICE_ADDRESS_LENGTH = 20;
    /** UCX's rc_verbs figures: 600 ns latency (+1 ns per endpoint), 75 ns overhead. */
    static final double LATENCY = 600e-9;
    static final double LATENCY_PER_EP = 1e-9;
    static final double OVERHEAD = 75e-9;
    static final int TX_DEPTH = 256;

    private final IoEventLoop loop;
    private final RdmaContext rc;
    private final MemorySegment compChannel;
    private final int compFd;
    private final int asyncFd;
    private final int segSize;
    private final int rxDepth;
    private final Arena scratch = Arena.ofShared();
    private final MemorySegment capture = Verbs.newCaptureState(scratch);
    private final MemorySegment cqOut = scratch.allocate(ADDRESS);
    private final MemorySegment ctxOut = scratch.allocate(ADDRESS);
    private final MemorySegment asyncEvent = scratch.allocate(IbvAsyncEvent.LAYOUT);
    private final LongObjectHashMap<RdmaChannel> byCq = new LongObjectHashMap<>();
    private final LongObjectHashMap<RdmaChannel> byQp = new LongObjectHashMap<>();
    /** Every open lane, for the busy-poll pass; replaced, never mutated. Loop only. */
    private RdmaChannel[] channels = new RdmaChannel[0];
    private IoRegistration compRegistration;
    private IoRegistration asyncRegistration;
    private IoRegistration pollRegistration;
    private final Promise<Void> closeFuture;
    /** Names this iface's protection domain in endpoint addresses and remote keys (random: nothing to guess). */
    private final long pdToken = new SecureRandom().nextLong();
    /** Live registrations by address, to find the lkey of a GET/PUT's local memory. Guarded by itself. */
    private final TreeMap<Long, RdmaMemory> registrations = new TreeMap<>();
    private boolean closing;
    private boolean released;

    private RdmaIface(Transport transport, IfaceParams params, RdmaContext rc, MemorySegment compChannel,
                      int segSize, int rxDepth) {
        super(transport, params, attributes(rc, segSize), deviceAddress(rc), new byte[0]);
        this.loop = (IoEventLoop) params.eventLoop();
        this.rc = rc;
        this.compChannel = compChannel;
        this.compFd = IbvCompChannel.fd(compChannel);
        this.asyncFd = IbvContext.asyncFd(rc.ctx);
        this.segSize = segSize;
        this.rxDepth = rxDepth;
        this.closeFuture = loop.newPromise();
    }

    /** UCX's rc_verbs figures and what this device and configuration allow. */
    private static IfaceAttributes attributes(RdmaContext rc, int segSize) {
        EnumSet<Capability> caps = EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY, Capability.PUT_ZCOPY,
                Capability.GET_ZCOPY, Capability.PENDING, Capability.CONNECT_TO_EP,
                Capability.ERRHANDLE_PEER_FAILURE);
        if (rc.atomicCap != IbvDeviceAttr.IBV_ATOMIC_NONE) {
            caps.add(Capability.ATOMIC64);
        }
        double bandwidth = rc.bandwidth() > 0 ? rc.bandwidth() : 12.5e9;
        int maxFrame = segSize - RdmaFrame.HEADER_LENGTH;
        return new IfaceAttributes(caps, Math.min(maxFrame, QueuePair.MAX_INLINE - RdmaFrame.HEADER_LENGTH),
                maxFrame, maxFrame, LATENCY, LATENCY_PER_EP, bandwidth, 0, OVERHEAD, 0,
                rc.maxMsgSize * TX_DEPTH, Integer.MAX_VALUE, rc.maxMsgSize);
    }

    private static byte[] deviceAddress(RdmaContext rc) {
        return packer(DEVICE_ADDRESS_LENGTH).put((byte) 1).put((byte) rc.linkLayer).putShort((short) rc.lid)
                .put(rc.gid).array();
    }

    /** Opens device {@code device} (named "dev:port") on the loop of {@code params}. */
    static RdmaIface open(RdmaTransport transport, IfaceParams params, Verbs verbs) throws Exception {
        EventLoop el = params.eventLoop();
        if (!RdmaTransport.isCompatible(el)) {
            throw new IllegalStateException(RdmaTransport.incompatibility(el));
        }
        IoEventLoop loop = (IoEventLoop) el;
        String name = params.device().name();
        int colon = name.lastIndexOf(':');
        RdmaContext rc = RdmaContext.open(verbs, colon > 0 ? name.substring(0, colon) : name);
        MemorySegment channel = MemorySegment.NULL;
        try {
            if (!rc.portActive()) {
                throw new VerbsException(name + " port " + RdmaContext.PORT + " is "
                        + IbvPortAttr.stateName(rc.portState) + ", not ACTIVE");
            }
            try (Arena tmp = Arena.ofConfined()) {
                MemorySegment cs = Verbs.newCaptureState(tmp);
                channel = ((MemorySegment) verbs.createCompChannel.invokeExact(cs, rc.ctx))
                        .reinterpret(IbvCompChannel.LAYOUT.byteSize());
                if (channel.equals(MemorySegment.NULL)) {
                    throw new VerbsException("ibv_create_comp_channel(" + name + ")", Verbs.errno(cs));
                }
            }
            Verbs.setNonBlocking(IbvCompChannel.fd(channel));
            Verbs.setNonBlocking(IbvContext.asyncFd(rc.ctx));
            RdmaIface iface = new RdmaIface(transport, params, rc, channel, (int) (long) params.config().get(RdmaConfig.SEG_SIZE),
                    params.config().get(RdmaConfig.RX_DEPTH));
            iface.registerHandles();
            return iface;
        } catch (Throwable t) {
            if (!channel.equals(MemorySegment.NULL)) {
                try {
                    int ignored = (int) verbs.destroyCompChannel.invokeExact(channel);
                } catch (Throwable suppressed) {
                    t.addSuppressed(suppressed);
                }
            }
            rc.close();
            throw t instanceof Exception e ? e : new IllegalStateException(t);
        }
    }

    private void registerHandles() throws Exception {
        if (loop.inEventLoop()) {
            registerHandles0();
        } else {
            loop.submit(() -> {
                registerHandles0();
                return null;
            }).sync();
        }
    }

    private void registerHandles0() throws Exception {
        if (loop.isCompatible(FdHandle.class)) {
            compRegistration = loop.register(new FdHandle(compFd, true)).sync().getNow();
            compRegistration.submit(EpollIoOps.EPOLLIN);
            asyncRegistration = loop.register(new FdHandle(asyncFd, false)).sync().getNow();
            asyncRegistration.submit(EpollIoOps.EPOLLIN);
        } else {
            compRegistration = loop.register(new UringPoll(compFd, true)).sync().getNow();
            compRegistration.submit(UringPoll.pollIn(compFd));
            asyncRegistration = loop.register(new UringPoll(asyncFd, false)).sync().getNow();
            asyncRegistration.submit(UringPoll.pollIn(asyncFd));
        }
        if (loop.isCompatible(Poller.class)) {
            pollRegistration = loop.register(new Poller()).sync().getNow();
        }
    }

    RdmaContext context() {
        return rc;
    }

    MemorySegment compChannel() {
        return compChannel;
    }

    @Override
    public boolean isReachable(byte[] remoteDevice, byte[] remoteIface) {
        if (remoteDevice.length != DEVICE_ADDRESS_LENGTH || remoteDevice[0] != 1 || remoteIface.length != 0) {
            return false;
        }
        if (remoteDevice[1] != rc.linkLayer) {
            return false;
        }
        return rc.linkLayer == IbvPortAttr.IBV_LINK_LAYER_ETHERNET
                || Arrays.equals(remoteDevice, 4, 12, rc.gid, 0, 8); // same subnet prefix
    }

    /** RC queue pairs connect endpoint to endpoint only. */
    @Override
    public ChannelFuture connect(byte[] remoteDevice, byte[] remoteIface, ChannelHandler laneHandler) {
        throw new UnsupportedOperationException("rdma (RC) connects endpoint to endpoint: use createEndpoint and "
                + "exchange the endpoint addresses");
    }

    /**
     * A queue pair in INIT with its receives posted, waiting for the peer's endpoint address. Both sides create one,
     * exchange {@link P2pEndpoint#address()}es and call {@link P2pEndpoint#connect} with the other's (RC needs the
     * peer's QPN on both sides, as UCX's {@code uct_ep_connect_to_ep}); each side's lane is active once its own
     * connect returned. A request sent before the peer's queue pair reached RTR is retried by the device (ACK timeout
     * x retry count, about half a second), so the order of the two connects does not matter within that bound.
     */
    @Override
    public P2pEndpoint createEndpoint(ChannelHandler laneHandler) {
        assert loop.inEventLoop();
        if (closing) {
            throw new IllegalStateException(this + " is closed");
        }
        try {
            return new Endpoint(newChannel(), laneHandler);
        } catch (VerbsException e) {
            throw new IllegalStateException("cannot create an rdma endpoint on " + this + ": " + e.getMessage(), e);
        }
    }

    /** A new lane's channel, its queue pair in INIT (loop thread). */
    RdmaChannel newChannel() throws VerbsException {
        RdmaChannel ch = new RdmaChannel(this, rxDepth, TX_DEPTH, segSize);
        byCq.put(ch.queuePair().cqAddress(), ch);
        byQp.put(ch.queuePair().qpAddress(), ch);
        RdmaChannel[] cs = Arrays.copyOf(channels, channels.length + 1);
        cs[cs.length - 1] = ch;
        channels = cs;
        return ch;
    }

    /** Registers a native segment with this iface's protection domain (any thread). */
    RdmaMemory register(MemorySegment segment) throws VerbsException {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("rdma registers native memory only; a heap segment moves");
        }
        int access = IbvMr.IBV_ACCESS_LOCAL_WRITE | IbvMr.IBV_ACCESS_REMOTE_WRITE | IbvMr.IBV_ACCESS_REMOTE_READ
                | IbvMr.IBV_ACCESS_REMOTE_ATOMIC;
        MemorySegment mr;
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment cs = Verbs.newCaptureState(tmp);
            Verbs v = rc.verbs;
            mr = v.hasRegMrIova2
                    ? (MemorySegment) v.regMr.invokeExact(cs, rc.pd, segment, segment.byteSize(), segment.address(),
                    access)
                    : (MemorySegment) v.regMr.invokeExact(cs, rc.pd, segment, segment.byteSize(), access);
            if (mr.equals(MemorySegment.NULL)) {
                throw new VerbsException((v.hasRegMrIova2 ? "ibv_reg_mr_iova2" : "ibv_reg_mr") + "(0x"
                        + Long.toHexString(segment.address()) + ", " + segment.byteSize() + " B on " + this + ")",
                        Verbs.errno(cs));
            }
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("memory registration downcall failed", t);
        }
        RdmaMemory m = new RdmaMemory(this, segment, mr.reinterpret(IbvMr.LAYOUT.byteSize()));
        synchronized (registrations) {
            registrations.put(segment.address(), m);
        }
        return m;
    }

    void forget(RdmaMemory m) {
        synchronized (registrations) {
            registrations.remove(m.address(), m);
        }
    }

    /**
     * The live registration covering {@code [address, address + n)} that starts closest below it, or null (then the
     * operation registers its memory itself: slower, never wrong).
     */
    RdmaMemory registrationCovering(long address, long n) {
        synchronized (registrations) {
            Map.Entry<Long, RdmaMemory> e = registrations.floorEntry(address);
            return e != null && e.getValue().contains(address, n) ? e.getValue() : null;
        }
    }

    long pdToken() {
        return pdToken;
    }

    /**
     * Registers {@code segment} with this device's protection domain for one-sided access by the lanes of every peer
     * of this iface (their keys name our protection domain), and as local memory of GET/PUT (any thread).
     */
    @Override
    public RdmaMemory registerMemory(MemorySegment segment) {
        try {
            return register(segment);
        } catch (VerbsException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /**
     * Acknowledges what the completion channel holds before a CQ is destroyed ({@code ibv_destroy_cq} requires
     * every event of it acknowledged); events of other lanes are polled on the next turn.
     */
    void forgetCompletionQueue(RdmaChannel ch) {
        byCq.remove(ch.queuePair().cqAddress());
        drainCompletionEvents(true);
    }

    void channelClosed(RdmaChannel ch) {
        byCq.remove(ch.queuePair().cqAddress());
        byQp.remove(ch.queuePair().qpAddress());
        RdmaChannel[] cs = channels;
        for (int i = 0; i < cs.length; i++) {
            if (cs[i] == ch) {
                RdmaChannel[] n = new RdmaChannel[cs.length - 1];
                System.arraycopy(cs, 0, n, 0, i);
                System.arraycopy(cs, i + 1, n, i, cs.length - i - 1);
                channels = n;
                break;
            }
        }
        if (closing && channels.length == 0) {
            release();
        }
    }

    /** Reads every pending completion event, acknowledges it and polls its lane (re-arming its CQ). */
    private void drainCompletionEvents(boolean deferPolls) {
        for (;;) {
            int rc0;
            try {
                rc0 = (int) rc.verbs.getCqEvent.invokeExact(capture, compChannel, cqOut, ctxOut);
            } catch (Throwable t) {
                throw new IllegalStateException("ibv_get_cq_event downcall failed", t);
            }
            if (rc0 != 0) {
                int errno = Verbs.errno(capture);
                if (errno != Verbs.EAGAIN && !released) {
                    LOG.warn("{}: ibv_get_cq_event failed: {}", this, Verbs.errnoName(errno));
                }
                return;
            }
            MemorySegment cq = cqOut.get(ADDRESS, 0);
            try {
                rc.verbs.ackCqEvents.invokeExact(cq, 1);
            } catch (Throwable t) {
                throw new IllegalStateException("ibv_ack_cq_events downcall failed", t);
            }
            RdmaChannel ch = byCq.get(cq.address());
            if (ch != null) {
                if (deferPolls) {
                    loop.execute(() -> ch.pollCompletions(true));
                } else {
                    ch.pollCompletions(true);
                    if (released) {
                        // The poll failed and closed the last lane of a closing iface, which released the device,
                        // its completion channel and the scratch memory this loop reads events into.
                        return;
                    }
                }
            }
        }
    }

    private void drainAsyncEvents() {
        for (;;) {
            int rc0;
            try {
                rc0 = (int) rc.verbs.getAsyncEvent.invokeExact(capture, rc.ctx, asyncEvent);
            } catch (Throwable t) {
                throw new IllegalStateException("ibv_get_async_event downcall failed", t);
            }
            if (rc0 != 0) {
                return;
            }
            int type = asyncEvent.get(JAVA_INT, IbvAsyncEvent.EVENT_TYPE);
            long element = asyncEvent.get(ADDRESS, IbvAsyncEvent.ELEMENT).address();
            try {
                rc.verbs.ackAsyncEvent.invokeExact(asyncEvent);
            } catch (Throwable t) {
                throw new IllegalStateException("ibv_ack_async_event downcall failed", t);
            }
            onAsyncEvent(type, element);
        }
    }

    private void onAsyncEvent(int type, long element) {
        switch (type) {
            case IbvAsyncEvent.IBV_EVENT_COMM_EST -> { } // first packet on a QP in RTR: nothing to do
            case IbvAsyncEvent.IBV_EVENT_QP_FATAL, IbvAsyncEvent.IBV_EVENT_QP_REQ_ERR,
                 IbvAsyncEvent.IBV_EVENT_QP_ACCESS_ERR -> {
                RdmaChannel ch = byQp.get(element);
                if (ch != null) {
                    ch.fail(new VerbsException("async event " + IbvAsyncEvent.name(type) + " on " + ch
                            + ": the queue pair is in the error state"));
                }
            }
            case IbvAsyncEvent.IBV_EVENT_CQ_ERR -> {
                RdmaChannel ch = byCq.get(element);
                if (ch != null) {
                    ch.fail(new VerbsException("async event IBV_EVENT_CQ_ERR on " + ch + ": completion queue "
                            + "overrun"));
                }
            }
            default -> LOG.warn("{}: async event {}", this, IbvAsyncEvent.name(type));
        }
    }

    /** The completion channel's or async-event fd, watched by the loop's epoll engine. */
    private final class FdHandle implements EpollIoHandle {
        private final FileDescriptor fd;
        private final boolean completions;

        FdHandle(int fd, boolean completions) {
            this.fd = new FileDescriptor(fd);
            this.completions = completions;
        }

        @Override
        public FileDescriptor fd() {
            return fd;
        }

        @Override
        public void handle(IoRegistration registration, IoEvent ioEvent) {
            if (released) {
                return;
            }
            if (completions) {
                drainCompletionEvents(false);
            } else {
                drainAsyncEvents();
            }
        }

        @Override
        public void close() {
            closeNow(); // the loop shuts down
        }
    }

    /**
     * The same fd on an io_uring loop: a one-shot IORING_OP_POLL_ADD for POLLIN, submitted again after each
     * completion (level semantics: an fd still readable completes the new poll at once).
     */
    private final class UringPoll implements IoUringIoHandle {
        private static final byte IORING_OP_POLL_ADD = 6;
        private static final int POLLIN = 1;
        private final int fd;
        private final boolean completions;

        UringPoll(int fd, boolean completions) {
            this.fd = fd;
            this.completions = completions;
        }

        static IoUringIoOps pollIn(int fd) {
            return new IoUringIoOps(IORING_OP_POLL_ADD, (byte) 0, (short) 0, fd, 0L, 0L, 0,
                    POLLIN, (short) 0, (short) 0, (short) 0, 0, 0L);
        }

        @Override
        public void handle(IoRegistration registration, IoEvent ioEvent) {
            if (released || !(ioEvent instanceof IoUringIoEvent e)
                    || e.opcode() != IORING_OP_POLL_ADD) {
                return;
            }
            if (e.res() >= 0) {
                if (completions) {
                    drainCompletionEvents(false);
                } else {
                    drainAsyncEvents();
                }
            }
            if (!released && registration.isValid() && e.res() != -125 /* ECANCELED */) {
                registration.submit(pollIn(fd));
            }
        }

        @Override
        public void close() {
            closeNow();
        }
    }

    /** Busy-poll on a ShmIoHandler loop: every pass polls every lane's CQ; before parking, arm and re-check. */
    private final class Poller implements PolledIoHandle {
        @Override
        public int poll() {
            int work = 0;
            for (RdmaChannel ch : channels) {
                work += ch.pollCompletions(false);
            }
            return work;
        }

        @Override
        public boolean prepareToPark() {
            int work = 0;
            for (RdmaChannel ch : channels) {
                work += ch.pollCompletions(true);
            }
            return work == 0;
        }

        @Override
        public void unpark() {
            // the CQs stay armed; an event that comes while spinning costs one empty poll
        }

        @Override
        public void handle(IoRegistration registration, IoEvent ioEvent) {
            // polled, never signalled
        }

        @Override
        public void close() {
            closeNow();
        }
    }

    /** A p2p endpoint: the lane's channel, registered on the loop once connected. */
    private final class Endpoint implements P2pEndpoint {
        private final RdmaChannel channel;
        private final ChannelHandler laneHandler;
        private final Promise<Channel> connected;
        private boolean done;

        Endpoint(RdmaChannel channel, ChannelHandler laneHandler) {
            this.channel = channel;
            this.laneHandler = laneHandler;
            this.connected = loop.newPromise();
        }

        @Override
        public byte[] address() {
            return channel.endpointAddress().pack();
        }

        @Override
        public ChannelFuture connect(byte[] remoteDevice, byte[] remoteIface, byte[] remoteEpAddress) {
            assert loop.inEventLoop();
            ChannelPromise promise = new DefaultChannelPromise(channel, loop);
            if (done) {
                return promise.setFailure(new IllegalStateException("rdma endpoint already connected or closed"));
            }
            done = true;
            try {
                if (!isReachable(remoteDevice, remoteIface)) {
                    throw new VerbsException(RdmaIface.this + " cannot reach the rdma device "
                            + HexFormat.of().formatHex(remoteDevice));
                }
                channel.connectTo(RdmaEndpointAddress.unpack(remoteEpAddress));
            } catch (VerbsException | IllegalArgumentException e) {
                channel.unsafe().closeForcibly();
                connected.tryFailure(e);
                return promise.setFailure(e);
            }
            registerLane(loop, channel, laneHandler).addListener(f -> {
                if (f.isSuccess()) {
                    connected.trySuccess(channel);
                    promise.trySuccess();
                } else {
                    connected.tryFailure(f.cause());
                    promise.tryFailure(f.cause());
                }
            });
            return promise;
        }

        @Override
        public Future<Channel> connected() {
            return connected;
        }

        /** RC: each side's queue pair needs the other's number, so both sides connect. */
        @Override
        public boolean connectFromBothSides() {
            return true;
        }

        @Override
        public void close() {
            if (!done) {
                done = true;
                channel.unsafe().closeForcibly();
            }
            connected.tryFailure(new ClosedChannelException());
        }
    }

    /** Stops taking lanes; the device is released when the last lane has closed. */
    @Override
    protected Future<?> doClose() {
        if (loop.inEventLoop()) {
            close0();
        } else {
            loop.execute(this::close0);
        }
        return closeFuture;
    }

    private void close0() {
        closing = true;
        if (channels.length == 0) {
            release();
        }
    }

    /** The loop is going away: every lane closes now, then the device. */
    private void closeNow() {
        closing = true;
        for (RdmaChannel ch : channels) {
            ch.unsafe().close(ch.unsafe().voidPromise());
        }
        if (channels.length == 0) {
            release();
        }
    }

    private void release() {
        if (released) {
            return;
        }
        released = true;
        for (IoRegistration r : new IoRegistration[] {compRegistration, asyncRegistration, pollRegistration}) {
            if (r != null) {
                r.cancel();
            }
        }
        try {
            drainCompletionEvents(true);
            int ignored = (int) rc.verbs.destroyCompChannel.invokeExact(compChannel);
        } catch (Throwable t) {
            LOG.warn("{}: ibv_destroy_comp_channel failed", this, t);
        }
        rc.close();
        scratch.close();
        closeFuture.trySuccess(null);
    }

    @Override
    protected String describe() {
        return "";
    }
}
