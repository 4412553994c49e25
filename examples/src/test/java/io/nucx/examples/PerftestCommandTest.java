package io.nucx.examples;

import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.examples.perf.Perftest;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

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

    @Test
    void progressRowsComeEverySecondWhenAskedThoughNoTerminalWatches() throws Exception {
        // A measured run of over a second (self, in one JVM, 1,000,000 round trips: about 6 s here under the leak
        // detector); surefire's output is no terminal, so only --progress prints the rows bench/interleave.py reads.
        String asked = outputOf("--progress");
        long rows = asked.lines().filter(l -> l.startsWith("[thread 0]")).count();
        assertTrue(rows >= 1, "--progress: no progress row in\n" + asked);
        assertTrue(asked.lines().anyMatch(l -> l.startsWith("Final:")), asked);
        String notAsked = outputOf();
        assertEquals(0, notAsked.lines().filter(l -> l.startsWith("[thread 0]")).count(), notAsked);
    }

    private static String outputOf(String... options) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream was = System.out;
        System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            PerftestCommand c = parsed(List.of("--in-process", "-t", "tag_lat", "-s", "8", "-n", "1000000",
                    "--warmup-time", "0.2", "--jit-warmup", "0"), options);
            assertEquals(0, (int) c.call());
        } finally {
            System.setOut(was);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /** The warm-up messages of the first worker of an in-process tag_lat run with {@code options} to start. */
    private static long warmupMessagesOfARun(String... options) throws Exception {
        List<Worker> started = new CopyOnWriteArrayList<>();
        List<Long> counts = new CopyOnWriteArrayList<>();
        Perftest.onWorkerStarted(w -> {
            started.add(w);
            counts.add(w.counters().count(NucxBootstrap.WARMUP_MESSAGES));
        });
        try {
            assertEquals(0, (int) args(options).call());
        } finally {
            Perftest.onWorkerStarted(w -> { });
        }
        assertEquals(2, started.size(), "workers started: " + started);
        assertEquals(counts.get(0) > 0, counts.get(1) > 0, "both workers warm up or neither: " + counts);
        return counts.get(0);
    }

    private static PerftestCommand args(String... options) {
        return parsed(List.of("--in-process", "-t", "tag_lat", "-s", "8", "-n", "2000", "-f"), options);
    }

    /** A command with {@code base}, then {@code options}, parsed into it. */
    private static PerftestCommand parsed(List<String> base, String... options) {
        List<String> args = new ArrayList<>(base);
        args.addAll(List.of(options));
        PerftestCommand c = new PerftestCommand();
        new CommandLine(c).parseArgs(args.toArray(String[]::new));
        return c;
    }
}
