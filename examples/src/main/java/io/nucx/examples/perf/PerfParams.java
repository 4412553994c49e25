package io.nucx.examples.perf;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One perftest run ({@code datatype}: ucx_perftest's {@code -D}, see {@link PerfDatatype}), with ucx_perftest's
 * defaults: 1,000,000 iterations, 10,000 warm-up iterations (bounded by a 100 ms warm-up budget, which
 * {@code warmupNanos} can raise: a JVM's JIT compiler needs seconds), a window of 32 outstanding sends for bandwidth
 * tests, the 50th percentile.
 */
public record PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window,
                         double percentile, PerfDatatype datatype, long warmupNanos, String errorMode,
                         int steadyWindow, String jitWarmup, long settleNanos, boolean freshData) {

    /**
     * How long a run may settle after its warm-up by default: it runs on until both sides' JIT compilers are quiet,
     * which on 2 busy-polling cores took 1-2 s (BENCHMARKS).
     */
    public static final long DEFAULT_SETTLE_NANOS = 5_000_000_000L;

    /** With {@link #DEFAULT_SETTLE_NANOS} of settling at most. */
    public PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window, double percentile,
                      PerfDatatype datatype, long warmupNanos, String errorMode, int steadyWindow, String jitWarmup) {
        this(test, messageSize, iterations, warmup, window, percentile, datatype, warmupNanos, errorMode, steadyWindow,
                jitWarmup, DEFAULT_SETTLE_NANOS, false);
    }

    /** The error modes {@code -e} takes (ucx_perftest's). */
    public static final List<String> ERROR_MODES = List.of("none", "peer", "failover");

    /** Warm-up by iterations and time only (no steady-state rule). */
    public PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window, double percentile,
                      PerfDatatype datatype, long warmupNanos, String errorMode) {
        this(test, messageSize, iterations, warmup, window, percentile, datatype, warmupNanos, errorMode, 0);
    }

    /** With a steady-state warm-up window, and each side's own NUCX_WARMUP. */
    public PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window, double percentile,
                      PerfDatatype datatype, long warmupNanos, String errorMode, int steadyWindow) {
        this(test, messageSize, iterations, warmup, window, percentile, datatype, warmupNanos, errorMode, steadyWindow,
                null);
    }

    /**
     * The same run with both workers warming the JIT up for {@code duration} before it (NUCX_WARMUP, e.g. "2s" or
     * "0"); null leaves each side its own NUCX_WARMUP.
     */
    public PerfParams withJitWarmup(String duration) {
        return new PerfParams(test, messageSize, iterations, warmup, window, percentile, datatype, warmupNanos,
                errorMode, steadyWindow, duration, settleNanos, freshData);
    }

    /**
     * The same run settling at most {@code nanos} after its warm-up (0: one chunk of the warm-up's iterations, the
     * compilers not waited for). The client's alone: the server only answers.
     */
    public PerfParams withSettle(long nanos) {
        return new PerfParams(test, messageSize, iterations, warmup, window, percentile, datatype, warmupNanos,
                errorMode, steadyWindow, jitWarmup, nanos, freshData);
    }

    /**
     * The same run with both sides writing their send buffer before every send ({@link FreshData}): the bytes an
     * application sends are new each time, where ucx_perftest sends one unchanged buffer.
     */
    public PerfParams withFreshData(boolean fresh) {
        return new PerfParams(test, messageSize, iterations, warmup, window, percentile, datatype, warmupNanos,
                errorMode, steadyWindow, jitWarmup, settleNanos, fresh);
    }

    /**
     * The same run whose warm-up ends as soon as it is steady: three windows of {@code iterations} in a row averaging
     * within 10 % of the best window so far, with the JIT compiler quiet for {@link #QUIET_JIT_NANOS} (still at most
     * {@code warmup} iterations and {@code warmupNanos}).
     */
    public PerfParams withSteadyWarmup(int iterations) {
        return new PerfParams(test, messageSize, this.iterations, warmup, window, percentile, datatype, warmupNanos,
                errorMode, iterations, jitWarmup, settleNanos, freshData);
    }

    /** How long the JIT compiler must have made no progress for a steady warm-up to end. */
    public static final long QUIET_JIT_NANOS = 500_000_000L;

    /** With the error mode of the environment (NUCX_ERR_MODE) on each side. */
    public PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window, double percentile,
                      PerfDatatype datatype, long warmupNanos) {
        this(test, messageSize, iterations, warmup, window, percentile, datatype, warmupNanos, null);
    }

    public static final long DEFAULT_ITERATIONS = 1_000_000;
    public static final long DEFAULT_WARMUP = 10_000;
    public static final int DEFAULT_WINDOW = 32;
    /** ucx_perftest stops warming up after 100 ms whatever -w says. */
    public static final long WARMUP_BUDGET_NANOS = 100_000_000L;

    /** With ucx_perftest's 100 ms warm-up budget. */
    public PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window, double percentile,
                      PerfDatatype datatype) {
        this(test, messageSize, iterations, warmup, window, percentile, datatype, WARMUP_BUDGET_NANOS);
    }

    /** A contiguous ({@code iov} false) or two-part send buffer, with ucx_perftest's 100 ms warm-up budget. */
    public PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window, double percentile,
                      boolean iov) {
        this(test, messageSize, iterations, warmup, window, percentile, iov ? PerfDatatype.IOV : PerfDatatype.CONTIG);
    }

    public PerfParams {
        Objects.requireNonNull(datatype, "datatype");
        if (errorMode != null && !ERROR_MODES.contains(errorMode)) {
            throw new IllegalArgumentException("error mode must be one of " + ERROR_MODES + ", got '" + errorMode
                    + "'");
        }
        if (jitWarmup != null && (jitWarmup.isEmpty() || jitWarmup.contains(" "))) {
            throw new IllegalArgumentException("JIT warm-up must be a duration such as 2s, got '" + jitWarmup + "'");
        }
        if (steadyWindow < 0) {
            throw new IllegalArgumentException("steady warm-up window must be >= 0 iterations, got " + steadyWindow);
        }
        if (settleNanos < 0) {
            throw new IllegalArgumentException("settle time must be >= 0, got " + settleNanos + " ns");
        }
        if (warmupNanos < 0) {
            throw new IllegalArgumentException("warm-up time must be >= 0, got " + warmupNanos + " ns");
        }
        if (messageSize < 0) {
            throw new IllegalArgumentException("message size must be >= 0, got " + messageSize);
        }
        if (test.stream() && messageSize == 0) {
            // a write of no bytes puts nothing in the stream: the reader would wait for ever
            throw new IllegalArgumentException(test.testName() + " needs a message size of at least 1 byte, got 0");
        }
        if (iterations <= 0) {
            throw new IllegalArgumentException("iterations must be > 0, got " + iterations);
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("warm-up iterations must be >= 0, got " + warmup);
        }
        if (window <= 0) {
            throw new IllegalArgumentException("window must be > 0, got " + window);
        }
        if (percentile <= 0 || percentile >= 100) {
            throw new IllegalArgumentException("percentile must be in (0, 100), got " + percentile);
        }
    }

    /** The send buffer is a two-part composite (ucx_perftest's {@code -D iov}). */
    public boolean iov() {
        return datatype.iov();
    }

    /**
     * The worker settings of this run ({@code -D}'s, NUCX_ERR_MODE for {@code -e}, NUCX_WARMUP for the JIT warm-up),
     * both sides alike.
     */
    public Map<String, String> settings() {
        Map<String, String> out = new LinkedHashMap<>(datatype.settings());
        if (errorMode != null) {
            out.put("ERR_MODE", errorMode);
        }
        if (jitWarmup != null) {
            out.put("WARMUP", jitWarmup);
        }
        return out;
    }

    /**
     * The line the client sends the server over the setup socket ({@code -} for the environment's error mode and
     * JIT warm-up; {@code fresh} or {@code same} for the send buffers' data).
     */
    String encode() {
        return test.testName() + " " + messageSize + " " + iterations + " " + warmup + " " + window + " "
                + datatype.optionName() + " " + (errorMode == null ? "-" : errorMode) + " "
                + (jitWarmup == null ? "-" : jitWarmup) + " " + (freshData ? "fresh" : "same");
    }

    static PerfParams decode(String line) {
        String[] f = line.trim().split(" ");
        if (f.length != 9 || !(f[8].equals("fresh") || f[8].equals("same"))) {
            throw new IllegalArgumentException("bad perftest parameters from client: '" + line + "'");
        }
        return new PerfParams(PerfTestType.of(f[0]), Integer.parseInt(f[1]), Long.parseLong(f[2]),
                Long.parseLong(f[3]), Integer.parseInt(f[4]), 50.0, PerfDatatype.of(f[5]), WARMUP_BUDGET_NANOS,
                f[6].equals("-") ? null : f[6], 0, f[7].equals("-") ? null : f[7], DEFAULT_SETTLE_NANOS,
                f[8].equals("fresh"));
    }
}
