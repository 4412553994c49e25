package io.nucx.examples.perf;

import java.io.PrintStream;
import java.util.Locale;

/** Prints ucx_perftest's table, progress rows and {@code Final:} line with its exact formats (UCX 1.13.1). */
public final class PerfReporter {

    private static final String RULE = "+--------------+--------------+------------------------------+"
            + "---------------------+-----------------------+";
    private static final String RULE2 = "+--------------+--------------+----------+---------+---------+"
            + "----------+----------+-----------+-----------+";
    private static final String BANNER_RULE = "+" + "-".repeat(106) + "+";

    private final PrintStream out;
    private final boolean finalOnly;
    private final boolean progress;

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
