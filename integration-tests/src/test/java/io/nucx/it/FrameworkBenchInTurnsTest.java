package io.nucx.it;

import io.nucx.examples.frameworks.FrameworkBench;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Map;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * bench/compare-frameworks.sh's stacks in turns (STACKS=tcp,nucx): one server process serves an app over plain Netty
 * TCP and over nucx side by side, and the bench takes both in turns, printing each stack's figures and their ratios.
 */
@Timeout(180)
class FrameworkBenchInTurnsTest {

    private static final Map<String, String> SHM = Map.of("NUCX_TLS", "shm");

    @Test
    void bothStacksAnswerInTurnsAndTheirRatiosArePrinted() throws Exception {
        try (PeerProcess server = PeerProcess.start(FrameworkPeer.class, SHM, "http", "tcp,nucx")) {
            String ports = server.awaitLine("PORT");
            assertTrue(ports.matches("\\d+,\\d+"), "one port a stack: " + ports);

            String lat = bench(ports, "lat", "64", "400", "40");
            assertLine(lat, "RESULT http tcp lat 64 p50=\\d+ us p99=\\d+ us mean=[\\d.]+ us rate=\\d+ req/s "
                    + "in 40 turns with tcp,nucx");
            assertLine(lat, "RESULT http nucx lat 64 p50=\\d+ us .* in 40 turns with tcp,nucx");
            assertLine(lat, "RESULT http nucx/tcp lat 64 p50 [\\d.]+ \\([\\d.]+, [\\d.]+\\) p99 .* mean .*");

            // A warm-up of a time: both stacks in turns until it has passed.
            String bw = bench(ports, "bw", "65536", "80", "1s");
            assertLine(bw, "RESULT http tcp bw 65536 MBps=[\\d.]+ rate=\\d+ req/s in 40 turns with tcp,nucx");
            assertLine(bw, "RESULT http nucx/tcp bw 65536 MBps [\\d.]+ \\([\\d.]+, [\\d.]+\\) .*");

            server.send("stop");
            assertEquals(0, server.waitFor(60), () -> "server exit (3: a leak); stderr:\n" + server.stderr());
        }
    }

    @Test
    void stacksAndPortsThatDifferInNumberStopTheBenchSayingSo() throws Exception {
        assertBenchStops("stacks 'tcp,nucx' and ports '1' differ in number", "http", "tcp,nucx", "1", "lat", "64",
                "10", "0");
    }

    @Test
    void aWarmupThatIsNeitherCountNorTimeStopsTheBenchSayingSo() throws Exception {
        assertBenchStops("warm-up '20x': a count of requests (1000) or seconds (20s)", "http", "tcp", "1", "lat",
                "64", "10", "20x");
    }

    private static void assertBenchStops(String saying, String... args) throws Exception {
        try (PeerProcess bench = PeerProcess.start(FrameworkBench.class, SHM, args)) {
            bench.readToEnd();
            assertNotEquals(0, bench.waitFor(60));
            assertTrue(bench.stderr().contains(saying), bench.stderr());
        }
    }

    private static String bench(String ports, String... test) throws Exception {
        String[] args = new String[3 + test.length];
        args[0] = "http";
        args[1] = "tcp,nucx";
        args[2] = ports;
        System.arraycopy(test, 0, args, 3, test.length);
        try (PeerProcess bench = PeerProcess.start(FrameworkBench.class, SHM, args)) {
            String out = bench.readToEnd();
            assertEquals(0, bench.waitFor(120), () -> "bench exit; stderr:\n" + bench.stderr());
            assertFalse(bench.stderr().contains("LEAK:"), bench::stderr);
            return out;
        }
    }

    private static void assertLine(String out, String regex) {
        assertTrue(Pattern.compile("^" + regex + "$", Pattern.MULTILINE).matcher(out).find(),
                () -> "no line matching " + regex + " in:\n" + out);
    }
}
