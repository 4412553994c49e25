package io.nucx.transport.shm;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.IllegalReferenceCountException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shared-memory ring: records in order, padding at the wrap, full means false, files checked; across JVMs. */
@Timeout(240)
class SpscRingTest {

    private Path dir;

    @BeforeEach
    void makeDir() throws IOException {
        dir = ringDirectory("nucx-ring-test");
    }

    @AfterEach
    void removeDir() throws IOException {
        deleteRingDirectory(dir);
    }

    /** A fresh directory for ring files, in /dev/shm where there is one. */
    static Path ringDirectory(String prefix) throws IOException {
        Path shm = Path.of("/dev/shm");
        return Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")),
                prefix);
    }

    /** Deletes {@code dir} and the ring files in it. */
    static void deleteRingDirectory(Path dir) throws IOException {
        try (var files = Files.list(dir)) {
            for (Path p : files.toList()) {
                Files.delete(p);
            }
        }
        Files.delete(dir);
    }

    /** Record i's payload length: 8 .. 1000 bytes, varied so records straddle the wrap at different points. */
    static int sizeOf(long i) {
        return 8 + (int) ((i * 7919) % 993);
    }

    static void fill(MemorySegment payload, long i) {
        payload.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, i);
        for (long k = 8; k < payload.byteSize(); k++) {
            payload.set(ValueLayout.JAVA_BYTE, k, (byte) (i + k));
        }
    }

    static String check(MemorySegment payload, long i) {
        if (payload.byteSize() != sizeOf(i)) {
            return "record " + i + " is " + payload.byteSize() + " bytes, expected " + sizeOf(i);
        }
        long seq = payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        if (seq != i) {
            return "record " + i + " carries sequence " + seq;
        }
        for (long k = 8; k < payload.byteSize(); k++) {
            if (payload.get(ValueLayout.JAVA_BYTE, k) != (byte) (i + k)) {
                return "record " + i + " byte " + k + " differs";
            }
        }
        return null;
    }

    @Test
    void recordsComeOutInOrderAcrossManyWrapsAndAFullRingRefusesWrites() throws Exception {
        try (SpscRing ring = SpscRing.create(dir.resolve("r"), 4096); Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(ring.maxPayload());
            long written = 0;
            long read = 0;
            boolean sawFull = false;
            List<String> errors = new ArrayList<>();
            while (read < 5000) {
                while (written < 5000) {
                    MemorySegment p = buf.asSlice(0, Math.min(sizeOf(written), ring.maxPayload()));
                    fill(p, written);
                    if (!ring.write(1, p)) {
                        sawFull = true;
                        break;
                    }
                    written++;
                }
                long[] next = {read};
                read += ring.read((type, seg, offset, length) -> {
                    MemorySegment payload = seg.asSlice(offset, length);
                    long i = next[0]++;
                    String e = payload.byteSize() == Math.min(sizeOf(i), ring.maxPayload())
                            && payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) == i ? null : "record " + i + " wrong";
                    if (e != null) {
                        errors.add(e);
                    }
                }, 7);
            }
            assertTrue(errors.isEmpty(), errors.toString());
            assertTrue(sawFull, "a 4 KiB ring must fill up");
            assertEquals(0, ring.size());
        }
    }

    @Test
    void aRecordThatCanNeverFitIsRefusedAndTypeMinusOneIsReserved() throws Exception {
        try (SpscRing ring = SpscRing.create(dir.resolve("r"), 4096); Arena arena = Arena.ofConfined()) {
            assertThrows(IllegalArgumentException.class, () -> ring.write(1, arena.allocate(ring.maxPayload() + 1)));
            assertThrows(IllegalArgumentException.class, () -> ring.write(-1, arena.allocate(8)));
            assertTrue(ring.write(1, arena.allocate(ring.maxPayload())));
        }
    }

    @Test
    void aLengthNoProducerWritesIsReportedNotFollowed() throws Exception {
        Path p = dir.resolve("corrupt");
        try (SpscRing ring = SpscRing.create(p, 4096); Arena arena = Arena.ofConfined()) {
            assertTrue(ring.write(1, arena.allocate(16)));
            // Another process scribbles over the first record's length word (the record area follows the header).
            try (FileChannel ch = FileChannel.open(p,
                    StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 1 << 20),
                        RingDescriptor.HEADER_LENGTH + RecordDescriptor.LENGTH_OFFSET);
            }
            RingCorruptedException e = assertThrows(RingCorruptedException.class,
                    () -> ring.read((type, seg, offset, length) -> { }, 10));
            assertTrue(e.getMessage().contains("length 1048576"), e.getMessage());
        }
    }

    /**
     * Found by fuzzing (TransportFuzzTestInputs/ringRecords/finding-unaligned-head): a padding record of an unaligned
     * length moved the head off alignment, and the next read threw IllegalArgumentException from the memory access;
     * an unaligned padding length or head is corruption, reported as such.
     */
    @Test
    void anUnalignedPaddingOrHeadIsReportedAsCorruption() throws Exception {
        Path p = dir.resolve("unaligned");
        try (SpscRing ring = SpscRing.create(p, 4096)) {
            try (FileChannel ch = FileChannel.open(p,
                    StandardOpenOption.WRITE)) {
                // a padding record of 9 bytes, then a tail of 16 (published, as a producer would)
                ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 9)
                        .putInt(4, RecordDescriptor.PADDING_TYPE), RingDescriptor.HEADER_LENGTH);
                ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 16),
                        RingDescriptor.HEADER_LENGTH + 4096 + RingDescriptor.TAIL_OFFSET);
            }
            RingCorruptedException e = assertThrows(RingCorruptedException.class,
                    () -> ring.read((type, segment, offset, length) -> { }, 10));
            assertTrue(e.getMessage().contains("length 9"), e.getMessage());
            try (FileChannel ch = FileChannel.open(p,
                    StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 3),
                        RingDescriptor.HEADER_LENGTH + 4096 + RingDescriptor.HEAD_OFFSET);
            }
            e = assertThrows(RingCorruptedException.class, () -> ring.read((type, segment, offset, length) -> { }, 10));
            assertTrue(e.getMessage().contains("head 3 is not 8-byte aligned"), e.getMessage());
        }
    }

    /**
     * A write whose copy throws (a released buffer) after its filler was written: the filler must neither keep the
     * batch's held-back first length (the next record's length would be overwritten with it at publish) nor be left
     * for the reader. The next record, with no filler, comes out intact.
     */
    @Test
    void aWriteWhoseCopyThrowsLeavesNothingForTheReader() throws Exception {
        Path p = dir.resolve("abandoned");
        ByteBuf payload = Unpooled.directBuffer(2048 + 64);
        try (SpscRing producer = SpscRing.create(p, 32768); SpscRing consumer = SpscRing.open(p)) {
            for (int shift = 0; shift < 64; shift += 8) { // some of these need a filler wherever the tail is
                ByteBuf released = Unpooled.directBuffer(8).writeLong(1);
                released.release();
                payload.clear().writeZero(shift).writeZero(2048).skipBytes(shift);
                long before = producer.size();
                assertThrows(IllegalReferenceCountException.class,
                        () -> producer.append(7, released, payload));
                assertEquals(before, producer.size(), "a failed write moved the tail");
                ByteBuf small = Unpooled.wrappedBuffer(new byte[] {(byte) shift});
                assertTrue(producer.write(8, Unpooled.EMPTY_BUFFER, small));
                List<String> seen = new ArrayList<>();
                assertEquals(1, consumer.read((type, seg, offset, length) -> seen.add(type + "/" + length + "/"
                        + seg.get(ValueLayout.JAVA_BYTE, offset)), 10), "shift " + shift + ": " + seen);
                assertEquals(List.of("8/1/" + shift), seen, "shift " + shift);
                assertTrue(consumer.isEmpty());
            }
        } finally {
            payload.release();
        }
    }

    /**
     * As above with the batch begun before the failed write (its first length held back) and the tail anywhere in the
     * ring: the failed write's padding or filler must not end the batch, and the records around it arrive in order.
     */
    @Test
    void aWriteWhoseCopyThrowsInsideABatchKeepsTheBatchsRecords() throws Exception {
        Path p = dir.resolve("abandoned-in-batch");
        ByteBuf payload = Unpooled.directBuffer(2048 + 64);
        try (SpscRing producer = SpscRing.create(p, 32768); SpscRing consumer = SpscRing.open(p)) {
            for (int round = 0; round < 96; round++) {
                // Moves the tail by a size that is no multiple of the payload alignment, to every part of the ring.
                assertTrue(producer.write(5, Unpooled.EMPTY_BUFFER,
                        Unpooled.wrappedBuffer(new byte[1 + round * 457 % 3000])));
                assertEquals(1, consumer.read((type, seg, offset, length) -> { }, 10));
                ByteBuf released = Unpooled.directBuffer(8).writeLong(1);
                released.release();
                int shift = round % 8 * 8;
                payload.clear().writeZero(shift).writeZero(2048).skipBytes(shift);
                assertTrue(producer.append(8, Unpooled.EMPTY_BUFFER,
                        Unpooled.wrappedBuffer(new byte[] {1})));
                assertThrows(IllegalReferenceCountException.class,
                        () -> producer.append(7, released, payload));
                assertTrue(producer.append(8, Unpooled.EMPTY_BUFFER,
                        Unpooled.wrappedBuffer(new byte[] {2})));
                assertTrue(producer.publish());
                List<String> seen = new ArrayList<>();
                consumer.read((type, seg, offset, length) -> seen.add(type + "/" + length + "/"
                        + seg.get(ValueLayout.JAVA_BYTE, offset)), 10);
                assertEquals(List.of("8/1/1", "8/1/2"), seen, "round " + round);
                assertTrue(consumer.isEmpty(), "round " + round);
            }
        } finally {
            payload.release();
        }
    }

    /** A filler shifts one record by less than a payload alignment, in whole words: any other is corruption. */
    @Test
    void aFillerOfAnAlignmentOrMoreOrOffTheWordGridIsReportedAsCorruption() throws Exception {
        for (int length : new int[] {0, 4, 12, RecordDescriptor.PAYLOAD_ALIGNMENT, 4096}) {
            Path p = dir.resolve("filler-" + length);
            try (SpscRing ring = SpscRing.create(p, 4096)) {
                try (FileChannel ch = FileChannel.open(p,
                        StandardOpenOption.WRITE)) {
                    ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN)
                            .putInt(0, length).putInt(4, RecordDescriptor.FILLER_TYPE), RingDescriptor.HEADER_LENGTH);
                }
                if (length == 0) {
                    assertEquals(0, ring.read((type, segment, offset, n) -> { }, 10), "a zero length is no record");
                    continue;
                }
                RingCorruptedException e = assertThrows(RingCorruptedException.class,
                        () -> ring.read((type, segment, offset, n) -> { }, 10), "filler of " + length);
                assertTrue(e.getMessage().contains("length " + length + " (type -2)"), e.getMessage());
            }
        }
    }

    /**
     * The consumer polls the length word at its head: appended records stay out of its sight until {@link
     * SpscRing#publish} (the batch's first length is held back), then the whole batch is there at once; a batch that
     * begins with the wrap's padding as well; and the word after the last record reads zero, so a later lap's stale
     * bytes are never taken for a record.
     */
    @Test
    void appendedRecordsAreSeenOnlyOncePublishedAndTheWholeBatchAtOnce() throws Exception {
        Path p = dir.resolve("batches");
        try (SpscRing producer = SpscRing.create(p, 1024); SpscRing consumer = SpscRing.open(p)) {
            ByteBuf payload = Unpooled.wrappedBuffer(new byte[100]);
            List<Integer> seen = new ArrayList<>();
            SpscRing.RecordHandler collect = (type, seg, offset, length) -> seen.add(type);
            for (int lap = 0; lap < 20; lap++) { // 3 x 120 bytes a lap: every lap wraps somewhere else
                for (int i = 1; i <= 3; i++) {
                    payload.setByte(0, lap * 3 + i); // old payload bytes differ from lap to lap
                    assertTrue(producer.append(lap * 3 + i, 0L, payload), "lap " + lap + " record " + i);
                    assertTrue(consumer.isEmpty(), "lap " + lap + ": record " + i + " visible before publish");
                    assertEquals(0, consumer.read(collect, 10), "lap " + lap + ": read before publish");
                }
                assertTrue(producer.publish());
                assertFalse(consumer.isEmpty());
                assertEquals(3, consumer.read(collect, 10), "lap " + lap);
                assertEquals(List.of(lap * 3 + 1, lap * 3 + 2, lap * 3 + 3), seen, "lap " + lap);
                seen.clear();
                assertTrue(consumer.isEmpty(), "lap " + lap + ": the word after the batch reads zero");
                assertEquals(0, consumer.read(collect, 10));
            }
        }
    }

    /**
     * Found by fuzzing the header-polling ring: a record area another process filled with records that never end (a
     * padding as long as the ring, or small records all round) was read round and round in one pass, paddings not
     * counting towards the limit. A pass reads at most what the ring holds, and padding fills exactly the rest of
     * the area, or the ring is reported corrupt.
     */
    @Test
    void aRecordAreaScribbledFullOfRecordsIsReportedNotReadRoundAndRound() throws Exception {
        Path p = dir.resolve("round");
        int capacity = 4096;
        try (SpscRing ring = SpscRing.create(p, capacity)) {
            ByteBuffer words = ByteBuffer.allocate(capacity).order(ByteOrder.LITTLE_ENDIAN);
            words.putInt(0, capacity).putInt(4, RecordDescriptor.PADDING_TYPE); // padding over the whole area
            write(p, words, RingDescriptor.HEADER_LENGTH);
            RingCorruptedException e = assertThrows(RingCorruptedException.class,
                    () -> ring.read((type, seg, offset, length) -> { }, Integer.MAX_VALUE));
            assertTrue(e.getMessage().contains("read in this pass"), e.getMessage());
            for (int at = 0; at < capacity; at += 16) { // 16-byte records of type 1, all round
                words.putInt(at, 16).putInt(at + 4, 1);
            }
            write(p, words, RingDescriptor.HEADER_LENGTH);
            int[] handed = {0};
            e = assertThrows(RingCorruptedException.class,
                    () -> ring.read((type, seg, offset, length) -> handed[0]++, Integer.MAX_VALUE));
            assertTrue(e.getMessage().contains("read in this pass"), e.getMessage());
            assertEquals(capacity / 16, handed[0], "records handed out before the pass went round");
        }
    }

    private static void write(Path p, ByteBuffer words, long at) throws IOException {
        try (FileChannel ch = FileChannel.open(p,
                StandardOpenOption.WRITE)) {
            ch.write(words.duplicate().clear(), at);
        }
    }

    @Test
    void theSleepAndWaitFlagsAreTakenOnce() throws Exception {
        try (SpscRing ring = SpscRing.create(dir.resolve("flags"), 4096)) {
            assertFalse(ring.takeConsumerSleeping());
            ring.markConsumerSleeping();
            assertTrue(ring.takeConsumerSleeping());
            assertFalse(ring.takeConsumerSleeping(), "one wake-up per sleep");
            assertFalse(ring.takeWriterWaiting());
            ring.markWriterWaiting();
            assertTrue(ring.takeWriterWaiting());
            assertFalse(ring.takeWriterWaiting());
            assertTrue(ring.isEmpty());
        }
    }

    @Test
    void aSideThatNeverParksSaysSoThroughTheFileAndThePeerStopsLookingForItsFlags() throws Exception {
        Path file = dir.resolve("polls");
        try (SpscRing producerView = SpscRing.create(file, 4096); SpscRing consumerView = SpscRing.open(file)) {
            consumerView.markConsumerSleeping();
            producerView.markWriterWaiting();
            consumerView.declareConsumerPolls(); // the other process's mapping of the same file
            assertFalse(producerView.takeConsumerSleeping(), "a consumer that polls is never woken");
            assertTrue(consumerView.takeWriterWaiting(), "the producer has not declared: its flag still counts");
            producerView.markWriterWaiting();
            producerView.declareProducerPolls();
            assertFalse(consumerView.takeWriterWaiting(), "a producer that polls is never woken");
        }
    }

    @Test
    void filesAreCreatedPrivateAndForeignOrDamagedFilesAreRefused() throws Exception {
        Path p = dir.resolve("r");
        try (SpscRing ring = SpscRing.create(p, 4096)) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
            assertThrows(FileAlreadyExistsException.class, () -> SpscRing.create(p, 4096));
        }
        Path junk = dir.resolve("junk");
        Files.write(junk, new byte[8192]);
        IOException e = assertThrows(IOException.class, () -> SpscRing.open(junk));
        assertTrue(e.getMessage().contains("not a nucx ring"), e.getMessage());
        Path cut = dir.resolve("cut");
        Files.write(cut, Arrays.copyOf(Files.readAllBytes(p), 5000));
        IOException e2 = assertThrows(IOException.class, () -> SpscRing.open(cut));
        assertTrue(e2.getMessage().contains("needs"), e2.getMessage());
    }

    /**
     * The ring as a lane drives it, producer and consumer on two threads: records appended in batches of 1 to 8 and
     * published at a batch's end or when one does not fit (a writer must publish before it waits), a producer that then
     * waits for {@link SpscRing#hasRoomFor} as a blocked lane's poll does, payloads of 1 KiB to the ring's largest from
     * a direct buffer at eight offsets modulo 32 (so fillers of every size and paddings come in every combination)
     * between small ones. Every record must arrive whole and in order, and {@code hasRoomFor}'s yes must always be
     * right: the lane resumes its writes on it, and a no while the ring has room would leave them waiting for ever.
     */
    @Test
    void twoThreadsWithPlacedRecordsInBatchesLoseNothingAndRoomIsNeverMisjudged() throws Exception {
        Path p = dir.resolve("batches");
        int records = 150_000;
        byte[] pattern = new byte[16384];
        new SplittableRandom(7).nextBytes(pattern);
        MemorySegment expectedBytes = MemorySegment.ofArray(pattern);
        ByteBuf source = Unpooled.directBuffer(8192 + 64);
        ByteBuf header = Unpooled.directBuffer(8);
        assertTrue(source.hasMemoryAddress(), "a payload without an address is never placed: no fillers to test");
        AtomicReference<String> failure = new AtomicReference<>();
        try (SpscRing producer = SpscRing.create(p, 64 * 1024); SpscRing consumer = SpscRing.open(p)) {
            int largest = producer.maxPayload() - 8;
            Thread writer = new Thread(() -> {
                try {
                    writeInBatches(producer, records, largest, pattern, source, header, failure);
                } catch (Throwable t) {
                    failure.compareAndSet(null, "the writer threw " + t);
                }
            }, "ring-writer");
            writer.start();
            try {
                long[] next = {0};
                long lastProgress = System.nanoTime();
                while (next[0] < records && failure.get() == null) {
                    int n = consumer.read((type, seg, offset, length) -> {
                        long i = next[0]++;
                        int expected = payloadLength((int) i, largest);
                        long seq = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
                        if (type != 3 || length != 8 + expected || seq != i
                                || MemorySegment.mismatch(seg, offset + 8, offset + 8 + expected, expectedBytes,
                                i % 4096, i % 4096 + expected) >= 0) {
                            failure.compareAndSet(null, "record " + i + ": type " + type + ", " + length
                                    + " B, sequence " + seq);
                        }
                    }, 64);
                    long now = System.nanoTime();
                    if (n > 0) {
                        lastProgress = now;
                    } else if (now - lastProgress > TimeUnit.SECONDS.toNanos(40)) {
                        failure.compareAndSet(null, "nothing to read for 40 s after " + next[0] + " records, the ring "
                                + "holding " + consumer.size() + " B unread (writer "
                                + (writer.isAlive() ? "running" : "ended") + ")");
                    } else {
                        Thread.yield();
                    }
                }
                assertEquals(null, failure.get());
                assertEquals(records, next[0]);
                assertTrue(consumer.isEmpty());
            } finally {
                failure.compareAndSet(null, "the reader stopped"); // the writer stops too, before the rings close
                writer.join(TimeUnit.SECONDS.toMillis(60));
                assertFalse(writer.isAlive(), "the writer did not stop");
            }
        } finally {
            source.release();
            header.release();
        }
    }

    /** The writer of {@link #twoThreadsWithPlacedRecordsInBatchesLoseNothingAndRoomIsNeverMisjudged}. */
    private static void writeInBatches(SpscRing producer, int records, int largest, byte[] pattern,
                                       ByteBuf source, ByteBuf header,
                                       AtomicReference<String> failure) {
        SplittableRandom random = new SplittableRandom(42);
        int inBatch = 0;
        int batch = 1;
        for (int i = 0; i < records && failure.get() == null; ) {
            int length = payloadLength(i, largest);
            source.clear().writeZero(i % 32).writeBytes(pattern, i % 4096, length).skipBytes(i % 32);
            header.clear().writeLongLE(i);
            if (producer.append(3, header, source)) {
                i++;
                if (++inBatch == batch) {
                    producer.publish();
                    inBatch = 0;
                    batch = 1 + random.nextInt(8);
                }
                continue;
            }
            producer.publish();
            inBatch = 0;
            long since = System.nanoTime();
            while (!producer.hasRoomFor(8 + length)) {
                if (failure.get() != null) {
                    return;
                }
                if (System.nanoTime() - since > TimeUnit.SECONDS.toNanos(30)) {
                    failure.compareAndSet(null, "record " + i + " of " + length + " B waited 30 s for room, the "
                            + "ring holding " + producer.size() + " B unread");
                    return;
                }
                Thread.onSpinWait();
            }
            if (!producer.append(3, header.readerIndex(0), source)) {
                failure.compareAndSet(null, "record " + i + " of " + length + " B did not fit after hasRoomFor said "
                        + "it would");
                return;
            }
            i++;
            producer.publish();
        }
        producer.publish();
    }

    /** Mostly small records, every fourth from 1 KiB up to {@code largest}, sizes off the alignments. */
    private static int payloadLength(int i, int largest) {
        return (int) (i % 4 != 3 ? 1 + i * 7919L % 900 : Math.min(largest, 1024 + i * 104_729L % 8000));
    }

    @Test
    void anotherProcessWritesManyRecordsAndEveryOneArrivesIntactInOrder() throws Exception {
        long count = 200_000; // wraps the 64 KiB ring thousands of times; more only costs time on a loaded machine
        Path p = dir.resolve("xproc");
        try (SpscRing ring = SpscRing.create(p, 64 * 1024)) {
            String java = ProcessHandle.current().info().command().orElseThrow();
            Process producer = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path"), RingProducer.class.getName(), p.toString(),
                    Long.toString(count))).inheritIO().start();
            long[] next = {0};
            String[] error = {null};
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(RingProducer.DEADLINE_SECONDS + 30);
            while (next[0] < count && error[0] == null) {
                int n = ring.read((type, seg, offset, length) -> {
                    MemorySegment payload = seg.asSlice(offset, length);
                    if (error[0] == null) {
                        error[0] = check(payload, next[0]);
                    }
                    next[0]++;
                }, 256);
                if (n == 0) {
                    assertTrue(System.nanoTime() < deadline, "stalled after " + next[0] + " records");
                    assertFalse(!producer.isAlive() && producer.exitValue() != 0 && ring.size() == 0,
                            "producer died with " + (producer.isAlive() ? "-" : producer.exitValue()));
                    Thread.yield(); // two spinning processes on a 2-core machine: let the producer run
                }
            }
            assertEquals(null, error[0]);
            assertEquals(count, next[0]);
            assertTrue(producer.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, producer.exitValue());
        }
    }
}
