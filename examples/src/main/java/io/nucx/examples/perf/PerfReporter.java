package io.nucx.examples.perf;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Prints ucx_perftest's table, progress rows and {@code Final:} line with its exact formats (UCX 1.13.1). */
public final class PerfReporter {

    private static final String RULE = "+--------------+--------------+------------------------------+"
            + "---------------------+-----------------------+";
    private static final String RULE2 = "+--------------+--------------+----------+---------+---------+"
            + "----------+----------+-----------+-----------+";
    private static final String BANNER_RULE = "+" + "-".repeat(106) + "+";

    /** The phase of a {@link #window} of the measured run (the final average is theirs). */
    static final String MEASURE_PHASE = "measure";

    private final PrintStream out;
    private final boolean finalOnly;
    private final boolean progress;
    private int windowIterations;
    private final List<Window> windows = new ArrayList<>();

    /** One window's report: its phase, the run's iterations at its end, ms since process start, usec per iteration. */
    private record Window(String phase, long iterations, long millis, double averageUs) {
    }
    /** How long the run settled after its warm-up (-1: it did not), and whether until both compilers were quiet. */
    private long settleNanos = -1;
    private boolean settleQuiet;

    /**
     * @param progress print a row every second (ucx_perftest does; nucx does so only on a terminal)
     */
    public PerfReporter(PrintStream out, boolean finalOnly, boolean progress) {
        this.out = out;
        this.finalOnly = finalOnly;
        this.progress = progress && !finalOnly;
    }

    /** The banner the server prints. */
    public void banner(PerfParams p) {
        out.println(BANNER_RULE);
        bannerLine("API:", "protocol layer");
        bannerLine("Test:", p.test().description());
        bannerLine("Data layout:", p.datatype().layout());
        bannerLine("Send memory:", "host");
        bannerLine("Recv memory:", "host");
        bannerLine("Message size:", Integer.toString(p.messageSize()));
        out.println(BANNER_RULE);
        out.flush();
    }

    private void bannerLine(String label, String value) {
        out.println(String.format(Locale.ROOT, "| %-13s %-60s                               |", label, value));
    }

    /** The table header the client prints. */
    public void header(PerfParams p) {
        out.println(RULE);
        out.println(String.format(Locale.ROOT,
                "|              |              |       %8s (usec)        |   bandwidth (MB/s)  |  message rate (msg/s) |",
                p.test().pingPong() ? " latency" : "overhead"));
        out.println(RULE2);
        out.println(String.format(Locale.ROOT,
                "|    %5s     | # iterations | %4.1f%%ile | average | overall |  average |  overall |  average  |  overall  |",
                finalOnly ? "Test" : "Stage", p.percentile()));
        out.println(RULE2);
        out.flush();
    }

    public boolean wantsProgress() {
        return progress;
    }

    /**
     * Report every {@code iterations} iterations (warm-up included) a {@code Window:} line: the iterations so far,
     * milliseconds since this process started, and the window's average time per iteration (one-way latency for
     * ping-pong tests); and, after the final row, when the run reached its steady state ({@link #steadyState}).
     * 0 turns it off (the default).
     */
    public PerfReporter windows(int iterations) {
        if (iterations < 0) {
            throw new IllegalArgumentException("window must be >= 0 iterations, got " + iterations);
        }
        this.windowIterations = iterations;
        return this;
    }

    /** Iterations per window report, 0 for none. */
    public int windowIterations() {
        return windowIterations;
    }

    /** The warm-up ended: after {@code iterations} in {@code nanos}, steady by the rule or at its limit. */
    public void warmupDone(PerfParams p, long iterations, long nanos, boolean steady) {
        if (p.steadyWindow() == 0) {
            return;
        }
        out.println(String.format(Locale.ROOT, "Warm-up: %d iterations in %.1f s, %s", iterations, nanos / 1e9,
                steady ? "until steady (three windows of " + p.steadyWindow() + " within 10 % of the best, the JIT "
                        + "compiler quiet for " + PerfParams.QUIET_JIT_NANOS / 1_000_000 + " ms)"
                        : "stopped at its limit before it was steady"));
        out.flush();
    }

    /**
     * The settling after the warm-up ended, {@code nanos} after it began: with both sides' JIT compilers quiet, or at
     * its limit. Said with the windows ({@link #steadyState}), so the default output stays ucx_perftest's.
     */
    public void settled(long nanos, boolean quiet) {
        settleNanos = nanos;
        settleQuiet = quiet;
    }

    /**
     * One window ended: {@code totalIterations} since the start of the run, its average per iteration in usec. Kept,
     * and printed with the steady state ({@link #steadyState}): formatting and printing it now would be code for the
     * JIT compiler to compile in the middle of the run it describes.
     */
    public void window(String phase, long totalIterations, long millisSinceProcessStart, double averageUs) {
        windows.add(new Window(phase, totalIterations, millisSinceProcessStart, averageUs));
    }

    /**
     * When the run reached its steady state, from its windows: the end of the first window from which three windows
     * in a row average within 10 % of the final average (the measured run's windows; without any, the last tenth of
     * the windows, at least one), in milliseconds since the process started; -1 if it never did or there are too
     * few windows. Three windows' mean, not each of three, and a final of many windows: a transport whose windows
     * scatter by 10 % around their mean (tcp on loopback) would otherwise never be called steady, or be called so by
     * one lucky window.
     */
    public long steadyState() {
        int n = windows.size();
        for (int i = 0; i < n; i++) {
            Window w = windows.get(i);
            out.println(String.format(Locale.ROOT, "Window: %-7s %12d iterations %9d ms %10.3f usec", w.phase(),
                    w.iterations(), w.millis(), w.averageUs()));
        }
        out.flush();
        if (settleNanos >= 0) {
            out.println(String.format(Locale.ROOT, "Settle: %d ms, %s", settleNanos / 1_000_000, settleQuiet
                    ? "until both sides' JIT compilers had run under " + Math.round(TagPerfClient.SETTLE_QUIET_SHARE
                    * 100) + " % of " + TagPerfClient.SETTLE_QUIET_NANOS / 1_000_000 + " ms"
                    : "stopped at its limit with a JIT compiler still at work"));
        }
        if (n < 4) {
            return -1;
        }
        double fin = 0;
        int measured = 0;
        for (Window w : windows) {
            if (MEASURE_PHASE.equals(w.phase())) {
                fin += w.averageUs();
                measured++;
            }
        }
        if (measured == 0) {
            for (int i = n - Math.max(1, n / 10); i < n; i++) {
                fin += windows.get(i).averageUs();
                measured++;
            }
        }
        fin /= measured;
        for (int w = 0; w + 2 < n; w++) {
            double three = (windows.get(w).averageUs() + windows.get(w + 1).averageUs()
                    + windows.get(w + 2).averageUs()) / 3;
            if (Math.abs(three - fin) <= 0.1 * fin) {
                out.println(String.format(Locale.ROOT, "Steady state: %d ms after process start (the window ending "
                        + "at iteration %d and the next two average within 10%% of the final %.3f usec)",
                        windows.get(w).millis(), windows.get(w).iterations(), fin));
                out.flush();
                return windows.get(w).millis();
            }
        }
        out.println(String.format(Locale.ROOT, "Steady state: not reached (final %.3f usec)", fin));
        out.flush();
        return -1;
    }

    /**
     * Bytes each side's worker loop thread allocated per iteration of the measured run (ThreadMXBean); the server's
     * is per message it received, -1 if it did not say.
     */
    public void allocation(double clientPerIteration, double serverPerMessage) {
        out.println(String.format(Locale.ROOT, "Allocated (bytes per iteration, worker loop thread): client %.1f, "
                + "server %s", clientPerIteration, serverPerMessage < 0 ? "unknown"
                : String.format(Locale.ROOT, "%.1f", serverPerMessage)));
        out.flush();
    }

    public void progress(PerfResult r) {
        if (progress) {
            row("[thread 0]", r);
        }
    }

    public void finalRow(PerfResult r) {
        row(finalOnly ? "          " : "Final:    ", r);
    }

    /** The run's tail percentiles, a line ucx_perftest does not print (its runs have no JIT or GC to hide). */
    public void tailRow(PerfResult r) {
        PerfResult.Tail t = r.tail();
        if (t != null) {
            out.println(String.format(Locale.ROOT, "Tail (usec): p90 %.3f  p99 %.3f  p99.9 %.3f  p99.99 %.3f  max %.3f",
                    t.p90(), t.p99(), t.p999(), t.p9999(), t.max()));
            out.flush();
        }
    }

    private void row(String prefix, PerfResult r) {
        out.println(prefix + String.format(Locale.ROOT, "%18.0f %10.3f %9.3f %9.3f %11.2f %10.2f %11.0f %11.0f",
                (double) r.iterations(), r.percentileLatencyUs(), r.averageLatencyUs(), r.overallLatencyUs(),
                r.averageBandwidth(), r.overallBandwidth(), r.averageMessageRate(), r.overallMessageRate()));
        out.flush();
    }
}
