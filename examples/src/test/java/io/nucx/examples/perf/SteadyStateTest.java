package io.nucx.examples.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** When {@link PerfReporter#steadyState} calls a run steady, from windows as a cold tcp run reports them. */
class SteadyStateTest {

    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PerfReporter reporter = new PerfReporter(new PrintStream(printed, true, StandardCharsets.UTF_8),
            true, false);

    private void windows(String phase, long firstMillis, double... averages) {
        for (int i = 0; i < averages.length; i++) {
            reporter.window(phase, (i + 1) * 10_000L, firstMillis + i * 250L, averages[i]);
        }
    }

    @Test
    void windowsScatteringAroundTheMeasuredAverageAreSteadyOnceThreeOfThemAverageWithinTenPercent() {
        // The windows of a cold tcp run of 2026-12-04 (us): each scatters by about 10 % around the measured run's
        // 10.42. The old rule took the last window alone (10.182) for the final and wanted each of three within 10 %
        // of it: that run said "not reached".
        windows("settle", 7000, 34.318, 13.818, 12.277, 11.261, 11.454, 10.887, 13.108, 10.928, 11.414, 10.798,
                11.335, 11.213, 12.575);
        windows(PerfReporter.MEASURE_PHASE, 10250, 10.661, 10.182);

        assertEquals(7750, reporter.steadyState(), printed.toString(StandardCharsets.UTF_8));
        assertTrue(printed.toString(StandardCharsets.UTF_8).contains("within 10% of the final 10.42"),
                printed.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aRunThatIsStillGettingFasterIsNotSteady() {
        windows("settle", 1000, 40, 30, 25, 22, 20, 18, 17);
        windows(PerfReporter.MEASURE_PHASE, 3000, 12, 10);

        assertEquals(-1, reporter.steadyState());
        assertTrue(printed.toString(StandardCharsets.UTF_8).contains("Steady state: not reached (final 11.000 usec)"),
                printed.toString(StandardCharsets.UTF_8));
    }

    @Test
    void withoutMeasuredWindowsTheFinalIsTheLastTenth() {
        windows("warmup", 0, 20, 20, 20, 10, 10, 10, 10, 10, 10, 10);

        assertEquals(750, reporter.steadyState());
    }
}
