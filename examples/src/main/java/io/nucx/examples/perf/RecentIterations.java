package io.nucx.examples.perf;

import java.util.Arrays;

/**
 * The times of the last {@value #SIZE} iterations, as ucx_perftest keeps them for its progress rows' percentile (its
 * timing queue, filled by single-iteration updates only): a row then describes the moment it is printed, not its
 * whole second, which is what bench/interleave.py compares between pairs run in turns. Used on the client's loop
 * thread only; {@link #percentile} sorts a copy, once a second.
 */
final class RecentIterations {

    static final int SIZE = 2048;

    private final long[] nanos = new long[SIZE];
    private final long[] sorted = new long[SIZE];
    private int next;
    private int filled;

    /** One iteration's time; a batch of iterations ({@code iterations > 1}) is left out, as ucx_perftest does. */
    void add(long iterationNanos, int iterations) {
        if (iterations != 1) {
            return;
        }
        nanos[next] = iterationNanos;
        next = (next + 1) & (SIZE - 1);
        if (filled < SIZE) {
            filled++;
        }
    }

    void clear() {
        next = 0;
        filled = 0;
    }

    /** The {@code rank} percentile of the {@code n} iterations held (index {@code (n - 1) * rank / 100}), 0 if none. */
    long percentile(double rank) {
        if (filled == 0) {
            return 0;
        }
        System.arraycopy(nanos, 0, sorted, 0, filled); // until the ring is full its entries are 0 .. filled - 1
        Arrays.sort(sorted, 0, filled);
        return sorted[(int) ((filled - 1) * (rank / 100.0))];
    }
}
