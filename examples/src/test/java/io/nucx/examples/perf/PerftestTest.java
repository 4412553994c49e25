package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.nucx.Worker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The perftest library end to end (server and client in this JVM), printing ucx_perftest's table. */
@Timeout(120)
class PerftestTest {

    @ParameterizedTest(name = "{0} {1} {2} B {3}")
    @CsvSource({
            "tcp, tag_lat, 8, false",
            "tcp, tag_bw, 1048576, false",
            "tcp, tag_sync_lat, 8, false",
            "tcp, tag_bw, 100000, true",
            "self, tag_lat, 8, false",
            "self, tag_sync_bw, 65536, false",
            "tcp, am_lat, 8, false",
            "tcp, am_lat, 4194304, false",
            "shm, am_bw, 65536, false",
            "tcp, am_bw, 1048576, false",
            "shm, stream_lat, 8, false",
            "tcp, stream_lat, 100000, false",
            "shm, stream_bw, 65536, true",
            "shm, stream_bw, 1048576, false"})
    void aRunPrintsTheTableAndAFinalLineWithEightNumbers(String tls, String test, int size, boolean iov)
            throws Exception {
        Server server = Server.start(Map.of("TLS", tls));
        ByteArrayOutputStream clientOut = new ByteArrayOutputStream();
        long iterations = 200;
        PerfParams params = new PerfParams(PerfTestType.of(test), size, iterations, 20, 8, 50.0, iov);
        PerfResult r = Perftest.run("127.0.0.1", server.port(), params, Map.of("TLS", tls), false,
                new PerfReporter(new PrintStream(clientOut, true, StandardCharsets.UTF_8), false, false));
        server.await();

        assertEquals(iterations, r.iterations());
        assertTrue(r.overallLatencyUs() > 0 && r.overallMessageRate() > 0, r.toString());
        PerfResult.Tail t = r.tail();
        assertTrue(t != null && t.p90() > 0 && t.p90() <= t.p99() && t.p99() <= t.p999() && t.p999() <= t.p9999()
                && t.p9999() <= t.max(), () -> "tail " + t);
        String client = clientOut.toString(StandardCharsets.UTF_8);
        String finalLine = client.lines().filter(l -> l.startsWith("Final:")).findFirst().orElseThrow(
                () -> new AssertionError("no Final line:\n" + client));
        String[] numbers = finalLine.substring("Final:".length()).trim().split("\\s+");
        assertEquals(8, numbers.length, finalLine);
        assertEquals(Long.toString(iterations), numbers[0]);
        assertTrue(client.contains(params.test().pingPong() ? " latency (usec)" : "overhead (usec)"), client);
        String banner = server.output();
        assertTrue(banner.contains("| Test:         " + params.test().description()), banner);
        assertTrue(banner.contains("| Message size: " + size), banner);
    }

    /**
     * After its warm-up a run settles, in chunks that each end with a SYNC whose ack carries the server's compiler
     * reading, until both sides' compilers are quiet (which takes the 200 ms it judges over at least) or its limit;
     * the windows show the settling and a line says how long it took. With no settle time: one chunk of the warm-up's
     * length, no such line.
     */
    @Test
    void aRunSettlesAfterItsWarmupUntilBothCompilersAreQuietOrItsLimit() throws Exception {
        long limit = 3_000_000_000L;
        for (long settle : new long[] {limit, 0}) {
            Server server = Server.start(Map.of("TLS", "tcp"));
            ByteArrayOutputStream clientOut = new ByteArrayOutputStream();
            PerfParams params = new PerfParams(PerfTestType.TAG_LAT, 8, 2_000, 1_000, 8, 50.0, false)
                    .withSettle(settle);
            PerfReporter reporter = new PerfReporter(new PrintStream(clientOut, true, StandardCharsets.UTF_8), true,
                    false).windows(100);
            PerfResult r = Perftest.run("127.0.0.1", server.port(), params, Map.of("TLS", "tcp"), false, reporter);
            server.await(); // the run printed its windows and settling (windows on)
            String out = clientOut.toString(StandardCharsets.UTF_8);

            assertEquals(2_000, r.iterations(), out);
            Matcher m = Pattern.compile("Settle: (\\d+) ms, (until both sides' JIT "
                    + "compilers had run under 1 % of 200 ms|stopped at its limit with a JIT compiler still at work)")
                    .matcher(out);
            if (settle == 0) {
                assertTrue(!out.contains("Settle:"), out);
                continue;
            }
            assertTrue(m.find(), out);
            // 200 ms at least, at most a few hundred us an iteration here: windows of 100 iterations see it
            assertTrue(out.lines().anyMatch(l -> l.startsWith("Window: settle ")), out);
            long ms = Long.parseLong(m.group(1));
            if (m.group(2).startsWith("until")) {
                // found quiet at a chunk's end, which may be the one that crosses the limit
                assertTrue(ms >= 200 && ms < limit / 1_000_000 + 1_000, out);
            } else {
                assertTrue(ms >= limit / 1_000_000, out);
            }
        }
    }

    /**
     * {@code -D zcopy} forces the eager zero-copy protocols and {@code -D bcopy} forbids them, on both sides of the
     * run: 200,000 bytes over tcp (by cost alone they would go by copy), counted by the client's worker; the server
     * (pongs of tag_lat) runs with the same setting. 8 bytes with {@code -D zcopy}: nothing that small is offered
     * zero-copy, so the table's eager short stands.
     */
    @ParameterizedTest(name = "{0} {1} B -D {2}")
    @CsvSource({
            "tag_bw, 200000, zcopy, egr/multi/zcopy",
            "tag_lat, 200000, zcopy, egr/multi/zcopy",
            "tag_bw, 200000, bcopy, egr/multi/bcopy",
            "tag_lat, 8, zcopy, egr/short"})
    void dashDChoosesTheEagerProtocolFamilyOnBothSides(String test, int size, String datatype, String protocol)
            throws Exception {
        Server server = Server.start(Map.of("TLS", "tcp"));
        long iterations = 100;
        PerfParams params = new PerfParams(PerfTestType.of(test), size, iterations, 0, 8, 50.0,
                PerfDatatype.of(datatype));
        Map<String, Long> counts = new ConcurrentHashMap<>();
        PerfResult r = Perftest.run("127.0.0.1", server.port(), params, Map.of("TLS", "tcp"), false,
                quietReporter(), counts::putAll);
        server.await();
        assertEquals(iterations, r.iterations());
        // Every iteration's message by the expected protocol (no warm-up); the control messages are empty shorts.
        long count = counts.getOrDefault(protocol, 0L);
        assertTrue(protocol.equals("egr/short") ? count > iterations : count == iterations, counts::toString);
        long zcopies = counts.getOrDefault("egr/single/zcopy", 0L) + counts.getOrDefault("egr/multi/zcopy", 0L);
        assertEquals(protocol.contains("zcopy") ? iterations : 0, zcopies, counts::toString);
        assertTrue(server.output().contains("| Data layout:  " + datatype), server::output);
    }

    /**
     * {@code -e failover} reaches the server with the parameters: the server's own setting says peer, and a pair in
     * two modes would fail at wireup, so a completed run means both sides ran in failover (sends completed by
     * LANE_ACK).
     */
    @Test
    void dashEGivesBothSidesTheErrorMode() throws Exception {
        Server server = Server.start(Map.of("TLS", "shm", "ERR_MODE", "peer"));
        PerfParams params = new PerfParams(PerfTestType.TAG_BW, 8, 2000, 0, 32, 50.0, PerfDatatype.CONTIG,
                PerfParams.WARMUP_BUDGET_NANOS, "failover");
        assertEquals("tag_bw 8 2000 0 32 contig failover - same", params.encode());
        assertEquals(params, PerfParams.decode(params.encode()));
        PerfParams warm = params.withJitWarmup("300ms");
        assertEquals("tag_bw 8 2000 0 32 contig failover 300ms same", warm.encode());
        assertEquals(warm, PerfParams.decode(warm.encode()));
        assertEquals("300ms", warm.settings().get("WARMUP"), "both sides' workers get the client's JIT warm-up");
        PerfResult r = Perftest.run("127.0.0.1", server.port(), params, Map.of("TLS", "shm", "ERR_MODE", "peer"),
                false, quietReporter());
        server.await();
        assertEquals(2000, r.iterations());
    }

    /**
     * The client's parameters go while its worker starts on a thread of its own, so the server starts (and warms up)
     * its worker at the same time rather than after the client's start and warm-up. A stand-in server reads the
     * parameters while the client's worker, warming up for a second, has not started yet, then hangs up: the run fails
     * naming what it waited for, and the client's worker, started meanwhile, is closed.
     */
    @Test
    void theParametersReachTheServerBeforeTheClientsWorkerStarts() throws Exception {
        List<Worker> started = new CopyOnWriteArrayList<>();
        Perftest.onWorkerStarted(started::add);
        ExecutorService standInThread = Executors.newSingleThreadExecutor();
        try (ServerSocket standIn = new ServerSocket(0)) {
            Future<Integer> startedWhenRead = answerOneClient(standIn, standInThread, in -> started.size());
            PerfParams params = new PerfParams(PerfTestType.TAG_LAT, 8, 100, 0, 1, 50.0, PerfDatatype.CONTIG)
                    .withJitWarmup("1s");
            IOException e = assertThrows(IOException.class, () -> Perftest.run("127.0.0.1", standIn.getLocalPort(),
                    params, Map.of("TLS", "shm"), false, quietReporter()));
            assertEquals(0, startedWhenRead.get(30, TimeUnit.SECONDS), "workers started when the parameters came");
            assertTrue(e.getMessage().contains("before sending the server worker address"), e::getMessage);
            assertEquals(1, started.size(), () -> "workers started: " + started);
            assertTrue(started.get(0).close().isSuccess(), "the client's worker was closed after the failure");
        } finally {
            Perftest.onWorkerStarted(w -> { });
            standInThread.shutdownNow();
        }
    }

    /**
     * A client whose worker cannot start (a bad setting) fails naming the setting, though its parameters went first;
     * the server, which started a worker for them, ends saying why no client worker came. With no server there yet,
     * the setting is named too, not the server's absence after the set-up connection's retries.
     */
    @Test
    void aClientWhoseWorkerCannotStartNamesTheSettingAndTheServerSaysWhyNoneCame() throws Exception {
        PerfParams params = new PerfParams(PerfTestType.TAG_LAT, 8, 100, 0, 1, 50.0, PerfDatatype.CONTIG);
        Map<String, String> bad = Map.of("TLS", "shm", "WARMUP", "2");
        int nobody;
        try (ServerSocket s = new ServerSocket(0)) {
            nobody = s.getLocalPort();
        }
        Exception alone = assertThrows(Exception.class, () -> Perftest.run("127.0.0.1", nobody, params, bad, false,
                quietReporter()));
        assertTrue(String.valueOf(alone.getMessage()).contains("WARMUP"), () -> String.valueOf(alone));

        Server server = Server.start(Map.of("TLS", "shm"));
        Exception e = assertThrows(Exception.class, () -> Perftest.run("127.0.0.1", server.port(), params, bad,
                false, quietReporter()));
        assertTrue(String.valueOf(e.getMessage()).contains("WARMUP"), () -> String.valueOf(e));
        ExecutionException served = assertThrows(ExecutionException.class, server::await);
        String why = String.valueOf(served.getCause());
        assertTrue(why.contains("the perftest client could not start its worker") && why.contains("WARMUP"), why);
    }

    /**
     * A client interrupted while its worker still warms up ends with the interrupt, tells the server why no worker
     * comes, and closes its worker once the start is over rather than leaving it running behind the failed run.
     */
    @Test
    void aClientInterruptedWhileItsWorkerStartsTellsTheServerAndClosesTheWorker() throws Exception {
        List<Worker> started = new CopyOnWriteArrayList<>();
        Perftest.onWorkerStarted(started::add);
        ExecutorService threads = Executors.newSingleThreadExecutor();
        try (ServerSocket standIn = new ServerSocket(0)) {
            CountDownLatch paramsRead = new CountDownLatch(1);
            Future<String> told = answerOneClient(standIn, threads, in -> {
                paramsRead.countDown();
                return Perftest.readLine(in, "client worker address"); // the server's address never comes
            });
            PerfParams params = new PerfParams(PerfTestType.TAG_LAT, 8, 100, 0, 1, 50.0, PerfDatatype.CONTIG)
                    .withJitWarmup("2s");
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch runEnded = new CountDownLatch(1);
            Thread client = new Thread(() -> {
                try {
                    Perftest.run("127.0.0.1", standIn.getLocalPort(), params, Map.of("TLS", "shm"), false,
                            quietReporter());
                } catch (Throwable t) {
                    failure.set(t);
                } finally {
                    runEnded.countDown();
                }
            }, "perftest-test-client");
            client.setDaemon(true);
            client.start();
            assertTrue(paramsRead.await(30, TimeUnit.SECONDS), "the parameters came");
            assertTrue(started.isEmpty(), "the client's worker is still warming up when it is interrupted");
            client.interrupt();
            String line = told.get(30, TimeUnit.SECONDS);
            assertTrue(line.startsWith("client-failed ") && line.contains("InterruptedException"), line);
            assertTrue(runEnded.await(30, TimeUnit.SECONDS), "the interrupted run ended");
            assertTrue(failure.get() instanceof InterruptedException, () -> "the run ended with " + failure.get());
            assertEquals(1, started.size(), () -> "workers started: " + started);
            assertTrue(started.get(0).close().isSuccess(), "the run closed its worker once the start was over");
        } finally {
            Perftest.onWorkerStarted(w -> { });
            threads.shutdownNow();
        }
    }

    /**
     * An observer of started workers that throws (a metrics registry refusing, say) fails the start, and the worker
     * it was shown is closed rather than left running behind the failed run.
     */
    @Test
    void aWorkerWhoseObserverThrowsIsClosedAndTheRunFailsWithTheObserversError() throws Exception {
        List<Worker> shown = new CopyOnWriteArrayList<>();
        Perftest.onWorkerStarted(w -> {
            shown.add(w);
            throw new IllegalStateException("observer refused " + w);
        });
        try {
            PerfParams params = new PerfParams(PerfTestType.TAG_LAT, 8, 100, 0, 1, 50.0, PerfDatatype.CONTIG);
            Exception e = assertThrows(Exception.class, () -> Perftest.runInProcess(params, Map.of("TLS", "shm"),
                    false, quietReporter()));
            assertTrue(String.valueOf(e).contains("observer refused"), () -> String.valueOf(e));
            assertFalse(shown.isEmpty(), "a worker was shown to the observer");
            for (Worker w : shown) {
                assertTrue(w.close().isSuccess(), () -> "closed when its observer threw: " + w);
            }
        } finally {
            Perftest.onWorkerStarted(w -> { });
        }
    }

    /** --fresh-data: the server learns it from the client's line, and a run with it completes. */
    @Test
    void freshDataReachesTheServerAndARunWithItCompletes() throws Exception {
        PerfParams params = new PerfParams(PerfTestType.TAG_LAT, 65536, 300, 0, 1, 50.0, PerfDatatype.CONTIG)
                .withFreshData(true);
        assertEquals("tag_lat 65536 300 0 1 contig - - fresh", params.encode());
        assertEquals(params, PerfParams.decode(params.encode()));
        Server server = Server.start(Map.of("TLS", "shm"));
        PerfResult r = Perftest.run("127.0.0.1", server.port(), params, Map.of("TLS", "shm"), false, quietReporter());
        server.await();
        assertEquals(300, r.iterations());
    }

    /** Every cache line of the range gets a new byte, nothing outside it changes. */
    @Test
    void freshDataWritesOneByteInEveryLineOfTheRange() {
        ByteBuf buf = Unpooled.directBuffer(300).writeZero(300);
        try {
            FreshData fresh = new FreshData();
            fresh.write(buf, 10, 200);
            for (int i = 0; i < 300; i++) {
                boolean lineStart = i >= 10 && i < 210 && (i - 10) % 64 == 0;
                assertEquals(lineStart ? 1 : 0, buf.getByte(i), "byte " + i);
            }
            fresh.write(buf, 10, 200);
            assertEquals(2, buf.getByte(10 + 192), "the next send's bytes differ from the last one's");
        } finally {
            buf.release();
        }
    }

    @Test
    void anUnknownDatatypeIsRefusedNamingTheKnownOnes() {
        assertEquals(PerfDatatype.ZCOPY, PerfDatatype.of("zcopy"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PerfDatatype.of("zerocopy"));
        assertEquals("unknown datatype 'zerocopy' (contig | iov | bcopy | zcopy)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PerfParams.decode("tag_lat 8 10 0 1 short - - same"),
                "a server refuses what it does not know too");
        assertThrows(IllegalArgumentException.class,
                () -> PerfParams.decode("tag_lat 8 10 0 1 contig sometimes - same"));
        assertThrows(IllegalArgumentException.class, () -> PerfParams.decode("tag_lat 8 10 0 1 contig - - new"),
                "the data's mode is fresh or same");
        assertThrows(IllegalArgumentException.class, () -> PerfParams.decode("tag_lat 8 10 0 1 contig - -"),
                "an older client's line, without it");
    }

    @Test
    void aStreamTestOfEmptyMessagesIsRefusedSayingWhy() {
        for (String test : new String[] {"stream_lat", "stream_bw"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new PerfParams(PerfTestType.of(test), 0, 10, 0, 1, 50.0, false));
            assertEquals(test + " needs a message size of at least 1 byte, got 0", e.getMessage());
        }
    }

    /** What a stand-in server answers a client once it has read the client's parameters. */
    @FunctionalInterface
    private interface StandInAnswer<T> {
        T afterParameters(BufferedReader in) throws Exception;
    }

    /**
     * A stand-in for a perftest server on {@code thread}: accepts one client on {@code socket}, reads the test's
     * parameters as a server does, then {@code answer} (whose value the future gets); the connection closes after.
     */
    private static <T> Future<T> answerOneClient(ServerSocket socket, ExecutorService thread, StandInAnswer<T> answer) {
        return thread.submit(() -> {
            try (Socket s = socket.accept()) {
                BufferedReader in = Perftest.reader(s);
                PerfParams.decode(Perftest.readLine(in, "test parameters"));
                return answer.afterParameters(in);
            }
        });
    }

    private static PerfReporter quietReporter() {
        return new PerfReporter(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), false,
                false);
    }

    /** A perftest server in this JVM on a free port, its banner kept. */
    private record Server(int port, ByteArrayOutputStream out, CompletableFuture<Void> done) {

        static Server start(Map<String, String> env) throws IOException {
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            // A thread of its own: a server left waiting must not hold up the next test's (the common pool may have
            // one thread).
            CompletableFuture<Void> done = CompletableFuture.runAsync(() -> {
                try {
                    Perftest.serve(port, env, false, new PrintStream(out, true, StandardCharsets.UTF_8));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, task -> {
                Thread t = new Thread(task, "perftest-test-server-" + port);
                t.setDaemon(true);
                t.start();
            });
            // Listening before the client comes: a client whose worker fails while the server is not up yet leaves
            // it unaware (a bad setting is named at once instead).
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!out.toString(StandardCharsets.UTF_8).contains("Waiting for connection") && !done.isDone()
                    && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            return new Server(port, out, done);
        }

        /** Waits for the server's run to end; fails as it failed. */
        void await() throws Exception {
            done.get(60, TimeUnit.SECONDS);
        }

        String output() {
            return out.toString(StandardCharsets.UTF_8);
        }
    }
}
