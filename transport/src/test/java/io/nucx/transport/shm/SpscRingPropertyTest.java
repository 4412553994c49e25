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
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Properties of the shared-memory ring's wrap-around arithmetic, over real ring files of 1 to 8 KiB
 * ({@link RandomCases}, 60 cases of 400 steps): a producer mapping writes bursts of records of random sizes (0 to the
 * largest payload, half of them chosen to end exactly at the wrap, just before or just after it), as one segment or
 * as two buffers, heap or direct; a consumer mapping of the same file reads with random limits. Every record comes
 * back intact, with its type, in order and in one piece inside the record area; head and tail stay 8-byte aligned and
 * at most a capacity apart; a write is refused exactly when the record, the wrap's padding and the header word after them do not fit, as
 * {@link SpscRing#hasRoomFor} said beforehand, and a refusal changes nothing.
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
            return new Run(1024 << r.nextInt(4), STEPS, r.split());
        }

        @Override
        public String toString() {
            return "ring of " + capacity + " bytes, " + steps + " steps";
        }
    }

    private record Record(int type, byte[] payload) {
    }

    @Test
    void recordsSurviveAnyWrapInOrderAndAFullRingRefusesCleanly() throws Exception {
        int[] index = {0};
        long[] seen = new long[2]; // runs that filled the ring, runs that wrapped at least 4 times
        RandomCases.forAll("ring wrap-around", CASES, Run::draw, run -> {
            long[] s = check(run, dir.resolve("r" + index[0]++));
            seen[0] += s[0] > 0 ? 1 : 0;
            seen[1] += s[1] >= 4 ? 1 : 0;
        });
        // The generator must reach what the properties are about, or they prove little.
        assertTrue(seen[0] > index[0] / 2, () -> seen[0] + " of " + index[0] + " runs filled the ring");
        assertTrue(seen[1] > index[0] / 2, () -> seen[1] + " of " + index[0] + " runs wrapped 4 times");
    }

    /** Runs the steps; returns {refused writes, laps}. */
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
            for (int step = 0; step < run.steps(); step++) {
                if (r.nextInt(3) != 0) {
                    int burst = 1 + r.nextInt(8);
                    for (int k = 0; k < burst; k++) {
                        Record rec = record(r, producer.maxPayload(), at.tail(), capacity);
                        long tail = at.tail();
                        long head = at.head();
                        int recordLength = aligned(rec.payload().length + HEADER_LENGTH);
                        int toEnd = capacity - (int) (tail & (capacity - 1));
                        long needed = recordLength + (recordLength > toEnd ? toEnd : 0);
                        // the producer keeps one header word free beyond the record (the zero the consumer stops at)
                        boolean fits = needed + HEADER_LENGTH <= capacity - (tail - head);
                        boolean room = producer.hasRoomFor(rec.payload().length);
                        boolean took = write(producer, rec, r, buffers);
                        log.add(() -> "write type " + rec.type() + ", " + rec.payload().length + " bytes at tail "
                                + tail + " (" + toEnd + " to the end), head " + head + ": "
                                + (took ? "taken" : "refused"));
                        assertEquals(fits, room, () -> "hasRoomFor disagrees with the free space: " + log);
                        assertEquals(fits, took, () -> "write disagrees with the free space: " + log);
                        if (took) {
                            pending.add(rec);
                            written++;
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
            return new long[] {refusals, at.tail() / capacity};
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
    private static Record record(SplittableRandom r, int maxPayload, long tail, int capacity) {
        int type;
        do {
            type = r.nextInt();
        } while (type == RecordDescriptor.PADDING_TYPE);
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
        return new Record(type, payload);
    }

    /** Writes as one segment, or as two buffers, heap or direct, split anywhere. */
    private static boolean write(SpscRing ring, Record rec, SplittableRandom r, ByteBuf[] buffers) {
        byte[] p = rec.payload();
        if (r.nextBoolean()) {
            return ring.write(rec.type(), MemorySegment.ofArray(p));
        }
        int cut = r.nextInt(p.length + 1);
        ByteBuf first = fill(buffers[r.nextInt(2)], r, p, 0, cut);
        ByteBuf second = fill(buffers[2 + r.nextInt(2)], r, p, cut, p.length);
        return ring.write(rec.type(), first, second);
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
