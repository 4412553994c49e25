package io.nucx.transport.shm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The rate at which this machine copies between native buffers, which is what moves shm's bytes: the sender copies a
 * payload into the ring, the receiver out of it. Measured once per process, when the first shm iface opens, because
 * it spans an order of magnitude between machines (and between the modes of one machine): 7 GB/s, UCX's static
 * memcpy figure, made the cost model pick cma's rendezvous from 8.8 KiB over shm+cma, where the ring was 2.7-6x
 * faster up to 1 MiB on a machine that copies at 50-95 GB/s.
 */
final class ShmCopyRate {

    /** Bytes of one copy: the ring's fragment, which stays in the core's cache as the ring's does. */
    private static final int BLOCK = 64 * 1024;
    /** Windows timed; the best counts, since what disturbs a window (another thread, an interrupt) only slows it. */
    private static final int WINDOWS = 20;
    private static final long WINDOW_NANOS = 100_000;
    private static final int WARM_COPIES = 300;

    private ShmCopyRate() {
    }

    /** Bytes/second, measured at the first call (about 2 ms, most of it the copies), then remembered. */
    static double measured() {
        return Measured.RATE;
    }

    private static final class Measured {
        static final double RATE = measure();
    }

    static double measure() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(BLOCK, 64);
            MemorySegment dst = arena.allocate(BLOCK, 64);
            src.fill((byte) 1);
            // Untimed first: the JIT compiles the loop and both blocks come into the cache (well under 1 ms).
            for (int i = 0; i < WARM_COPIES; i++) {
                MemorySegment.copy(src, 0, dst, 0, BLOCK);
            }
            double best = 0;
            for (int w = 0; w < WINDOWS; w++) {
                long copies = 0;
                long start = System.nanoTime();
                long elapsed;
                do {
                    MemorySegment.copy(src, 0, dst, 0, BLOCK);
                    copies++;
                    elapsed = System.nanoTime() - start;
                } while (elapsed < WINDOW_NANOS);
                best = Math.max(best, copies * (double) BLOCK / (elapsed / 1e9));
            }
            return best;
        }
    }
}
