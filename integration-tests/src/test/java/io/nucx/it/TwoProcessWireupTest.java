package io.nucx.it;

import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Wireup between two JVMs over tcp: both sides call {@code connect} to each other at once, round after round. Each
 * round must end with exactly one endpoint on each side (the one {@code connect} returned), every message of both
 * sides delivered once, in order, whether written before, during or after wireup, and a graceful close leaving no
 * endpoint. Every round is either a simultaneous connect (both endpoints EXPECTED: the higher-uuid worker pairs its
 * endpoint with the lower's REQUEST) or one side's {@code connect} adopting the endpoint the other's REQUEST created.
 */
@Timeout(300)
class TwoProcessWireupTest {

    private static final int ROUNDS = 200;

    @Test
    void simultaneousConnectsFromBothSidesEndWithOnePairEachRound() throws Exception {
        simultaneousRounds(Map.of(), ROUNDS);
    }

    /** The same over tcp lanes connected endpoint to endpoint: the REQUESTs cross on the auxiliary lanes. */
    @Test
    void simultaneousConnectsOverP2pLanesEndWithOnePairEachRound() throws Exception {
        simultaneousRounds(Map.of("TCP_CONNECT", "p2p"), 50);
    }

    static void simultaneousRounds(Map<String, String> settings, int rounds) throws Exception {
        Map<String, String> env = new HashMap<>(Map.of("NUCX_TLS", "tcp", "NUCX_RNDV_THRESH", "1k"));
        NucxBootstrap b = new NucxBootstrap().name("test").config("TLS", "tcp").config("RNDV_THRESH", "1k");
        for (var s : settings.entrySet()) {
            env.put("NUCX_" + s.getKey(), s.getValue());
            b.config(s.getKey(), s.getValue());
        }
        try (PeerProcess peer = PeerProcess.start(ConnectPeer.class, env)) {
            WorkerAddress address = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
            Worker w = b.start();
            try {
                peer.send("PEER " + w.address().toHex());
                long t0 = System.nanoTime();
                for (int r = 0; r < rounds; r++) {
                    int round = r;
                    peer.send("ROUND " + r);
                    ConnectRound mine = ConnectRound.run(w, address, r, 0);
                    assertNull(mine.error(), mine.error());
                    assertEquals("p2p".equals(settings.get("TCP_CONNECT")), mine.endpoint().describeLanes().contains("(p2p)"));
                    assertEquals(List.of(mine.endpoint()), List.copyOf(w.endpoints()),
                            () -> "round " + round + ": exactly one endpoint here, the one connect returned");
                    String[] theirs = peer.awaitLine("RESULT " + r + " ").split(" ", 2);
                    assertEquals("1 OK", theirs[0] + " " + theirs[1], () -> "round " + round + " at the peer "
                            + "(endpoints, outcome); stderr:\n" + peer.stderr());
                    peer.send("CLOSE " + r);
                    mine.endpoint().close();
                    assertNull(ConnectRound.closeOutcome(mine.endpoint()), "round " + r + " close");
                    assertTrue(ConnectRound.awaitNoEndpoints(w), () -> "round " + round + ": left " + w.endpoints());
                    assertEquals("OK", peer.awaitLine("CLOSED " + r + " "), "round " + r + " close at the peer");
                }
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                peer.send("END");
                String[] c = peer.awaitLine("COUNTERS").split(" ");
                long adopted = w.counters().count(Worker.WIREUP_ADOPTED) + Long.parseLong(c[0]);
                long paired = w.counters().count(Worker.WIREUP_REQUEST_PAIRED) + Long.parseLong(c[1]);
                long ignored = w.counters().count(Worker.WIREUP_REQUEST_IGNORED) + Long.parseLong(c[2]);
                System.out.println("SIMULTANEOUS " + settings + ": " + rounds + " rounds in " + ms + " ms; "
                        + paired + " paired at the higher uuid (" + ignored + " of them saw the higher's REQUEST "
                        + "ignored), " + adopted + " adopted by a later connect");
                assertEquals(rounds, adopted + paired, "each round is one pairing or one adoption");
                assertTrue(paired > 0, "no round had both connects in flight at once: the test did not test that");
            } finally {
                w.close().get(30, TimeUnit.SECONDS);
            }
            assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        }
    }
}
