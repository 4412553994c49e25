package io.nucx.transport.self;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.nucx.transport.Buffers;
import io.nucx.transport.ShortPayload;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The bytes of the short frames a self channel's peer wrote in place (UCT self's {@code am_short}): active message id,
 * 8-byte header and payload, copied into this ring by the writer, so a short send allocates nothing and hands no buffer
 * from one loop to the other (a pooled buffer allocated on one loop and released on the other is garbage to both
 * caches). Records leave in the order they came, and the channel's message queue keeps their place among the other
 * frames: the writer copies a record in, then queues {@link #MARK} for it; the reader, taking the mark, reads the
 * oldest record.
 *
 * <p>Layout: a record is {@code amId:i32 length:i32 header:i64 payload}, padded to 8 bytes, and never crosses the
 * ring's end: a record that would is written at the start instead, after an {@code amId} of 0 where it would have gone
 * (the reader skips the rest of the ring). Memory ordering: the writer's plain stores are published by the queue's
 * release store of the mark (and read after its acquire load); the reader frees a record with a release store of
 * {@code head}, which the writer reads (acquire) before reusing the room.
 *
 * <p>Consumer side, the ring is the {@link ShortPayload} of the record being delivered: valid only during that call.
 */
final class ShortRecords implements ShortPayload {

    /** What the queue carries for a record of this ring. */
    static final Object MARK = new Object() {
        @Override
        public String toString() {
            return "self short frame";
        }
    };

    static final int RECORD_HEADER = 16;
    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(
            java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(
            java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle HEAD;

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(ShortRecords.class, "head", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final byte[] bytes;
    private final MemorySegment ring;
    private final int mask;
    /** Producer only. */
    private long tail;
    /** The producer's last look at {@link #head}. */
    private long headCache;
    /** Consumer only; the producer reads it with an acquire load. */
    @SuppressWarnings("unused")
    private volatile long head;
    /** The record being delivered (consumer): its payload's offset and length; -1 outside a delivery. */
    private int payloadAt = -1;
    private int payloadLength;
    private ByteBufAllocator alloc;

    /** @param capacity bytes, rounded up to a power of two; at least one record of the largest payload must fit */
    ShortRecords(int capacity) {
        int n = Integer.highestOneBit(Math.max(64, capacity) - 1) << 1;
        this.bytes = new byte[n];
        this.ring = MemorySegment.ofArray(bytes);
        this.mask = n - 1;
    }

    /** The room a record of {@code payloadLength} bytes takes, padding included. */
    static int recordSize(int payloadLength) {
        return (RECORD_HEADER + payloadLength + 7) & ~7;
    }

    // ---------------------------------------------------------------- producer (the peer's loop)

    /**
     * Copies the record in (the caller keeps {@code payload}, its indices untouched); false, having written nothing,
     * when the ring has no room for it now. The caller then queues {@link #MARK}.
     */
    boolean append(int amId, long header, ByteBuf payload) {
        if (amId <= 0 || amId > 0xff) {
            // 0 marks a skip in the ring; AM ids are 1..255 (AmFrame's one byte)
            throw new IllegalArgumentException("active message id " + amId + " is not in 1..255");
        }
        int length = payload.readableBytes();
        int size = recordSize(length);
        long t = tail;
        int index = (int) (t & mask);
        int toEnd = bytes.length - index;
        long needed = size <= toEnd ? size : (long) toEnd + size;
        if (needed > bytes.length - (t - headCache)) {
            headCache = (long) HEAD.getAcquire(this);
            if (needed > bytes.length - (t - headCache)) {
                return false;
            }
        }
        if (size > toEnd) {
            ring.set(INT_LE, index, 0); // the rest of the ring is skipped (toEnd >= 8: records are 8-byte aligned)
            index = 0;
        }
        ring.set(INT_LE, index, amId);
        ring.set(INT_LE, index + 4, length);
        ring.set(LONG_LE, index + 8, header);
        copyIn(payload, index + RECORD_HEADER, length);
        tail = t + needed;
        return true;
    }

    private void copyIn(ByteBuf src, int at, int length) {
        if (length == 0) {
            return;
        }
        int from = src.readerIndex();
        if (src.hasArray()) {
            System.arraycopy(src.array(), src.arrayOffset() + from, bytes, at, length);
        } else if (src.hasMemoryAddress()) {
            if (src.refCnt() == 0) {
                throw new io.netty.util.IllegalReferenceCountException(0);
            }
            MemorySegment.copy(Buffers.ALL_MEMORY, ValueLayout.JAVA_BYTE, src.memoryAddress() + from, bytes, at,
                    length);
        } else {
            src.getBytes(from, bytes, at, length);
        }
    }

    // ---------------------------------------------------------------- consumer (this channel's loop)

    /**
     * Takes the oldest record as the current one, whose {@link #copyOut} allocates from {@code alloc}; its active
     * message id. Once per {@link #MARK} taken, then {@link #done}.
     */
    int next(ByteBufAllocator alloc) {
        this.alloc = alloc;
        long h = (long) HEAD.getOpaque(this);
        int index = (int) (h & mask);
        int amId = ring.get(INT_LE, index);
        if (amId == 0) { // skipped to the start
            h += bytes.length - index;
            HEAD.setOpaque(this, h);
            index = 0;
            amId = ring.get(INT_LE, 0);
        }
        payloadLength = ring.get(INT_LE, index + 4);
        payloadAt = index + RECORD_HEADER;
        return amId;
    }

    /** The current record's header. */
    long header() {
        return ring.get(LONG_LE, payloadAt - 8);
    }

    /** Frees the current record's room for the writer (next() left the head at its start). */
    void done() {
        HEAD.setRelease(this, (long) HEAD.getOpaque(this) + recordSize(payloadLength));
        payloadAt = -1;
    }

    @Override
    public int length() {
        return payloadLength;
    }

    @Override
    public void copyTo(ByteBuf dst, int index) {
        checkLive();
        if (payloadLength > 0) {
            Buffers.copy(ring, payloadAt, dst, index, payloadLength);
        }
    }

    @Override
    public ByteBuf copyOut() {
        checkLive();
        if (payloadLength == 0) {
            return Unpooled.EMPTY_BUFFER;
        }
        return Buffers.copyOut(ring, payloadAt, payloadLength, alloc);
    }

    private void checkLive() {
        if (payloadAt < 0) {
            throw new IllegalStateException("a short payload used after its handler returned");
        }
    }
}
