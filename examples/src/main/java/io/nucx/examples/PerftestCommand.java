package io.nucx.examples;

import io.netty.util.ResourceLeakDetector;
import io.nucx.examples.perf.PerfDatatype;
import io.nucx.examples.perf.PerfParams;
import io.nucx.examples.perf.PerfReporter;
import io.nucx.examples.perf.PerfResult;
import io.nucx.examples.perf.PerfTestType;
import io.nucx.examples.perf.Perftest;
import io.nucx.examples.perf.SweepServer;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import io.nucx.transport.config.ConfigEntry;
import io.nucx.wireup.WireupConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

import java.io.Console;
import java.nio.file.Path;
import java.util.List;
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
            description = "Test: tag_lat | tag_bw | tag_sync_lat | tag_sync_bw | ucp_put_bw | ucp_get | am_lat | am_bw "
                    + "| stream_lat | stream_bw "
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

    @Option(names = "--settle-time", paramLabel = "SECONDS", description = "After the warm-up, run on until both "
            + "sides' JIT compilers are quiet (under 1 %% of 200 ms), so no compilation the warm-up set off lands in "
            + "the measured run; at most this long. 0: one warm-up's worth of iterations, compilers not waited for "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "5")
    double settleSeconds;

    @Option(names = "--steady-warmup", paramLabel = "WINDOW", description = "End the warm-up as soon as the run "
            + "is steady: three windows of WINDOW iterations in a row within 10 %% of the best, the JIT compiler quiet "
            + "for 0.5 s (still at most -w iterations and --warmup-time); prints how long it took. 0: off (default: "
            + "${DEFAULT-VALUE}).", defaultValue = "0")
    int steadyWarmup;

    @Option(names = "--jit-warmup", paramLabel = "DURATION", description = "Before the test, both sides' workers "
            + "warm the JIT compiler up this long on a private endpoint of their own (NUCX_WARMUP: nucx's send and "
            + "receive paths compiled before the first message, so a short run shows them rather than the "
            + "interpreter); 0: not (default: NUCX_WARMUP if set, else " + DEFAULT_JIT_WARMUP + " for a run whose "
            + "--warmup-time is under " + LONG_WARMUP_SECONDS + " s, which would not give the JIT time, 0 otherwise).")
    String jitWarmup;

    /** What a first try gets: on 2 cores 2 s of warm-up take a short tcp tag_lat run from ~25 us to ~7 (BENCHMARKS). */
    static final String DEFAULT_JIT_WARMUP = "2s";
    /**
     * A run that warms itself up at least this long gets no start-up warm-up by default: the JIT compiles on the run's
     * own messages, and a profile without the warm-up's variety is a little faster at steady state (BENCHMARKS).
     */
    static final int LONG_WARMUP_SECONDS = 2;

    @Option(names = "--fresh-data", description = "Both sides write every cache line of their send buffer before "
            + "each send, as an application sends new data (ucx_perftest sends one unchanged buffer).")
    boolean freshData;

    @Option(names = "--tail", description = "After the Final line, print p90/p99/p99.9/p99.99/max of the run.")
    boolean tail;

    @Option(names = "-f", description = "Print only the final result.")
    boolean finalOnly;

    @Option(names = "--progress", description = "Print a row every second of the measured run, as ucx_perftest does, "
            + "also when the output is not a terminal (bench/interleave.py reads them).")
    boolean progress;

    @Option(names = "--windows", paramLabel = "ITERS", description = "After the run, a Window line for every ITERS "
            + "iterations, warm-up and settling included (iterations so far, ms since the process started, the "
            + "window's average), how long the settling took, and when the run reached its steady state (three "
            + "windows in a row within 10 %% of the final average); 0: off (default: ${DEFAULT-VALUE}).",
            defaultValue = "0")
    int windows;

    @Option(names = "--in-process", description = "Run the server on a thread of this process (HOST is then "
            + "ignored): two workers in one JVM, over any transport in NUCX_TLS (self needs this).")
    boolean inProcess;

    @Option(names = "--metrics-port", paramLabel = "PORT", description = "Serve the worker's Micrometer meters as a "
            + "Prometheus scrape on 127.0.0.1:PORT/metrics while the test runs.")
    Integer metricsPort;

    @Option(names = "--sweep", description = "Sweep message sizes (--min-size .. --max-size: powers of two and the "
            + "edges of each protocol range) over each --tls set, with the protocol the engine picks and with each one "
            + "it could pick forced by hand, in alternating rounds; writes runs.csv, summary.csv, summary.md and a PNG "
            + "per set to --out. Without HOST it starts its own server process.")
    boolean sweep;

    @Option(names = "--sweep-server", description = "Serve sweep runs on -p until the sweep ends (what --sweep "
            + "starts by itself; run it by hand to sweep against another host).")
    boolean sweepServer;

    @Option(names = "--tls", paramLabel = "TLS", split = ";", description = "With --sweep: transport sets, "
            + "';'-separated NUCX_TLS values (default: ${DEFAULT-VALUE}).", defaultValue = "tcp;shm;shm,cma")
    List<String> sweepTls;

    @Option(names = "--min-size", paramLabel = "BYTES", description = "With --sweep: smallest size "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "1")
    long sweepMin;

    @Option(names = "--max-size", paramLabel = "BYTES", description = "With --sweep: largest size "
            + "(default: ${DEFAULT-VALUE}, 64 MiB).", defaultValue = "67108864")
    long sweepMax;

    @Option(names = "--rounds", paramLabel = "N", description = "With --sweep: runs of each protocol per size, "
            + "back to back, the order rotated each round (default: ${DEFAULT-VALUE}).", defaultValue = "3")
    int sweepRounds;

    @Option(names = "--run-time", paramLabel = "SECONDS", description = "With --sweep: how long each run should take "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "0.4")
    double sweepRunSeconds;

    @Option(names = "--sweep-warmup", paramLabel = "SECONDS", description = "With --sweep: unrecorded runs first, "
            + "so the JIT compiler is done (default: ${DEFAULT-VALUE}).", defaultValue = "20")
    double sweepWarmupSeconds;

    @Option(names = "--metric", paramLabel = "METRIC", description = "With --sweep: what runs are compared by: overall "
            + "(the average, what the cost model predicts) | percentile (the -R percentile of iterations: on a busy "
            + "machine -R 10 keeps preempted iterations out; ping-pong tests) (default: ${DEFAULT-VALUE}).",
            defaultValue = "overall")
    String sweepMetric;

    @Option(names = "--out", paramLabel = "DIR", description = "With --sweep: where its files go "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "bench/out/sweep")
    Path sweepOut;

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
        measuringLeakDetection();
        try (MetricsServer metrics = metricsPort == null ? null : MetricsServer.start(metricsPort)) {
            if (metrics != null) {
                Perftest.onWorkerStarted(metrics::bind);
                System.err.println("metrics: http://127.0.0.1:" + metrics.port() + "/metrics");
            }
            return run(sendDatatype, busyPoll);
        }
    }

    private int run(PerfDatatype sendDatatype, boolean busyPoll) throws Exception {
        if (sweepServer) {
            SweepServer.serve(port, busyPoll, System.out);
            return 0;
        }
        if (sweep) {
            return SweepCommand.run(this, busyPoll);
        }
        checkJitWarmup();
        // the client's choice travels with the test parameters and applies to both sides (as -D and -e do)
        Map<String, String> config = jitWarmup == null ? Map.of() : Map.of("WARMUP", jitWarmup);
        if (host == null && !inProcess) {
            Perftest.serve(port, config, busyPoll, System.out);
            return 0;
        }
        if (!(warmupSeconds >= 0 && warmupSeconds <= 3600)) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--warmup-time must be between 0 and "
                    + "3600 seconds, got " + warmupSeconds);
        }
        if (steadyWarmup < 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--steady-warmup must be >= 0, got "
                    + steadyWarmup);
        }
        if (!(settleSeconds >= 0 && settleSeconds <= 3600)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--settle-time must be between 0 and 3600 "
                    + "seconds, got " + settleSeconds);
        }
        PerfParams params = new PerfParams(PerfTestType.of(test), size, iterations, warmup, window, percentile,
                sendDatatype, (long) (warmupSeconds * 1e9), errorMode, steadyWarmup).withJitWarmup(runJitWarmup())
                .withSettle((long) Math.ceil(settleSeconds * 1e9)).withFreshData(freshData);
        if (windows < 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--windows must be >= 0, got " + windows);
        }
        PerfReporter reporter = new PerfReporter(System.out, finalOnly, progress || onTerminal()).windows(windows);
        PerfResult r = inProcess ? Perftest.runInProcess(params, config, busyPoll, reporter)
                : Perftest.run(host, port, params, config, busyPoll, reporter);
        if (tail) {
            reporter.tailRow(r);
        }
        return 0;
    }

    /** A bad {@code --jit-warmup} is a usage error naming the option, in either role. */
    private void checkJitWarmup() {
        if (jitWarmup == null) {
            return;
        }
        try {
            NucxConfig.of(Map.of("WARMUP", jitWarmup)).get(WireupConfig.WARMUP);
        } catch (NucxConfigException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--jit-warmup: '" + jitWarmup
                    + "' is not a duration with a unit (e.g. 500ms, 2s; 0 for none)");
        }
    }

    /**
     * The run's JIT warm-up, both sides: {@code --jit-warmup}; else none of the client's (NUCX_WARMUP, if set, on
     * each side); else {@value #DEFAULT_JIT_WARMUP} for a short run, 0 for one that warms itself up long enough.
     */
    private String runJitWarmup() {
        if (jitWarmup != null) {
            return jitWarmup;
        }
        if (givenOutside("WARMUP")) {
            return null;
        }
        return warmupSeconds < LONG_WARMUP_SECONDS ? DEFAULT_JIT_WARMUP : "0";
    }

    private PerfDatatype sendDatatype() {
        try {
            return PerfDatatype.of(datatype);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-D: " + e.getMessage());
        }
    }

    /**
     * Netty's leak detector off unless {@code io.netty.leakDetection.level} was given: its default level samples one
     * buffer in 128 with a stack trace, which is ~50 bytes and a fraction of a microsecond per message here, as much
     * as the code measured. ucx_perftest does not run a memory checker either.
     */
    static void measuringLeakDetection() {
        if (System.getProperty("io.netty.leakDetection.level") == null
                && System.getProperty("io.netty.leakDetectionLevel") == null) {
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
        }
    }

    /** Like ucx_perftest, spin by default; NUCX_BUSY_POLL=n makes the loops block instead. */
    static boolean busyPoll(NucxConfig config) {
        return !givenOutside("BUSY_POLL") || config.get(WireupConfig.BUSY_POLL);
    }

    /** Whether setting {@code name} was given as NUCX_name or as its system property, not left to its default. */
    private static boolean givenOutside(String name) {
        return System.getenv(ConfigEntry.envName(name)) != null
                || System.getProperty(ConfigEntry.propertyName(name)) != null;
    }

    /** Progress rows only when a person is watching. */
    static boolean onTerminal() {
        Console c = System.console();
        return c != null && c.isTerminal();
    }
}
