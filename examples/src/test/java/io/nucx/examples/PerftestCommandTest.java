package io.nucx.examples;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code nucx perftest}'s command line; the JIT warm-up's runs are short in-process ones over self. */
class PerftestCommandTest {

    @Test
    void anUnknownDashDValueIsAUsageErrorNamingTheKnownOnesInEitherRole() {
        String[][] clientAndServer = {{"127.0.0.1", "-p", "1", "-D", "zerocopy"}, {"-p", "1", "-D", "zerocopy"}};
        for (String[] args : clientAndServer) {
            StringWriter err = new StringWriter();
            int code = new CommandLine(new PerftestCommand()).setErr(new PrintWriter(err, true)).execute(args);
            assertEquals(2, code, err::toString);
            assertTrue(err.toString().contains("-D: unknown datatype 'zerocopy' (contig | iov | bcopy | zcopy)"),
                    err::toString);
        }
    }

    @Test
    void anUnknownErrorModeIsAUsageErrorNamingTheKnownOnes() {
        StringWriter err = new StringWriter();
        int code = new CommandLine(new PerftestCommand()).setErr(new PrintWriter(err, true))
                .execute("127.0.0.1", "-p", "1", "-e", "sometimes");
        assertEquals(2, code, err::toString);
        assertTrue(err.toString().contains("-e: unknown error mode 'sometimes' (none | peer | failover)"),
                err::toString);
    }

    @Test
    void eachWorkerWarmsUpForTheGivenTimeAndZeroTurnsItOff() throws Exception {
        assertTrue(warmupMessagesOfARun("--jit-warmup", "300ms") > 0, "--jit-warmup 300ms: no warm-up messages");
        assertEquals(0, warmupMessagesOfARun("--jit-warmup", "0"), "--jit-warmup 0");
    }

    @Test
    void byDefaultAShortRunWarmsUpAndALongWarmupDoesNot() throws Exception {
        assertTrue(warmupMessagesOfARun() > 0, "a short run (--warmup-time 0.1 s): no warm-up messages");
        // -w 10 ends the run's own warm-up at once: only its budget says "long"
        assertEquals(0, warmupMessagesOfARun("--warmup-time", "5", "-w", "10"), "--warmup-time 5");
    }

    @Test
    void aJitWarmupWithoutAUnitStopsTheRunNamingTheSetting() {
        StringWriter err = new StringWriter();
        int code = new CommandLine(new PerftestCommand()).setErr(new PrintWriter(err, true))
                .execute("--in-process", "-n", "10", "--jit-warmup", "2");
        assertEquals(2, code, err::toString);
        assertTrue(err.toString().contains("--jit-warmup: '2' is not a duration with a unit"), err::toString);
    }

    /** The warm-up messages of the client's worker in an in-process tag_lat run with {@code options}. */
    private static long warmupMessagesOfARun(String... options) throws Exception {
        java.util.List<io.nucx.Worker> started = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.List<Long> counts = new java.util.concurrent.CopyOnWriteArrayList<>();
        io.nucx.examples.perf.Perftest.onWorkerStarted(w -> {
            started.add(w);
            counts.add(w.counters().count(io.nucx.NucxBootstrap.WARMUP_MESSAGES));
        });
        try {
            assertEquals(0, (int) args(new PerftestCommand(), options).call());
        } finally {
            io.nucx.examples.perf.Perftest.onWorkerStarted(w -> { });
        }
        assertEquals(2, started.size(), "workers started: " + started);
        assertEquals(counts.get(0) > 0, counts.get(1) > 0, "both workers warm up or neither: " + counts);
        return counts.get(0);
    }

    private static PerftestCommand args(PerftestCommand c, String... options) {
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("--in-process", "-t", "tag_lat",
                "-s", "8", "-n", "2000", "-f"));
        args.addAll(java.util.List.of(options));
        new CommandLine(c).parseArgs(args.toArray(String[]::new));
        return c;
    }
}
