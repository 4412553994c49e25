package io.nucx.examples.perf;

import java.util.Locale;

/**
 * The child process of {@link ZeroAllocationTest}: two workers of this JVM play tagged ping-pong over one transport
 * ({@link InProcessPingPong}) and it prints what both loop threads allocated per round trip once warm: the least of
 * three measured windows, one line {@code ALLOC <api> <bytes per round trip>} per API, after a line
 * {@code WINDOWS <api> ...} with every window's figure. Arguments: transport, busy-poll (true/false), message size,
 * warm-up round trips, measured round trips.
 */
public final class AllocationProbe {

    private static final int WINDOWS = 3;

    public static void main(String[] args) throws Exception {
        String tls = args[0];
        boolean busyPoll = Boolean.parseBoolean(args[1]);
        int size = Integer.parseInt(args[2]);
        int warm = Integer.parseInt(args[3]);
        int measured = Integer.parseInt(args[4]);
        for (InProcessPingPong.Api api : InProcessPingPong.Api.values()) {
            try (InProcessPingPong pp = InProcessPingPong.start(tls, size, api, busyPoll)) {
                pp.run(warm);
                // Several windows, the least counts: what a message allocates shows in every window, while one-off
                // work the loops do now and then (a timer's task, a pool's bookkeeping) lands in one of them.
                double least = Double.MAX_VALUE;
                StringBuilder windows = new StringBuilder();
                for (int w = 0; w < WINDOWS; w++) {
                    long before = pp.loopAllocatedBytes();
                    pp.run(measured);
                    double perRoundTrip = (pp.loopAllocatedBytes() - before) / (double) measured;
                    least = Math.min(least, perRoundTrip);
                    windows.append(String.format(Locale.ROOT, " %.3f", perRoundTrip));
                }
                System.out.println("WINDOWS " + api + windows);
                System.out.println(String.format(Locale.ROOT, "ALLOC %s %.3f", api, least));
            }
        }
        System.exit(0);
    }
}
