package io.nucx.transport.self;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Buffers;
import io.nucx.transport.ShortPayload;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Objects;

/**
 * A self channel's inbound order: a single-producer single-consumer ring of records in native memory, one per message
 * the peer wrote. A short frame written in place (UCT self's {@code am_short}) is its record, active message id, 8-byte
 * header and payload copied in; so is any frame with a small payload ({@link #FRAME}: id, flags, header and payload
 * copied in). Neither allocates on the writer's side or hands an object from one loop to the other. Any other message
 * is an {@link #OBJECT} record standing for the next element of the channel's object queue, so all kinds keep the
 * lane's order.
 *
 * <p>The consumer polls the word at its head, as shm's {@code SpscRing} does: a message costs it the one cache line the
 * producer wrote (word, header and a short payload together), where a tail counter, a queue of marks and a byte count
 * cost a line each, both ways. Layout: a short record is {@code word:i32 length:i32 header:i64 payload}, a frame
 * record {@code word:i32 payloadLength:i32 headerLength:i32 flags:i32 header payload}, each padded to 8 bytes
 * ({@link #OBJECT}'s is its first 8 bytes); a record never crosses the ring's end: one that would is written at the
 * start instead, with {@link #SKIP} where it would have gone. Three cache lines follow the data, each written by one
 * side only: the consumer's (its head, and the record it is delivering), the reader's flags (how its loop reads:
 * {@link #POLLED}, {@link #NEVER_PARKS}, {@link #CLOSED}; whether it is parked), and the producer's, which holds only
 * whether it waits for room (its tail and cached head are fields of its {@link Writer}, an object of the writer's
 * loop). The flags and the producer's line are written only when a loop parks or a writer waits, so in steady state
 * each side reads the other's line from its own cache: a flag in either channel object instead would share a line
 * with the fields that object's loop writes on every batch, and cost a cache miss per message.
 *
 * <p>Memory ordering: the producer writes a record's body and zeroes the word after it with plain stores, then stores
 * its word with release semantics (a wrapped record's word before the {@link #SKIP} that leads to it); the consumer
 * reads the word with an acquire load, so a non-zero word shows the whole record, and the zero after the last record
 * is where the published ones end (consumed bytes are never zeroed). The producer keeps that word's room free beyond
 * what it writes. The consumer frees records with a release store of its head, which the producer reads (acquire) only
 * when its cached head says the ring looks full.
 *
 * <p>Room: short and frame records may fill the ring up to {@code shortBytes}; the rest is kept for one {@link #OBJECT}
 * record per slot of the object queue, so a message refused as a record, then written as an object, always finds its
 * record's room once it has a slot.
 *
 * <p>Consumer side, the ring is the {@link ShortPayload} of the short record being delivered: valid only during that
 * call.
 */
final class RecordRing implements ShortPayload {

    /** A record's word for an element of the object queue (short records carry their AM id, 1..255, as their word). */
    static final int OBJECT = 0x100;
    /** A frame record's word is this or'd with its AM id (0..255). */
    static final int FRAME = 0x200;
    /** A record's word where the rest of the ring is skipped: the next record is at the start. */
    private static final int SKIP = -1;
    static final int RECORD_HEADER = 16;
    private static final int OBJECT_RECORD = 8;
    /** The zero word kept after the last record. */
    private static final int END = 8;
    private static final int LINE = 64;

    /** Reader flags: its loop polls the ring; that loop never parks; the channel closed. */
    static final int POLLED = 1;
    static final int NEVER_PARKS = 2;
    static final int CLOSED = 4;

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment segment;
    private final int size;
    private final int mask;
    private final int shortBytes;
    /** The consumer's line: head (published), the current record's payload offset (-1: none) and length. */
    private final long headAt;
    private final long payloadAtAt;
    private final long payloadLengthAt;
    /** The reader's flags line: flags, parked. */
    private final long flagsAt;
    private final long parkedAt;
    /** The producer's line: whether it waits for room. */
    private final long writerWaitingAt;
    /** The consumer's allocator for {@link #copyOut} (written only when it changes). */
    private ByteBufAllocator alloc;

    /**
     * @param shortBytes  room short and frame records may fill
     * @param objectSlots the object queue's capacity
     */
    RecordRing(int shortBytes, int objectSlots) {
        long records = (long) shortBytes + (long) objectSlots * OBJECT_RECORD + END;
        if (records > 1 << 30) {
            throw new IllegalArgumentException("a self ring of " + records + " bytes");
        }
        int n = Integer.highestOneBit((int) Math.max(LINE, records) - 1) << 1;
        this.size = n;
        this.mask = n - 1;
        this.shortBytes = shortBytes;
        this.segment = Arena.ofAuto().allocate(n + 3L * LINE, LINE); // zeroed: no record published
        this.headAt = n;
        this.payloadAtAt = n + 8;
        this.payloadLengthAt = n + 12;
        this.flagsAt = n + LINE;
        this.parkedAt = n + LINE + 4;
        this.writerWaitingAt = n + 2L * LINE;
        segment.set(ValueLayout.JAVA_INT, payloadAtAt, -1);
    }

    /** The room a short record of {@code payloadLength} bytes takes, padding included. */
    static int recordSize(int payloadLength) {
        return (RECORD_HEADER + payloadLength + 7) & ~7;
    }

    /** The producer side; one per ring, made and used on the writer's loop only. */
    Writer writer() {
        return new Writer();
    }

    // ---------------------------------------------------------------- reader flags (the reader's loop writes them)

    void setFlag(int flag, boolean on) {
        int f = (int) INT.getVolatile(segment, flagsAt);
        INT.setVolatile(segment, flagsAt, on ? f | flag : f & ~flag);
    }

    int flags() {
        return (int) INT.getAcquire(segment, flagsAt);
    }

    /** The reader's loop is about to park, or awake again; parking, a full fence follows (the eventcount). */
    void parked(boolean parked) {
        INT.setVolatile(segment, parkedAt, parked ? 1 : 0);
    }

    // ---------------------------------------------------------------- producer (the peer's loop)

    /** The producer's position; plain fields of an object made on the writer's loop, which no other thread writes. */
    final class Writer {
        private long tail;
        /** The producer's last look at the consumer's head. */
        private long headCache;

        /**
         * Copies a short record in and publishes it (the caller keeps {@code payload}, its indices untouched); false,
         * having written nothing, when short records have no room for it now.
         */
        boolean appendShort(int amId, long header, ByteBuf payload) {
            if (amId <= 0 || amId > 0xff) {
                throw new IllegalArgumentException("active message id " + amId + " is not in 1..255");
            }
            int length = payload.readableBytes();
            int at = reserve(recordSize(length));
            if (at < 0) {
                return false;
            }
            segment.set(ValueLayout.JAVA_INT, at + 4, length);
            segment.set(ValueLayout.JAVA_LONG, at + 8, header);
            Buffers.copyIn(payload, segment, at + RECORD_HEADER);
            publish(at, recordSize(length), amId);
            return true;
        }

        /**
         * Copies a frame in as a record of its own ({@code word:i32 payloadLength:i32 headerLength:i32 flags:i32 header
         * payload}) and publishes it (the caller keeps {@code frame}, its buffers untouched); false, having written
         * nothing, when records have no room for it now.
         */
        boolean appendFrame(AmFrame frame) {
            ByteBuf header = frame.header();
            ByteBuf payload = frame.payload();
            int headerLength = header.readableBytes();
            int length = payload.readableBytes();
            int record = recordSize(headerLength + length);
            int at = reserve(record);
            if (at < 0) {
                return false;
            }
            segment.set(ValueLayout.JAVA_INT, at + 4, length);
            segment.set(ValueLayout.JAVA_INT, at + 8, headerLength);
            segment.set(ValueLayout.JAVA_INT, at + 12, frame.flags());
            Buffers.copyIn(header, segment, at + RECORD_HEADER);
            Buffers.copyIn(payload, segment, at + RECORD_HEADER + headerLength);
            publish(at, record, FRAME | frame.amId());
            return true;
        }

        /**
         * Where a record of {@code record} bytes goes (at the start, if it would cross the ring's end), with room for
         * it now among the records; -1 when there is none. Then {@link #publish}.
         */
        private int reserve(int record) {
            long t = tail;
            int index = (int) (t & mask);
            int toEnd = size - index;
            int at = record <= toEnd ? index : 0;
            int needed = at == index ? record : toEnd + record;
            return hasRoom(t, needed, shortBytes) ? at : -1;
        }

        /**
         * Publishes the {@code record} bytes written at {@code at} (where {@link #reserve} or, for an object, the tail
         * put them) with its word; a record at the start skips the ring's end.
         */
        private void publish(int at, int record, int word) {
            long t = tail;
            int index = (int) (t & mask);
            segment.set(ValueLayout.JAVA_INT, (at + record) & mask, 0);
            INT.setRelease(segment, (long) at, word);
            if (at != index) {
                INT.setRelease(segment, (long) index, SKIP); // toEnd >= 8: records are 8-byte aligned
                tail = t + (size - index) + record;
            } else {
                tail = t + record;
            }
        }

        /** Publishes a record for the object just offered to the queue; false when the ring has no room. */
        boolean appendObject() {
            long t = tail;
            int index = (int) (t & mask); // 8-byte records at 8-byte offsets: never across the end
            if (!hasRoom(t, OBJECT_RECORD, size)) {
                return false;
            }
            segment.set(ValueLayout.JAVA_INT, index + 4, 0);
            publish(index, OBJECT_RECORD, OBJECT);
            return true;
        }

        private boolean hasRoom(long t, int needed, int limit) {
            if (t - headCache + needed + END <= limit) {
                return true;
            }
            headCache = (long) LONG.getAcquire(segment, headAt);
            return t - headCache + needed + END <= limit;
        }

        /**
         * The writer waits for room ({@code true}), or no longer. A volatile store: the writer looks at the room again
         * after it, and the reader, having made room, looks at the flag ({@link #writerWaits}).
         */
        void waiting(boolean waiting) {
            INT.setVolatile(segment, writerWaitingAt, waiting ? 1 : 0);
        }

        /** The reader's flags ({@link #POLLED}, {@link #NEVER_PARKS}, {@link #CLOSED}). */
        int readerFlags() {
            return flags();
        }

        /** After a publish, with the reader polled and able to park: whether it parked (the eventcount's look). */
        boolean readerParked() {
            VarHandle.fullFence(); // StoreLoad: the record, then the flag (the reader: flag, then the ring)
            return (int) INT.getVolatile(segment, parkedAt) != 0;
        }
    }

    // ---------------------------------------------------------------- consumer (this channel's loop)

    /**
     * Whether the writer waits for room ({@link Writer#waiting}). A volatile read after the reader's drain, paired with
     * the writer's store of the flag before its second look at the room: one of the two sees the other.
     */
    boolean writerWaits() {
        return (int) INT.getVolatile(segment, writerWaitingAt) != 0;
    }

    /** Clears the writer's flag; true for the one caller that did, who then wakes the writer. */
    boolean clearWriterWaiting() {
        return INT.compareAndSet(segment, writerWaitingAt, 1, 0);
    }

    /** Whether a record waits at the head. */
    boolean isEmpty() {
        long h = (long) LONG.get(segment, headAt);
        return (int) INT.getAcquire(segment, h & mask) == 0;
    }

    /**
     * Takes the record at the head as the current one: 0 when there is none, else its word ({@link #OBJECT}, a short
     * record's AM id, or {@link #FRAME} with a frame record's), whose copies out of the ring ({@link #copyOut},
     * {@link #frame}) allocate from {@code alloc}. Then {@link #done}.
     */
    int next(ByteBufAllocator alloc) {
        long h = (long) LONG.get(segment, headAt);
        int index = (int) (h & mask);
        int word = (int) INT.getAcquire(segment, (long) index);
        if (word == SKIP) {
            h += size - index;
            LONG.setRelease(segment, headAt, h);
            index = 0;
            word = (int) INT.getAcquire(segment, 0L); // published before the skip
        }
        if (word == 0 || word == OBJECT) {
            return word;
        }
        if (this.alloc != alloc) {
            this.alloc = alloc;
        }
        int payloadAt = index + RECORD_HEADER;
        if ((word & ~0xff) == FRAME) {
            payloadAt += segment.get(ValueLayout.JAVA_INT, index + 8L);
        }
        segment.set(ValueLayout.JAVA_INT, payloadLengthAt, segment.get(ValueLayout.JAVA_INT, index + 4L));
        segment.set(ValueLayout.JAVA_INT, payloadAtAt, payloadAt);
        return word;
    }

    /** The current short record's header. */
    long header() {
        return segment.get(ValueLayout.JAVA_LONG, payloadAt() - 8L);
    }

    /** The current frame record as a frame: header and payload copied out of the ring into buffers of {@code alloc}. */
    AmFrame frame(int word) {
        int at = (int) ((long) LONG.get(segment, headAt) & mask);
        int headerLength = segment.get(ValueLayout.JAVA_INT, at + 8L);
        int flags = segment.get(ValueLayout.JAVA_INT, at + 12L);
        ByteBuf header = headerLength == 0 ? Unpooled.EMPTY_BUFFER
                : Buffers.copyOut(segment, at + RECORD_HEADER, headerLength, alloc);
        ByteBuf payload;
        try {
            payload = copyOut();
        } catch (Throwable t) {
            header.release();
            throw t;
        }
        return AmFrame.of(word & 0xff, flags, header, payload);
    }

    /** Frees the current record's room for the writer: a short or frame record's ({@code object} false), or not. */
    void done(boolean object) {
        long h = (long) LONG.get(segment, headAt);
        int record = OBJECT_RECORD;
        if (!object) {
            // the record ends where its payload does, padded; it starts at the head (records are 8-byte aligned)
            record = ((payloadAt() + length() + 7) & ~7) - (int) (h & mask);
            segment.set(ValueLayout.JAVA_INT, payloadAtAt, -1);
        }
        LONG.setRelease(segment, headAt, h + record);
    }

    private int payloadAt() {
        return segment.get(ValueLayout.JAVA_INT, payloadAtAt);
    }

    @Override
    public int length() {
        return segment.get(ValueLayout.JAVA_INT, payloadLengthAt);
    }

    @Override
    public void copyTo(ByteBuf dst, int index) {
        int at = livePayloadAt();
        int length = length();
        if (length > 0) {
            Buffers.copy(segment, at, dst, index, length);
        }
    }

    @Override
    public void copyTo(int from, int n, ByteBuf dst, int index) {
        int at = livePayloadAt();
        Objects.checkFromIndexSize(from, n, length());
        if (n > 0) {
            Buffers.copy(segment, at + from, dst, index, n);
        }
    }

    @Override
    public ByteBuf copyOut(int from, int n) {
        int at = livePayloadAt();
        Objects.checkFromIndexSize(from, n, length());
        if (n == 0) {
            return Unpooled.EMPTY_BUFFER;
        }
        return Buffers.copyOut(segment, at + from, n, alloc);
    }

    private int livePayloadAt() {
        int at = payloadAt();
        if (at < 0) {
            throw new IllegalStateException("a short payload used after its handler returned");
        }
        return at;
    }
}
