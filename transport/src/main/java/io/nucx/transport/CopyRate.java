package io.nucx.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Times copies of 64 KiB between two native buffers: a fragment's size, what the copy protocols move per call, and
 * cache-resident as a ring's or a pooled fragment's memory is. The memcpy figure of the cost model (shm's copy rate
 * at start, {@code nucx calibrate}'s memcpy bandwidth) comes from here.
 */
public final class CopyRate {

    /** Bytes of one copy. */
    public static final int BLOCK = 64 * 1024;
    /** Copies between two looks at the clock: reading it costs a fiftieth of a copy. */
    private static final int BATCH = 8;

    private CopyRate() {
    }

    /**
     * The rate of each of {@code windows} windows of at least {@code windowNanos}, in bytes/second, after
     * {@code warmWindows} untimed ones (the JIT compiles the loop, both buffers come into the cache).
     */
    public static double[] windows(int warmWindows, int windows, long windowNanos) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(BLOCK, 64);
            MemorySegment dst = arena.allocate(BLOCK, 64);
            src.fill((byte) 7);
            double[] rates = new double[windows];
            for (int w = -warmWindows; w < windows; w++) {
                long copies = 0;
                long start = System.nanoTime();
                long elapsed;
                do {
                    for (int i = 0; i < BATCH; i++) {
                        MemorySegment.copy(src, 0, dst, 0, BLOCK);
                    }
                    copies += BATCH;
                    elapsed = System.nanoTime() - start;
                } while (elapsed < windowNanos);
                if (w >= 0) {
                    rates[w] = copies * (double) BLOCK / (elapsed / 1e9);
                }
            }
            return rates;
        }
    }
}
