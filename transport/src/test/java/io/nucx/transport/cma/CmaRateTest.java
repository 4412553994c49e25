package io.nucx.transport.cma;

import io.nucx.transport.HandOffRate;
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
        NucxConfig config = NucxConfig.of(Map.of("NUCX_CMA_DATA", "same"));
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
        IfaceAttributes fresh = CmaIface.measuredAttributes(NucxConfig.of(Map.of()));
        assertEquals(CmaIface.forFreshData(stated, HandOffRate.measured(config)).bandwidth(), fresh.bandwidth(),
                "by default a read is priced for fresh data, with the host's hand-off rate");
    }

    /**
     * Fresh data: a byte costs the read's time plus the hand-off's two transfers, one after the other; the figures of
     * this machine's slow mode (a read at 7.25 GB/s, the hand-off at 7.46 GB/s a copy) give 2.47 GB/s. Only the rates
     * change.
     */
    @Test
    void aReadOfFreshDataPaysTheHandOffsTwoTransfersOnTopOfTheRead() {
        IfaceAttributes same = new CmaRate.Figures(7.25e9, 2 << 20, 3.75e9).applyTo(CmaIface.attributes0());
        IfaceAttributes fresh = CmaIface.forFreshData(same, 7.46e9);
        assertEquals(1 / (1 / 7.25e9 + 2 / 7.46e9), fresh.bandwidth(), 1);
        assertEquals(2.47e9, fresh.bandwidth(), 0.01e9);
        assertEquals(2 << 20, fresh.bulkFrom());
        assertEquals(1 / (1 / 3.75e9 + 2 / 7.46e9), fresh.bulkBandwidth(), 1);
        assertEquals(same.latencySeconds(), fresh.latencySeconds());
        assertEquals(same.overheadSeconds(), fresh.overheadSeconds());
        assertEquals(same.capabilities(), fresh.capabilities());
        assertEquals(same.rmaSegment(), fresh.rmaSegment());
        IfaceAttributes noBulk = CmaIface.forFreshData(CmaIface.attributes0(), 3.2e10);
        assertFalse(noBulk.hasBulkRate(), "no bulk rate measured: none made up");
        assertEquals(1 / (1 / 11145e6 + 2 / 3.2e10), noBulk.bandwidth(), 1);
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
