package io.nucx.examples;

import io.nucx.examples.perf.PerfDatatype;
import io.nucx.examples.perf.PerfParams;
import io.nucx.examples.perf.PerfReporter;
import io.nucx.examples.perf.PerfResult;
import io.nucx.examples.perf.PerfTestType;
import io.nucx.examples.perf.Perftest;
import io.nucx.transport.NucxConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code nucx perftest}: run as ucx_perftest is run. Server: {@code nucx perftest -p PORT}. Client:
 * {@code nucx perftest HOST -p PORT -t tag_lat -s 8 -n 100000}. Transports come from {@code NUCX_TLS}.
 */
@Command(name = "perftest", mixinStandardHelpOptions = true,
        description = "Measure latency and bandwidth like ucx_perftest. Without HOST: serve one test.")
final class PerftestCommand implements Callable<Integer> {

    @Parameters(index = "0", arity = "0..1", paramLabel = "HOST", description = "Server to connect to (client mode).")
    String host;

    @Option(names = "-p", paramLabel = "PORT", description = "Set-up port (default: ${DEFAULT-VALUE}).",
            defaultValue = "13337")
    int port;

    @Option(names = "-t", paramLabel = "TEST",
            description = "Test: tag_lat | tag_bw | tag_sync_lat | tag_sync_bw | ucp_put_bw | ucp_get "
                    + "(default: ${DEFAULT-VALUE}).",
            defaultValue = "tag_lat")
    String test;

    @Option(names = "-s", paramLabel = "SIZE", description = "Message size in bytes (default: ${DEFAULT-VALUE}).",
            defaultValue = "8")
    int size;

    @Option(names = "-n", paramLabel = "ITERS", description = "Iterations (default: ${DEFAULT-VALUE}).",
            defaultValue = "1000000")
    long iterations;

    @Option(names = "-w", paramLabel = "WARMUP", description = "Warm-up iterations, at most 100 ms "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "10000")
    long warmup;

    @Option(names = "-O", paramLabel = "WINDOW", description = "Outstanding sends in bandwidth tests "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "32")
    int window;

    @Option(names = "-R", paramLabel = "RANK", description = "Latency percentile to report (default: ${DEFAULT-VALUE}).",
            defaultValue = "50.0")
    double percentile;

    @Option(names = "-D", paramLabel = "DATATYPE", description = "Send datatype: contig | iov, or the eager "
            + "protocols: bcopy (no zero-copy) | zcopy (zero-copy wherever offered: tcp, messages over 1 KiB) "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "contig")
    String datatype;

    @Option(names = "-e", paramLabel = "MODE", description = "Error handling of the endpoints, both sides: none | "
            + "peer | failover (default: NUCX_ERR_MODE, else peer).")
    String errorMode;

    @Option(names = "--warmup-time", paramLabel = "SECONDS", description = "Longest warm-up, seconds (default: "
            + "${DEFAULT-VALUE}, ucx_perftest's budget; give the JIT compiler a few seconds with -w large).",
            defaultValue = "0.1")
    double warmupSeconds;

    @Option(names = "--tail", description = "After the Final line, print p90/p99/p99.9/p99.99/max of the run.")
    boolean tail;

    @Option(names = "-f", description = "Print only the final result.")
    boolean finalOnly;

    @Option(names = "--metrics-port", paramLabel = "PORT", description = "Serve the worker's Micrometer meters as a "
            + "Prometheus scrape on 127.0.0.1:PORT/metrics while the test runs.")
    Integer metricsPort;

    /** This command as picocli runs it: usage errors go to its error stream. */
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PerfDatatype sendDatatype = sendDatatype(); // checked in either role: a server given a bad -D says so too
        if (errorMode != null && !PerfParams.ERROR_MODES.contains(errorMode)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-e: unknown error mode '" + errorMode
                    + "' (" + String.join(" | ", PerfParams.ERROR_MODES) + ")");
        }
        NucxConfig config = NucxConfig.fromEnvironment().validate();
        boolean busyPoll = busyPoll(config);
        try (MetricsServer metrics = metricsPort == null ? null : MetricsServer.start(metricsPort)) {
            if (metrics != null) {
                Perftest.onWorkerStarted(metrics::bind);
                System.err.println("metrics: http://127.0.0.1:" + metrics.port() + "/metrics");
            }
            return run(sendDatatype, busyPoll);
        }
    }

    private int run(PerfDatatype sendDatatype, boolean busyPoll) throws Exception {
        if (host == null) {
            Perftest.serve(port, Map.of(), busyPoll, System.out);
            return 0;
        }
        if (!(warmupSeconds >= 0 && warmupSeconds <= 3600)) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--warmup-time must be between 0 and "
                    + "3600 seconds, got " + warmupSeconds);
        }
        PerfParams params = new PerfParams(PerfTestType.of(test), size, iterations, warmup, window, percentile,
                sendDatatype, (long) (warmupSeconds * 1e9), errorMode);
        PerfReporter reporter = new PerfReporter(System.out, finalOnly, onTerminal());
        PerfResult r = Perftest.run(host, port, params, Map.of(), busyPoll, reporter);
        if (tail) {
            reporter.tailRow(r);
        }
        return 0;
    }

    private PerfDatatype sendDatatype() {
        try {
            return PerfDatatype.of(datatype);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-D: " + e.getMessage());
        }
    }

    /** Like ucx_perftest, spin by default; NUCX_BUSY_POLL=n makes the loops block instead. */
    static boolean busyPoll(NucxConfig config) {
        boolean explicit = System.getenv("NUCX_BUSY_POLL") != null || System.getProperty("nucx.busy.poll") != null;
        return !explicit || config.get(io.nucx.wireup.WireupConfig.BUSY_POLL);
    }

    /** Progress rows only when a person is watching. */
    static boolean onTerminal() {
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }
}
