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

    /** Windows of 100 us ({@link CopyRate#marginal}): ten untimed, the median of forty; about 5 ms. */
    private static final int SKIP_WINDOWS = 10;
    private static final int WINDOWS = 40;
    private static final long WINDOW_NANOS = 100_000;

    private ShmCopyRate() {
    }

    /** Bytes/second, measured at the first call (a few milliseconds of copies), then remembered. */
    static double measured() {
        return Measured.RATE;
    }

    private static final class Measured {
        static final double RATE = measure();
    }

    static double measure() {
        return CopyRate.marginal(SKIP_WINDOWS, WINDOWS, WINDOW_NANOS);
    }
}
