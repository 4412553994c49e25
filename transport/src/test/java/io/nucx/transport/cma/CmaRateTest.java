package io.nucx.transport.cma;

import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rates of a cma read the cost model gets: measured by real reads, and how the knee is told from them. */
class CmaRateTest {

    private static final long[] SIZES = {256 << 10, 512 << 10, 768 << 10, 1 << 20, 2 << 20};
    private static final double IN_CACHE = 28e9;
    private static final long BULK = 16 << 20;

    /** Seconds a read of {@code size} bytes takes at {@code rate} bytes/s. */
    private static double at(long size, double rate) {
        return size / rate;
    }

    @Test
    void theBulkRateBeginsAtTheLargestSizeReadAtThreeQuartersOfTheInCacheRate() {
        // 256 and 512 KiB in cache, 768 KiB at 80 %, 1 MiB at 60 %, 2 MiB at the bulk rate
        double[] seconds = {at(SIZES[0], 29e9), at(SIZES[1], 27e9), at(SIZES[2], 0.8 * IN_CACHE),
            at(SIZES[3], 0.6 * IN_CACHE), at(SIZES[4], 9e9)};
        CmaRate.Figures f = CmaRate.fit(IN_CACHE, SIZES, seconds, BULK, at(BULK, 8e9));
        assertEquals(IN_CACHE, f.bandwidth());
        assertEquals(768 << 10, f.bulkFrom());
        assertEquals(8e9, f.bulkBandwidth(), 1);
    }

    @Test
    void aSizeBelowTheKneeThatReadSlowlyOnceDoesNotHideALargerOneInCache() {
        double[] seconds = {at(SIZES[0], 28e9), at(SIZES[1], 12e9), at(SIZES[2], 27e9), at(SIZES[3], 10e9),
            at(SIZES[4], 9e9)};
        assertEquals(768 << 10, CmaRate.fit(IN_CACHE, SIZES, seconds, BULK, at(BULK, 8e9)).bulkFrom());
    }

    @Test
    void readsSlowFromTheSmallestSizeStartTheBulkRateAtHalfOfIt() {
        double[] seconds = new double[SIZES.length];
        for (int i = 0; i < SIZES.length; i++) {
            seconds[i] = at(SIZES[i], 9e9);
        }
        assertEquals(128 << 10, CmaRate.fit(IN_CACHE, SIZES, seconds, BULK, at(BULK, 8e9)).bulkFrom());
    }

    @Test
    void aMachineWhoseLargeReadsDoNotSlowHasNoBulkRate() {
        double[] seconds = new double[SIZES.length];
        for (int i = 0; i < SIZES.length; i++) {
            seconds[i] = at(SIZES[i], IN_CACHE);
        }
        CmaRate.Figures f = CmaRate.fit(IN_CACHE, SIZES, seconds, BULK, at(BULK, IN_CACHE));
        assertEquals(Long.MAX_VALUE, f.bulkFrom());
        assertFalse(f.applyTo(CmaIface.attributes0()).hasBulkRate());
    }

    /**
     * Real reads of this process's memory: an in-cache rate a kernel copy of 64 KiB can have (above 1 GB/s, below a
     * block a nanosecond), a bulk rate below it from within the sizes looked at; and a cma iface states them, with
     * UCX's latency and overhead.
     */
    @Test
    void aCmaIfaceStatesTheRatesMeasuredByRealReads() throws Exception {
        CmaRate.Figures f = CmaRate.measure();
        assertTrue(f.bandwidth() > 1e9 && f.bandwidth() < 64 * 1024 * 1e9, f.toString());
        if (f.bulkFrom() != Long.MAX_VALUE) {
            assertTrue(f.bulkFrom() >= 128 << 10 && f.bulkFrom() <= 2 << 20, f.toString());
            assertTrue(f.bulkBandwidth() > 1e8 && f.bulkBandwidth() < f.bandwidth(), f.toString());
        }
        NucxConfig config = NucxConfig.of(Map.of());
        CmaRate.Figures once = CmaRate.measured(config);
        assertNotNull(once, "the reads of the first cma iface failed");
        IfaceAttributes stated = CmaIface.measuredAttributes(config);
        assertEquals(once.bandwidth(), stated.bandwidth());
        assertEquals(once.bulkFrom() != Long.MAX_VALUE, stated.hasBulkRate());
        if (stated.hasBulkRate()) {
            assertEquals(once.bulkFrom(), stated.bulkFrom());
            assertEquals(once.bulkBandwidth(), stated.bulkBandwidth());
        }
        IfaceAttributes ucx = CmaIface.attributes0();
        assertEquals(ucx.latencySeconds(), stated.latencySeconds());
        assertEquals(ucx.overheadSeconds(), stated.overheadSeconds());
        assertEquals(ucx.maxZcopy(), stated.maxZcopy());
    }

    /** The figures as processes share them, and back: with a bulk rate and without. */
    @Test
    void theFiguresSurviveTheirSharedForm() {
        CmaRate.Figures bulk = new CmaRate.Figures(2.5e10, 512 << 10, 7.25e9);
        assertEquals(bulk, CmaRate.Figures.of(bulk.toArray()));
        CmaRate.Figures flat = new CmaRate.Figures(1.5e10, Long.MAX_VALUE, 0);
        assertEquals(1, flat.toArray().length, "no bulk rate: the in-cache rate alone");
        assertEquals(flat, CmaRate.Figures.of(flat.toArray()));
    }
}
