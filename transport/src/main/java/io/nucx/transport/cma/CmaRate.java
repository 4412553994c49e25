package io.nucx.transport.cma;

import io.nucx.transport.CopyRate;
import io.nucx.transport.HostId;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.SharedRates;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * What a cma read moves per second on this machine, measured when the first cma iface opens, as the ring's copy rate
 * is ({@link io.nucx.transport.HandOffRate}), and shared by the host's processes ({@link SharedRates}). UCX's static
 * figures (11.1 GB/s at any size) are half of what a read of cached memory runs at here (16-32 GB/s) and above what
 * one that outgrew the caches does (6-9 GB/s): priced so against the ring's hand-off, cma's read either lost the sizes
 * where it is 1.5x faster or took those beyond 2 MiB where the ring is (BENCHMARKS.md). The reads are of this
 * process's own memory, through the same system call and the same kernel path (pin the pages, copy) as a peer's; a
 * ping-pong's working set is alike too (a send and a receive buffer a side).
 * <ul>
 *   <li>in cache: the marginal rate of 64 and 128 KiB reads ({@link CopyRate#marginal(int, int, long,
 *       CopyRate.Copy)}), what a byte costs beyond the call;</li>
 *   <li>beyond the caches: the rate of a whole 8 MiB read (median of five), steadier run to run than the slope
 *       between two large sizes (6.3-9.3 GB/s, which moved the crossover with the ring between 0.5 and 3 MB);</li>
 *   <li>where the one gives way to the other: the largest of 256 KiB-2 MiB read at three quarters of the in-cache rate
 *       or better (512 KiB here, 1 MiB reads ran at 10-20 GB/s). Not where the two lines meet: the bulk line's
 *       intercept is an extrapolation, and its meeting point (130-800 KB, run to run) priced reads that ran in cache
 *       at the bulk rate.</li>
 * </ul>
 * About 35-45 ms (85-115 in a fresh JVM, JIT included) and 16 MiB of memory, given back when done.
 */
final class CmaRate {

    private static final int SKIP_WINDOWS = 10;
    private static final int WINDOWS = 40;
    private static final long WINDOW_NANOS = 100_000;
    /** A read still runs in cache at this fraction of the in-cache rate or more. */
    private static final double KNEE_RATIO = 0.75;
    /** The sizes the knee is looked for at, ascending. */
    private static final long[] KNEE_SIZES = {256 << 10, 512 << 10, 768 << 10, 1 << 20, 2 << 20};
    private static final long BULK = 8L << 20;
    private static final int RUNS = 5;

    /**
     * @param bandwidth     bytes/s of a read of cached memory, beyond the call's cost
     * @param bulkFrom      bytes: from this size on a read runs at {@code bulkBandwidth} ({@code Long.MAX_VALUE}: the
     *                      reads measured did not slow down)
     * @param bulkBandwidth bytes/s of a read that outgrew the caches
     */
    record Figures(double bandwidth, long bulkFrom, double bulkBandwidth) {

        /** {@code attrs} with these rates in place of the static ones. */
        IfaceAttributes applyTo(IfaceAttributes attrs) {
            IfaceAttributes a = attrs.withPerf(attrs.latencySeconds(), attrs.overheadSeconds(), bandwidth,
                    attrs.regCostSeconds(), attrs.regCostPerByte());
            return bulkFrom == Long.MAX_VALUE ? a : a.withBulk(bulkFrom, bulkBandwidth);
        }

        /** As shared between processes: the in-cache rate, then the bulk figures if there are any. */
        double[] toArray() {
            return bulkFrom == Long.MAX_VALUE ? new double[] {bandwidth}
                    : new double[] {bandwidth, bulkFrom, bulkBandwidth};
        }

        /** The figures {@link #toArray()} gave. */
        static Figures of(double[] values) {
            return values.length == 3 ? new Figures(values[0], (long) values[1], values[2])
                    : new Figures(values[0], Long.MAX_VALUE, 0);
        }
    }

    private CmaRate() {
    }

    /**
     * This host's figures if a process measured them lately ({@link SharedRates}, NUCX_RATES_DIR), else measured now
     * and shared; then remembered for the life of the process. Null if the reads failed (then: static figures).
     */
    static Figures measured(NucxConfig config) {
        double[] values = SharedRates.get(config, "cma-read", () -> {
            Figures measured = measureOrNull();
            return measured == null ? null : measured.toArray();
        });
        return values == null ? null : Figures.of(values);
    }

    private static Figures measureOrNull() {
        try {
            return measure();
        } catch (Exception e) {
            return null;
        }
    }

    static Figures measure() throws Exception {
        try (Cma cma = new Cma()) {
            double inCache = CopyRate.marginal(SKIP_WINDOWS, WINDOWS, WINDOW_NANOS, (src, dst, bytes) ->
                    cma.get(new CmaKey(HostId.get(), Cma.pid(), src, bytes), 0,
                            MemorySegment.ofAddress(dst).reinterpret(bytes)));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment src = arena.allocate(BULK, 4096).fill((byte) 7);
                MemorySegment dst = arena.allocate(BULK, 4096).fill((byte) 1);
                CmaKey key = CmaKey.of(src);
                cma.get(key, 0, dst); // untimed: the kernel's and the JIT's first pass
                double[] knee = new double[KNEE_SIZES.length];
                for (int i = 0; i < knee.length; i++) {
                    knee[i] = medianSeconds(cma, key, dst.asSlice(0, KNEE_SIZES[i]));
                }
                return fit(inCache, KNEE_SIZES, knee, BULK, medianSeconds(cma, key, dst));
            }
        }
    }

    /**
     * The figures from the in-cache rate, reads of {@code kneeSizes} (ascending) that took {@code kneeSeconds}, and a
     * read of {@code bulk} bytes that took {@code bulkSeconds}. No bulk rate when that read was not slower per byte
     * than cached ones.
     */
    static Figures fit(double inCache, long[] kneeSizes, double[] kneeSeconds, long bulk, double bulkSeconds) {
        double bulkRate = bulk / bulkSeconds;
        if (!(bulkRate < inCache)) {
            return new Figures(inCache, Long.MAX_VALUE, 0);
        }
        long from = kneeSizes[0] / 2;
        for (int i = 0; i < kneeSizes.length; i++) {
            if (kneeSizes[i] / kneeSeconds[i] >= KNEE_RATIO * inCache) {
                from = kneeSizes[i];
            }
        }
        return new Figures(inCache, from, bulkRate);
    }

    private static double medianSeconds(Cma cma, CmaKey key, MemorySegment dst) throws CmaException {
        double[] s = new double[RUNS];
        for (int i = 0; i < RUNS; i++) {
            long t0 = System.nanoTime();
            cma.get(key, 0, dst);
            s[i] = (System.nanoTime() - t0) / 1e9;
        }
        Arrays.sort(s);
        return s[RUNS / 2];
    }
}
