package io.nucx.wireup;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.nucx.Endpoint;
import io.nucx.WorkerAddress;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

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
            raw.frame(WireupMessage.laneAttach(ab.endpointId(), closed, 1, a.uuid(), "tcp")
                    .toFrame(UnpooledByteBufAllocator.DEFAULT)).flush();
            byte[] answer = raw.awaitFrame(RawPeer.wireup());
            assertEquals(WireupMessage.EP_REMOVED, answer[0] & 0xff, "an EP_REMOVED answers it");
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
