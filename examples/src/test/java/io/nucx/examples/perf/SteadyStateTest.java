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
        // A cold tcp run of 2026-12-04 (us): each window scatters by about 10 % around the measured run's 10.4, and
        // its last window alone (10.18, the old rule's "final") put 11.26 and 11.45 out of reach: "not reached".
        windows("settle", 7000, 34.3, 13.8, 12.3, 11.26, 11.45, 10.89, 13.1, 10.93, 11.41, 10.8);
        windows(PerfReporter.MEASURE_PHASE, 9500, 10.66, 10.18);

        assertEquals(7750, reporter.steadyState(), printed.toString(StandardCharsets.UTF_8));
        assertTrue(printed.toString(StandardCharsets.UTF_8).contains("within 10% of the final 10.420 usec"),
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
