package io.nucx.examples.perf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * How long one cache line takes to go from one core to another and back: two threads pass a counter through a single
 * line, each waiting for the other's increment. This is the floor under every shared-memory ping-pong (one message one
 * way is at least one such trip of its record's line), and on a virtual machine it is not the machine's own: on this
 * project's 2-vCPU AMD EPYC the host moves the two vCPUs between cores that share a level-3 cache (a round trip of
 * 70-100 ns) and cores that do not (330-350 ns), every few seconds to minutes, and a run of shm tag_lat 8 B takes about
 * 0.15 or 0.35-0.45 us one way accordingly, nucx's and ucx_perftest's alike. A short run says nothing about a protocol
 * unless it is known which of the two it met: this measures it, before and after a run.
 *
 * <p>The two threads are not pinned (Java cannot); on a machine of two processors where nothing else runs they take one
 * each. A batch that shared a processor (one thread waiting for the other's time slice) takes milliseconds a trip and
 * is left out by taking the median of the batches. The line is a fresh 64-byte-aligned allocation outside the heap,
 * read with acquire and written with release loads and stores (x86: plain moves, as a C ping-pong's).
 */
public final class CoreRoundTrip {

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /** A round trip under this is two cores that share a level-3 cache (this machine: 70-100 ns, else 330-350). */
    public static final double SHARED_CACHE_BELOW_NANOS = 200;

    private CoreRoundTrip() {
    }

    /**
     * The median round trip of {@code batches} batches of {@code tripsPerBatch} trips each, in nanoseconds, after one
     * batch not counted (the JIT's).
     *
     * @throws IllegalArgumentException if {@code batches} or {@code tripsPerBatch} is not positive
     * @throws IllegalStateException    if the other thread stops answering for a second (it cannot start or run)
     */
    public static double medianNanos(int batches, int tripsPerBatch) throws InterruptedException {
        if (batches < 1 || tripsPerBatch < 1) {
            throw new IllegalArgumentException("batches " + batches + " and trips per batch " + tripsPerBatch
                    + " must be positive");
        }
        double[] nanos = new double[batches];
        try (Arena arena = Arena.ofShared()) {
            MemorySegment line = arena.allocate(64, 64);
            Thread answerer = Thread.ofPlatform().daemon().name("nucx-core-round-trip").start(() -> answer(line));
            try {
                trips(line, 0, tripsPerBatch);
                for (int b = 0; b < batches; b++) {
                    long start = System.nanoTime();
                    trips(line, (long) (b + 1) * tripsPerBatch * 2, tripsPerBatch);
                    nanos[b] = (double) (System.nanoTime() - start) / tripsPerBatch;
                }
            } finally {
                // The answerer's signal to stop, again if an answer it was writing overwrote it.
                do {
                    LONG.setRelease(line, 0L, -1L);
                    answerer.join(10);
                } while (answerer.isAlive());
            }
        }
        Arrays.sort(nanos);
        return batches % 2 == 1 ? nanos[batches / 2] : (nanos[batches / 2 - 1] + nanos[batches / 2]) / 2;
    }

    /** Whether a round trip of {@code nanos} is two cores that share a level-3 cache, on this project's machine. */
    public static boolean sharedCache(double nanos) {
        return nanos < SHARED_CACHE_BELOW_NANOS;
    }

    /** Sends an odd value (from an even {@code from}), waits for its successor, {@code trips} times. */
    private static void trips(MemorySegment line, long from, int trips) {
        long deadline = System.nanoTime() + 1_000_000_000L + trips * 100_000L;
        for (int i = 0; i < trips; i++) {
            long sent = from + 2L * i + 1;
            LONG.setRelease(line, 0L, sent);
            int spins = 0;
            while ((long) LONG.getAcquire(line, 0L) != sent + 1) {
                if ((++spins & 0xFFFF) == 0 && System.nanoTime() > deadline) {
                    throw new IllegalStateException("the other thread of the core round trip stopped answering");
                }
            }
        }
    }

    /** Answers every odd value with its successor until it reads -1. */
    private static void answer(MemorySegment line) {
        while (true) {
            long v = (long) LONG.getAcquire(line, 0L);
            if (v == -1L) {
                return;
            }
            if ((v & 1) == 1) {
                LONG.setRelease(line, 0L, v + 1);
            }
        }
    }
}
