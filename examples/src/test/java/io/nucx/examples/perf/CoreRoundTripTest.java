package io.nucx.examples.perf;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The core round trip's probe: two real threads passing a counter through one line. */
class CoreRoundTripTest {

    @Test
    void aRoundTripIsTimedAndTheAnswererStops() {
        double nanos = CoreRoundTrip.medianNanos(5, 2_000);
        // Not zero: each trip waited for the other thread's answer. Finite: every batch ended.
        assertTrue(nanos > 1 && Double.isFinite(nanos), "round trip " + nanos + " ns");
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().equals("nucx-core-round-trip")), "the answering thread outlived the probe");
    }

    @Test
    void twoThreadsThatShareOneProcessorStillAlternate() throws Exception {
        // As under taskset -c 0: the waits yield, so each trip takes a yield, not a time slice (without the yields
        // 20,000 trips took a minute and more, and a trip could exceed the stall limit).
        Process p = new ProcessBuilder("taskset", "-c", "0", ProcessHandle.current().info().command().orElseThrow(),
                "-cp", System.getProperty("java.class.path"), CoreRoundTrip.class.getName())
                .redirectErrorStream(true).start();
        // Its output is one line, which the pipe holds until it ends.
        boolean ended = p.waitFor(60, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly().waitFor();
        }
        String out = new String(p.getInputStream().readAllBytes()).trim();
        assertTrue(ended, "the probe on one processor did not end in 60 s: " + out);
        assertEquals(0, p.exitValue(), out);
        double nanos = Double.parseDouble(out);
        assertTrue(nanos > 1 && nanos < 1_000_000, "round trip on one processor " + nanos + " ns");
    }

    @Test
    void theTwoModesOfThisMachineAreToldApartAt200Nanoseconds() {
        assertTrue(CoreRoundTrip.sharedCache(199.9));
        assertFalse(CoreRoundTrip.sharedCache(200));
    }

    @Test
    void batchesAndTripsMustBePositive() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CoreRoundTrip.medianNanos(0, 10));
        assertEquals("batches 0 and trips per batch 10 must be positive", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CoreRoundTrip.medianNanos(3, 0));
    }
}
