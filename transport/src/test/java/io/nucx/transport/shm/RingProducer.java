package io.nucx.transport.shm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

/**
 * The producer process of {@link SpscRingTest}: opens the ring file and writes {@code count} records, record i of
 * {@link SpscRingTest#sizeOf(long)} bytes starting with the long i, spinning while the ring is full. Exits 0 when all
 * were written, 2 if it ran past its deadline ({@link #DEADLINE_SECONDS}).
 */
public final class RingProducer {

    /** How long the producer tries before it gives up (exit 2). */
    static final long DEADLINE_SECONDS = 150;

    public static void main(String[] args) throws Exception {
        long count = Long.parseLong(args[1]);
        long deadline = System.nanoTime() + DEADLINE_SECONDS * 1_000_000_000L;
        try (SpscRing ring = SpscRing.open(Path.of(args[0])); Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(ring.maxPayload());
            for (long i = 0; i < count; i++) {
                int size = SpscRingTest.sizeOf(i);
                MemorySegment payload = buf.asSlice(0, size);
                SpscRingTest.fill(payload, i);
                while (!ring.write(1, payload)) {
                    if (System.nanoTime() > deadline) {
                        System.exit(2);
                    }
                    Thread.yield();
                }
            }
        }
        System.exit(0);
    }
}
