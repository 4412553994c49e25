package io.nucx.examples.perf;

/**
 * One perftest run ({@code datatype}: ucx_perftest's {@code -D}, see {@link PerfDatatype}), with ucx_perftest's
 * defaults: 1,000,000 iterations, 10,000 warm-up iterations (bounded by a 100 ms warm-up budget, which
 * {@code warmupNanos} can raise: a JVM's JIT compiler needs seconds), a window of 32 outstanding sends for bandwidth
 * tests, the 50th percentile.
 */
public record PerfParams(PerfTestType test, int messageSize, long iterations, long warmup, int window,
                         double percentile, PerfDatatype datatype, long warmupNanos) {

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
        java.util.Objects.requireNonNull(datatype, "datatype");
        if (warmupNanos < 0) {
            throw new IllegalArgumentException("warm-up time must be >= 0, got " + warmupNanos + " ns");
        }
        if (messageSize < 0) {
            throw new IllegalArgumentException("message size must be >= 0, got " + messageSize);
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

    /** The line the client sends the server over the setup socket. */
    String encode() {
        return test.testName() + " " + messageSize + " " + iterations + " " + warmup + " " + window + " "
                + datatype.optionName();
    }

    static PerfParams decode(String line) {
        String[] f = line.trim().split(" ");
        if (f.length != 6) {
            throw new IllegalArgumentException("bad perftest parameters from client: '" + line + "'");
        }
        return new PerfParams(PerfTestType.of(f[0]), Integer.parseInt(f[1]), Long.parseLong(f[2]),
                Long.parseLong(f[3]), Integer.parseInt(f[4]), 50.0, PerfDatatype.of(f[5]));
    }
}
