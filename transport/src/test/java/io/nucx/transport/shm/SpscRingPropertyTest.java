package io.nucx.transport.shm;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.nucx.transport.testing.RandomCases;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import static io.nucx.transport.shm.RecordDescriptor.ALIGNMENT;
import static io.nucx.transport.shm.RecordDescriptor.HEADER_LENGTH;
import static io.nucx.transport.shm.RecordDescriptor.PAYLOAD_ALIGNMENT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Properties of the shared-memory ring's wrap-around arithmetic, over real ring files of 1 to 32 KiB
 * ({@link RandomCases}, 60 cases of 400 steps): a producer mapping writes bursts of records of random sizes (0 to the
 * largest payload, half of them chosen to end exactly at the wrap, just before or just after it), as one segment or
 * as two buffers, heap or direct; a consumer mapping of the same file reads with random limits. Every record comes
 * back intact, with its type, in order and in one piece inside the record area; a direct second buffer of
 * {@link SpscRing#ALIGN_PAYLOAD_FROM} bytes or more lands at most 7 bytes below its own place modulo
 * {@link RecordDescriptor#PAYLOAD_ALIGNMENT} (behind a filler); head and tail stay 8-byte aligned and at most a
 * capacity apart; a write is refused exactly when the record, its filler, the wrap's padding and the header word
 * after them do not fit, as {@link SpscRing#hasRoomFor} said beforehand (for a record that may be placed, a yes is
 * never wrong), and a refusal changes nothing.
 */
class SpscRingPropertyTest {

    private static final int CASES = 60;
    private static final int STEPS = 400;

    private Path dir;

    @BeforeEach
    void makeDir() throws IOException {
        dir = SpscRingTest.ringDirectory("nucx-ring-prop");
    }

    @AfterEach
    void removeDir() throws IOException {
        SpscRingTest.deleteRingDirectory(dir);
    }

    /** One run: a ring capacity and the random stream its steps draw from. */
    record Run(int capacity, long steps, SplittableRandom random) {
        static Run draw(SplittableRandom r) {
            return new Run(1024 << r.nextInt(6), STEPS, r.split());
        }

        @Override
        public String toString() {
            return "ring of " + capacity + " bytes, " + steps + " steps";
        }
    }

    /**
     * A record to write and how: {@code cut} < 0 as one segment, else as two buffers split there (reused by the next
     * record: written at once). {@code secondAt}: the second buffer's bytes' address, or -1 when it is not placed;
     * {@code placement}: where its payload should begin modulo the payload alignment, or -1 (SpscRing.placement).
     */
    private record Record(int type, byte[] payload, int cut, ByteBuf first, ByteBuf second, long secondAt,
                          long placement) {

        static Record of(int type, byte[] payload, int cut, ByteBuf first, ByteBuf second) {
            boolean placed = second.hasMemoryAddress() && second.readableBytes() >= SpscRing.ALIGN_PAYLOAD_FROM;
            long at = placed ? second.memoryAddress() + second.readerIndex() : -1;
            long placement = placed ? (at - cut) & (PAYLOAD_ALIGNMENT - 1) : -1;
            return new Record(type, payload, cut, first, second, at, placement);
        }

        /** The filler before it when its header is at {@code index} of the record area (mappings are page-aligned). */
        int filler(int index) {
            long placement = placement();
            return placement < 0 ? 0 : (int) ((placement - (RingDescriptor.HEADER_LENGTH + index + HEADER_LENGTH))
                    & (PAYLOAD_ALIGNMENT - 1)) & -ALIGNMENT;
        }
    }

    @Test
    void recordsSurviveAnyWrapInOrderAndAFullRingRefusesCleanly() throws Exception {
        int[] index = {0};
        long[] seen = new long[4]; // runs that filled the ring, wrapped 4 times, wrote a filler; could place one
        RandomCases.forAll("ring wrap-around", CASES, Run::draw, run -> {
            long[] s = check(run, dir.resolve("r" + index[0]++));
            seen[0] += s[0] > 0 ? 1 : 0;
            seen[1] += s[1] >= 4 ? 1 : 0;
            seen[2] += s[2] > 0 ? 1 : 0;
            seen[3] += run.capacity() / 8 - HEADER_LENGTH >= SpscRing.ALIGN_PAYLOAD_FROM ? 1 : 0;
        });
        // The generator must reach what the properties are about, or they prove little.
        assertTrue(seen[0] > index[0] / 2, () -> seen[0] + " of " + index[0] + " runs filled the ring");
        assertTrue(seen[1] > index[0] / 2, () -> seen[1] + " of " + index[0] + " runs wrapped 4 times");
        assertTrue(seen[3] > 0 && seen[2] > seen[3] / 2, () -> seen[2] + " of " + seen[3] + " runs whose ring holds "
                + "records of " + SpscRing.ALIGN_PAYLOAD_FROM + " bytes placed a payload behind a filler");
    }

    /** Runs the steps; returns {refused writes, laps, fillers written}. */
    private static long[] check(Run run, Path file) throws Exception {
        SplittableRandom r = run.random();
        int capacity = run.capacity();
        ByteBuf[] buffers = null;
        try (SpscRing producer = SpscRing.create(file, capacity); SpscRing consumer = SpscRing.open(file);
             Arena arena = Arena.ofConfined()) {
            buffers = buffers(producer.maxPayload());
            MemorySegment counters;
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                counters = ch.map(FileChannel.MapMode.READ_ONLY, RingDescriptor.HEADER_LENGTH + capacity,
                        RingDescriptor.TRAILER_LENGTH, arena);
            }
            Positions at = new Positions(counters, capacity);
            ArrayDeque<Record> pending = new ArrayDeque<>();
            Steps log = new Steps();
            long written = 0;
            long read = 0;
            int refusals = 0;
            int fillers = 0;
            for (int step = 0; step < run.steps(); step++) {
                if (r.nextInt(3) != 0) {
                    int burst = 1 + r.nextInt(8);
                    for (int k = 0; k < burst; k++) {
                        Record rec = record(r, producer.maxPayload(), at.tail(), capacity, buffers);
                        long tail = at.tail();
                        long head = at.head();
                        int recordLength = aligned(rec.payload().length + HEADER_LENGTH);
                        int index = (int) (tail & (capacity - 1));
                        int toEnd = capacity - index;
                        boolean wraps = rec.filler(index) + recordLength > toEnd;
                        int filler = rec.filler(wraps ? 0 : index);
                        long needed = (wraps ? toEnd : 0) + filler + recordLength;
                        // the producer keeps one header word free beyond the record (the zero the consumer stops at)
                        boolean fits = needed + HEADER_LENGTH <= capacity - (tail - head);
                        boolean room = producer.hasRoomFor(rec.payload().length);
                        boolean took = write(producer, rec);
                        log.add(() -> "write type " + rec.type() + ", " + rec.payload().length + " bytes (cut "
                                + rec.cut() + ", placement " + rec.placement() + ") at tail " + tail + " (" + toEnd
                                + " to the end), head " + head + ": " + (took ? "taken" : "refused"));
                        if (rec.payload().length >= SpscRing.ALIGN_PAYLOAD_FROM) {
                            // counted with the largest filler: a yes never wrong, a no at most 24 bytes early
                            int worst = recordLength + PAYLOAD_ALIGNMENT - ALIGNMENT;
                            long neededWorst = worst > toEnd ? toEnd + worst : worst;
                            assertEquals(neededWorst + HEADER_LENGTH <= capacity - (tail - head), room,
                                    () -> "hasRoomFor is not the room for the record with the largest filler: " + log);
                            assertTrue(fits || !room, () -> "hasRoomFor said yes to a record that does not fit: "
                                    + log);
                        } else {
                            assertEquals(fits, room, () -> "hasRoomFor disagrees with the free space: " + log);
                        }
                        assertEquals(fits, took, () -> "write disagrees with the free space: " + log);
                        if (took) {
                            pending.add(rec);
                            written++;
                            fillers += filler > 0 ? 1 : 0;
                            assertEquals(tail + needed, at.tail(), () -> "tail moved by other than the record and "
                                    + "its padding: " + log);
                        } else {
                            refusals++;
                            assertEquals(tail, at.tail(), () -> "a refused write moved the tail: " + log);
                            assertEquals(head, at.head(), () -> "a refused write moved the head: " + log);
                            break;
                        }
                        at.check(log);
                    }
                } else {
                    int limit = r.nextInt(4) == 0 ? Integer.MAX_VALUE : 1 + r.nextInt(6);
                    int expected = Math.min(limit, pending.size());
                    int[] got = {0};
                    int n = consumer.read((type, segment, offset, length) -> {
                        got[0]++;
                        Record want = pending.poll();
                        assertTrue(want != null, () -> "a record nobody wrote: " + log);
                        assertTrue(offset >= RingDescriptor.HEADER_LENGTH + HEADER_LENGTH
                                && offset + length <= RingDescriptor.HEADER_LENGTH + capacity,
                                () -> "record at " + offset + "+" + length + " is not in one piece in the record "
                                        + "area: " + log);
                        assertEquals(want.type(), type, () -> "type: " + log);
                        byte[] payload = new byte[length];
                        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, offset, payload, 0, length);
                        assertArrayEquals(want.payload(), payload, () -> "payload of a " + want.payload().length
                                + "-byte record: " + log);
                        if (want.placement() >= 0) {
                            long off = (want.secondAt() - (segment.address() + offset + want.cut()))
                                    & (PAYLOAD_ALIGNMENT - 1);
                            assertTrue(off < ALIGNMENT, () -> "a placed payload lies " + off + " bytes below its "
                                    + "source's place modulo " + PAYLOAD_ALIGNMENT + ": " + log);
                        }
                    }, limit);
                    log.add(() -> "read up to " + limit + ": " + n);
                    assertEquals(expected, n, () -> "read handed over other than min(limit, written - read): " + log);
                    assertEquals(n, got[0]);
                    read += n;
                    at.check(log);
                }
            }
            int left = pending.size();
            assertEquals(left, consumer.read((type, segment, offset, length) -> pending.poll(), Integer.MAX_VALUE),
                    () -> "the last read: " + log);
            assertEquals(written, read + left);
            assertEquals(0, producer.size());
            assertTrue(consumer.isEmpty());
            return new long[] {refusals, at.tail() / capacity, fillers};
        } finally {
            if (buffers != null) {
                for (ByteBuf b : buffers) {
                    b.release();
                }
            }
        }
    }

    /**
     * A record of 0 to {@code maxPayload} bytes; half the time one that ends exactly at the wrap, or 1 to 8 bytes
     * before or after it (padding), when such a size exists.
     */
    private static Record record(SplittableRandom r, int maxPayload, long tail, int capacity, ByteBuf[] buffers) {
        int type;
        do {
            type = r.nextInt();
        } while (type == RecordDescriptor.PADDING_TYPE || type == RecordDescriptor.FILLER_TYPE);
        int length = r.nextInt(maxPayload + 1);
        if (r.nextBoolean()) {
            int toEnd = capacity - (int) (tail & (capacity - 1));
            int onWrap = toEnd - HEADER_LENGTH + (r.nextInt(3) - 1) * (1 + r.nextInt(ALIGNMENT));
            if (onWrap >= 0 && onWrap <= maxPayload) {
                length = onWrap;
            }
        }
        byte[] payload = new byte[length];
        r.nextBytes(payload);
        if (r.nextBoolean()) {
            return new Record(type, payload, -1, null, null, -1, -1);
        }
        // Two buffers, heap or direct, split anywhere; a small first part most often (a frame's header).
        int cut = r.nextBoolean() ? Math.min(length, 8 * r.nextInt(4)) : r.nextInt(length + 1);
        return Record.of(type, payload, cut, fill(buffers[r.nextInt(2)], r, payload, 0, cut),
                fill(buffers[2 + r.nextInt(2)], r, payload, cut, length));
    }

    /** Writes as one segment, or as its two buffers. */
    private static boolean write(SpscRing ring, Record rec) {
        return rec.cut() < 0 ? ring.write(rec.type(), MemorySegment.ofArray(rec.payload()))
                : ring.write(rec.type(), rec.first(), rec.second());
    }

    /**
     * Four buffers a run reuses: heap, direct, heap, direct. They wrap memory the test owns, which the leak detector
     * does not track: at its paranoid level it records a stack trace at every access of a buffer it tracks, and the
     * ring copies small direct payloads eight bytes at a time, which made those writes most of this test's time.
     */
    private static ByteBuf[] buffers(int maxPayload) {
        int size = maxPayload + ALIGNMENT;
        ByteBuf[] b = {Unpooled.wrappedBuffer(new byte[size]), Unpooled.wrappedBuffer(ByteBuffer.allocateDirect(size)),
                Unpooled.wrappedBuffer(new byte[size]), Unpooled.wrappedBuffer(ByteBuffer.allocateDirect(size))};
        for (int i = 0; i < b.length; i++) {
            assertEquals(i % 2 == 0, b[i].hasArray(), "both of the ring's copy paths");
        }
        return b;
    }

    /** {@code b} holding bytes {@code [from, to)} of {@code p}, at a random reader index. */
    private static ByteBuf fill(ByteBuf b, SplittableRandom r, byte[] p, int from, int to) {
        int skip = r.nextInt(ALIGNMENT);
        return b.clear().writeZero(skip).writeBytes(p, from, to - from).skipBytes(skip);
    }

    private static int aligned(int length) {
        return (length + ALIGNMENT - 1) & -ALIGNMENT;
    }

    /** The last steps, described only when a failure reports them. */
    private static final class Steps {
        private final ArrayDeque<Supplier<String>> last = new ArrayDeque<>();

        void add(Supplier<String> step) {
            last.add(step);
            if (last.size() > 12) {
                last.poll();
            }
        }

        @Override
        public String toString() {
            return last.stream().map(Supplier::get).collect(Collectors.joining("; ", "[", "]"));
        }
    }

    /** Head and tail as the file holds them. */
    private record Positions(MemorySegment counters, int capacity) {
        long tail() {
            return counters.get(ValueLayout.JAVA_LONG, RingDescriptor.TAIL_OFFSET);
        }

        long head() {
            return counters.get(ValueLayout.JAVA_LONG, RingDescriptor.HEAD_OFFSET);
        }

        void check(Steps log) {
            long tail = tail();
            long head = head();
            assertEquals(0, tail % ALIGNMENT, () -> "tail " + tail + " unaligned: " + log);
            assertEquals(0, head % ALIGNMENT, () -> "head " + head + " unaligned: " + log);
            assertTrue(tail - head >= 0 && tail - head <= capacity, () -> "head " + head + ", tail " + tail + ": "
                    + log);
        }
    }
}
