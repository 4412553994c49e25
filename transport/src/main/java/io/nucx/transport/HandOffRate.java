package io.nucx.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeoutException;

/**
 * The rate at which bytes move from one core to another through memory, as a copy each side: a thread copies a
 * record into the next slot of a ring-sized region and publishes it, a second thread copies it out and says so, then
 * the next. Measured when the first process of a host needs it (shm's ring, cma's reads of fresh data), and shared by
 * the host's processes ({@link SharedRates}), because it spans an order of magnitude between machines and between the
 * modes of one machine (7.5-37 GB/s here): 7 GB/s, UCX's static memcpy figure, made the cost model pick cma's
 * rendezvous from 8.8 KiB over shm+cma, where the ring was 2.7-6x faster up to 1 MiB on a machine that copies at
 * 50-95 GB/s.
 *
 * <p>The figure is the marginal rate of 64 and 128 KiB records ({@link CopyRate#marginal(int, int, long,
 * CopyRate.Copy)}), twice over since a record paid both copies: a copy's rate. The receiver's copy reads what another
 * core has just written, and the sender's overwrites what that core has read: on this machine 20-25 GB/s a copy, what
 * the ring's 64 KiB eager shows, where one core copying in its own cache runs at 46-135 GB/s. Those two transfers are
 * also what a cma read of data its owner has just written pays on top of the read ({@code CmaIface}). With one
 * processor the hand-off has no second core to run on, and the in-cache figure is taken; so it is if the second thread
 * does not answer within {@link #ANSWER_NANOS}.
 */
public final class HandOffRate {

    /**
     * Windows of 200 us: ten untimed, the median of forty; about 20 ms (90-140 in a fresh JVM, JIT and class loading
     * included).
     */
    private static final int SKIP_WINDOWS = 10;
    private static final int WINDOWS = 40;
    private static final long WINDOW_NANOS = 200_000;
    /** The default ring's size: the region the records go round. */
    private static final int REGION = 4 << 20;
    private static final long ANSWER_NANOS = 50_000_000;

    private HandOffRate() {
    }

    /**
     * Bytes/second a copy: this host's figure if a process measured it lately ({@link SharedRates}, NUCX_RATES_DIR),
     * else measured now (a few milliseconds of copies) and shared; then remembered for the life of the process.
     */
    public static double measured(NucxConfig config) {
        return SharedRates.get(config, "hand-off", () -> new double[] {measure()})[0];
    }

    static double measure() {
        if (Runtime.getRuntime().availableProcessors() >= 2) {
            try (HandOff handOff = new HandOff()) {
                return 2 * CopyRate.marginal(SKIP_WINDOWS, WINDOWS, WINDOW_NANOS, handOff);
            } catch (Exception e) {
                // the second thread was not run in time (a loaded machine): the in-cache figure below
            }
        }
        return inCache();
    }

    /** One core copying in its own cache (the figure before the hand-off: windows of 100 us). */
    static double inCache() {
        return CopyRate.marginal(SKIP_WINDOWS, WINDOWS, WINDOW_NANOS / 2);
    }

    /**
     * A record handed from the calling thread to a second one through a ring-sized region, one at a time. Memory
     * ordering: the record's bytes and length are written before the volatile {@link #posted}, read after it; the
     * receiver's copy is done before the volatile {@link #taken}.
     */
    private static final class HandOff implements CopyRate.Copy, AutoCloseable {
        private static final long SLOT = 2L * CopyRate.BLOCK;

        private final Arena arena = Arena.ofShared();
        private final long region = arena.allocate(REGION, 64).address();
        private final long out = arena.allocate(SLOT, 64).address();
        private final Thread receiver = new Thread(this::receive, "nucx-hand-off-rate");
        private long length;
        private volatile long posted;
        private volatile long taken;
        private volatile boolean closed;

        HandOff() {
            receiver.setDaemon(true);
            receiver.start();
        }

        private long slot(long seq) {
            return region + (seq % (REGION / SLOT)) * SLOT;
        }

        @Override
        public void copy(long src, long dst, long bytes) throws TimeoutException {
            long seq = posted + 1;
            Buffers.copyMemory(src, slot(seq), bytes);
            length = bytes;
            posted = seq;
            long deadline = 0;
            for (int spins = 0; taken != seq; spins++) {
                Thread.onSpinWait();
                if ((spins & 1023) == 1023) {
                    long now = System.nanoTime();
                    if (deadline == 0) {
                        deadline = now + ANSWER_NANOS;
                    } else if (now > deadline) {
                        throw new TimeoutException("the receiving thread did not answer");
                    }
                }
            }
        }

        private void receive() {
            long seen = 0;
            while (!closed) {
                long seq = posted;
                if (seq == seen) {
                    Thread.onSpinWait();
                    continue;
                }
                Buffers.copyMemory(slot(seq), out, length);
                seen = seq;
                taken = seq;
            }
        }

        @Override
        public void close() throws InterruptedException {
            closed = true;
            receiver.join(1000);
            // The receiver copies by address, unchecked: the region is freed only once it has stopped (if it was never
            // run, its 4 MiB stay mapped for the life of the process rather than be read after the free).
            if (!receiver.isAlive()) {
                arena.close();
            }
        }
    }
}
