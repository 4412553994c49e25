package io.nucx.wireup;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.nucx.Endpoint;
import io.nucx.WorkerAddress;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An AM_BW lane whose connect crosses its endpoint's close: its LANE_ATTACH reaches a worker that closed the endpoint
 * it names (the close's EP_REMOVED went on the lanes it knew of). {@code bin/nucx first-message} printed it as a
 * warning, "LANE_ATTACH … for endpoint #0, which does not exist", at most of its closes. Such a lane is refused with
 * EP_REMOVED and closed, and is no lane failure; a LANE_ATTACH for an id the worker never gave out still is one.
 * A raw socket stands in for the peer's lane, so the crossing is made, not waited for.
 */
@Timeout(60)
class LateLaneAttachTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @Test
    void aLaneAnnouncedForAnEndpointClosedSinceIsRefusedWithoutALaneFailure() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        Endpoint ab = TestWorkers.wiredUp(a, b);
        Endpoint ba = TestWorkers.awaitLanes(b, ab, 1, "");
        long closed = ba.endpointId();
        assertTrue(ab.close().await(10, TimeUnit.SECONDS), "a's close");
        TestWorkers.awaitTrue(() -> b.endpoints().isEmpty(), "b still has " + b.endpoints());

        try (RawPeer raw = RawPeer.connect(b)) {
            byte[] answer = announce(raw, a, ab.endpointId(), closed);
            assertEquals(WireupMessage.INVALID_EP_ID, source(answer), "not a goodbye: b's endpoint was reset, "
                    + "not closed by its owner");
            assertTrue(raw.closedByPeerWithin(10_000), "and the lane closes");
        }
        assertTrue(b.laneFailures().stream().noneMatch(t -> String.valueOf(t.getMessage()).contains("LANE_ATTACH")),
                () -> "a lane failure: " + b.laneFailures());

        long never = closed + 1_000;
        try (RawPeer raw = RawPeer.connect(b)) {
            raw.frame(WireupMessage.laneAttach(ab.endpointId(), never, 1, a.uuid(), "tcp")
                    .toFrame(UnpooledByteBufAllocator.DEFAULT)).flush();
            assertTrue(raw.closedByPeerWithin(10_000), "refused");
        }
        TestWorkers.awaitTrue(() -> b.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage())
                .contains("for endpoint #" + never + ", which does not exist")), "no lane failure for #" + never
                + ": " + b.laneFailures());
    }

    /**
     * An endpoint that closed gracefully said goodbye (a graceful EP_REMOVED) on the lanes it knew of; the peer acts on
     * it once every lane of its own has brought one. A lane the peer announced as that close crossed it hears the same
     * goodbye and stays open until the peer closes it, at most the close bound: closed at once, the peer would take
     * its close for a reset, maybe before it has read what the other lanes carried ahead of their goodbye.
     */
    @Test
    void aLaneAnnouncedForAnEndpointClosedGracefullySinceHearsItsGoodbyeAndStaysUntilTheBound() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp", "KEEPALIVE_INTERVAL", "500ms", "KEEPALIVE_TIMEOUT", "2s");
        Endpoint ab = TestWorkers.wiredUp(a, b);
        Endpoint ba = TestWorkers.awaitLanes(b, ab, 1, "");
        long closed = ba.endpointId();
        assertTrue(ba.close().await(10, TimeUnit.SECONDS), "b's close");
        assertTrue(ba.errorFuture().isSuccess(), () -> "b's close was graceful: " + ba.errorFuture().cause());
        TestWorkers.awaitTrue(() -> b.endpoints().isEmpty(), "b still has " + b.endpoints());

        try (RawPeer raw = RawPeer.connect(b)) {
            long announcedAt = System.nanoTime(); // b's bound starts later, as it reads the announcement
            byte[] answer = announce(raw, a, ab.endpointId(), closed);
            assertEquals(closed, source(answer), "a goodbye: it names the endpoint that closed");
            raw.frame(RawPeer.epCheck(closed)).flush(); // what the peer sends before it reads the goodbye is dropped
            assertTrue(raw.silentFor(1_000), "the lane waits for the peer's close, answering nothing");
            assertTrue(raw.closedByPeerWithin(10_000), "until the close bound");
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - announcedAt);
            assertTrue(waited >= 1_900, "closed after " + waited + " ms, before the 2 s bound");
        }
        assertTrue(b.laneFailures().isEmpty(), () -> "a lane failure: " + b.laneFailures());

        try (RawPeer raw = RawPeer.connect(b)) { // another peer naming that id: not the one it was wired to
            assertEquals(WireupMessage.INVALID_EP_ID, source(announce(raw, a, ab.endpointId() + 1, closed)),
                    "no goodbye for a stranger");
            assertTrue(raw.closedByPeerWithin(1_000), "its lane closes at once");
        }
    }

    /**
     * A lane the peer attaches while this side's graceful close waits for the peer (CLOSING: the goodbye went out on
     * the lanes there were) hears the goodbye at once, rather than nothing until the close bound ends the endpoint.
     * a's loop is held, so the peer reads nothing and b's close stays CLOSING.
     */
    @Test
    void aLaneAttachedWhileTheEndpointSaysGoodbyeHearsItToo() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp", "KEEPALIVE_INTERVAL", "2s", "KEEPALIVE_TIMEOUT", "10s");
        Endpoint ab = TestWorkers.wiredUp(a, b);
        Endpoint ba = TestWorkers.awaitLanes(b, ab, 1, "");
        CountDownLatch go = TestWorkers.holdLoop(a);
        try {
            ba.close();
            TestWorkers.awaitOnLoop(b, () -> TestWorkers.impl(ba).state() == EndpointLifecycle.State.CLOSING,
                    "b's close said goodbye");
            try (RawPeer raw = RawPeer.connect(b)) {
                long sent = System.nanoTime();
                byte[] answer = announce(raw, a, ab.endpointId(), ba.endpointId());
                long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
                assertEquals(ba.endpointId(), source(answer), "b's endpoint says it");
                assertTrue(took < 5_000, "it came after " + took + " ms: at the close bound, not at once");
                assertTrue(ba.isOpen(), "b's close still waits for a");
            }
        } finally {
            go.countDown();
        }
        assertTrue(ba.closeFuture().await(20, TimeUnit.SECONDS), "b's close");
    }

    /** Announces lane 1 of a's endpoint {@code src} for b's endpoint {@code dst}; returns the EP_REMOVED answer. */
    private static byte[] announce(RawPeer raw, DefaultWorker a, long src, long dst) throws Exception {
        raw.frame(WireupMessage.laneAttach(src, dst, 1, a.uuid(), "tcp")
                .toFrame(UnpooledByteBufAllocator.DEFAULT)).flush();
        byte[] answer = raw.awaitFrame(RawPeer.wireup());
        assertEquals(WireupMessage.EP_REMOVED, answer[0] & 0xff, "an EP_REMOVED answers it");
        return answer;
    }

    /** The source endpoint id of a wireup message's header: a goodbye names it, any other EP_REMOVED none. */
    private static long source(byte[] wireupHeader) {
        return ByteBuffer.wrap(wireupHeader).order(ByteOrder.LITTLE_ENDIAN).getLong(4);
    }

    /**
     * A closing peer deletes its shm socket while its last lane's LANE_ATTACH may still be on its way (first-message
     * again: "LANE_ATTACH over shm, which first-message-server cannot use to first-message-client"). A lane the peer
     * dialled is its lane by transport; reaching the peer's iface is a question for dialling only.
     */
    @Test
    void aLaneThePeerDialledIsItsEvenWhenItsIfaceCanNoLongerBeReached() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm");
        DefaultWorker b = workers.start("b", "TLS", "shm");
        WorkerAddress closed = a.address();
        assertTrue(a.close().await(10, TimeUnit.SECONDS), "a's close");
        Iface shm = b.ifaces().get(0);
        assertNull(b.laneTo(closed, "shm", null), "a lane to dial: its socket is gone");
        LaneSelector.Lane accepted = b.laneTo(closed, "shm", shm);
        assertNotNull(accepted, "the lane a dialled before it closed");
        assertEquals(closed.entries().get(0), accepted.remote());
        assertNull(b.laneTo(closed, "tcp", shm), "no tcp here");
    }
}
