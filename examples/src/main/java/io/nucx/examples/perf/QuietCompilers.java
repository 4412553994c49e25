package io.nucx.examples.perf;

/**
 * The settling's rule (see {@link TagPerfClient}): both sides' JIT compilers are quiet once, over an interval of at
 * least {@code intervalNanos}, their {@link JitActivity#compilerNanos} readings together grew by at most {@code share}
 * of it. Not by nothing at all: the settling's own chunk ends (a SYNC, the readings) are code that runs only then, and
 * their small compilations would hold a stricter rule to its limit. More than that share of the interval (or of
 * {@code intervalNanos}, early in an interval) starts the interval again from that reading.
 */
final class QuietCompilers {

    private final long intervalNanos;
    private final double share;
    private boolean started;
    private long since;
    private long client;
    private long server;

    QuietCompilers(long intervalNanos, double share) {
        if (intervalNanos <= 0 || !(share >= 0 && share < 1)) {
            throw new IllegalArgumentException("interval must be > 0 ns and share in [0, 1), got " + intervalNanos
                    + " ns and " + share);
        }
        this.intervalNanos = intervalNanos;
        this.share = share;
    }

    /** Both sides' readings at {@code now}: whether the compilers have been quiet for the interval. */
    boolean quiet(long now, long clientReading, long serverReading) {
        if (!started) {
            restart(now, clientReading, serverReading);
            return false;
        }
        long interval = now - since;
        // readings only grow; one that moved back (a side's figure switched source) counts as work too
        long ran = Math.abs(clientReading - client) + Math.abs(serverReading - server);
        if (ran > share * Math.max(interval, intervalNanos)) {
            restart(now, clientReading, serverReading);
            return false;
        }
        return interval >= intervalNanos;
    }

    private void restart(long now, long clientReading, long serverReading) {
        started = true;
        since = now;
        client = clientReading;
        server = serverReading;
    }
}
