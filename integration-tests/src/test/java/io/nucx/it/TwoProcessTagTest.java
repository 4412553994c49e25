package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.nucx.protocol.tag.EagerTagSendHandler;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.wireup.Endpoint;
import io.nucx.wireup.NucxBootstrap;
import io.nucx.wireup.Worker;
import io.nucx.wireup.WorkerAddress;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two JVM processes over tcp, once per engine: this process sends 10,000 tagged messages of 0 B to 4 MiB, the
 * first ones written before its endpoint has connected; the peer checks every byte and the order, and reports back
 * on the endpoint it created for us.
 */
@Timeout(300)
class TwoProcessTagTest {

    static final int COUNT = 10_000;
    /** Sends outstanding at once after the first burst, so the sender's memory stays bounded. */
    static final int WINDOW = 64;
    static final int WRITTEN_BEFORE_CONNECT = 200;

    static java.util.stream.Stream<String> engines() {
        return Engines.all();
    }

    @ParameterizedTest(name = "tcp over {0}")
    @MethodSource("engines")
    void tenThousandMessagesArriveIntactAndInOrder(String engine) throws Exception {
        Engines.assumeAvailable(engine);
        Map<String, String> env = Map.of("NUCX_TLS", "tcp", "NUCX_TCP_IO", engine);
        try (PeerProcess peer = PeerProcess.start(TagPeer.class, env, Integer.toString(COUNT))) {
            WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
            Worker worker = new NucxBootstrap().name("sender").config("TLS", "tcp").config("TCP_IO", engine).start();
            try {
                var report = worker.tagRecv(TagPeer.REPORT_TAG, -1L);
                Endpoint ep = worker.connect(peerAddress);
                assertFalse(ep.isActive(), "the endpoint must still be wiring up when the first writes are made");
                ArrayDeque<ChannelFuture> inFlight = new ArrayDeque<>();
                for (int i = 0; i < COUNT; i++) {
                    inFlight.add(ep.tagSend(i, MessagePlan.content(i)));
                    if (i >= WRITTEN_BEFORE_CONNECT && inFlight.size() > WINDOW) {
                        ChannelFuture f = inFlight.poll();
                        assertTrue(f.await(60, TimeUnit.SECONDS), "send timed out");
                        assertTrue(f.isSuccess(), () -> "send failed: " + f.cause());
                    }
                }
                for (ChannelFuture f : inFlight) {
                    assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
                }
                TagMessage m = report.get(240, TimeUnit.SECONDS);
                String text;
                try {
                    text = m.content().toString(StandardCharsets.UTF_8);
                } finally {
                    m.release();
                }
                assertTrue(text.startsWith("OK " + COUNT + " "), () -> "peer reports: " + text + "\n" + peer.stderr());
                for (String protocol : new String[] {EagerTagSendHandler.EGR_SHORT,
                        EagerTagSendHandler.EGR_SINGLE_BCOPY, EagerTagSendHandler.EGR_MULTI_BCOPY}) {
                    assertTrue(worker.counters().count(protocol) > 0, protocol + " carried none of the sizes");
                }
            } finally {
                worker.close().get(10, TimeUnit.SECONDS);
            }
            assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        }
    }
}
