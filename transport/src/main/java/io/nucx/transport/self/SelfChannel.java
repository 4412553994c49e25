package io.nucx.transport.self;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.PolledIoHandle;

import java.lang.invoke.VarHandle;

import java.nio.channels.ClosedChannelException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One end of an in-process channel pair, shaped like Netty's LocalChannel (peer reference, inbound queue owned
 * by the reader, reads scheduled on the reader's loop) with the one thing LocalChannel lacks: a bound. A writer
 * moves a message into its peer's queue only while the queue holds fewer than {@code capacity} bytes; otherwise the
 * message stays in the writer's {@link ChannelOutboundBuffer}, where it counts toward the writer's water mark, and
 * the reader resumes the writer once it has drained half the queue.
 *
 * <p>A write completes when the message is in the peer's queue. It runs on any event loop; the peer's events run on
 * the peer's loop. On a loop that polls ({@code ShmIoHandler}, every worker's) it registers as a
 * {@link PolledIoHandle}: the loop looks at the queue on each pass, so a writer only puts the message there, with no
 * task for the reader's loop and no wake-up, unless that loop is about to park (the eventcount handshake of the shm
 * rings: the reader flags itself parked, fences and looks again; the writer fences after the offer and looks at the
 * flag). Elsewhere each batch of writes schedules a read task on the reader's loop, as Netty's LocalChannel does.
 *
 * <p>The queue is an array ({@link SpscQueue}: the peer's loop is its only producer, this channel's loop its only
 * consumer), so a message moves without allocating; it also bounds the number of messages ({@link #MAX_SLOTS}),
 * which gives small messages the same backpressure as the byte bound gives large ones.
 */
public final class SelfChannel extends AbstractLaneChannel {

    /** Accounting weight of a message beyond its bytes, so that empty frames still fill the queue. */
    private static final int MESSAGE_OVERHEAD = 64;
    private static final int READ_BATCH = 64;
    private static final int WRITE_BATCH = 256;
    /** At most this many messages wait in a receiver's queue, whatever their bytes. */
    static final int MAX_SLOTS = 4096;
    /** Room for the short frames written in place; one that does not fit now goes as a frame (allocating). */
    static final int SHORT_RING_BYTES = 64 * 1024;

    private final SpscQueue<Object> inbound;
    /** The bytes of the short frames the peer wrote in place; their places in {@link #inbound} are marks. */
    private final ShortRecords shorts;
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicBoolean readScheduled = new AtomicBoolean();
    private final AtomicBoolean writerWaiting = new AtomicBoolean();
    private final long capacity;
    private final Runnable readTask = this::readInbound;
    private final Runnable resumeTask = this::resumeWrites;

    private volatile SelfChannel peer;
    private boolean readPending;
    /** Registered with its loop as a polled handle: the loop reads the queue by itself while it does not park. */
    private volatile boolean polled;
    /** The reader's loop may park: a writer must schedule the read (and so wake it). */
    private volatile boolean parked;
    private IoRegistration registration;

    SelfChannel(long capacity, SelfAddress localAddress, SelfAddress remoteAddress, IfaceAttributes limits) {
        super(localAddress, remoteAddress, State.OPEN, limits);
        this.capacity = capacity;
        this.inbound = new SpscQueue<>((int) Math.min(MAX_SLOTS, capacity / MESSAGE_OVERHEAD + 2));
        this.shorts = new ShortRecords((int) Math.min(capacity, SHORT_RING_BYTES));
    }

    /** Links two ends; both are connected from then on. */
    static void link(SelfChannel a, SelfChannel b) {
        a.peer = b;
        b.peer = a;
        a.connected(null);
        b.connected(null);
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new SelfUnsafe();
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        if (!(eventLoop() instanceof IoEventLoop io && io.isCompatible(SelfUnsafe.class))) {
            super.doRegister(promise); // a loop that does not poll: reads come as tasks
            return;
        }
        io.register((SelfUnsafe) unsafe()).addListener(f -> {
            if (f.isSuccess()) {
                registration = (IoRegistration) f.getNow();
                polled = true;
                promise.setSuccess();
            } else {
                promise.setFailure(f.cause());
            }
        });
    }

    @Override
    protected void doDeregister() {
        polled = false;
        IoRegistration r = registration;
        if (r != null) {
            registration = null;
            r.cancel();
        }
    }

    /** Whether its loop polls its queue (a registered {@link PolledIoHandle}) rather than running read tasks. */
    boolean isPolled() {
        return polled;
    }

    /** Bytes waiting in this end's inbound queue. */
    public long queuedBytes() {
        return queuedBytes.get();
    }

    @Override
    protected void doClose() {
        boolean wasOpen = markClosed();
        releaseInbound();
        SelfChannel p = peer;
        if (wasOpen && p != null && p.isOpen()) {
            // Always post the peer's close to its own loop, even when it is ours: the peer may be mid-pipeline.
            p.eventLoop().execute(p::peerClosed);
        }
    }

    /**
     * The other end closed. What it wrote before (its completed writes, in our queue) is delivered first, whether or
     * not a read was asked for, as a socket delivers the bytes before the end of the stream; then this end closes.
     */
    private void peerClosed() {
        if (!isOpen()) {
            return;
        }
        if (isRegistered() && !inbound.isEmpty()) {
            ChannelPipeline pipeline = pipeline();
            for (Object m; isOpen() && (m = inbound.poll()) != null; ) {
                queuedBytes.addAndGet(-deliver(pipeline, m));
            }
            pipeline.fireChannelReadComplete();
        }
        unsafe().close(unsafe().voidPromise());
    }

    /** This channel's loop only (the queue's one consumer). */
    private void releaseInbound() {
        for (Object m; (m = inbound.poll()) != null; ) {
            if (m == ShortRecords.MARK) {
                shorts.next(alloc());
                queuedBytes.addAndGet(-shortSize(shorts.length()));
                shorts.done();
            } else {
                queuedBytes.addAndGet(-sizeOf(m));
                ReferenceCountUtil.release(m);
            }
        }
    }

    @Override
    protected void doBeginRead() {
        readPending = true;
        if (!inbound.isEmpty()) {
            readInbound();
        }
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        ensureConnected();
        SelfChannel p = peer;
        boolean moved = false;
        int budget = WRITE_BATCH;
        for (Object msg; (msg = in.current()) != null; ) {
            if (--budget < 0) {
                // Bounded: completions run listeners that may write again, and a peer on another thread may drain
                // as fast as we fill, so an unbounded loop could keep this event loop forever. Go on next turn.
                eventLoop().execute(resumeTask);
                break;
            }
            if (!p.isOpen()) {
                in.remove(new ClosedChannelException());
                continue;
            }
            long size = sizeOf(msg);
            if (!p.hasRoomFor(size)) {
                writerWaiting.set(true);
                // Re-check after publishing the flag: the reader may have drained in between (no lost wake-up).
                if (!p.hasRoomFor(size)) {
                    break;
                }
                writerWaiting.set(false);
            }
            ReferenceCountUtil.retain(msg);
            p.enqueue(msg, size);
            in.remove();
            moved = true;
        }
        if (moved) {
            p.scheduleRead();
        }
    }

    @Override
    protected boolean writeNow0(AmFrame frame) {
        SelfChannel p = peer;
        long size = sizeOf(frame);
        if (p == null || !p.isOpen() || !p.hasRoomFor(size)) {
            return false; // the ordinary write fails it, or waits for room
        }
        p.enqueue(frame.retain(), size); // writeNow releases the caller's reference
        p.scheduleRead();
        return true;
    }

    /** UCT self's {@code am_short}: the record copied into the peer's {@link ShortRecords}, a mark in its queue. */
    @Override
    protected boolean writeShortNow0(int amId, long header, ByteBuf payload) {
        SelfChannel p = peer;
        long size = shortSize(payload.readableBytes());
        if (p == null || !p.isOpen() || !p.hasRoomFor(size) || !p.shorts.append(amId, header, payload)) {
            return false; // the ordinary write fails it, or waits for room
        }
        p.enqueue(ShortRecords.MARK, size);
        p.scheduleRead();
        return true;
    }

    private boolean hasRoomFor(long size) {
        if (inbound.size() >= inbound.capacity()) {
            return false;
        }
        long q = queuedBytes.get();
        return q == 0 || q + size <= capacity;
    }

    /** The writer's loop (the queue's one producer); {@link #hasRoomFor} said there is a slot. */
    private void enqueue(Object msg, long size) {
        queuedBytes.addAndGet(size);
        if (!inbound.offer(msg)) {
            throw new IllegalStateException("self queue full after its room was checked"); // one producer: a bug
        }
        if (state() == State.CLOSED) {
            // Closed while we were adding: nobody else will read it. Released by the queue's consumer, this
            // channel's loop; if that loop is gone, nobody else polls and the writer may.
            try {
                eventLoop().execute(this::releaseInbound);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                releaseInbound();
            }
        }
    }

    /** The writer's loop, after an offer: the reader's loop reads it on its next pass, or is told to. */
    private void scheduleRead() {
        if (polled) {
            VarHandle.fullFence(); // StoreLoad: the offer, then the look at the flag (the reader: flag, then queue)
            if (!parked) {
                return;
            }
        }
        if (readScheduled.compareAndSet(false, true)) {
            eventLoop().execute(readTask);
        }
    }

    /** Delivers a batch of the queue; how many messages. */
    private int readInbound() {
        readScheduled.set(false);
        if (!isRegistered() || !readPending || state() == State.CLOSED || inbound.isEmpty()) {
            return 0; // a read request is only used up by a batch that delivers something
        }
        readPending = false;
        ChannelPipeline pipeline = pipeline();
        long drained = 0;
        int n = 0;
        for (Object m; n < READ_BATCH && (m = inbound.poll()) != null; n++) {
            drained += deliver(pipeline, m);
        }
        long left = queuedBytes.addAndGet(-drained);
        if (n > 0) {
            pipeline.fireChannelReadComplete();
        }
        SelfChannel p = peer;
        if (p != null && (left <= capacity / 2 || inbound.size() <= inbound.capacity() / 2)
                && p.writerWaiting.compareAndSet(true, false)) {
            p.eventLoop().execute(p.resumeTask);
        }
        if (!inbound.isEmpty() && !polled) {
            scheduleRead();
        }
        return n;
    }

    private final class SelfUnsafe extends LaneUnsafe implements PolledIoHandle {
        @Override
        public int poll() {
            return inbound.isEmpty() ? 0 : readInbound();
        }

        @Override
        public boolean prepareToPark() {
            parked = true;
            VarHandle.fullFence(); // StoreLoad: the flag, then the look at the queue (the writer: offer, then flag)
            return !readPending || inbound.isEmpty();
        }

        @Override
        public void unpark() {
            parked = false;
        }

        @Override
        public void handle(IoRegistration registration, IoEvent ioEvent) {
            // polled, never signalled
        }

        @Override
        public void close() {
            close(voidPromise());
        }
    }

    /** Delivers one message of the queue (a short frame's mark: its record); the bytes it counted. */
    private long deliver(ChannelPipeline pipeline, Object m) {
        if (m != ShortRecords.MARK) {
            long size = sizeOf(m);
            pipeline.fireChannelRead(m);
            return size;
        }
        ShortRecords r = shorts;
        int amId = r.next(alloc());
        long size = shortSize(r.length());
        AmFrame frame;
        try {
            if (shortFrameTaken(amId, r.header(), r)) {
                return size; // the header as a number, the payload still in the ring: no buffer, no frame
            }
            frame = AmFrame.of(amId, 0, alloc().buffer(Long.BYTES, Long.BYTES).writeLongLE(r.header()),
                    r.copyOut());
        } finally {
            r.done();
        }
        pipeline.fireChannelRead(frame);
        return size;
    }

    /** What a short frame of {@code payloadLength} bytes counts in the queue: as the frame it stands for. */
    private static long shortSize(int payloadLength) {
        return Long.BYTES + (long) payloadLength + MESSAGE_OVERHEAD;
    }

    private static long sizeOf(Object msg) {
        if (msg instanceof AmFrame f) {
            return f.length() + MESSAGE_OVERHEAD;
        }
        if (msg instanceof ByteBuf b) {
            return b.readableBytes() + MESSAGE_OVERHEAD;
        }
        return MESSAGE_OVERHEAD;
    }
}
