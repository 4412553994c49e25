package io.nucx.transport.shm;

import io.nucx.transport.CopyRate;

/**
 * The rate at which this machine copies between native buffers, which is what moves shm's bytes: the sender copies a
 * payload into the ring, the receiver out of it. Measured once per process, when the first shm iface opens, because
 * it spans an order of magnitude between machines (and between the modes of one machine): 7 GB/s, UCX's static
 * memcpy figure, made the cost model pick cma's rendezvous from 8.8 KiB over shm+cma, where the ring was 2.7-6x
 * faster up to 1 MiB on a machine that copies at 50-95 GB/s.
 */
final class ShmCopyRate {

    /** Windows timed after three untimed ones; the best counts: what disturbs a window only slows it. */
    private static final int WINDOWS = 20;
    private static final long WINDOW_NANOS = 100_000;

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
        double best = 0;
        for (double rate : CopyRate.windows(3, WINDOWS, WINDOW_NANOS)) {
            best = Math.max(best, rate);
        }
        return best;
    }
}
