package io.nucx.transport;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rate of a copy handed between two cores, and one core's copy in its cache, measured by real copies. */
class HandOffRateTest {

    /**
     * The hand-off (two threads, a ring-sized region; the in-cache copy with one processor) and one core's copy in its
     * cache: on any machine that runs a JVM each moves at least 1 GB/s (this one: 7.5-37 and 46-135 GB/s), and each is
     * a rate of real copies, not above what a copy of the block could reach in a nanosecond.
     */
    @Test
    void theMeasuredRatesArePlausibleCopyRates() {
        for (double rate : new double[] {HandOffRate.measure(), HandOffRate.inCache()}) {
            assertTrue(rate > 1e9, "copy rate " + rate + " B/s");
            assertTrue(rate < 64 * 1024 * 1e9, "copy rate " + rate + " B/s");
        }
    }
}
