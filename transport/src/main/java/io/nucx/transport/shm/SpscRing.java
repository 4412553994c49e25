package io.nucx.transport.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

import static io.nucx.transport.shm.RecordDescriptor.HEADER_LENGTH;
import static io.nucx.transport.shm.RecordDescriptor.LENGTH_OFFSET;
import static io.nucx.transport.shm.RecordDescriptor.PADDING_TYPE;
import static io.nucx.transport.shm.RecordDescriptor.TYPE_OFFSET;
import static io.nucx.transport.shm.RecordDescriptor.aligned;

/**
 * A single-producer single-consumer ring of records in a file mapped into two processes ({@link RingDescriptor},
 * {@link RecordDescriptor}); Agrona's {@code OneToOneRingBuffer} design over an FFM {@link MemorySegment}.
 *
 * <p>Memory ordering: the producer writes a record's type and payload with plain stores, then its length with a
 * release store, then the tail with a release store; the consumer reads the length with an acquire load, so the
 * payload is visible once the length is. The consumer zeroes what it consumed (so a zero length means "not written
 * yet" when the ring comes round again) before it publishes the head with a release store; the producer reads the
 * head with an acquire load only when its cached head says the ring looks full.
 *
 * <p>Backpressure is a return value: {@link #write} returns false when the ring is full.
 */
public final class SpscRing implements AutoCloseable {

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    /** Receives each record; the payload segment is valid only during the call. */
    @FunctionalInterface
    public interface RecordHandler {
        void onRecord(int type, MemorySegment payload);
    }

    private final Path file;
    private final Arena arena;
    private final MemorySegment segment;
    private final long data;
    private final int capacity;
    private final int mask;
    private final long tailAt;
    private final long headAt;
    private final int maxRecord;
    /** Producer side: the last head it read. */
    private long headCache;

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
    }

    /** Creates the file (mode 0600, refused if it exists) and maps a fresh ring of {@code capacity} bytes. */
    public static SpscRing create(Path file, int capacity) throws IOException {
        long length = RingDescriptor.fileLength(capacity);
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (FileAlreadyExistsException e) {
            throw new FileAlreadyExistsException(file.toString(), null, "a ring file already exists there");
        }
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, length, arena);
            seg.fill((byte) 0);
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

    /** Maps an existing ring, refusing a file that is not one or is of another version. */
    public static SpscRing open(Path file) throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
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
        if (type == PADDING_TYPE) {
            throw new IllegalArgumentException("record type " + PADDING_TYPE + " is reserved for padding");
        }
        long length = payload.byteSize() + HEADER_LENGTH;
        if (length > maxRecord) {
            throw new IllegalArgumentException("record of " + payload.byteSize() + " bytes exceeds the ring's "
                    + "largest payload " + maxPayload());
        }
        int recordLength = aligned((int) length);
        long tail = (long) LONG.get(segment, tailAt); // only we write it
        int index = (int) (tail & mask);
        int toEnd = capacity - index;
        int padding = recordLength > toEnd ? toEnd : 0;
        long needed = (long) padding + recordLength;
        if (needed > capacity - (tail - headCache)) {
            headCache = (long) LONG.getAcquire(segment, headAt);
            if (needed > capacity - (tail - headCache)) {
                return false;
            }
        }
        if (padding > 0) {
            INT.set(segment, data + index + TYPE_OFFSET, PADDING_TYPE);
            INT.setRelease(segment, data + index + LENGTH_OFFSET, padding);
            index = 0;
        }
        long at = data + index;
        INT.set(segment, at + TYPE_OFFSET, type);
        MemorySegment.copy(payload, 0, segment, at + HEADER_LENGTH, payload.byteSize());
        INT.setRelease(segment, at + LENGTH_OFFSET, (int) length);
        LONG.setRelease(segment, tailAt, tail + needed);
        return true;
    }

    // ---------------------------------------------------------------- consumer

    /** Hands up to {@code limit} records to {@code handler}, in order; returns how many (padding not counted). */
    public int read(RecordHandler handler, int limit) {
        long head = (long) LONG.get(segment, headAt); // only we write it
        long start = head;
        int count = 0;
        try {
            // Never go a full lap in one call: the record at start + capacity is the one this call began with,
            // not yet zeroed.
            while (count < limit && head - start < capacity) {
                long at = data + (head & mask);
                int length = (int) INT.getAcquire(segment, at + LENGTH_OFFSET);
                if (length == 0) {
                    break;
                }
                int type = (int) INT.get(segment, at + TYPE_OFFSET);
                int recordLength = type == PADDING_TYPE ? length : aligned(length);
                if (type != PADDING_TYPE) {
                    count++;
                    handler.onRecord(type, segment.asSlice(at + HEADER_LENGTH, length - HEADER_LENGTH));
                }
                head += recordLength;
            }
        } finally {
            if (head != start) {
                // Zero what was consumed, then publish the head: the producer may reuse it only after this.
                long from = start & mask;
                long consumed = head - start;
                long first = Math.min(consumed, capacity - from);
                segment.asSlice(data + from, first).fill((byte) 0);
                if (consumed > first) {
                    segment.asSlice(data, consumed - first).fill((byte) 0);
                }
                LONG.setRelease(segment, headAt, head);
            }
        }
        return count;
    }

    /** Unmaps; the file stays (the owner deletes it). */
    @Override
    public void close() {
        arena.close();
    }
}
