package io.nucx.examples.perf;

import io.nucx.examples.NucxMain;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The eager path allocates nothing per message, on either side: a tagged ping-pong between two workers, of 8 B (one
 * short frame), 4 KiB (over shm, the bulk copy into the ring) and 64 KiB (several fragments, put together in place)
 * ({@link InProcessPingPong}, a reusable receive on each side, sends of a pooled buffer's duplicates under
 * {@code SEND_TAG}), counted in bytes allocated by both loop threads (ThreadMXBean) over thousands of round trips.
 * Short active messages sent with {@code tryAmSendShort} allocate only the receiving handler's handle. And a sender
 * that outruns its receiver over tcp (perftest's tag_bw and stream_bw) costs neither loop an object per message.
 *
 * <p>It runs in a child JVM for two reasons. Netty's leak detector, at PARANOID in every test JVM, records a stack
 * trace for every pooled buffer by design, so no path that takes a pooled buffer could measure zero under it (the
 * child runs with it off, as production samples; the same paths run under PARANOID in the lane and codec tests).
 * And the child runs only C1-compiled code ({@code -XX:TieredStopAtLevel=1}): C1 does no escape analysis, so what it
 * measures is every object the code asks for, not what C2 happened to remove by the time of the measurement. The
 * figure is then the same on a loaded machine as on a quiet one. The future-and-{@code TagMessage} API in the same
 * child must show its allocations, so a measurement that sees nothing fails too.
 *
 * <p>The loops run on epoll in both modes. Netty 4.2.18's io_uring engine (the event-mode default) allocates a
 * {@code CompletionCallback} (a method reference capturing the handler) on every pass of its {@code run}, which an
 * shm loop makes while it spins: that is Netty's, not this path's, and BENCHMARKS.md gives its size.
 */
@Timeout(600)
class ZeroAllocationTest {

    /** Bytes per round trip tolerated for one-off work amortized over the run (a keepalive tick, a timer). */
    private static final double ZERO = 2.0;
    /** The one object a received active message still makes: its handle, {@code ReceivedAm} (compressed oops). */
    private static final int AM_HANDLE = 32;

    @ParameterizedTest(name = "{0}, busy-poll {1}, {2} B")
    @CsvSource({"self, true, 8, true", "shm, true, 8, true", "tcp, true, 8, true", "self, false, 8, true",
            "shm, false, 8, true", "tcp, false, 8, true",
            // shm's bulk copy into the ring (payloads over 256 B), and messages in several fragments (egr/multi).
            "shm, true, 4096, true", "shm, true, 65536, true",
            // tcp's short frames up to 8 KiB are read in place, where one over 1 KiB was a slice of the read.
            "tcp, true, 4096, true",
            // Over tcp a receive without a buffer of its own is handed each large fragment as a slice of the lane's
            // read buffer, not a copy: one slice object per fragment, the price of not copying 64 KiB.
            "tcp, true, 65536, false"})
    void aPingPongAllocatesNothingPerMessageOnEitherSide(String tls, boolean busyPoll, int size,
                                                          boolean withoutBufferToo) throws Exception {
        Map<String, Double> alloc = probe(tls, busyPoll, size, 3_000, 5_000);
        assertTrue(!withoutBufferToo || alloc.get("REUSED") < ZERO, () -> tls + ": " + alloc.get("REUSED")
                + " bytes allocated per round trip with reusable receives and SEND_TAG writes (both loops), in the "
                + "least of three windows");
        assertTrue(alloc.get("INTO") < ZERO, () -> tls + ": " + alloc.get("INTO")
                + " bytes allocated per round trip with reusable receives into the user's buffers (both loops), in "
                + "the least of three windows");
        assertTrue(alloc.get("SHORT") < ZERO, () -> tls + ": " + alloc.get("SHORT")
                + " bytes allocated per round trip with trySendShort and receives into the user's buffers (both loops), "
                + "in the least of three windows");
        assertTrue(alloc.get("FUTURE") > 100, () -> tls + ": the future API's " + alloc.get("FUTURE")
                + " bytes per round trip: it allocates a promise, a receive and two messages, so the count is wrong");
        // Active messages sent by tryAmSendShort (a transport with am_short, header and data within 8 KiB together;
        // over tcp too, since its short frames are written and read as their parts): the receiving handler's AmMessage
        // handle is all, one per message, two per round trip; C1 keeps every one.
        if (size + InProcessPingPong.AM_HEADER <= 8192) {
            assertTrue(alloc.get("AM") < 2 * AM_HANDLE + ZERO, () -> tls + ": " + alloc.get("AM") + " bytes allocated "
                    + "per round trip of short active messages (both loops), in the least of three windows; two "
                    + "handles of " + AM_HANDLE + " bytes expected");
        }
    }

    /**
     * A sender that outruns its receiver over tcp: perftest's tag_bw and stream_bw of 8 B and tag_bw of 4 KiB in one
     * JVM (sends of {@code trySendShort} / {@code trySendStreamShort}, one flush per batch of them, and a wait for the
     * endpoint's writability when the lane is full), C1 only, as above. The short frames written between two flushes
     * share one buffer, and what a read brings beyond the receiving lane's share of a loop turn waits in the decoder's
     * cumulation as bytes rather than as frames: no object per message on either loop (an object per send and up to
     * 180 bytes per message received before; at 4 KiB, 35 bytes per send while perftest wrote with a promise what a
     * full lane refused).
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"tag_bw, 8", "stream_bw, 8", "tag_bw, 4096"})
    void aSenderThatOutrunsItsReceiverOverTcpAllocatesNothingPerMessageOnEitherSide(String test, int size)
            throws Exception {
        assertPerftestAllocatesNothing(test, size, "tcp", 1_000_000);
    }

    /**
     * The endpoint's byte stream, as a Netty app over nucx reads it: perftest's stream_lat of 8 B, a write sent by
     * {@code trySendStreamShort} and the bytes up the peer's pipeline as a ByteBuf its reader releases. The buffer and
     * the slot short writes are gathered into are used again once delivered (an object of 24 bytes per message on
     * each loop before).
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"self", "shm", "tcp"})
    void aStreamPingPongAllocatesNothingPerMessageOnEitherSide(String tls) throws Exception {
        assertPerftestAllocatesNothing("stream_lat", 8, tls, 300_000);
    }

    /**
     * Runs {@code bin/nucx perftest --in-process} in a child JVM, C1 only and Netty's leak detection off (the class
     * says why), and asserts its loops' bytes per iteration below {@link #ZERO}.
     */
    private static void assertPerftestAllocatesNothing(String test, int size, String tls, int iterations)
            throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1",
                "-Dio.netty.leakDetection.level=disabled", "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), NucxMain.class.getName(),
                "perftest", "--in-process", "-t", test, "-s", Integer.toString(size),
                "-n", Integer.toString(iterations), "--warmup-time", "2", "-f").redirectErrorStream(true);
        pb.environment().keySet().removeIf(k -> k.startsWith("NUCX_"));
        pb.environment().put("NUCX_TLS", tls);
        pb.environment().put("NUCX_TCP_IO", "epoll");
        Process p = pb.start();
        String out;
        try (var in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "perftest did not finish");
        assertEquals(0, p.exitValue(), () -> "perftest failed:\n" + out);
        Matcher m = Pattern.compile("Allocated \\(bytes per iteration, worker loop thread\\): client ([\\d.]+), "
                + "server ([\\d.]+)").matcher(out);
        assertTrue(m.find(), () -> "no allocation line in perftest's output:\n" + out);
        double client = Double.parseDouble(m.group(1));
        double server = Double.parseDouble(m.group(2));
        assertTrue(client < ZERO && server < ZERO, () -> test + " " + size + " over " + tls + " allocated " + client
                + " bytes per iteration on the client's loop and " + server + " on the server's:\n" + out);
    }

    private static Map<String, Double> probe(String tls, boolean busyPoll, int size, int warm, int measured)
            throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> cmd = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1",
                "-Dio.netty.leakDetection.level=disabled", "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), AllocationProbe.class.getName(), tls, Boolean.toString(busyPoll),
                Integer.toString(size), Integer.toString(warm), Integer.toString(measured)));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("NUCX_TCP_IO", "epoll");
        Process p = pb.start();
        Map<String, Double> out = new HashMap<>();
        StringBuilder all = new StringBuilder();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                all.append(line).append('\n');
                if (line.startsWith("ALLOC ")) {
                    String[] f = line.split(" ");
                    out.put(f[1], Double.parseDouble(f[2]));
                }
            }
        }
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "allocation probe did not finish");
        assertEquals(0, p.exitValue(), () -> "allocation probe failed:\n" + all);
        assertEquals(InProcessPingPong.Api.values().length, out.size(), () -> "allocation probe printed:\n" + all);
        return out;
    }
}
