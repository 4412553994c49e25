package io.nucx.examples;

import io.nucx.examples.perf.CoreRoundTrip;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code nucx cores}: the round trip of a cache line between two cores now ({@link CoreRoundTrip}), the floor under
 * shared-memory latency, which a virtual machine's host moves; bench/cold-start.sh labels each run with it.
 */
@Command(name = "cores", mixinStandardHelpOptions = true,
        description = "Time a cache line's round trip between two cores (two threads passing a counter): the floor "
                + "under shared-memory latency, which a VM's host changes as it places the vCPUs.")
final class CoresCommand implements Callable<Integer> {

    @Option(names = "--batches", defaultValue = "21", description = "Batches timed; the median is reported (21).")
    int batches;

    @Option(names = "--trips", defaultValue = "20000", description = "Round trips per batch (20000).")
    int trips;

    @Option(names = "--ns", description = "Print the median in nanoseconds alone (for scripts).")
    boolean nanosOnly;

    @Override
    public Integer call() throws Exception {
        if (batches < 1 || trips < 1) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--batches " + batches + " and --trips " + trips + " must be positive");
        }
        double nanos = CoreRoundTrip.medianNanos(batches, trips);
        if (nanosOnly) {
            System.out.println(Math.round(nanos));
        } else {
            System.out.printf(Locale.ROOT, "core-to-core round trip: %.0f ns (median of %d batches of %d)%s%n",
                    nanos, batches, trips, CoreRoundTrip.sharedCache(nanos)
                            ? ": cores that share a level-3 cache" : ": cores that do not share a level-3 cache");
        }
        return 0;
    }
}
