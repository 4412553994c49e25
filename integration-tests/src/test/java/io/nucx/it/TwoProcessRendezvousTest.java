package io.nucx.it;

import io.nucx.protocol.tag.EagerTagSendHandler;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.wireup.Endpoint;
import io.nucx.wireup.NucxBootstrap;
import io.nucx.wireup.Worker;
import io.nucx.wireup.WorkerAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A 64 MiB message between two JVMs over tcp: the cost model's threshold (not a setting) sends it by rendezvous,
 * and the peer checks every byte.
 */
@Timeout(180)
class TwoProcessRendezvousTest {

    @Test
    void aSixtyFourMebibyteMessageGoesByRendezvousAndArrivesIntact() throws Exception {
        int size = 64 << 20;
        try (PeerProcess peer = PeerProcess.start(TagPeer.class, Map.of("NUCX_TLS", "tcp"), "2",
                Integer.toString(size))) {
            WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
            Worker worker = new NucxBootstrap().name("sender").config("TLS", "tcp").start();
            try {
                var report = worker.tagRecv(TagPeer.REPORT_TAG, -1L);
                Endpoint ep = worker.connect(peerAddress);
                for (int i = 0; i < 2; i++) {
                    assertTrue(ep.tagSend(i, MessagePlan.content(i, size)).await(120, TimeUnit.SECONDS));
                }
                TagMessage m = report.get(120, TimeUnit.SECONDS);
                String text;
                try {
                    text = m.content().toString(StandardCharsets.UTF_8);
                } finally {
                    m.release();
                }
                assertEquals("OK 2 " + 2L * size, text, () -> "peer reports: " + text + "\n" + peer.stderr());
                assertEquals(2, worker.counters().count(EagerTagSendHandler.TAG_RNDV), "sent by rendezvous");
                assertEquals(0, worker.counters().count(EagerTagSendHandler.EGR_MULTI_BCOPY), "not eagerly");
            } finally {
                worker.close().get(10, TimeUnit.SECONDS);
            }
            assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        }
    }
}
