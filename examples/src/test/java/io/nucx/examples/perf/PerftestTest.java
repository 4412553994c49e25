package io.nucx.examples.perf;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
            "self, tag_sync_bw, 65536, false"})
    void aRunPrintsTheTableAndAFinalLineWithEightNumbers(String tls, String test, int size, boolean iov)
            throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        ByteArrayOutputStream serverOut = new ByteArrayOutputStream();
        CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
            try {
                Perftest.serve(port, Map.of("TLS", tls), false, new PrintStream(serverOut, true, StandardCharsets.UTF_8));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        ByteArrayOutputStream clientOut = new ByteArrayOutputStream();
        long iterations = 200;
        PerfParams params = new PerfParams(PerfTestType.of(test), size, iterations, 20, 8, 50.0, iov);
        PerfResult r = Perftest.run("127.0.0.1", port, params, Map.of("TLS", tls), false,
                new PerfReporter(new PrintStream(clientOut, true, StandardCharsets.UTF_8), false, false));
        server.get(60, TimeUnit.SECONDS);

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
        String banner = serverOut.toString(StandardCharsets.UTF_8);
        assertTrue(banner.contains("| Test:         " + params.test().description()), banner);
        assertTrue(banner.contains("| Message size: " + size), banner);
    }
}
