package io.nucx.examples.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The core round trip's probe: two real threads passing a counter through one line. */
class CoreRoundTripTest {

    @Test
    void aRoundTripIsTimedAndTheAnswererStops() throws InterruptedException {
        int before = Thread.activeCount();
        double nanos = CoreRoundTrip.medianNanos(5, 2_000);
        // A cache line's round trip takes tens to hundreds of nanoseconds; two threads that shared one processor for
        // every batch would take a time slice a trip (milliseconds). Either way not zero: the answer was waited for.
        assertTrue(nanos > 1 && nanos < 1_000_000, "round trip " + nanos + " ns");
        assertTrue(Thread.activeCount() <= before, "the answering thread outlived the probe");
    }

    @Test
    void theTwoModesOfThisMachineAreToldApartAt200Nanoseconds() {
        assertTrue(CoreRoundTrip.sharedCache(72));
        assertFalse(CoreRoundTrip.sharedCache(335));
    }

    @Test
    void batchesAndTripsMustBePositive() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CoreRoundTrip.medianNanos(0, 10));
        assertEquals("batches 0 and trips per batch 10 must be positive", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CoreRoundTrip.medianNanos(3, 0));
    }
}
