package io.nucx.examples;

import io.nucx.examples.perf.CoreRoundTrip;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

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

    /** Bounds that keep a mistyped count from running for hours or allocating gigabytes. */
    static final int MAX_BATCHES = 10_001;
    static final int MAX_TRIPS = 10_000_000;

    @Spec
    CommandSpec spec;

    @Option(names = "--batches", defaultValue = "21",
            description = "Batches timed, 1-" + MAX_BATCHES + "; the median is reported (default: ${DEFAULT-VALUE}).")
    int batches;

    @Option(names = "--trips", defaultValue = "20000",
            description = "Round trips per batch, 1-" + MAX_TRIPS + " (default: ${DEFAULT-VALUE}).")
    int trips;

    @Option(names = "--ns", description = "Print the median in nanoseconds alone (for scripts).")
    boolean nanosOnly;

    @Override
    public Integer call() throws Exception {
        if (batches < 1 || batches > MAX_BATCHES) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--batches must be between 1 and "
                    + MAX_BATCHES + ", got " + batches);
        }
        if (trips < 1 || trips > MAX_TRIPS) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--trips must be between 1 and "
                    + MAX_TRIPS + ", got " + trips);
        }
        double nanos = CoreRoundTrip.medianNanos(batches, trips);
        if (nanosOnly) {
            System.out.println(Math.round(nanos));
        } else {
            System.out.printf(Locale.ROOT, "core-to-core round trip: %.0f ns (median of %d batches of %d)%s%n",
                    nanos, batches, trips, Runtime.getRuntime().availableProcessors() < 2
                            ? ": one processor allowed, the two threads took turns on it"
                            : CoreRoundTrip.sharedCache(nanos) ? ": cores that share a level-3 cache"
                            : ": cores that do not share a level-3 cache");
        }
        return 0;
    }
}
