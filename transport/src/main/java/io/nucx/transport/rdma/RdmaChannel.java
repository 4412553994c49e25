package io.nucx.transport.rdma;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.CorruptedFrameException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.AmFrameSizeEstimator;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.rma.RmaOp;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetConnectedException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A lane over one RC queue pair: the rdma transport's channel type. It carries {@link AmFrame}s as SENDs into the
 * peer's pre-posted receives, and {@link RmaOp}s (it is an {@link RmaLane}) as RDMA READ, RDMA WRITE and the two
 * verbs atomics (fetch-and-add, compare-and-swap; verbs has no plain swap). A write's promise
 * completes on its completion entry (RC completes a send queue in order, so the oldest posted write is always the
 * one that completes next); a failed completion fails that write and, the queue pair being in the error state, every
 * write after it, with a {@link VerbsException} naming the status.
 *
 * <h2>Credits</h2>
 * The receiver keeps {@code rxDepth} receives posted; the sender starts with that many credits (from the peer's
 * endpoint address) and spends one per frame, so a SEND always finds a receive and the device never answers with a
 * receiver-not-ready NAK. The receiver reposts a buffer once its frame is copied out, and returns the credits in the
 * grant field of its next frame ({@link RdmaFrame}); when grants pile up (a quarter of the depth) with nothing to
 * carry them, it sends a grant-only frame. The last credit is kept for grant-only frames, so two sides that both
 * wait for credits can always tell each other. A sender out of credits turns unwritable (user-defined writability
 * index 1) and its writes wait in the outbound buffer; a receiver that stops reading ({@code autoRead} off) holds its
 * frames unreposted, so its sender runs out of credits instead of overrunning it.
 *
 * <h2>Memory</h2>
 * One registered region per channel: {@code rxDepth} receive buffers, as many send buffers (frames are copied in;
 * credits bound the frames in flight by the peer's receives anyway), 8 bytes per send-queue slot for atomic results,
 * 8 bytes for grant-only frames: {@code 2 x rxDepth x segSize} plus 2 KiB, 2 MiB at the defaults. Completions come from the channel's
 * own CQ, which the iface polls when its completion channel fires or on every pass of a busy-polling loop.
 * Event-loop thread only.
 */
public final class RdmaChannel extends AbstractChannel implements RmaLane {

    private enum State { NEW, CONNECTED, CLOSED }

    private static final ChannelMetadata METADATA = new ChannelMetadata(false);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** wr_id: kind in bits 62-63, then the message sequence (sends) or the receive slot. */
    private static final long KIND_SEND = 0;
    private static final long KIND_RECV = 1L << 62;
    private static final long KIND_GRANT = 2L << 62;
    private static final long KIND_MASK = 3L << 62;
    private static final int CREDIT_WRITABILITY = 1;

    private final ChannelConfig config = new DefaultChannelConfig(this);

    {
        config.setMessageSizeEstimator(AmFrameSizeEstimator.INSTANCE);
    }

    private final RdmaIface iface;
    private final Arena arena = Arena.ofShared();
    private final QueuePair qp;
    private final MemorySegment region;
    private final RdmaMemory regionMr;
    private final int lkey;
    private final int rxDepth;
    private final int txDepth;
    private final int segSize;
    private final long txOffset;
    /** Send buffers for frames: as many as our receives (a peer posting as many grants no more in flight). */
    private final int frameSlots;
    /** Frames posted and frames completed so far; a frame's buffer is framesPosted % frameSlots. */
    private long framesPosted;
    private long framesCompleted;
    private final long amoOffset;
    private final long grantOffset;
    private final ByteBuffer[] txBuffers;
    private final int psn;
    private final int grantThreshold;
    private final Address local;
    private volatile State state = State.NEW;
    private Address remote;
    private RdmaEndpointAddress remoteAddress;
    private int maxFrame;
    private int credits;
    private int owed;
    private int sqUsed;
    private int postedMessages;
    private long postedSeq;
    private long completedSeq;
    private final int[] wrsLeft;
    /** Per send slot: the temporary registration of a GET/PUT's unregistered local memory, ended at completion. */
    private final RdmaMemory[] temporary;
    private boolean readPending;
    private boolean delivered;
    private final int[] heldSlot;
    private final int[] heldLength;
    private int heldHead;
    private int heldCount;
    private boolean drainScheduled;
    private Throwable failure;
    private final Runnable drainHeld = this::drainHeld;
    private final Poster poster = new Poster();
    /** A post_send that failed inside doWrite: thrown from it once the queue pair is gone. */
    private VerbsException postError;

    RdmaChannel(RdmaIface iface, int rxDepth, int txDepth, int segSize) throws VerbsException {
        super(null);
        this.iface = iface;
        this.rxDepth = rxDepth;
        this.txDepth = txDepth;
        this.segSize = segSize;
        this.grantThreshold = Math.max(1, rxDepth / 4);
        this.wrsLeft = new int[txDepth];
        this.temporary = new RdmaMemory[txDepth];
        this.heldSlot = new int[rxDepth];
        this.heldLength = new int[rxDepth];
        this.psn = ThreadLocalRandom.current().nextInt(1 << 24);
        frameSlots = Math.min(rxDepth, txDepth);
        txOffset = (long) rxDepth * segSize;
        amoOffset = txOffset + (long) frameSlots * segSize;
        grantOffset = amoOffset + 8L * txDepth;
        region = arena.allocate(grantOffset + 8, 4096);
        txBuffers = new ByteBuffer[frameSlots];
        for (int i = 0; i < frameSlots; i++) {
            txBuffers[i] = region.asSlice(txOffset + (long) i * segSize, segSize).asByteBuffer();
        }
        QueuePair q = null;
        RdmaMemory m = null;
        try {
            m = iface.register(region);
            // one SEND more than the data window: the grant-only frame may be outstanding too
            q = QueuePair.create(iface.context(), iface.compChannel(), txDepth + 1, rxDepth, arena);
            for (int slot = 0; slot < rxDepth; slot++) {
                int rc = q.postRecv(KIND_RECV | slot, region.address() + (long) slot * segSize, segSize, m.lkey());
                if (rc != 0) {
                    throw new VerbsException("ibv_post_recv (pre-posting receive " + slot + " of " + rxDepth + ")",
                            rc);
                }
            }
            if (q.requestNotify() != 0) {
                throw new VerbsException("ibv_req_notify_cq", Verbs.EAGAIN);
            }
        } catch (VerbsException | RuntimeException e) {
            if (q != null) {
                q.destroyQp();
                q.destroyCq();
            }
            if (m != null) {
                m.close();
            }
            arena.close();
            throw e;
        }
        this.qp = q;
        this.regionMr = m;
        this.lkey = m.lkey();
        this.local = new Address(iface + " qpn 0x" + Integer.toHexString(q.qpn));
    }

    /** This queue pair's address for the peer (see {@link RdmaEndpointAddress}). */
    RdmaEndpointAddress endpointAddress() {
        RdmaContext rc = iface.context();
        return new RdmaEndpointAddress(rc.linkLayer, RdmaContext.PORT, rc.activeMtu, rc.lid, rc.gidIndex,
                rc.linkLayer == IbvPortAttr.IBV_LINK_LAYER_ETHERNET, qp.qpn, psn, rxDepth, segSize, rc.gid,
                iface.pdToken());
    }

    /** Moves the queue pair to RTS towards {@code peer}; the channel is active once registered. */
    void connectTo(RdmaEndpointAddress peer) throws VerbsException {
        if (state != State.NEW) {
            throw new IllegalStateException("rdma channel already " + state);
        }
        qp.connect(peer, psn, iface.context().gidIndex);
        remoteAddress = peer;
        remote = new Address("rdma " + peer);
        maxFrame = Math.min(segSize, peer.maxFrame());
        credits = peer.rxCredits();
        state = State.CONNECTED;
    }

    /** The peer's endpoint address, null before {@link #connectTo}. */
    public RdmaEndpointAddress peer() {
        return remoteAddress;
    }

    /** Our queue pair number. */
    public int qpn() {
        return qp.qpn;
    }

    /** Send credits left (the peer's free receives as last told); loop thread. */
    public int credits() {
        return credits;
    }

    /** The largest frame (header included) a write may carry: the smaller of the two sides' receive buffers. */
    public int maxFrameLength() {
        return maxFrame - RdmaFrame.HEADER_LENGTH;
    }

    RdmaIface iface() {
        return iface;
    }

    QueuePair queuePair() {
        return qp;
    }

    @Override
    public ChannelConfig config() {
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
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new RdmaUnsafe();
    }

    private final class RdmaUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            promise.setFailure(new UnsupportedOperationException("rdma lanes are connected by their p2p endpoint"));
        }

        void resume() {
            flush0();
        }
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return loop == iface.eventLoop();
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remote;
    }

    @Override
    protected void doBind(SocketAddress localAddress) {
        throw new UnsupportedOperationException("an rdma channel is bound to its iface");
    }

    @Override
    protected void doDisconnect() {
        doClose();
    }

    @Override
    protected void doBeginRead() {
        readPending = true;
        if (heldCount > 0 && !drainScheduled) {
            drainScheduled = true;
            eventLoop().execute(drainHeld);
        }
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof AmFrame f) {
            if (f.amId() == RdmaFrame.CREDIT_ONLY || f.header().readableBytes() > 0xffff
                    || f.length() > maxFrameLength()) {
                throw new IllegalArgumentException("frame " + f + " does not fit an rdma SEND: am id 1..255, at most "
                        + maxFrameLength() + " bytes with the header");
            }
            return msg;
        }
        if (msg instanceof RmaOp op) {
            if (!supports(op.kind())) {
                throw new UnsupportedOperationException(op.kind() + " is not an operation of " + this
                        + (op.kind() == RmaOp.Kind.SWAP ? " (verbs atomics are fetch-and-add and compare-and-swap)"
                        : " (the device has no atomics)"));
            }
            if (!(op.key() instanceof RdmaRemoteKey key) || remoteAddress == null
                    || key.pdToken() != remoteAddress.pdToken()) {
                throw new IllegalArgumentException(op.key() + " was not unpacked by an rdma lane to this lane's peer");
            }
            if (op.local() != null && !op.local().isNative()) {
                throw new IllegalArgumentException(op + ": local memory must be native (a heap array moves)");
            }
            if (chunks(op) > txDepth) {
                throw new IllegalArgumentException(op + " needs " + chunks(op) + " requests, more than the send "
                        + "queue's " + txDepth);
            }
            return msg;
        }
        throw new UnsupportedOperationException("an rdma lane carries AmFrames and RmaOps, not "
                + msg.getClass().getName());
    }

    private int chunks(RmaOp op) {
        if (op.kind().isAtomic() || op.length() == 0) {
            return 1;
        }
        long max = iface.context().maxMsgSize;
        return (int) Math.min(Integer.MAX_VALUE, (op.length() + max - 1) / max);
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        switch (state) {
            case NEW -> throw new NotYetConnectedException();
            case CLOSED -> throw new ClosedChannelException();
            default -> { }
        }
        if (failure != null) {
            // Failed, not yet closed (fail() tells the pipeline first, whose handlers may still write, e.g. a
            // goodbye): the queue pair is destroyed, so nothing may be posted; the writes fail with its cause.
            throw failure instanceof Exception e ? e : new IOException(failure);
        }
        in.forEachFlushedMessage(poster.reset());
        retireCancelled();
        if (postError != null) {
            VerbsException e = postError;
            postError = null;
            failure = e;
            releaseQueuePair(); // before Netty fails the flushed writes with e: the device must be done with them
            throw e;
        }
        in.setUserDefinedWritability(CREDIT_WRITABILITY, credits >= 2);
    }

    /** Skips the messages already posted (the oldest flushed ones) and posts the rest while resources last. */
    private final class Poster implements ChannelOutboundBuffer.MessageProcessor {
        private int index;

        Poster reset() {
            index = 0;
            return this;
        }

        @Override
        public boolean processMessage(Object msg) {
            if (index++ < postedMessages) {
                return true;
            }
            return post(msg);
        }
    }

    /** Posts one flushed message; false when credits or send-queue room ran out (it waits) or posting failed. */
    private boolean post(Object msg) {
        if (state != State.CONNECTED || postedMessages >= txDepth) {
            return false; // per-message state is a ring of txDepth (cancelled operations hold a place, no request)
        }
        int idx = (int) (postedSeq % txDepth);
        if (msg instanceof AmFrame f) {
            if (credits < 2 || sqUsed >= txDepth || framesPosted - framesCompleted >= frameSlots) {
                return false;
            }
            int slot = (int) (framesPosted % frameSlots);
            int headerLength = f.header().readableBytes();
            int length = RdmaFrame.HEADER_LENGTH + f.length();
            long off = txOffset + (long) slot * segSize;
            int grant = Math.min(owed, 0xffff);
            region.set(ValueLayout.JAVA_BYTE, off + RdmaFrame.AM_ID, (byte) f.amId());
            region.set(ValueLayout.JAVA_BYTE, off + RdmaFrame.FLAGS, (byte) f.flags());
            region.set(U16, off + RdmaFrame.HEADER_LEN, (short) headerLength);
            region.set(U16, off + RdmaFrame.CREDITS, (short) grant);
            region.set(U16, off + 6, (short) 0);
            ByteBuffer tx = txBuffers[slot];
            // getBytes(index, ByteBuffer) fills the buffer up to its limit: one limit per part
            tx.clear().position(RdmaFrame.HEADER_LENGTH).limit(RdmaFrame.HEADER_LENGTH + headerLength);
            f.header().getBytes(f.header().readerIndex(), tx);
            tx.limit(length);
            f.payload().getBytes(f.payload().readerIndex(), tx);
            int rc = qp.postSend(KIND_SEND | postedSeq, IbvSendWr.IBV_WR_SEND, IbvSendWr.IBV_SEND_SIGNALED,
                    region.address() + off, length, lkey, 0, 0, 0, 0);
            if (rc != 0) {
                postError = new VerbsException("ibv_post_send(SEND " + length + " B on " + this + ")", rc);
                return false;
            }
            owed -= grant;
            credits--;
            sqUsed++;
            framesPosted++;
            wrsLeft[idx] = 1;
        } else {
            RmaOp op = (RmaOp) msg;
            if (op.isCancelled()) {
                wrsLeft[idx] = 0; // nothing posted: retired in order, with a CancellationException
            } else {
                int chunks = chunks(op);
                if (sqUsed + chunks > txDepth) {
                    return false;
                }
                int localKey = lkey;
                if (!op.kind().isAtomic() && op.length() > 0) {
                    RdmaMemory m = iface.registrationCovering(op.local().address(), op.length());
                    if (m == null) {
                        try {
                            m = iface.register(op.local()); // UCX would take it from its registration cache
                        } catch (VerbsException e) {
                            postError = e;
                            return false;
                        }
                        temporary[idx] = m;
                    }
                    localKey = m.lkey();
                }
                for (int c = 0; c < chunks; c++) {
                    int rc = postRma(op, idx, c, localKey);
                    if (rc != 0) {
                        postError = new VerbsException("ibv_post_send(" + op + " on " + this + ")", rc);
                        return false;
                    }
                }
                sqUsed += chunks;
                wrsLeft[idx] = chunks;
            }
        }
        postedSeq++;
        postedMessages++;
        return true;
    }

    private int postRma(RmaOp op, int idx, int chunk, int localKey) {
        long wrId = KIND_SEND | postedSeq;
        RdmaRemoteKey key = (RdmaRemoteKey) op.key();
        long remote = key.address() + op.remoteOffset();
        return switch (op.kind()) {
            case GET, PUT -> {
                long max = iface.context().maxMsgSize;
                long start = chunk * max;
                long n = Math.min(max, op.length() - start);
                yield qp.postSend(wrId, op.kind() == RmaOp.Kind.GET ? IbvSendWr.IBV_WR_RDMA_READ
                                : IbvSendWr.IBV_WR_RDMA_WRITE, IbvSendWr.IBV_SEND_SIGNALED,
                        op.local().address() + start, (int) n, localKey, remote + start, key.rkey(), 0, 0);
            }
            case FETCH_ADD -> qp.postSend(wrId, IbvSendWr.IBV_WR_ATOMIC_FETCH_AND_ADD, IbvSendWr.IBV_SEND_SIGNALED,
                    region.address() + amoOffset + 8L * idx, 8, lkey, remote, key.rkey(), op.operand(), 0);
            case COMPARE_SWAP -> qp.postSend(wrId, IbvSendWr.IBV_WR_ATOMIC_CMP_AND_SWP, IbvSendWr.IBV_SEND_SIGNALED,
                    region.address() + amoOffset + 8L * idx, 8, lkey, remote, key.rkey(), op.compare(),
                    op.operand());
            case SWAP -> throw new IllegalStateException("SWAP was refused when written");
        };
    }

    // ---------------------------------------------------------------- RmaLane

    @Override
    public Channel channel() {
        return this;
    }

    /** GET, PUT, and (if the device has atomics) FETCH_ADD and COMPARE_SWAP; verbs has no plain SWAP. */
    @Override
    public boolean supports(RmaOp.Kind kind) {
        return switch (kind) {
            case GET, PUT -> true;
            case FETCH_ADD, COMPARE_SWAP -> iface.context().atomicCap != IbvDeviceAttr.IBV_ATOMIC_NONE;
            case SWAP -> false;
        };
    }

    /** Registers {@code local} with this lane's protection domain; revoke deregisters it. */
    @Override
    public MemoryRegistration register(MemorySegment local) {
        if (!local.isNative()) {
            throw new IllegalArgumentException("rdma cannot register heap memory: the GC moves it, so the device "
                    + "could not address it");
        }
        try {
            return iface.register(local);
        } catch (VerbsException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** Reads an {@link RdmaRemoteKey}; it must name the protection domain of this lane's peer. */
    @Override
    public RemoteKey unpackKey(ByteBuf packed) throws InvalidRemoteKeyException {
        int n = packed.readableBytes();
        if (n != RdmaRemoteKey.PACKED_LENGTH) {
            throw new InvalidRemoteKeyException("an rdma remote key has " + RdmaRemoteKey.PACKED_LENGTH
                    + " bytes, not " + n);
        }
        int i = packed.readerIndex();
        long address = packed.getLongLE(i);
        long length = packed.getLongLE(i + 8);
        int rkey = packed.getIntLE(i + 16);
        long token = packed.getLongLE(i + 20);
        if (remoteAddress == null || token != remoteAddress.pdToken()) {
            throw new InvalidRemoteKeyException("the rdma remote key names protection domain 0x"
                    + Long.toHexString(token) + ", not this lane's peer's" + (remoteAddress == null ? " (not connected)"
                    : " 0x" + Long.toHexString(remoteAddress.pdToken())) + ": memory of another process or device");
        }
        if (address == 0 || length < 0) {
            throw new InvalidRemoteKeyException("the rdma remote key names a null region (address 0x"
                    + Long.toHexString(address) + ", length " + length + ")");
        }
        return new RdmaRemoteKey(address, length, rkey, token);
    }

    /**
     * Takes the completions of this channel's CQ (the iface calls it when the completion channel fired, or on every
     * pass of a busy-polling loop); with {@code rearm}, asks for the next event and polls once more, since a
     * completion that arrived before the request would raise none. Returns how many completions it handled.
     */
    int pollCompletions(boolean rearm) {
        int total = 0;
        while (state != State.CLOSED) {
            int n = qp.poll();
            if (n < 0) {
                fail(new VerbsException("ibv_poll_cq on " + this + " returned " + n));
                break;
            }
            for (int i = 0; i < n && state != State.CLOSED; i++) {
                onCompletion(i);
            }
            total += n;
            if (n < QueuePair.POLL_BATCH) {
                if (!rearm || state == State.CLOSED) {
                    break;
                }
                rearm = false;
                int rc = qp.requestNotify();
                if (rc != 0) {
                    fail(new VerbsException("ibv_req_notify_cq on " + this, rc));
                    break;
                }
            }
        }
        if (total > 0 && state != State.CLOSED) {
            afterCompletions();
        }
        return total;
    }

    private void onCompletion(int i) {
        MemorySegment wcs = qp.wcs;
        long wrId = IbvWc.wrId(wcs, i);
        int status = IbvWc.status(wcs, i);
        long kind = wrId & KIND_MASK;
        if (kind == KIND_RECV) {
            onReceive((int) (wrId & ~KIND_MASK), status, IbvWc.byteLen(wcs, i), IbvWc.vendorErr(wcs, i));
            return;
        }
        sqUsed--;
        if (status != IbvWc.IBV_WC_SUCCESS) {
            onSendError(kind, wrId & ~KIND_MASK, status, IbvWc.vendorErr(wcs, i));
            return;
        }
        if (kind == KIND_GRANT) {
            return;
        }
        int idx = (int) (completedSeq % txDepth);
        if (--wrsLeft[idx] > 0) {
            return;
        }
        retireHead(idx, null);
        retireCancelled();
    }

    /** The oldest posted message is done: its promise completes (or fails with {@code cause}). */
    private void retireHead(int idx, Throwable cause) {
        completedSeq++;
        postedMessages--;
        ChannelOutboundBuffer in = unsafe().outboundBuffer();
        Object head = in.current();
        endTemporary(idx);
        if (cause != null) {
            in.remove(cause);
            return;
        }
        if (head instanceof AmFrame) {
            framesCompleted++;
        } else if (head instanceof RmaOp op) {
            if (op.kind().isAtomic()) {
                op.complete(region.get(U64, amoOffset + 8L * idx));
            } else {
                op.advance(op.length() - op.done());
            }
        }
        in.remove();
    }

    /** Cancelled operations were "posted" with no request: they retire in order once they are the oldest. */
    private void retireCancelled() {
        while (postedMessages > 0 && state == State.CONNECTED) {
            int idx = (int) (completedSeq % txDepth);
            if (wrsLeft[idx] != 0) {
                return;
            }
            retireHead(idx, new CancellationException("cancelled before it was posted"));
        }
    }

    private void endTemporary(int idx) {
        RdmaMemory m = temporary[idx];
        if (m != null) {
            temporary[idx] = null;
            m.close();
        }
    }

    private void onSendError(long kind, long seq, int status, int vendorErr) {
        Object head = unsafe().outboundBuffer() == null ? null : unsafe().outboundBuffer().current();
        String what = kind == KIND_GRANT ? "a credit grant" : head != null ? head.toString() : "request " + seq;
        fail(new VerbsException(what + " on " + this + " to " + (remoteAddress == null ? "?" : remoteAddress)
                + " failed: " + IbvWc.statusName(status) + ", vendor error 0x" + Integer.toHexString(vendorErr)
                + (status == 12 ? "; the peer's queue pair does not answer: its process is gone, it was closed, or it "
                + "never connected" : "")));
    }

    private void onReceive(int slot, int status, int length, int vendorErr) {
        if (status != IbvWc.IBV_WC_SUCCESS) {
            fail(new VerbsException("receive on " + this + " failed: " + IbvWc.statusName(status)
                    + ", vendor error 0x" + Integer.toHexString(vendorErr)));
            return;
        }
        long off = (long) slot * segSize;
        if (length < RdmaFrame.HEADER_LENGTH || length > segSize) {
            fail(new CorruptedFrameException("rdma frame of " + length + " bytes from " + remoteAddress
                    + " (receive buffers are " + segSize + ")"));
            return;
        }
        int grant = Short.toUnsignedInt(region.get(U16, off + RdmaFrame.CREDITS));
        credits += grant;
        if (region.get(ValueLayout.JAVA_BYTE, off + RdmaFrame.AM_ID) == RdmaFrame.CREDIT_ONLY) {
            repost(slot);
            return;
        }
        if (readPending && heldCount == 0) {
            deliver(slot, length);
        } else {
            int tail = (heldHead + heldCount) % rxDepth;
            heldSlot[tail] = slot;
            heldLength[tail] = length;
            heldCount++;
        }
    }

    private void deliver(int slot, int length) {
        long off = (long) slot * segSize;
        int amId = Byte.toUnsignedInt(region.get(ValueLayout.JAVA_BYTE, off + RdmaFrame.AM_ID));
        int flags = Byte.toUnsignedInt(region.get(ValueLayout.JAVA_BYTE, off + RdmaFrame.FLAGS));
        int headerLength = Short.toUnsignedInt(region.get(U16, off + RdmaFrame.HEADER_LEN));
        int body = length - RdmaFrame.HEADER_LENGTH;
        if (headerLength > body) {
            fail(new CorruptedFrameException("rdma frame from " + remoteAddress + " with am id " + amId
                    + ", header length " + headerLength + " and " + body + " bytes"));
            return;
        }
        ByteBuf buf = alloc().heapBuffer(Math.max(body, 1));
        MemorySegment.copy(region, ValueLayout.JAVA_BYTE, off + RdmaFrame.HEADER_LENGTH, buf.array(),
                buf.arrayOffset(), body);
        buf.writerIndex(body);
        repost(slot); // copied out: the buffer takes the next frame, and its credit goes back
        ByteBuf header = buf.retainedSlice(0, headerLength);
        ByteBuf payload = body == headerLength ? Unpooled.EMPTY_BUFFER
                : buf.retainedSlice(headerLength, body - headerLength);
        buf.release();
        delivered = true;
        pipeline().fireChannelRead(AmFrame.of(amId, flags, header, payload));
    }

    private void repost(int slot) {
        int rc = qp.postRecv(KIND_RECV | slot, region.address() + (long) slot * segSize, segSize, lkey);
        if (rc != 0) {
            fail(new VerbsException("ibv_post_recv on " + this, rc));
            return;
        }
        owed++;
    }

    /** Frames held while the pipeline did not read: delivered once it reads again. */
    private void drainHeld() {
        drainScheduled = false;
        while (heldCount > 0 && readPending && state == State.CONNECTED) {
            int slot = heldSlot[heldHead];
            int length = heldLength[heldHead];
            heldHead = (heldHead + 1) % rxDepth;
            heldCount--;
            deliver(slot, length);
        }
        if (state == State.CONNECTED) {
            afterCompletions();
        }
    }

    /** End of a batch: read complete, grants, and writes that waited for credits or send-queue room. */
    private void afterCompletions() {
        if (delivered) {
            delivered = false;
            readPending = false;
            pipeline().fireChannelReadComplete();
        }
        if (state != State.CONNECTED) {
            return;
        }
        ChannelOutboundBuffer in = unsafe().outboundBuffer();
        if (in != null && in.size() > postedMessages && credits >= 2 && sqUsed < txDepth) {
            ((RdmaUnsafe) unsafe()).resume(); // carries the grant, if any
        }
        if (owed >= grantThreshold && state == State.CONNECTED) {
            postGrant();
        }
        if (in != null && state == State.CONNECTED) {
            in.setUserDefinedWritability(CREDIT_WRITABILITY, credits >= 2);
        }
    }

    /** A grant-only frame (inline: its 8 bytes are taken at post time), spending the reserved last credit if need be. */
    private void postGrant() {
        if (credits < 1 || sqUsed >= txDepth + 1) {
            return;
        }
        int grant = Math.min(owed, 0xffff);
        region.set(ValueLayout.JAVA_BYTE, grantOffset + RdmaFrame.AM_ID, (byte) RdmaFrame.CREDIT_ONLY);
        region.set(ValueLayout.JAVA_BYTE, grantOffset + RdmaFrame.FLAGS, (byte) 0);
        region.set(U16, grantOffset + RdmaFrame.HEADER_LEN, (short) 0);
        region.set(U16, grantOffset + RdmaFrame.CREDITS, (short) grant);
        region.set(U16, grantOffset + 6, (short) 0);
        int rc = qp.postSend(KIND_GRANT, IbvSendWr.IBV_WR_SEND, IbvSendWr.IBV_SEND_SIGNALED
                | IbvSendWr.IBV_SEND_INLINE, region.address() + grantOffset, RdmaFrame.HEADER_LENGTH, lkey, 0, 0, 0, 0);
        if (rc != 0) {
            fail(new VerbsException("ibv_post_send(credit grant on " + this + ")", rc));
            return;
        }
        owed -= grant;
        credits--;
        sqUsed++;
    }

    /**
     * Fails the channel: the queue pair is destroyed first (so the device touches no buffer of a write any more),
     * then every flushed write fails with {@code cause}, the pipeline hears of it, and the channel closes.
     */
    void fail(Throwable cause) {
        if (state == State.CLOSED || failure != null) {
            return;
        }
        failure = cause;
        releaseQueuePair();
        ChannelOutboundBuffer in = unsafe().outboundBuffer();
        if (in != null) {
            while (in.current() != null) {
                in.remove(cause);
            }
        }
        postedMessages = 0;
        pipeline().fireExceptionCaught(cause);
        unsafe().close(unsafe().voidPromise());
    }

    /**
     * Destroys the queue pair, then (its completion events acknowledged) the completion queue, then ends the
     * temporary registrations of operations in flight (the device no longer touches them). Idempotent.
     */
    private void releaseQueuePair() {
        if (qp.isDestroyed()) {
            return;
        }
        qp.destroyQp();
        iface.forgetCompletionQueue(this);
        qp.destroyCq();
        for (int i = 0; i < txDepth; i++) {
            endTemporary(i);
        }
    }

    /** Why the channel failed, or null. */
    public Throwable failure() {
        return failure;
    }

    @Override
    protected void doClose() {
        State old = state;
        state = State.CLOSED;
        if (old == State.CLOSED) {
            return;
        }
        releaseQueuePair(); // no device access to any buffer after this
        iface.channelClosed(this);
        regionMr.close();
        postedMessages = 0;
        arena.close();
    }

    @Override
    public String toString() {
        return "rdma channel " + local + (remoteAddress != null ? " -> qpn 0x"
                + Integer.toHexString(remoteAddress.qpn()) : "");
    }

    private static final class Address extends SocketAddress {
        private static final long serialVersionUID = 1L;
        private final String text;

        Address(String text) {
            this.text = text;
        }

        @Override
        public String toString() {
            return text;
        }
    }
}
