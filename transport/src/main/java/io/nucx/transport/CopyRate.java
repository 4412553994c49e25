package io.nucx.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Times copies of 64 KiB between two native buffers: a fragment's size, what the copy protocols move per call, and
 * cache-resident as a ring's or a pooled fragment's memory is, with the copy those protocols use
 * ({@link Buffers#copyMemory}). The memcpy figure of the cost model (shm's copy rate
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
            MemorySegment src = block(arena);
            MemorySegment dst = block(arena);
            double[] rates = new double[windows];
            for (int w = -warmWindows; w < windows; w++) {
                double rate = window(src, dst, windowNanos);
                if (w >= 0) {
                    rates[w] = rate;
                }
            }
            return rates;
        }
    }

    /** One copy of {@code bytes} from {@code src} to {@code dst} (native addresses), the way a transport moves them. */
    @FunctionalInterface
    public interface Copy {
        void copy(long src, long dst, long bytes) throws Exception;
    }

    /**
     * The rate of the copy itself, in bytes/second, without what a call costs: in each window of at least
     * {@code windowNanos}, batches of {@link #BLOCK}-byte copies alternate with batches of twice that size, and the
     * window's rate is what the larger copies took more ({@code BLOCK} bytes a copy, cache-resident like the smaller
     * ones); the median of {@code windows} windows after {@code skip} untimed ones. Measured so because the copy is a
     * downcall, slow until the JIT has compiled its loop, which takes a few milliseconds at start-up (3 to 5 here,
     * with two cores running the rest of it): the rate of whole copies in the first windows was 40-55 GB/s, then
     * 90-110, while the difference of two sizes was 125-135 from the tenth window on. Falls back to the best rate of
     * whole copies if the differences are lost in noise (not positive).
     */
    public static double marginal(int skip, int windows, long windowNanos) {
        try {
            return marginal(skip, windows, windowNanos, Buffers::copyMemory);
        } catch (Exception e) {
            throw new IllegalStateException("a native copy failed", e); // copyMemory throws nothing checked
        }
    }

    /**
     * {@link #marginal(int, int, long)} of another copy (a system call's, a hand-off between threads): what a byte of
     * {@code copy} costs, in bytes/second. A failure of {@code copy} ends the measurement with it.
     */
    public static double marginal(int skip, int windows, long windowNanos, Copy copy) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            long src = arena.allocate(2L * BLOCK, 64).fill((byte) 7).address();
            long dst = arena.allocate(2L * BLOCK, 64).address();
            double[] marginal = new double[windows];
            double bestWhole = 0;
            for (int w = -skip; w < windows; w++) {
                long small = 0;
                long large = 0;
                long copies = 0;
                long start = System.nanoTime();
                do {
                    long t0 = System.nanoTime();
                    for (int i = 0; i < BATCH; i++) {
                        copy.copy(src, dst, BLOCK);
                    }
                    long t1 = System.nanoTime();
                    for (int i = 0; i < BATCH; i++) {
                        copy.copy(src, dst, 2L * BLOCK);
                    }
                    small += t1 - t0;
                    large += System.nanoTime() - t1;
                    copies += BATCH;
                } while (System.nanoTime() - start < windowNanos);
                if (w >= 0) {
                    marginal[w] = large > small ? copies * (double) BLOCK / ((large - small) / 1e9) : 0;
                    bestWhole = Math.max(bestWhole, copies * (double) BLOCK / (small / 1e9));
                }
            }
            Arrays.sort(marginal);
            double median = marginal[windows / 2];
            return median > 0 ? median : bestWhole;
        }
    }

    private static MemorySegment block(Arena arena) {
        return arena.allocate(BLOCK, 64).fill((byte) 7);
    }

    /** Copies {@code src} to {@code dst} for at least {@code windowNanos}; the rate in bytes/second. */
    private static double window(MemorySegment src, MemorySegment dst, long windowNanos) {
        long copies = 0;
        long start = System.nanoTime();
        long elapsed;
        do {
            for (int i = 0; i < BATCH; i++) {
                Buffers.copyMemory(src.address(), dst.address(), BLOCK);
            }
            copies += BATCH;
            elapsed = System.nanoTime() - start;
        } while (elapsed < windowNanos);
        return copies * (double) BLOCK / (elapsed / 1e9);
    }
}
