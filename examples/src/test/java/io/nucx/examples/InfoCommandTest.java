package io.nucx.examples;

import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code nucx info} opens an iface of every available transport and prints its attributes. */
class InfoCommandTest {

    @Test
    void everyAvailableTransportIsOpenedAndDescribed() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            InfoCommand.print(NucxConfig.of(Map.of(), Map.of()), out);
        }
        String text = bytes.toString(StandardCharsets.UTF_8);
        for (Transport t : Transports.all()) {
            if (!t.availability().isAvailable()) {
                continue;
            }
            int at = text.indexOf("Transport: " + t.name() + "\n");
            assertTrue(at >= 0, () -> t.name() + " missing from:\n" + text);
            int next = text.indexOf("Transport: ", at + 1);
            String section = text.substring(at, next < 0 ? text.length() : next);
            assertTrue(section.contains("bandwidth") || section.contains("am:"),
                    () -> t.name() + " printed no attributes:\n" + section);
            if (t.name().equals("cma")) {
                assertTrue(section.contains("data priced: fresh (NUCX_CMA_DATA)"), section);
            }
        }
    }

    /**
     * {@code --lanes}: computed on both sides from the same two addresses, the chosen lanes and their scores agree;
     * the output names the AM, RMA and keepalive lanes and scores every candidate.
     */
    @Test
    void lanesArePrintedWithScoresAndAreTheSameFromBothSides() throws Exception {
        Worker a = new NucxBootstrap().name("a").config("TLS", "tcp,self").start();
        Worker b = new NucxBootstrap().name("b").config("TLS", "tcp,self").start();
        try {
            String fromA = InfoCommand.lanes(a, b.address(), "peer");
            String fromB = InfoCommand.lanes(b, a.address(), "peer");
            for (String text : List.of(fromA, fromB)) {
                assertTrue(text.contains("CHOSEN: AM lane self/"), text);
                assertTrue(text.matches("(?s).*am +tcp +-> tcp +[0-9.e+-]+ +lower than self/.*"), text);
                assertTrue(text.contains("keepalive  self/"), text);
                assertTrue(text.contains("lane[0] self/"), text);
                assertTrue(text.contains(": am, keepalive"), text);
                assertTrue(text.contains("amo        none: no transport has device atomics"), text);
                // self's bandwidth dwarfs tcp's: tcp is listed as an AM_BW candidate and refused by the ratio
                assertTrue(text.matches("(?s).*am_bw +tcp +-> tcp .*NUCX_MULTI_LANE_MAX_RATIO.*"), text);
            }
            // Same candidates, same scores, same verdicts: only the header (names, uuids) differs.
            assertEquals(body(fromA), body(fromB));
            String none = InfoCommand.lanes(a, b.address(), "none");
            assertTrue(none.contains("keepalive  none (error mode none)"), none);
            String failover = InfoCommand.lanes(a, b.address(), "failover");
            assertTrue(failover.contains("error mode failover") && failover.contains("keepalive  self/"), failover);
        } finally {
            a.close().get(10, TimeUnit.SECONDS);
            b.close().get(10, TimeUnit.SECONDS);
        }
    }

    private static String body(String laneInfo) {
        return laneInfo.substring(laneInfo.indexOf("# criterion"));
    }
}
