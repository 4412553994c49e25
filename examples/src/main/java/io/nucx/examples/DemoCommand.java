package io.nucx.examples;

import io.nucx.examples.perf.CoreRoundTrip;
import io.nucx.examples.perf.PerfDatatype;
import io.nucx.examples.perf.PerfParams;
import io.nucx.examples.perf.PerfReporter;
import io.nucx.examples.perf.PerfResult;
import io.nucx.examples.perf.PerfTestType;
import io.nucx.examples.perf.Perftest;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;
import io.nucx.transport.self.SelfTransport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code nucx demo}: two workers exchange tagged messages over every available transport, a ping-pong and a
 * bandwidth run each, printed as perftest tables and summed up at the end. Between processes where the transport
 * crosses processes (tcp: the server is a second JVM), inside one JVM for self. Both sides busy-poll, as
 * ucx_perftest does.
 *
 * <p>The figures are steady-state ones, as a long ucx_perftest run's are: each run warms up until it is steady (three
 * windows in a row within 10 % of the best, the JIT compiler quiet; {@code --warmup-time} at most) and says how long
 * that took; both processes start from bin/build's AOT cache when bin/nucx found one, and the demo says whether.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Two workers exchange data over every available transport; perftest-style tables.")
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--lat-iters", defaultValue = "100000", description = "Ping-pong iterations (8 B).")
    long latIterations;

    @Option(names = "--bw-iters", defaultValue = "2000", description = "Bandwidth iterations (1 MiB).")
    long bwIterations;

    @Option(names = "--warmup-time", defaultValue = "20", paramLabel = "SECONDS",
            description = "Longest warm-up of each run, seconds; 0 measures from the first message (default: "
                    + "${DEFAULT-VALUE}).")
    double warmupSeconds;

    /** The core round trip's probe around each run: about 30 ms, or 150 in the slow placement. */
    private static final int CORE_BATCHES = 21;
    private static final int CORE_TRIPS = 20_000;

    @Override
    public Integer call() throws Exception {
        NucxConfig config = NucxConfig.fromEnvironment().validate();
        PerftestCommand.measuringLeakDetection();
        PrintStream out = System.out;
        if (!(warmupSeconds >= 0 && warmupSeconds <= 3600)) {
            throw new IllegalArgumentException("--warmup-time must be between 0 and 3600 seconds, got "
                    + warmupSeconds);
        }
        long warmupNanos = (long) (warmupSeconds * 1e9);
        String aot = aotCache();
        out.printf(Locale.ROOT, "Each run warms up until steady (at most %.0f s), then measures; the JVMs start %s.%n",
                warmupSeconds, aot == null ? "without an AOT cache (run bin/build to train one)"
                        : "from the AOT cache " + aot);
        List<String[]> summary = new ArrayList<>();
        int failed = 0;
        for (String tls : runs(Transports.selected(config))) {
            for (PerfParams p : List.of(
                    new PerfParams(PerfTestType.TAG_LAT, 8, latIterations, 1_000_000_000L, 32, 50.0,
                            PerfDatatype.CONTIG, warmupNanos).withSteadyWarmup(10_000),
                    new PerfParams(PerfTestType.TAG_BW, 1 << 20, bwIterations, 1_000_000_000L, 32, 50.0,
                            PerfDatatype.CONTIG, warmupNanos).withSteadyWarmup(100))) {
                boolean sameProcess = tls.equals(SelfTransport.NAME);
                out.printf(Locale.ROOT, "%n=== %s: %s, %d B, %d iterations, %s ===%n", tls, p.test().testName(),
                        p.messageSize(), p.iterations(), sameProcess ? "two workers in this JVM"
                                : "server in a second JVM process");
                String coresBefore = coreRoundTrip();
                PerfResult r;
                try {
                    r = sameProcess ? inProcess(tls, p, out) : twoProcesses(tls, p, out);
                } catch (InterruptedException e) {
                    throw e; // the demo was asked to stop, not this run's failure
                } catch (Exception e) {
                    // One transport's failure is reported and the others still run: a demo that stops at the first
                    // shows nothing of the transports after it.
                    failed++;
                    out.printf(Locale.ROOT, "%s %s failed: %s%n", tls, p.test().testName(), NucxMain.describe(e));
                    summary.add(new String[] {tls, p.test().testName(), Integer.toString(p.messageSize()), "failed",
                            "", "", coresBefore + "/" + coreRoundTrip()});
                    continue;
                }
                String coresAfter = coreRoundTrip();
                summary.add(new String[] {tls, p.test().testName(), Integer.toString(p.messageSize()),
                        String.format(Locale.ROOT, "%.3f", r.overallLatencyUs()),
                        String.format(Locale.ROOT, "%.2f", r.overallBandwidth()),
                        String.format(Locale.ROOT, "%.0f", r.overallMessageRate()),
                        coresBefore + "/" + coresAfter});
            }
        }
        out.println();
        out.println("Summary (overall values of each run's Final line):");
        out.printf(Locale.ROOT, "%-10s %-8s %9s %14s %14s %14s %11s%n", "transport", "test", "size", "latency(us)",
                "bw (MB/s)", "msg/s", "cores(ns)");
        for (String[] row : summary) {
            out.printf(Locale.ROOT, "%-10s %-8s %9s %14s %14s %14s %11s%n", (Object[]) row);
        }
        out.printf(Locale.ROOT, "cores(ns): a cache line's round trip between two cores before/after the run (nucx "
                + "cores);%n  under %.0f ns they share a level-3 cache. A VM's host moves its vCPUs, and shared-memory "
                + "figures follow.%n", CoreRoundTrip.SHARED_CACHE_BELOW_NANOS);
        if (failed > 0) {
            out.printf(Locale.ROOT, "%d of %d runs failed (above, each with its reason).%n", failed, summary.size());
            return 1;
        }
        return 0;
    }

    /** The core round trip in whole nanoseconds, or "?" where the probe's second thread could not run. */
    private static String coreRoundTrip() {
        try {
            return String.format(Locale.ROOT, "%.0f", CoreRoundTrip.medianNanos(CORE_BATCHES, CORE_TRIPS));
        } catch (IllegalStateException e) {
            return "?";
        }
    }

    /**
     * One run per transport that carries active messages, alone; an RMA-only transport (cma) runs next to the
     * same-host one (shm, else tcp), where rendezvous reads the sender's memory through it.
     */
    static List<String> runs(List<Transport> selected) {
        List<String> runs = new ArrayList<>();
        List<String> rmaOnly = new ArrayList<>();
        for (Transport t : selected) {
            (t.carriesActiveMessages() ? runs : rmaOnly).add(t.name());
        }
        String host = runs.contains("shm") ? "shm" : runs.contains("tcp") ? "tcp" : null;
        if (host != null) {
            for (String rma : rmaOnly) {
                runs.add(host + "," + rma);
            }
        }
        return runs;
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static PerfResult inProcess(String tls, PerfParams p, PrintStream out) throws Exception {
        return Perftest.runInProcess(p, Map.of("TLS", tls), true,
                new PerfReporter(out, false, PerftestCommand.onTerminal()));
    }

    /** The AOT cache this JVM started from ({@code -XX:AOTCache}), or null. */
    private static String aotCache() {
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("-XX:AOTCache=")) {
                return arg.substring("-XX:AOTCache=".length());
            }
        }
        return null;
    }

    private static PerfResult twoProcesses(String tls, PerfParams p, PrintStream out) throws Exception {
        int port = freePort();
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED"));
        String aot = aotCache();
        if (aot != null) { // the server starts as warm as this JVM did
            cmd.addAll(List.of("-XX:AOTCache=" + aot, "-Xlog:aot=off"));
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), NucxMain.class.getName(), "perftest", "-p",
                Integer.toString(port)));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(new File(System.getProperty("java.io.tmpdir"), "nucx-demo-server-" + port + ".log"));
        pb.environment().put("NUCX_TLS", tls);
        File log = pb.redirectOutput().file();
        Process server = pb.start();
        try {
            PerfResult r = Perftest.run("127.0.0.1", port, p, Map.of("TLS", tls), true,
                    new PerfReporter(out, false, PerftestCommand.onTerminal()));
            if (!server.waitFor(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("demo server process did not finish");
            }
            return r;
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            // What the server saw is half of what went wrong: wait briefly for its last words, then point at them.
            boolean exited;
            try {
                exited = server.waitFor(2, TimeUnit.SECONDS);
            } catch (InterruptedException stop) {
                e.addSuppressed(stop);
                Thread.currentThread().interrupt();
                exited = !server.isAlive();
            }
            throw new IllegalStateException(NucxMain.describe(e) + System.lineSeparator() + "  the server's side (pid "
                    + server.pid() + (exited ? ", exited with " + server.exitValue() : ", still running")
                    + ", its output in " + log + "): " + lastWords(log), e);
        } finally {
            server.destroyForcibly();
        }
    }

    /** The last line of {@code log} that is not blank nor part of a table, or why there is none. */
    private static String lastWords(File log) {
        try {
            // Latin-1 reads any bytes: a log cut mid-character still shows its last words.
            List<String> lines = Files.readAllLines(log.toPath(),
                    StandardCharsets.ISO_8859_1);
            for (int i = lines.size() - 1; i >= 0; i--) {
                String line = lines.get(i);
                if (!line.isBlank() && !line.startsWith("+") && !line.startsWith("|")) {
                    return line.strip();
                }
            }
            return "(empty)";
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }
}
