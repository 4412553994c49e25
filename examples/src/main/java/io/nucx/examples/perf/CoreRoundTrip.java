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
 * project's 2-vCPU AMD EPYC the host moves the two vCPUs between cores that share a level-3 cache (a round trip of about
 * 55-150 ns) and cores that do not (about 315-360 ns), every few seconds to minutes, and shm's small-message latency
 * follows, nucx's and ucx_perftest's (tag_lat 8 B about 0.15 us one way in the first, 0.35-0.65 in the second). A short
 * run says nothing about a protocol unless it is known which of the two it met: this measures it, before and after.
 *
 * <p>The two threads are not pinned (Java cannot); on a machine of two processors where nothing else runs they take one
 * each. A wait of more than about a thousand polls yields the processor, so two threads that must share one (one CPU
 * allowed) still alternate, at microseconds a trip instead of a time slice; the median of the batches leaves out the
 * few batches disturbed so. The line is a fresh 64-byte-aligned allocation outside the heap, read with acquire and
 * written with release loads and stores (x86: plain moves, as a C ping-pong's).
 */
public final class CoreRoundTrip {

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /** A round trip under this is two cores that share a level-3 cache (this machine: about 55-150 ns, else 315-360). */
    public static final double SHARED_CACHE_BELOW_NANOS = 200;

    /** Polls of one wait before it yields: a round trip between two cores takes a few hundred at most. */
    static final int SPINS_BEFORE_YIELD = 1024;
    /** A trip unanswered this long means the other thread does not run. */
    private static final long STALL_NANOS = 1_000_000_000L;

    private CoreRoundTrip() {
    }

    /**
     * The median round trip of {@code batches} batches of {@code tripsPerBatch} trips each, in nanoseconds, after one
     * batch not counted (the JIT's).
     *
     * @throws IllegalArgumentException if {@code batches} or {@code tripsPerBatch} is not positive
     * @throws IllegalStateException    if the other thread leaves one trip unanswered for a second (it cannot run)
     */
    public static double medianNanos(int batches, int tripsPerBatch) {
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
                stop(answerer, line);
            }
        }
        Arrays.sort(nanos);
        return batches % 2 == 1 ? nanos[batches / 2] : (nanos[batches / 2 - 1] + nanos[batches / 2]) / 2;
    }

    /** Prints the median round trip in nanoseconds of 5 batches of 2,000 (a child process's probe, in tests). */
    public static void main(String[] args) {
        System.out.println(medianNanos(5, 2_000));
    }

    /**
     * Signals the answerer to stop (again if an answer it was writing overwrote the signal) and waits until it has: the
     * line's memory goes with the arena. An interrupt does not cut the wait short; it is kept for the caller.
     */
    private static void stop(Thread answerer, MemorySegment line) {
        boolean interrupted = false;
        do {
            LONG.setRelease(line, 0L, -1L);
            try {
                answerer.join(10);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        } while (answerer.isAlive());
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Whether a round trip of {@code nanos} is two cores that share a level-3 cache, on this project's machine. */
    public static boolean sharedCache(double nanos) {
        return nanos < SHARED_CACHE_BELOW_NANOS;
    }

    /**
     * Sends an odd value (from an even {@code from}), waits for its successor, {@code trips} times; yields the
     * processor every {@value #SPINS_BEFORE_YIELD} polls of a wait.
     */
    private static void trips(MemorySegment line, long from, int trips) {
        for (int i = 0; i < trips; i++) {
            long sent = from + 2L * i + 1;
            LONG.setRelease(line, 0L, sent);
            int spins = 0;
            long waitingSince = 0;
            while ((long) LONG.getAcquire(line, 0L) != sent + 1) {
                if ((++spins & (SPINS_BEFORE_YIELD - 1)) == 0) {
                    Thread.yield();
                    long now = System.nanoTime();
                    if (waitingSince == 0) {
                        waitingSince = now;
                    } else if (now - waitingSince > STALL_NANOS) {
                        throw new IllegalStateException("the other thread of the core round trip left trip " + i
                                + " unanswered for " + (now - waitingSince) / 1_000_000 + " ms");
                    }
                }
            }
        }
    }

    /** Answers every odd value with its successor until it reads -1; yields as {@link #trips} does. */
    private static void answer(MemorySegment line) {
        int spins = 0;
        while (true) {
            long v = (long) LONG.getAcquire(line, 0L);
            if (v == -1L) {
                return;
            }
            if ((v & 1) == 1) {
                LONG.setRelease(line, 0L, v + 1);
                spins = 0;
            } else if ((++spins & (SPINS_BEFORE_YIELD - 1)) == 0) {
                Thread.yield();
            }
        }
    }
}
