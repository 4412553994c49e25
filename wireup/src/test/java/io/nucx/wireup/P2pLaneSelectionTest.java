package io.nucx.wireup;

import io.nucx.Endpoint;
import io.nucx.Worker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Whether the AM lane is p2p is decided from the two addresses alone, so both peers decide the same. */
class P2pLaneSelectionTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static boolean p2p(DefaultWorker from, Worker to) {
        return LaneSelector.selectAmLane(from.ifaces(), from.address(), to.address()).p2p();
    }

    @Test
    void p2pOnlyWhenBothSidesOfferIt() throws Exception {
        DefaultWorker p1 = workers.start("p1", "TLS", "tcp", "TCP_CONNECT", "p2p");
        DefaultWorker p2 = workers.start("p2", "TLS", "tcp", "TCP_CONNECT", "p2p");
        DefaultWorker i1 = workers.start("i1", "TLS", "tcp");
        assertTrue(p2p(p1, p2) && p2p(p2, p1), "both p2p");
        assertFalse(p2p(p1, i1) || p2p(i1, p1), "one side connects to ifaces only: both use iface lanes");
        assertEquals(LaneSelector.selectLanes(p1.ifaces(), p1.address(), p2.address()).describe(),
                LaneSelector.selectLanes(p2.ifaces(), p2.address(), p1.address()).describe());
        assertTrue(LaneSelector.selectLanes(p1.ifaces(), p1.address(), p2.address()).describe().contains("(p2p)"));
    }

    @Test
    void aMixedPairWiresUpOverIfaceLanes() throws Exception {
        DefaultWorker p1 = workers.start("p1", "TLS", "tcp", "TCP_CONNECT", "p2p");
        DefaultWorker i1 = workers.start("i1", "TLS", "tcp");
        Endpoint ep = p1.connect(i1.address());
        var recv = i1.tagRecv(1, -1L);
        ep.tagSend(1, TestWorkers.pattern(1, 100));
        var m = recv.get(10, TimeUnit.SECONDS);
        try {
            TestWorkers.assertPattern(1, 100, m.content());
        } finally {
            m.release();
        }
        assertFalse(TestWorkers.impl(ep).selection().am().p2p());
    }
}
