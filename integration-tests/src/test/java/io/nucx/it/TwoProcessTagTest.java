package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.select.PerfProfile;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.RndvProtocols;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

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

    static Stream<String> engines() {
        return Engines.all();
    }

    @ParameterizedTest(name = "tcp over {0}")
    @MethodSource("engines")
    void tenThousandMessagesArriveIntactAndInOrder(String engine) throws Exception {
        exchange("tcp", engine, COUNT, "iface");
    }

    /**
     * tcp lanes connected endpoint to endpoint (NUCX_TCP_CONNECT=p2p) on both sides: REQUEST on the auxiliary lane,
     * REPLY with the peer's endpoint address, the data lane dialled to it and ACK first on it. Writes made before
     * (queued in the stub), during and after that exchange arrive intact and in order; the peer answers on the
     * endpoint it created on demand, over a p2p lane too.
     */
    @ParameterizedTest(name = "tcp p2p over {0}")
    @MethodSource("engines")
    void tenThousandMessagesOverP2pLanesArriveIntactAndInOrder(String engine) throws Exception {
        exchange("tcp", engine, COUNT, "p2p");
    }

    /** shm rings, with each engine as the one the shm loop wraps (it carries the doorbell). */
    @ParameterizedTest(name = "shm around {0}")
    @MethodSource("engines")
    void aHundredThousandMessagesOverShmArriveIntactAndInOrder(String engine) throws Exception {
        exchange("shm", engine, SHM_COUNT, "iface");
    }

    static final int SHM_COUNT = 100_000;

    /**
     * A profile that prices the ring's rendezvous a second dearer than its figures (as a calibration that measured a
     * surcharge does, less so), so the model sends every size eagerly: the 1 MiB messages still go by rendezvous
     * (NUCX_EAGER_MAX), and a sender 64 sends ahead of a receiver that takes one message at a time is held back by
     * them instead of piling them up past the receiver's bound (which failed its endpoint when they went eagerly).
     */
    @org.junit.jupiter.api.Test
    void aSenderAheadOfItsReceiverIsHeldBackThoughTheModelPricesEagerCheaper(
            @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path profile = dir.resolve("profile.txt");
        PerfProfile.builder("test")
                .figure("shm", PerfProfile.Figure.RNDV_COST, 1)
                .figure("shm", PerfProfile.Figure.RNDV_GROWTH, 0)
                .build().write(profile, List.of("the ring's rendezvous priced a second dearer"));
        exchange("shm", "nio", SHM_COUNT, "iface", Map.of("PERF_PROFILE", profile.toString()));
    }

    private void exchange(String tls, String engine, int count, String connect) throws Exception {
        exchange(tls, engine, count, connect, Map.of());
    }

    /** {@code more}: further NUCX_* settings (without the prefix) for both processes. */
    private void exchange(String tls, String engine, int count, String connect, Map<String, String> more)
            throws Exception {
        Engines.assumeAvailable(engine);
        Map<String, String> env = new HashMap<>(Map.of("NUCX_TLS", tls, "NUCX_TCP_IO", engine,
                "NUCX_TCP_CONNECT", connect));
        more.forEach((k, v) -> env.put("NUCX_" + k, v));
        try (PeerProcess peer = PeerProcess.start(TagPeer.class, env, Integer.toString(count))) {
            WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
            NucxBootstrap bootstrap = new NucxBootstrap().name("sender").config("TLS", tls).config("TCP_IO", engine)
                    .config("TCP_CONNECT", connect);
            more.forEach(bootstrap::config);
            Worker worker = bootstrap.start();
            try {
                var report = worker.tagRecv(TagPeer.REPORT_TAG, -1L);
                assertEquals(tls, worker.address().entries().get(0).transport(), "the worker's only transport");
                ArrayDeque<ChannelFuture> inFlight = new ArrayDeque<>();
                // Connect and make the first writes in one task on the worker's loop: the lane cannot finish
                // connecting before the task ends, so these writes are certainly queued by the stub.
                boolean[] activeWhenWritten = new boolean[1];
                Endpoint ep = worker.eventLoop().submit(() -> {
                    Endpoint e = worker.connect(peerAddress);
                    activeWhenWritten[0] = e.isActive();
                    for (int i = 0; i < WRITTEN_BEFORE_CONNECT; i++) {
                        inFlight.add(e.tagSend(i, MessagePlan.content(i)));
                    }
                    return e;
                }).get(30, TimeUnit.SECONDS);
                assertFalse(activeWhenWritten[0], "the endpoint must still be wiring up when the first writes are made");
                assertEquals(connect.equals("p2p"), ep.describeLanes().contains("(p2p)"), () -> "lane kind: " + ep.describeLanes());
                for (int i = WRITTEN_BEFORE_CONNECT; i < count; i++) {
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
                String text = TagPeer.awaitReport(report, 240);
                assertTrue(text.startsWith("OK " + count + " "), () -> "peer reports: " + text + "\n" + peer.stderr());
                assertTrue(ep.wireupFuture().isSuccess(), () -> "wireup: " + ep.wireupFuture().cause());
                for (String protocol : new String[] {EagerProtocols.SHORT.name(),
                        EagerProtocols.SINGLE_BCOPY.name(), EagerProtocols.MULTI_BCOPY.name()}) {
                    // shm's short records go up to its segment: single bcopy has no size of its own there.
                    boolean carries = !(tls.equals("shm") && protocol.equals(EagerProtocols.SINGLE_BCOPY.name()));
                    assertEquals(carries, worker.counters().count(protocol) > 0, protocol + " carried "
                            + worker.counters().count(protocol) + " of the messages");
                }
                if (more.containsKey("PERF_PROFILE")) {
                    long rndv = worker.counters().count(RndvProtocols.TAG_RNDV.name());
                    assertTrue(rndv > 0 && rndv < count / 50, "the 1 MiB messages, every hundredth, by rendezvous: "
                            + rndv);
                }
            } finally {
                worker.close().get(10, TimeUnit.SECONDS);
            }
            assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        }
    }
}
