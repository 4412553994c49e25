package io.nucx.transport.self;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.PolledIoHandle;

import java.lang.invoke.VarHandle;

import java.nio.channels.ClosedChannelException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
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
 * task for the reader's loop and no wake-up, unless that loop may park (the eventcount handshake of the shm rings: the
 * reader flags itself parked, fences and looks again; the writer fences after the offer and looks at the flag; a loop
 * that never parks says so once, and its writers skip both). Elsewhere each batch of writes schedules a read task on
 * the reader's loop, as Netty's LocalChannel does.
 *
 * <p>The queue's order is a {@link RecordRing}: a short frame written in place is a record of it, and so is a frame
 * whose payload is at most {@link #COPY_MAX} bytes (copied in, so its write leaves its buffers free); any other
 * message is handed over as it is, an object record for the next element of an {@link SpscQueue} (the peer's loop is
 * the only producer of both, this channel's loop the only consumer). The object queue also bounds the number of
 * messages ({@link #MAX_SLOTS}), which gives small messages the same backpressure as the byte bound gives large ones;
 * records are bounded by their room in the ring ({@link #SHORT_RING_BYTES} at most), apart from the byte count, which
 * only objects touch (a small frame that finds the ring full goes as a copy of itself, an object). In steady state a
 * small message's writer and reader share nothing but the ring's record lines and, read-only, its flags line: neither
 * touches the other's channel object, and no object crosses from one loop to the other.
 */
public final class SelfChannel extends AbstractLaneChannel {

    /** Accounting weight of a message beyond its bytes, so that empty frames still fill the queue. */
    private static final int MESSAGE_OVERHEAD = 64;
    private static final int READ_BATCH = 64;
    static final int WRITE_BATCH = 256;
    /** At most this many messages wait in a receiver's queue, whatever their bytes. */
    static final int MAX_SLOTS = 4096;
    /** Room for the records (short frames, small frames); one that does not fit now goes as an object (allocating). */
    static final int SHORT_RING_BYTES = 64 * 1024;
    /**
     * A frame whose payload is at most this many bytes is copied into the reader's ring as a record, as a short frame
     * is, rather than handed over: handing over costs the reader's core the misses on an object graph another core
     * wrote (frame, buffers, reference counts) and the writer's pools a release from another thread, which outweighs
     * copying a few cache lines twice. Such a payload is free once its write completes (the iface's
     * {@code amCopyMax}), so the protocols send it without a copy of their own.
     */
    static final int COPY_MAX = 1024;

    /** The messages other than short records, in the order of their {@link RecordRing#OBJECT} records. */
    private final SpscQueue<Object> objects;
    /** This end's inbound order (the peer writes it). */
    private final RecordRing ring;
    /** Bytes of the objects queued (short records are bounded by the ring). */
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicBoolean readScheduled = new AtomicBoolean();
    private final long capacity;
    private final Runnable readTask = this::readInbound;
    /** The reader's call, once it has drained half the queue: from its loop, so a task. */
    private final Runnable resumeTask = this::resumeWrites;
    private final Runnable batchTask = this::nextBatch;
    private final GenericFutureListener<Future<Object>> batchCancelled = this::batchCancelled;
    /** A flush that moved what it was given and {@link #WRITE_BATCH} more left the rest to a timer. Loop only. */
    private boolean batchScheduled;

    private volatile SelfChannel peer;
    /** The producer side of the peer's ring: made on this channel's loop at its first write, used there only. */
    private RecordRing.Writer out;
    private boolean readPending;
    /** A delivery is under way: a close from a handler leaves the queue to the read loop. */
    private boolean reading;
    private IoRegistration registration;

    SelfChannel(long capacity, SelfAddress localAddress, SelfAddress remoteAddress, IfaceAttributes limits) {
        super(localAddress, remoteAddress, State.OPEN, limits);
        this.capacity = capacity;
        this.objects = new SpscQueue<>((int) Math.min(MAX_SLOTS, capacity / MESSAGE_OVERHEAD + 2));
        this.ring = new RecordRing((int) Math.min(capacity, SHORT_RING_BYTES), objects.capacity());
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
                ring.setFlag(RecordRing.POLLED, true);
                promise.setSuccess();
            } else {
                promise.setFailure(f.cause());
            }
        });
    }

    @Override
    protected void doDeregister() {
        ring.setFlag(RecordRing.POLLED | RecordRing.NEVER_PARKS, false);
        IoRegistration r = registration;
        if (r != null) {
            registration = null;
            r.cancel();
        }
    }

    /** Whether its loop polls its queue (a registered {@link PolledIoHandle}) rather than running read tasks. */
    boolean isPolled() {
        return (ring.flags() & RecordRing.POLLED) != 0;
    }

    /** Bytes of the objects (messages other than short records) waiting in this end's inbound queue. */
    public long queuedBytes() {
        return queuedBytes.get();
    }

    @Override
    protected void doClose() {
        boolean wasOpen = markClosed();
        ring.setFlag(RecordRing.CLOSED, true);
        if (!reading) {
            releaseInbound();
        }
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
        if (isRegistered() && !ring.isEmpty()) {
            ChannelPipeline pipeline = pipeline();
            if (deliver(pipeline, Integer.MAX_VALUE) > 0) {
                pipeline.fireChannelReadComplete();
            }
        }
        unsafe().close(unsafe().voidPromise());
    }

    /** This channel's loop only (the queue's one consumer): drops what waits, releasing the objects. */
    private void releaseInbound() {
        for (int word; (word = ring.next(alloc())) != 0; ) {
            if (word == RecordRing.OBJECT) {
                Object m = objects.poll();
                ring.done(true);
                queuedBytes.addAndGet(-sizeOf(m));
                ReferenceCountUtil.release(m);
            } else {
                ring.done(false);
            }
        }
    }

    /**
     * A read asked for. Never a delivery from here: this runs at the end of each batch (auto-read's
     * {@code channelReadComplete}), and delivering from it would nest a batch in the last one's call for as long as
     * the peer keeps up (stack overflow). A polled ring is read on the loop's next pass; otherwise a task reads it.
     */
    @Override
    protected void doBeginRead() {
        readPending = true;
        if (!isPolled() && !reading && !ring.isEmpty()) {
            scheduleRead();
        }
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        ensureConnected();
        if (batchScheduled) {
            return; // a flush in the turn that moved a batch: the next batch takes what it brought, in order
        }
        SelfChannel p = peer;
        RecordRing.Writer w = out();
        boolean moved = false;
        // What was flushed when this flush began (as Netty's LocalChannel moves it all), and at most WRITE_BATCH more:
        // completions run listeners that may write and flush again, and a peer on another thread may drain as fast as
        // we fill, so such a writer could keep this event loop forever. Not WRITE_BATCH alone: a writer that refills
        // its window in a task after its completions (ucx_perftest's flood) then found part of it queued at every
        // send, so every send took the ordinary path (promise, entry, pipeline pass) for good: 2.4-2.9x slower.
        int budget = in.size() + WRITE_BATCH;
        for (Object msg; (msg = in.current()) != null; ) {
            if (--budget < 0) {
                scheduleBatch();
                break;
            }
            if (!p.isOpen()) {
                in.remove(new ClosedChannelException());
                continue;
            }
            boolean copy = msg instanceof AmFrame f && copied(f);
            if (copy && appendFrame(w, (AmFrame) msg)) {
                in.remove(); // releases the frame: the ring holds a copy
                moved = true;
                continue;
            }
            // Handed over: a large frame as it is; a small one that found no room in the ring as a copy of itself, so
            // that its payload is free once written all the same
            long size = sizeOf(msg);
            if (!p.hasRoomFor(size)) {
                w.waiting(true);
                // Re-check after publishing the flag: the reader may have drained in between (no lost wake-up).
                if (!p.hasRoomFor(size)) {
                    break;
                }
                w.waiting(false);
            }
            p.enqueue(w, copy ? copyOf((AmFrame) msg) : ReferenceCountUtil.retain(msg), size);
            in.remove();
            moved = true;
        }
        if (moved) {
            wakeReader(p, w);
        }
    }

    /**
     * The rest of a flush after the loop's next turn. A timer due at once, not a task: Netty runs the tasks
     * queued during a batch of tasks in that same batch (for up to its task quantum, a second) and takes timers only
     * when a batch begins, after the turn's I/O, so a task would let one long flush keep the loop's I/O and timers
     * waiting. (Only writes from the completions of a flush come here.)
     */
    private void scheduleBatch() {
        if (!batchScheduled) {
            batchScheduled = true;
            eventLoop().schedule(batchTask, 0, TimeUnit.NANOSECONDS).addListener(batchCancelled);
        }
    }

    private void nextBatch() {
        batchScheduled = false;
        if (isOpen()) {
            resumeWrites();
        }
    }

    /**
     * Nothing cancels the next batch but its loop shutting down (Netty cancels a loop's timers then, and on a loop that
     * does not poll this lane has no {@code IoHandle} the loop would close): the writes left fail, saying so, and the
     * lane closes, rather than wait for ever.
     */
    private void batchCancelled(Future<?> f) {
        if (!f.isCancelled()) {
            return;
        }
        batchScheduled = false;
        failWritesAndClose(new RejectedExecutionException(this + ": its event loop shut down with writes queued"));
    }

    @Override
    protected boolean writeNow0(AmFrame frame) {
        SelfChannel p = peer;
        if (p == null || !p.isOpen()) {
            return false; // the ordinary write fails it
        }
        RecordRing.Writer w = out();
        if (copied(frame)) {
            if (!appendFrame(w, frame)) {
                return false; // the ordinary write hands over a copy, or waits for room
            }
        } else {
            long size = sizeOf(frame);
            if (!p.hasRoomFor(size)) {
                return false; // the ordinary write waits for room
            }
            p.enqueue(w, frame.retain(), size); // writeNow releases the caller's reference
        }
        wakeReader(p, w);
        return true;
    }

    /** Whether the frame's payload is copied as it is written ({@link #COPY_MAX}). */
    private static boolean copied(AmFrame frame) {
        return frame.payload().readableBytes() <= COPY_MAX;
    }

    /** The frame copied into the peer's ring as a record: true if it went (the caller still owns the frame). */
    private static boolean appendFrame(RecordRing.Writer w, AmFrame frame) {
        return (w.readerFlags() & RecordRing.CLOSED) == 0 && w.appendFrame(frame);
    }

    /** A copy of a frame {@link #copied} but with no room in the ring, to hand over instead. */
    private AmFrame copyOf(AmFrame frame) {
        ByteBuf header = frame.header();
        ByteBuf payload = frame.payload();
        ByteBuf h = alloc().buffer(header.readableBytes()).writeBytes(header, header.readerIndex(),
                header.readableBytes());
        ByteBuf p = payload.isReadable() ? alloc().buffer(payload.readableBytes()).writeBytes(payload,
                payload.readerIndex(), payload.readableBytes()) : Unpooled.EMPTY_BUFFER;
        return AmFrame.of(frame.amId(), frame.flags(), h, p);
    }

    @Override
    public boolean writesShortRecords() {
        return true;
    }

    /** UCT self's {@code am_short}: the record copied into the peer's {@link RecordRing}. */
    @Override
    protected boolean writeShortNow0(int amId, long header, ByteBuf payload) {
        RecordRing.Writer w = out();
        if (w == null || (w.readerFlags() & RecordRing.CLOSED) != 0 || !w.appendShort(amId, header, payload)) {
            return false; // the ordinary write fails it, or waits for room
        }
        wakeReader(peer, w);
        return true;
    }

    /** The peer's ring's producer side, made on this loop at the first write (not next to the reader's objects). */
    private RecordRing.Writer out() {
        RecordRing.Writer w = out;
        if (w == null) {
            SelfChannel p = peer;
            if (p == null) {
                return null;
            }
            out = w = p.ring.writer();
        }
        return w;
    }

    /** For an object: a slot, its bytes within the bound (one message always fits an empty queue). */
    private boolean hasRoomFor(long size) {
        if (objects.size() >= objects.capacity()) {
            return false;
        }
        long q = queuedBytes.get();
        return q == 0 || q + size <= capacity;
    }

    /** The writer's loop (the queue's one producer); {@link #hasRoomFor} said there is a slot. */
    private void enqueue(RecordRing.Writer w, Object msg, long size) {
        queuedBytes.addAndGet(size);
        if (!objects.offer(msg) || !w.appendObject()) {
            // one producer, a slot checked, room kept for every slot's record: a bug
            throw new IllegalStateException("self queue full after its room was checked");
        }
        if (state() == State.CLOSED) {
            // Closed while we were adding: nobody else will read it. Released by the queue's consumer, this
            // channel's loop; if that loop is gone, nobody else polls and the writer may.
            try {
                eventLoop().execute(this::releaseInbound);
            } catch (RejectedExecutionException e) {
                releaseInbound();
            }
        }
    }

    /**
     * The writer's loop, after a publish: the reader's loop reads it on its next pass, or is told to. A reader whose
     * loop never parks costs one look at its flags line, which nobody writes in steady state.
     */
    private static void wakeReader(SelfChannel p, RecordRing.Writer w) {
        int flags = w.readerFlags();
        if ((flags & RecordRing.NEVER_PARKS) != 0 || ((flags & RecordRing.POLLED) != 0 && !w.readerParked())) {
            return;
        }
        p.scheduleRead();
    }

    private void scheduleRead() {
        if (readScheduled.compareAndSet(false, true)) {
            eventLoop().execute(readTask);
        }
    }

    /** Delivers a batch of the queue; how many messages. */
    private int readInbound() {
        if (readScheduled.get()) {
            readScheduled.set(false); // not a store (and its fence) per batch when nothing was scheduled
        }
        if (reading || !isRegistered() || !readPending || state() == State.CLOSED || ring.isEmpty()) {
            // A read request is only used up by a batch that delivers something. Reading already (a handler asked
            // for a read during a delivery): that batch goes on, and the request stays for the next.
            return 0;
        }
        readPending = false;
        ChannelPipeline pipeline = pipeline();
        int n = deliver(pipeline, READ_BATCH);
        if (n > 0) {
            pipeline.fireChannelReadComplete();
        }
        SelfChannel p = peer;
        // The writer's flag is in our ring, not in its channel object, whose line its loop writes on every batch.
        if (p != null && ring.writerWaits()
                && (queuedBytes.get() <= capacity / 2 || objects.size() <= objects.capacity() / 2)
                && ring.clearWriterWaiting()) {
            p.eventLoop().execute(p.resumeTask);
        }
        if (!isPolled() && !ring.isEmpty()) {
            scheduleRead();
        }
        return n;
    }

    /**
     * Delivers up to {@code max} records in order, while open; how many. A close from a handler leaves the rest to be
     * released here, after the record being delivered is done.
     */
    private int deliver(ChannelPipeline pipeline, int max) {
        int n = 0;
        long drained = 0;
        reading = true;
        try {
            for (int word; n < max && (word = ring.next(alloc())) != 0; ) {
                n++;
                if (word == RecordRing.OBJECT) {
                    Object m = objects.poll();
                    ring.done(true);
                    drained += sizeOf(m);
                    pipeline.fireChannelRead(m);
                } else if ((word & ~0xff) == RecordRing.FRAME) {
                    deliverFrame(pipeline, word);
                } else {
                    deliverShort(pipeline, word);
                }
                if (state() == State.CLOSED) {
                    break;
                }
            }
        } finally {
            reading = false;
            if (drained != 0) {
                queuedBytes.addAndGet(-drained);
            }
            if (state() == State.CLOSED) {
                releaseInbound();
            }
        }
        return n;
    }

    /** A short record: to a {@code ShortFrameHandler} as its parts, else up the pipeline as a frame. */
    private void deliverShort(ChannelPipeline pipeline, int amId) {
        RecordRing r = ring;
        AmFrame frame;
        try {
            if (shortFrameTaken(amId, r.header(), r)) {
                return; // the header as a number, the payload still in the ring: no buffer, no frame
            }
            frame = AmFrame.of(amId, 0, alloc().buffer(Long.BYTES, Long.BYTES).writeLongLE(r.header()),
                    r.copyOut());
        } finally {
            r.done(false);
        }
        pipeline.fireChannelRead(frame);
    }

    /** A frame record: up the pipeline as a frame of the reader's buffers. */
    private void deliverFrame(ChannelPipeline pipeline, int word) {
        AmFrame frame;
        try {
            frame = ring.frame(word);
        } finally {
            ring.done(false);
        }
        pipeline.fireChannelRead(frame);
    }

    private final class SelfUnsafe extends LaneUnsafe implements PolledIoHandle {
        @Override
        public int poll() {
            return ring.isEmpty() ? 0 : readInbound();
        }

        @Override
        public boolean prepareToPark() {
            ring.parked(true); // a volatile store, then the look at the ring (the writer: record, fence, flag)
            VarHandle.fullFence();
            return !readPending || ring.isEmpty();
        }

        @Override
        public void unpark() {
            ring.parked(false);
        }

        @Override
        public void loopNeverParks() {
            ring.setFlag(RecordRing.NEVER_PARKS, true);
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
