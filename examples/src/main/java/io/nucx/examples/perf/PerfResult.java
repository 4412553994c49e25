package io.nucx.examples.perf;

import org.HdrHistogram.Histogram;

/**
 * One row of the results table, computed as ucx_perftest's {@code ucx_perf_calc_result}: latency in usec (one-way
 * for ping-pong), bandwidth in MB/s meaning MiB/s, message rate in messages per second; "average" covers the interval
 * since the previous row, "overall" everything since the start.
 */
public record PerfResult(long iterations, double percentileLatencyUs, double averageLatencyUs,
                         double overallLatencyUs, double averageBandwidth, double overallBandwidth,
                         double averageMessageRate, double overallMessageRate, Tail tail) {

    /** Percentiles of the time per iteration over the whole measured run, usec (one-way for ping-pong). */
    public record Tail(double p90, double p99, double p999, double p9999, double max) {
    }

    private static final double MIB = 1024.0 * 1024.0;

    /**
     * @param pingPong       whether one iteration is a round trip (latency and bandwidth then count both ways)
     * @param iterations     iterations done in total
     * @param intervalIters  iterations in this interval
     * @param intervalNanos  duration of this interval
     * @param totalNanos     duration since the start
     * @param percentileNs   the chosen percentile of per-iteration time in this interval, ns
     */
    static PerfResult of(boolean pingPong, int messageSize, long iterations, long intervalIters, long intervalNanos,
                         long totalNanos, double percentileNs) {
        return of(pingPong, messageSize, iterations, intervalIters, intervalNanos, totalNanos, percentileNs, null);
    }

    /** The same with the run's tail, taken from {@code overall} (per-iteration times in ns). */
    static PerfResult of(boolean pingPong, int messageSize, long iterations, long intervalIters, long intervalNanos,
                         long totalNanos, double percentileNs, Histogram overall) {
        double factor = pingPong ? 2.0 : 1.0;
        double avgLat = intervalIters == 0 ? 0 : intervalNanos / 1000.0 / intervalIters / factor;
        double allLat = iterations == 0 ? 0 : totalNanos / 1000.0 / iterations / factor;
        double avgBw = intervalNanos == 0 ? 0 : messageSize * (double) intervalIters * factor / MIB
                / (intervalNanos / 1e9);
        double allBw = totalNanos == 0 ? 0 : messageSize * (double) iterations * factor / MIB / (totalNanos / 1e9);
        double avgMr = intervalNanos == 0 ? 0 : intervalIters / (intervalNanos / 1e9) * factor;
        double allMr = totalNanos == 0 ? 0 : iterations / (totalNanos / 1e9) * factor;
        Tail tail = overall == null ? null : new Tail(overall.getValueAtPercentile(90) / 1000.0 / factor,
                overall.getValueAtPercentile(99) / 1000.0 / factor, overall.getValueAtPercentile(99.9) / 1000.0 / factor,
                overall.getValueAtPercentile(99.99) / 1000.0 / factor, overall.getMaxValue() / 1000.0 / factor);
        return new PerfResult(iterations, percentileNs / 1000.0 / factor, avgLat, allLat, avgBw, allBw, avgMr, allMr,
                tail);
    }
}
