package io.nucx.examples.perf;

import java.util.Locale;

/**
 * The child process of {@link ZeroAllocationTest}: two workers of this JVM play tagged ping-pong over one transport
 * ({@link InProcessPingPong}) and it prints what both loop threads allocated per round trip once warm, one line
 * {@code ALLOC <api> <bytes per round trip>} per API. Arguments: transport, busy-poll (true/false), message size,
 * warm-up round trips, measured round trips.
 */
public final class AllocationProbe {

    public static void main(String[] args) throws Exception {
        String tls = args[0];
        boolean busyPoll = Boolean.parseBoolean(args[1]);
        int size = Integer.parseInt(args[2]);
        int warm = Integer.parseInt(args[3]);
        int measured = Integer.parseInt(args[4]);
        for (InProcessPingPong.Api api : InProcessPingPong.Api.values()) {
            try (InProcessPingPong pp = InProcessPingPong.start(tls, size, api, busyPoll)) {
                pp.run(warm);
                long before = pp.loopAllocatedBytes();
                pp.run(measured);
                long after = pp.loopAllocatedBytes();
                System.out.println(String.format(Locale.ROOT, "ALLOC %s %.3f", api, (after - before) / (double) measured));
            }
        }
        System.exit(0);
    }
}
