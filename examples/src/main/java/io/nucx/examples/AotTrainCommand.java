package io.nucx.examples;

import io.nucx.examples.perf.PerfParams;
import io.nucx.examples.perf.PerfReporter;
import io.nucx.examples.perf.PerfTestType;
import io.nucx.examples.perf.Perftest;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transports;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code nucx aot-train}: the training run of JDK 25's ahead-of-time cache (JEP 483 class loading and linking).
 * {@code bin/build} runs it once with {@code -XX:AOTCacheOutput}; {@code bin/nucx} then starts with
 * {@code -XX:AOTCache}, so its classes are loaded and linked already. It records no method profiles (JEP 515;
 * {@code -XX:-AOTRecordTraining}): profiles taken over every transport and test made the JIT compile the hot path for
 * all of them, and a run over one transport stayed 1.3–1.4× slower than without them. It does what perftest and the
 * demo do, short, in one process:
 * for each transport that carries messages (and shm or tcp with cma next to it), tag_lat 8 B and tag_bw of 8 B, 64 KiB
 * and 1 MiB, busy-polling, then tag_lat once with blocking loops and workers that warm up at start (NUCX_WARMUP).
 */
@Command(name = "aot-train", mixinStandardHelpOptions = true,
        description = "Training run for the JDK's AOT cache (bin/build runs it with -XX:AOTCacheOutput).")
final class AotTrainCommand implements Callable<Integer> {

    @Option(names = "--scale", defaultValue = "1", paramLabel = "FACTOR",
            description = "Multiply every run's iterations (default: ${DEFAULT-VALUE}).")
    double scale;

    @Override
    public Integer call() throws Exception {
        NucxConfig config = NucxConfig.fromEnvironment().validate();
        PerftestCommand.measuringLeakDetection();
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
        long start = System.nanoTime();
        List<String> runs = DemoCommand.runs(Transports.selected(config));
        for (String tls : runs) {
            Map<String, String> settings = Map.of("TLS", tls);
            for (PerfParams p : List.of(
                    params(PerfTestType.TAG_LAT, 8, 20_000),
                    params(PerfTestType.TAG_BW, 8, 50_000),
                    params(PerfTestType.TAG_BW, 64 << 10, 2_000),
                    params(PerfTestType.TAG_BW, 1 << 20, 200))) {
                Perftest.runInProcess(p, settings, true, new PerfReporter(quiet, true, false));
            }
            // blocking loops, and the start-up warm-up perftest does by default (its classes and profiles too)
            Perftest.runInProcess(params(PerfTestType.TAG_LAT, 8, 5_000), Map.of("TLS", tls, "WARMUP", "200ms"),
                    false, new PerfReporter(quiet, true, false));
        }
        System.out.printf(Locale.ROOT, "aot-train: %s in %.1f s%n", String.join(" ", runs),
                (System.nanoTime() - start) / 1e9);
        return 0;
    }

    private PerfParams params(PerfTestType test, int size, long iterations) {
        long n = Math.max(1, (long) (iterations * scale));
        // Not settled until the compilers are quiet: the training records profiles, it measures nothing.
        return new PerfParams(test, size, n, Math.min(n, 1_000), PerfParams.DEFAULT_WINDOW, 50.0, false).withSettle(0);
    }
}
