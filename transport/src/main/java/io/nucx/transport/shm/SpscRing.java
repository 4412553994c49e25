package io.nucx.transport.shm;

import io.netty.buffer.ByteBuf;
import io.nucx.transport.Buffers;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.Set;

import static io.nucx.transport.shm.RecordDescriptor.ALIGNMENT;
import static io.nucx.transport.shm.RecordDescriptor.FILLER_TYPE;
import static io.nucx.transport.shm.RecordDescriptor.HEADER_LENGTH;
import static io.nucx.transport.shm.RecordDescriptor.LENGTH_OFFSET;
import static io.nucx.transport.shm.RecordDescriptor.PADDING_TYPE;
import static io.nucx.transport.shm.RecordDescriptor.PAYLOAD_ALIGNMENT;
import static io.nucx.transport.shm.RecordDescriptor.TYPE_OFFSET;
import static io.nucx.transport.shm.RecordDescriptor.aligned;

/**
 * A single-producer single-consumer ring of records in a file mapped into two processes ({@link RingDescriptor},
 * {@link RecordDescriptor}); Agrona's {@code OneToOneRingBuffer} design over an FFM {@link MemorySegment}.
 *
 * <p>Memory ordering: the producer writes a record's type, payload and length with plain stores and zeroes the header
 * word that follows it; the first record of a batch keeps its length back until {@link #publish}, which stores it with
 * release semantics, so the whole batch (every byte written before that store) becomes visible at once, after the
 * flush, as Netty's writes do. The consumer polls the length word at its head with an acquire load, as Aeron's
 * subscribers poll a frame's length and UCX's mm FIFO an element's owner bit: a message costs the consumer one
 * cache line from the producer (header and a short payload share it), where polling a tail counter cost two, the
 * counter's line and then the record's. The zeroed word after each record is what tells the consumer where the
 * published records end, so consumed bytes need no zeroing (Agrona's ring zeroes all it consumed: a third pass over
 * every byte), and a later lap's record may start inside an old payload: the producer zeroed that word before the
 * record before it was published. The producer therefore keeps one header word free beyond what it writes. The tail
 * counter is still published (release) for {@link #size}; nothing on the consumer's path reads it. The consumer
 * publishes the head with a release store; the producer reads the head with an acquire load only when its cached
 * head says the ring looks full.
 *
 * <p>Backpressure is a return value: {@link #write} returns false when the ring is full.
 */
public final class SpscRing implements AutoCloseable {

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    /**
     * Payloads of this size on, from a buffer with a memory address, are placed at their source's address modulo
     * {@link RecordDescriptor#PAYLOAD_ALIGNMENT} (behind a filler); smaller ones cost more in the filler than they
     * gain.
     */
    static final int ALIGN_PAYLOAD_FROM = 1024;
    /** No placement asked for ({@link #claim}). */
    private static final long ANYWHERE = -1;

    /**
     * Receives each record: its payload is bytes {@code [offset, offset + length)} of {@code ring}, valid only during
     * the call. (The ring's own segment and an offset, not a slice: a slice per record is an allocation per message.)
     */
    @FunctionalInterface
    public interface RecordHandler {
        void onRecord(int type, MemorySegment ring, long offset, int length);
    }

    /** Little-endian longs at any offset (a short record's 8-byte header). */
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED
            .withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path file;
    private final Arena arena;
    private final MemorySegment segment;
    private final long data;
    private final int capacity;
    private final int mask;
    private final long tailAt;
    private final long headAt;
    private final int maxRecord;
    private final long sleepingAt;
    private final long consumerPollsAt;
    private final long producerPollsAt;
    private final long writerWaitingAt;
    /** Producer side: the last head it read. */
    private long headCache;
    /**
     * Producer side: the end of what it wrote ({@link #append}ed, published or not), and the tail it last published.
     * Kept here, not read back from the file: the consumer polls the file's tail, so reading it before each write was
     * a second trip for that cache line (JFR put 44 % of a sender's samples on that load), and a tail the peer
     * scribbled on is not believed.
     */
    private long tail;
    private long publishedTail;
    /** Producer side: the tail a claimed record publishes on commit. */
    private long pendingTail;
    /**
     * Producer side: the header of the batch's first record (or -1: nothing appended since the last publish) and the
     * length it gets at {@link #publish}. Until then its length word reads zero and the consumer sees none of the batch.
     */
    private long batchFirstAt = -1;
    private int batchFirstLength;

    private SpscRing(Path file, Arena arena, MemorySegment segment, int capacity) {
        this.file = file;
        this.arena = arena;
        this.segment = segment;
        this.data = RingDescriptor.HEADER_LENGTH;
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.tailAt = data + capacity + RingDescriptor.TAIL_OFFSET;
        this.headAt = data + capacity + RingDescriptor.HEAD_OFFSET;
        this.maxRecord = capacity / 8;
        this.sleepingAt = data + capacity + RingDescriptor.SLEEPING_OFFSET;
        this.consumerPollsAt = data + capacity + RingDescriptor.CONSUMER_POLLS_OFFSET;
        this.producerPollsAt = data + capacity + RingDescriptor.PRODUCER_POLLS_OFFSET;
        this.writerWaitingAt = data + capacity + RingDescriptor.WRITER_WAITING_OFFSET;
        this.publishedTail = (long) LONG.getAcquire(segment, tailAt);
        this.tail = publishedTail;
    }

    /**
     * Creates the file and maps a fresh ring of {@code capacity} bytes. The file is created exclusively, mode 0600,
     * without following a link ({@code O_CREAT|O_EXCL|O_NOFOLLOW}), and mapped through that same descriptor: a file or
     * link another user planted under the name is refused, and nothing can be swapped in between.
     */
    public static SpscRing create(Path file, int capacity) throws IOException {
        long length = RingDescriptor.fileLength(capacity);
        FileChannel created;
        try {
            created = FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (FileAlreadyExistsException e) {
            throw new FileAlreadyExistsException(file.toString(), null, "a ring file (or a link) already exists "
                    + "there");
        }
        Arena arena = Arena.ofShared();
        try (FileChannel ch = created) {
            // A new file grown by the mapping reads as zeros (the kernel's guarantee): not filling it leaves the
            // ring's pages uncommitted until records reach them, instead of 2 x NUCX_SHM_RING_SIZE per connection.
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, length, arena);
            seg.set(ValueLayout.JAVA_INT_UNALIGNED, RingDescriptor.VERSION_OFFSET, RingDescriptor.VERSION);
            seg.set(ValueLayout.JAVA_INT_UNALIGNED, RingDescriptor.CAPACITY_OFFSET, capacity);
            // The magic last: a reader that sees it sees a complete header.
            LONG.setRelease(seg, (long) RingDescriptor.MAGIC_OFFSET, RingDescriptor.MAGIC);
            return new SpscRing(file, arena, seg, capacity);
        } catch (IOException | RuntimeException e) {
            arena.close();
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /**
     * Maps an existing ring, refusing a file that is not one, is of another version or capacity over 1 GiB, is a link
     * ({@code O_NOFOLLOW}), is not a regular file, or belongs to another user: a peer of another user cannot make us
     * map a file of its choice, nor one of ours it pointed a link at.
     */
    public static SpscRing open(Path file) throws IOException {
        FileChannel opened;
        try {
            opened = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw new IOException(file + ": cannot open as a ring (" + e.getMessage() + "; links are not followed)",
                    e);
        }
        Arena arena = Arena.ofShared();
        try (FileChannel ch = opened) {
            checkOwnFile(file);
            long size = ch.size();
            if (size < RingDescriptor.HEADER_LENGTH) {
                throw new IOException(file + ": " + size + " bytes is too short for a ring file");
            }
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            long magic = (long) LONG.getAcquire(seg, (long) RingDescriptor.MAGIC_OFFSET);
            if (magic != RingDescriptor.MAGIC) {
                throw new IOException(file + ": not a nucx ring (magic 0x" + Long.toHexString(magic) + ")");
            }
            int version = seg.get(ValueLayout.JAVA_INT_UNALIGNED, RingDescriptor.VERSION_OFFSET);
            if (version != RingDescriptor.VERSION) {
                throw new IOException(file + ": ring layout version " + version + ", this build reads "
                        + RingDescriptor.VERSION);
            }
            int capacity = seg.get(ValueLayout.JAVA_INT_UNALIGNED, RingDescriptor.CAPACITY_OFFSET);
            RingDescriptor.checkCapacity(capacity);
            if (capacity > MAX_CAPACITY) {
                throw new IOException(file + ": ring capacity " + capacity + " is over " + MAX_CAPACITY);
            }
            if (size != RingDescriptor.fileLength(capacity)) {
                throw new IOException(file + ": " + size + " bytes, a ring of capacity " + capacity + " needs "
                        + RingDescriptor.fileLength(capacity));
            }
            return new SpscRing(file, arena, seg, capacity);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** The largest ring a peer may hand us (NUCX_SHM_RING_SIZE's bound). */
    static final int MAX_CAPACITY = 1 << 30;

    /** This process's user id (the owner of {@code /proc/self}). */
    static int ownUid() throws IOException {
        return (int) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    }

    /** A regular file (not a link) owned by this process's user, or an {@link IOException} naming what it is. */
    static void checkOwnFile(Path file) throws IOException {
        Map<String, Object> a = Files.readAttributes(file, "unix:uid,isRegularFile,isSymbolicLink",
                LinkOption.NOFOLLOW_LINKS);
        if (!Boolean.TRUE.equals(a.get("isRegularFile"))) {
            throw new IOException(file + ": not a regular file");
        }
        int uid = (int) a.get("uid");
        if (uid != ownUid()) {
            throw new IOException(file + ": owned by uid " + uid + ", not by this process's user (uid " + ownUid()
                    + "); shm connects processes of one user only");
        }
    }

    public Path file() {
        return file;
    }

    public int capacity() {
        return capacity;
    }

    /** The largest payload one record may carry. */
    public int maxPayload() {
        return maxRecord - HEADER_LENGTH;
    }

    /** Bytes written and not yet consumed. */
    public long size() {
        return (long) LONG.getAcquire(segment, tailAt) - (long) LONG.getAcquire(segment, headAt);
    }

    // ---------------------------------------------------------------- producer

    /**
     * Appends a record; false when the ring has no room now (nothing was written).
     *
     * @throws IllegalArgumentException if the payload can never fit ({@link #maxPayload()})
     */
    public boolean write(int type, MemorySegment payload) {
        long at = claim(type, payload.byteSize(), ANYWHERE);
        if (at < 0) {
            return false;
        }
        try {
            MemorySegment.copy(payload, 0, segment, at + HEADER_LENGTH, payload.byteSize());
        } catch (RuntimeException | Error e) {
            abandonClaim();
            throw e;
        }
        commit(at, type, payload.byteSize());
        return publish();
    }

    /**
     * Appends one record whose payload is {@code first} then {@code second} (their readable bytes, indices left
     * alone) and publishes it; false when the ring has no room now. Heap buffers are copied without allocating.
     */
    public boolean write(int type, ByteBuf first, ByteBuf second) {
        return append(type, first, second) && publish();
    }

    /** As {@link #write(int, ByteBuf, ByteBuf)}, not yet published: the consumer sees it after {@link #publish}. */
    public boolean append(int type, ByteBuf first, ByteBuf second) {
        int a = first.readableBytes();
        int b = second.readableBytes();
        long at = claim(type, (long) a + b, placement(second, a));
        if (at < 0) {
            return false;
        }
        try {
            Buffers.copyIn(first, segment, at + HEADER_LENGTH);
            Buffers.copyIn(second, segment, at + HEADER_LENGTH + a);
        } catch (RuntimeException | Error e) {
            abandonClaim();
            throw e;
        }
        commit(at, type, (long) a + b);
        return true;
    }

    /**
     * Appends one record whose payload is the 8 bytes of {@code header} (little-endian, as {@code writeLongLE} puts
     * them) then {@code payload}'s readable bytes; false when the ring has no room now. UCT's {@code am_short}: no
     * buffer holds the header. Published at once.
     */
    public boolean write(int type, long header, ByteBuf payload) {
        return append(type, header, payload) && publish();
    }

    /** As {@link #write(int, long, ByteBuf)}, not yet published: the consumer sees it after {@link #publish}. */
    public boolean append(int type, long header, ByteBuf payload) {
        int b = payload.readableBytes();
        long at = claim(type, Long.BYTES + (long) b, placement(payload, Long.BYTES));
        if (at < 0) {
            return false;
        }
        segment.set(LONG_LE, at + HEADER_LENGTH, header);
        try {
            Buffers.copyIn(payload, segment, at + HEADER_LENGTH + Long.BYTES);
        } catch (RuntimeException | Error e) {
            abandonClaim();
            throw e;
        }
        commit(at, type, Long.BYTES + (long) b);
        return true;
    }

    /**
     * Where a record whose payload is {@code before} bytes then {@code bytes}' readable ones should begin its payload,
     * modulo {@link RecordDescriptor#PAYLOAD_ALIGNMENT}: so that {@code bytes} land where they lie in their own memory;
     * {@link #ANYWHERE} for small or heap ones.
     */
    private static long placement(ByteBuf bytes, int before) {
        return bytes.readableBytes() >= ALIGN_PAYLOAD_FROM && bytes.hasMemoryAddress()
                ? (bytes.memoryAddress() + bytes.readerIndex() - before) & (PAYLOAD_ALIGNMENT - 1) : ANYWHERE;
    }

    /**
     * The filler a record at {@code index} needs for its payload to begin at {@code placement} modulo
     * {@link RecordDescriptor#PAYLOAD_ALIGNMENT}: 0, 8, 16 or 24 bytes. Records stay 8-byte aligned, so a placement
     * off by less than 8 is met to the 8 below it: the payload then lies 0-7 bytes before its source's place, never
     * the 1-15 bytes after it that {@code Buffers.pageAliased} goes around.
     */
    private int filler(int index, long placement) {
        if (placement == ANYWHERE) {
            return 0;
        }
        long payloadAt = segment.address() + data + index + HEADER_LENGTH;
        return (int) ((placement - payloadAt) & (PAYLOAD_ALIGNMENT - 1)) & -ALIGNMENT;
    }

    /**
     * Reserves room for a record (writing the wrap padding and a filler if needed); its offset, or -1 when full.
     *
     * @param placement where its payload should begin modulo {@link RecordDescriptor#PAYLOAD_ALIGNMENT}, or
     *                  {@link #ANYWHERE}
     */
    private long claim(int type, long payloadLength, long placement) {
        if (type == PADDING_TYPE || type == FILLER_TYPE) {
            throw new IllegalArgumentException("record type " + type + " is reserved for padding and fillers");
        }
        long length = payloadLength + HEADER_LENGTH;
        if (length > maxRecord) {
            throw new IllegalArgumentException("record of " + payloadLength + " bytes exceeds the ring's "
                    + "largest payload " + maxPayload());
        }
        int recordLength = aligned((int) length);
        long tail = this.tail;
        int index = (int) (tail & mask);
        int toEnd = capacity - index;
        int filler = filler(index, placement);
        int padding = filler + recordLength > toEnd ? toEnd : 0;
        if (padding > 0) {
            filler = filler(0, placement);
        }
        long needed = (long) padding + filler + recordLength;
        // One header word beyond the record stays free: commit zeroes it, and it must not be a record unread yet.
        if (needed + HEADER_LENGTH > capacity - (tail - headCache)) {
            headCache = (long) LONG.getAcquire(segment, headAt);
            if (needed + HEADER_LENGTH > capacity - (tail - headCache)) {
                return -1;
            }
        }
        if (padding > 0) {
            INT.set(segment, data + index + TYPE_OFFSET, PADDING_TYPE);
            setLength(data + index, padding);
            index = 0;
        }
        if (filler > 0) {
            INT.set(segment, data + index + TYPE_OFFSET, FILLER_TYPE);
            setLength(data + index, filler);
            index += filler;
        }
        pendingTail = tail + needed;
        return data + index;
    }

    /**
     * Undoes what {@link #claim} wrote when the copy after it threw (a released buffer): a padding or filler it wrote
     * may have taken the batch's held-back first length, or left a length where the consumer must find the zero word.
     */
    private void abandonClaim() {
        // The batch's first record lies at the claim's start only if the claim wrote it (a padding or filler): an
        // earlier one lies before it, as a batch never fills the ring round to its own start.
        if (batchFirstAt == data + (tail & mask)) {
            batchFirstAt = -1;
        }
        LONG.set(segment, data + (tail & mask), 0L);
    }

    /**
     * Completes the claimed record: type, length ({@link #setLength}) and a zero header word after it, where the
     * consumer will look next; {@link #publish} makes it visible.
     */
    private void commit(long at, int type, long payloadLength) {
        INT.set(segment, at + TYPE_OFFSET, type);
        setLength(at, (int) (payloadLength + HEADER_LENGTH));
        tail = pendingTail;
        LONG.set(segment, data + (tail & mask), 0L);
    }

    /** A record's length: held back if it is the batch's first (publish stores it), else a plain store. */
    private void setLength(long at, int length) {
        if (batchFirstAt < 0) {
            batchFirstAt = at;
            batchFirstLength = length;
        } else {
            INT.set(segment, at + LENGTH_OFFSET, length);
        }
    }

    /**
     * Makes every appended record visible to the consumer: a release store of the batch's first length, so every byte
     * of the batch is visible before it; true if there was any. One ordered store per batch, not one per record.
     */
    public boolean publish() {
        long t = tail;
        if (t == publishedTail) {
            return false;
        }
        INT.setRelease(segment, batchFirstAt + LENGTH_OFFSET, batchFirstLength);
        batchFirstAt = -1;
        publishedTail = t;
        LONG.setRelease(segment, tailAt, t);
        return true;
    }

    /**
     * Producer: whether a record of {@code payloadLength} bytes fits now (reads the consumer's head). One that may be
     * placed ({@link #ALIGN_PAYLOAD_FROM}) is counted with the largest filler, which one it needs depending on its
     * payload's address: a yes is always right, a no may come a few bytes early.
     */
    public boolean hasRoomFor(int payloadLength) {
        long tail = this.tail;
        headCache = (long) LONG.getAcquire(segment, headAt);
        int recordLength = aligned(payloadLength + HEADER_LENGTH)
                + (payloadLength >= ALIGN_PAYLOAD_FROM ? PAYLOAD_ALIGNMENT - ALIGNMENT : 0);
        int toEnd = capacity - (int) (tail & mask);
        long needed = recordLength > toEnd ? (long) toEnd + recordLength : recordLength;
        return needed + HEADER_LENGTH <= capacity - (tail - headCache);
    }

    // ---------------------------------------------------------------- sleep and wake handshake
    //
    // The eventcount pattern, both ways: a side about to park sets its flag, issues a full fence (StoreLoad) and
    // re-checks the ring; the other side, after publishing, issues a full fence and reads the flag. One of the two
    // always sees the other's store, so a wake-up is never lost; the common case (nobody asleep) costs a fence and
    // a load, no system call.

    /** Consumer: announces it is about to park; then re-check {@link #isEmpty()} before parking. */
    public void markConsumerSleeping() {
        INT.setVolatile(segment, sleepingAt, 1);
        VarHandle.fullFence();
    }

    /** Whether the consumer has announced it parks (and not woken since); for diagnostics and tests. */
    public boolean isConsumerSleeping() {
        return (int) INT.getVolatile(segment, sleepingAt) != 0;
    }

    /** Consumer: awake again. */
    public void clearConsumerSleeping() {
        INT.setRelease(segment, sleepingAt, 0);
    }

    /**
     * Producer, after publishing: true (once) if the consumer was asleep and must be woken. A consumer that said it
     * never parks ({@link #declareConsumerPolls}) is never asleep: no fence then.
     */
    public boolean takeConsumerSleeping() {
        if ((int) INT.getOpaque(segment, consumerPollsAt) != 0) {
            return false;
        }
        // The tail's store must be visible before the flag is read (Dekker with markConsumerSleeping's store, fence,
        // then isEmpty): otherwise both sides may miss each other and the consumer sleeps on a published record.
        VarHandle.fullFence();
        return (int) INT.getVolatile(segment, sleepingAt) != 0 && INT.compareAndSet(segment, sleepingAt, 1, 0);
    }

    /** Consumer whose loop never parks, once: producers skip the look for a sleeping consumer (and its fence). */
    public void declareConsumerPolls() {
        INT.setRelease(segment, consumerPollsAt, 1);
    }

    /** Producer whose loop never parks, once: the consumer skips the look for a waiting writer (and its fence). */
    public void declareProducerPolls() {
        INT.setRelease(segment, producerPollsAt, 1);
    }

    /** Producer: announces it waits for room; then re-check {@link #hasRoomFor} before parking. */
    public void markWriterWaiting() {
        INT.setVolatile(segment, writerWaitingAt, 1);
        VarHandle.fullFence();
    }

    /**
     * Consumer, after consuming: true (once) if the producer waits for room and must be woken; never for a producer
     * that said it never parks ({@link #declareProducerPolls}).
     */
    public boolean takeWriterWaiting() {
        if ((int) INT.getOpaque(segment, producerPollsAt) != 0) {
            return false;
        }
        VarHandle.fullFence();
        return (int) INT.getVolatile(segment, writerWaitingAt) != 0
                && INT.compareAndSet(segment, writerWaitingAt, 1, 0);
    }

    /** Consumer: whether the next record is not yet published (its length word still reads zero). */
    public boolean isEmpty() {
        long head = (long) LONG.get(segment, headAt);
        return (int) INT.getAcquire(segment, data + (head & mask) + LENGTH_OFFSET) == 0;
    }

    // ---------------------------------------------------------------- consumer

    /**
     * Hands up to {@code limit} records to {@code handler}, in order; returns how many (padding and fillers not
     * counted; a filler is followed by a record, so they add at most one step per record). A record
     * is there when the length word at the head reads non-zero (acquire); the zero word the producer left after the
     * last published record ends the pass.
     */
    public int read(RecordHandler handler, int limit) {
        long head = (long) LONG.get(segment, headAt); // only we write it (but the file is the other process's too)
        if ((head & (RecordDescriptor.ALIGNMENT - 1)) != 0) {
            // Records start aligned: a head that is not was written by someone else (found by fuzzing: the reads
            // below would throw IllegalArgumentException on an unaligned word).
            throw new RingCorruptedException(file + ": head " + head + " is not " + RecordDescriptor.ALIGNMENT
                    + "-byte aligned");
        }
        long start = head;
        int count = 0;
        boolean afterFiller = false;
        try {
            while (count < limit) {
                int index = (int) (head & mask);
                long at = data + index;
                int length = (int) INT.getAcquire(segment, at + LENGTH_OFFSET);
                if (length == 0) {
                    break;
                }
                int type = (int) INT.get(segment, at + TYPE_OFFSET);
                boolean skipped = type == PADDING_TYPE || type == FILLER_TYPE;
                int recordLength = skipped ? length : aligned(length);
                // The other process writes these words: check them before trusting them with an offset. Padding
                // fills exactly the rest of the record area, a filler less than an alignment in whole words and a
                // record follows it (so fillers add at most one step per record to a pass); and one
                // pass cannot read more than the ring holds (the producer reuses nothing before the head moves, at
                // the pass's end): a ring scribbled full of records would otherwise be read round and round (found by
                // fuzzing: paddings, which the limit does not count, kept a pass going for ever).
                if ((afterFiller && skipped) || (type == PADDING_TYPE ? length != capacity - index
                        : type == FILLER_TYPE ? length < HEADER_LENGTH || length >= PAYLOAD_ALIGNMENT
                                || (length & (ALIGNMENT - 1)) != 0 || length > capacity - index
                        : length < HEADER_LENGTH || length > maxRecord || recordLength > capacity - index)
                        || head + recordLength - start > capacity) {
                    throw new RingCorruptedException(file + ": record at position " + head + " has length " + length
                            + " (type " + type + "), not possible in a ring of " + capacity + " bytes with "
                            + (head - start) + " read in this pass");
                }
                afterFiller = type == FILLER_TYPE;
                if (!skipped) {
                    count++;
                    handler.onRecord(type, segment, at + HEADER_LENGTH, length - HEADER_LENGTH);
                }
                head += recordLength;
            }
        } finally {
            if (head != start) {
                LONG.setRelease(segment, headAt, head); // the producer may reuse what we read only after this
            }
        }
        return count;
    }

    /** Producer: bytes appended and not yet published (a diagnostic: the consumer cannot see them). */
    public long unpublished() {
        return tail - publishedTail;
    }

    /** Consumer: the length word at the head, zero while no record is visible there (a diagnostic). */
    public int lengthAtHead() {
        long head = (long) LONG.getAcquire(segment, headAt);
        return (int) INT.getAcquire(segment, data + (head & mask) + LENGTH_OFFSET);
    }

    /** Unmaps; the file stays (the owner deletes it). */
    @Override
    public void close() {
        arena.close();
    }
}
