package io.nucx.transport.shm;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.handler.codec.CorruptedFrameException;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Buffers;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.PayloadPlacement;
import io.nucx.transport.PolledIoHandle;
import io.nucx.transport.ShortFrameHandler;
import io.nucx.transport.ShortPayload;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A lane over two shared-memory rings: it writes {@link AmFrame}s into the peer's inbound ring and reads its own
 * inbound ring when its loop's {@link ShmIoHandler} polls it. The Unix socket the two sides met on stays open as
 * the doorbell and as the liveness signal: when it closes, the peer is gone.
 *
 * <p>A record carries one frame: its type word packs the am id, the flags and the header length; its payload is the
 * header then the payload bytes. A write completes once the record is in the ring. A full ring leaves the frame in
 * Netty's outbound buffer (where it counts toward the water mark, so the lane turns unwritable) until the reader has
 * made room; nothing is dropped.
 */
public final class ShmChannel extends AbstractLaneChannel {

    private static final int READ_BATCH = 64;
    /**
     * Payloads from this size on are offered to the lane's {@link PayloadPlacement} before they are copied out of the
     * ring: below it the copy into a buffer of ours costs less than asking where the payload goes.
     */
    static final int PLACE_FROM = 1024;
    /** A record's size (header and payload) from which {@link #publishIfLarge} publishes it before the flush. */
    static final int PUBLISH_EARLY_BYTES = 16 * 1024;
    private static final int WRITE_BATCH = 256;
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED
            .withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int maxRecordPayload;
    private final SpscRing.RecordHandler onRecord = this::onRecord;

    private volatile ShmAddress remote;
    private SpscRing in;
    private SpscRing out;
    private Channel doorbell;
    private IoRegistration registration;
    private boolean readPending;
    /** A full ring or the batch limit held back the outbound buffer; poll() resumes it once there is room. */
    private boolean writeBlocked;
    private boolean reading;
    private int delivered;
    /**
     * Polls of this lane, and when every {@link #POLL_SAMPLE}th ran (one clock read per sample, not per poll): a
     * keepalive timeout's state says whether the loop still polled the lane. Loop only.
     */
    private long polls;
    private long lastPollSample;
    private static final int POLL_SAMPLE = 1024;

    /** @param limits the iface's attributes: frames up to {@code maxBcopy} bytes, header included, one record each */
    ShmChannel(ShmAddress local, IfaceAttributes limits) {
        super(new ShmAddress.Socket(local), null, State.OPEN, limits);
        this.maxRecordPayload = limits.maxBcopy();
    }

    /** Gives the channel its rings and doorbell once the handshake is done; it is active from then on. */
    void connect(ShmAddress remote, SpscRing in, SpscRing out, Channel doorbell) {
        this.remote = remote;
        this.in = in;
        this.out = out;
        this.doorbell = doorbell;
        connected(new ShmAddress.Socket(remote));
    }

    /** The peer's process id. */
    public long peerPid() {
        ShmAddress r = remote;
        return r == null ? -1 : r.pid();
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new ShmUnsafe();
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return loop instanceof IoEventLoop io && io.isCompatible(ShmUnsafe.class);
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        ((IoEventLoop) eventLoop()).register((ShmUnsafe) unsafe()).addListener(f -> {
            if (f.isSuccess()) {
                registration = (IoRegistration) f.getNow();
                promise.setSuccess();
            } else {
                promise.setFailure(f.cause());
            }
        });
    }

    @Override
    protected void doDeregister() {
        IoRegistration r = registration;
        if (r != null) {
            registration = null;
            r.cancel();
        }
    }

    @Override
    protected void doClose() {
        if (state() == State.CONNECTED) {
            out.publish(); // immediate writes not yet flushed go as written ones would have
        }
        if (!markClosed()) {
            return;
        }
        Channel d = doorbell;
        if (d != null) {
            d.close(); // the peer sees its doorbell close: that is how it learns we are gone
        }
        if (reading) {
            eventLoop().execute(this::unmap); // still inside a ring read: unmap once it has returned
        } else {
            unmap();
        }
    }

    private void unmap() {
        if (in != null) {
            in.close();
        }
        if (out != null) {
            out.close();
        }
    }

    @Override
    protected void doBeginRead() {
        readPending = true;
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer buffer) throws Exception {
        ensureConnected();
        boolean wrote = false;
        // What was flushed when this flush began, and at most WRITE_BATCH more that its completions' listeners write
        // (why both: SelfChannel.doWrite); with a reader that keeps up the ring never fills, so the rest goes on the
        // next pass, as Netty's write spin count does for sockets. Published every WRITE_BATCH records, so a long
        // flush does not leave the reader idle.
        int budget = buffer.size() + WRITE_BATCH;
        int unpublished = 0;
        for (Object msg; (msg = buffer.current()) != null; ) {
            AmFrame f = (AmFrame) msg;
            int type = recordType(f);
            if (--budget < 0 || !out.append(type, f.header(), f.payload())) {
                writeBlocked = true;
                break;
            }
            int length = f.length();
            buffer.remove();
            wrote = true;
            if (++unpublished == WRITE_BATCH) {
                unpublished = 0;
                publishNow();
            } else {
                publishIfLarge(length);
            }
        }
        if (buffer.current() == null) {
            writeBlocked = false;
        }
        if (wrote) {
            publishNow(); // the batch in one tail store
        }
    }

    /** A record's type word: am id, flags, header length. */
    private static int recordType(AmFrame f) {
        return f.amId() | f.flags() << 8 | f.header().readableBytes() << 16;
    }

    /** In the ring, published by the flush that follows (as a written message waits for its flush in Netty). */
    @Override
    protected boolean writeNow0(AmFrame f) {
        if (writeBlocked || !out.append(recordType(f), f.header(), f.payload())) {
            return false;
        }
        publishIfLarge(f.length());
        return true;
    }

    /**
     * Publishes a record of {@link #PUBLISH_EARLY_BYTES} or more ({@code length}: header and payload) at once, with
     * whatever was appended before it, instead of at the flush: the reader then copies one fragment of a large message
     * out while this side copies the next in, as UCX's mm FIFO makes each element visible as it is written. Held for
     * the flush, a message's 16 fragments were copied in, then out, one side idle all the while. Small records still
     * go one publication per flush (a batch read at once is what makes small messages cheap).
     */
    private void publishIfLarge(int length) {
        if (length >= PUBLISH_EARLY_BYTES) {
            publishNow();
        }
    }

    @Override
    public boolean writesShortRecords() {
        return true;
    }

    @Override
    protected boolean writeShortNow0(int amId, long header, ByteBuf payload) {
        if (writeBlocked || !out.append(amId | Long.BYTES << 16, header, payload)) {
            return false;
        }
        publishIfLarge(Long.BYTES + payload.readableBytes());
        return true;
    }

    /** Publishes what was appended; a reader that went to sleep is woken. */
    @Override
    protected void publishNow() {
        if (out.publish() && out.takeConsumerSleeping()) {
            ringDoorbell();
        }
    }

    private void ringDoorbell() {
        Channel d = doorbell;
        if (d.isActive()) {
            // One byte in a pooled buffer: a duplicate of a shared one would be an object per wake-up.
            d.writeAndFlush(d.alloc().directBuffer(1, 1).writeByte(1), d.voidPromise());
        }
    }

    /** Bytes published and not yet read in each ring, whether this side reads, and whether its writes wait for room. */
    @Override
    public String transportState() {
        if (state() != State.CONNECTED) {
            return "";
        }
        long unread = in.size();
        long unpublished = out.unpublished();
        long sampled = lastPollSample;
        return "inbound ring " + unread + " B unread" + (readPending ? "" : " (no read requested)")
                + (unread > 0 && in.lengthAtHead() == 0 ? " (none visible at its head)" : "")
                + ", outbound ring " + out.size() + " B unread by the peer"
                + (unpublished > 0 ? " and " + unpublished + " B appended, not yet published" : "")
                + (writeBlocked ? ", writes waiting for room" : "") + ", polled " + polls + " times"
                + (sampled == 0 ? "" : " (sampled every " + POLL_SAMPLE + "th: the last sample "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sampled) + " ms ago)");
    }

    /** A published record at the inbound ring's head, and a read requested. */
    @Override
    public boolean peerFramesWaiting() {
        return state() == State.CONNECTED && readPending && !in.isEmpty();
    }

    /** Reads up to a batch of records into the pipeline; returns how many. */
    private int readInbound() {
        if (!readPending || state() != State.CONNECTED) {
            return 0;
        }
        delivered = 0;
        reading = true;
        int n;
        try {
            n = in.read(onRecord, READ_BATCH);
        } catch (RingCorruptedException e) {
            reading = false;
            fail(e);
            return 1;
        } finally {
            reading = false;
        }
        if (n > 0) {
            if (delivered > 0) {
                readPending = false;
                pipeline().fireChannelReadComplete();
            }
            if (state() == State.CONNECTED && in.takeWriterWaiting()) {
                ringDoorbell();
            }
        }
        return n;
    }

    private void onRecord(int type, MemorySegment ring, long offset, int length) {
        if (state() != State.CONNECTED) {
            return; // closed by a handler during this batch: the rest is dropped with the connection
        }
        int amId = type & 0xff;
        int flags = (type >>> 8) & 0xff;
        int headerLength = type >>> 16;
        if (amId == 0 || headerLength > length || length > maxRecordPayload) {
            fail(new CorruptedFrameException("shm record from pid " + peerPid() + " with am id " + amId
                    + ", header length " + headerLength + " and length " + length + " (limit " + maxRecordPayload
                    + ")"));
            return;
        }
        delivered++;
        if (flags == 0 && headerLength == Long.BYTES) {
            recordPayload.at(ring, offset + headerLength, length - headerLength);
            try {
                if (shortFrameTaken(amId, ring.get(LONG_LE, offset), recordPayload)) {
                    return; // the header as a number, the payload still in the ring: no buffer, no frame
                }
            } finally {
                recordPayload.at(null, 0, 0);
            }
        }
        fireFrame(amId, flags, ring, offset, headerLength, length - headerLength);
    }

    /**
     * The record as a frame up the pipeline. Apart from {@link #onRecord}, which the ring's read loop inlines: the
     * short path stays small.
     */
    private void fireFrame(int amId, int flags, MemorySegment ring, long offset, int headerLength,
                           int payloadLength) {
        // Header and payload each in a pooled buffer of their own: slices of one buffer would be two more objects
        // per message with Netty's default (adaptive) allocator, which does not pool its slices.
        ByteBuf header = Buffers.copyOut(ring, offset, headerLength, alloc());
        ByteBuf payload = null;
        if (payloadLength >= PLACE_FROM) {
            try {
                payload = placed(amId, header, ring, offset + headerLength, payloadLength);
            } catch (Throwable t) {
                header.release();
                pipeline().fireExceptionCaught(t); // as a throw from channelRead: the frame is gone, the lane is not
                return;
            }
        }
        if (payload == null) {
            payload = payloadLength == 0 ? Unpooled.EMPTY_BUFFER
                    : Buffers.copyOut(ring, offset + headerLength, payloadLength, alloc());
        }
        pipeline().fireChannelRead(AmFrame.of(amId, flags, header, payload));
    }

    /**
     * The payload at {@code at} copied straight from the ring to where the lane's handler says it belongs ({@link
     * PayloadPlacement}: a posted receive's own buffer), so it is copied once instead of into a buffer of ours and
     * again from there; null when the handler has no place for it (or is no {@link PayloadPlacement}). Throws what
     * asking threw, the buffer it gave released.
     */
    private ByteBuf placed(int amId, ByteBuf header, MemorySegment ring, long at, int length) {
        ChannelPipeline p = pipeline();
        if (!(p.last() instanceof PayloadPlacement placement) || p.first() != placement) {
            return null;
        }
        ByteBuf target = placement.placePayload(amId, header, length);
        if (target == null) {
            return null;
        }
        try {
            if (target.writerIndex() != 0 || target.writableBytes() != length) {
                throw new IllegalStateException("a placement of " + length + " bytes gave " + target);
            }
            Buffers.copy(ring, at, target, 0, length);
        } catch (RuntimeException | Error e) {
            target.release();
            throw e;
        }
        placedBytes += length;
        return target.writerIndex(length);
    }

    /** How many payload bytes went from the ring straight into a {@link PayloadPlacement}'s buffers. Loop only. */
    public long placedBytes() {
        return placedBytes;
    }

    /** Payload bytes {@link #placed} so far; written and read on the loop. */
    private long placedBytes;

    /** The record a {@link ShortFrameHandler} is handed, where it lies in the ring; one per channel, reused. */
    private final RecordPayload recordPayload = new RecordPayload();

    private final class RecordPayload implements ShortPayload {
        private MemorySegment ring;
        private long offset;
        private int length;

        void at(MemorySegment ring, long offset, int length) {
            this.ring = ring;
            this.offset = offset;
            this.length = length;
        }

        @Override
        public int length() {
            return length;
        }

        @Override
        public void copyTo(ByteBuf dst, int index) {
            if (length == 0) {
                return;
            }
            checkLive();
            Buffers.copy(ring, offset, dst, index, length);
        }

        @Override
        public void copyTo(int from, int n, ByteBuf dst, int index) {
            Objects.checkFromIndexSize(from, n, length);
            if (n == 0) {
                return;
            }
            checkLive();
            Buffers.copy(ring, offset + from, dst, index, n);
        }

        @Override
        public ByteBuf copyOut(int from, int n) {
            Objects.checkFromIndexSize(from, n, length);
            if (n == 0) {
                return Unpooled.EMPTY_BUFFER;
            }
            checkLive();
            return Buffers.copyOut(ring, offset + from, n, alloc());
        }

        private void checkLive() {
            if (ring == null) {
                throw new IllegalStateException("a short payload used after its handler returned");
            }
        }
    }

    /** Closes with {@code cause} reported down the pipeline first (a corrupt ring, a vanished peer). */
    private void fail(Throwable cause) {
        if (state() == State.CLOSED) {
            return;
        }
        pipeline().fireExceptionCaught(cause);
        failFlushed(cause);
        unsafe().close(unsafe().voidPromise());
    }

    private void failFlushed(Throwable cause) {
        ChannelOutboundBuffer buffer = unsafe().outboundBuffer();
        if (buffer != null) {
            while (buffer.current() != null) {
                buffer.remove(cause);
            }
        }
    }

    /**
     * The doorbell socket closed: the peer closed or died. What it committed before is still delivered, then the
     * channel closes and writes still queued fail with {@link ShmPeerGoneException}.
     */
    void peerGone() {
        if (state() == State.CLOSED) {
            return;
        }
        if (reading) {
            // Inside a ring read (a handler's write failed on the doorbell and closed it, whose close future runs
            // this at once): a drain from here would read the batch again from its start, and the close would
            // unmap the ring under the read. Once the read has returned, then.
            eventLoop().execute(this::peerGone);
            return;
        }
        if (state() == State.CONNECTED) {
            readPending = true; // deliver all that is left even if the pipeline asked for no more reads
            while (state() == State.CONNECTED && readInbound() > 0) {
                readPending = true;
            }
        }
        if (state() != State.CLOSED) {
            boolean exited = ProcessHandle.of(peerPid()).isEmpty();
            reapPeerFiles(peerPid(), 0);
            ShmPeerGoneException e = new ShmPeerGoneException("shm peer (pid " + peerPid() + ") closed its "
                    + "connection" + (exited ? ": the process has exited" : ""));
            failFlushed(e);
            unsafe().close(unsafe().voidPromise());
        }
    }

    /**
     * Deletes the iface socket a killed peer had no chance to delete. A killed process lingers as a zombie until
     * its parent reaps it, so look again a little later if it still seems to exist.
     */
    private void reapPeerFiles(long pid, int attempt) {
        if (ShmFiles.reapIfDead(ShmFiles.DIR, pid) > 0 || ProcessHandle.of(pid).isEmpty() || attempt >= 3) {
            return;
        }
        try {
            eventLoop().schedule(() -> reapPeerFiles(pid, attempt + 1), 1L << attempt, TimeUnit.SECONDS);
        } catch (RejectedExecutionException e) {
            // the loop is shutting down; the next start reaps them
        }
    }

    /** The Unix socket that is the doorbell and the peer's liveness (tests close it, as a dead peer would). */
    Channel doorbell() {
        return doorbell;
    }

    /** The ring this end writes into (tests reach the shared memory through it). */
    SpscRing outboundRing() {
        return out;
    }

    private final class ShmUnsafe extends LaneUnsafe implements PolledIoHandle {
        @Override
        public int poll() {
            if ((++polls & (POLL_SAMPLE - 1)) == 0) {
                lastPollSample = System.nanoTime();
            }
            if (state() != State.CONNECTED) {
                return 0;
            }
            int work = readInbound();
            if (writeBlocked && state() == State.CONNECTED && out.hasRoomFor(nextRecordPayload())) {
                resume();
                work++;
            }
            return work;
        }

        private int nextRecordPayload() {
            ChannelOutboundBuffer b = outboundBuffer();
            Object m = b == null ? null : b.current();
            return m instanceof AmFrame f ? f.length() : 0;
        }

        @Override
        public boolean prepareToPark() {
            if (state() != State.CONNECTED) {
                return true;
            }
            in.markConsumerSleeping();
            if (writeBlocked) {
                out.markWriterWaiting();
                if (out.hasRoomFor(nextRecordPayload())) {
                    return false;
                }
            }
            return !readPending || in.isEmpty();
        }

        @Override
        public void unpark() {
            if (state() == State.CONNECTED) {
                in.clearConsumerSleeping();
            }
        }

        /** A busy-polling loop never sleeps on {@code in} nor waits on {@code out}: the peer's fences are not needed. */
        @Override
        public void loopNeverParks() {
            if (state() == State.CONNECTED) {
                in.declareConsumerPolls();
                out.declareProducerPolls();
            }
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
}
