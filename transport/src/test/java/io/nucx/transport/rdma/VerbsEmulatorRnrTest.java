package io.nucx.transport.rdma;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The emulator's receiver-not-ready path, below the lane (raw queue pairs, no credits): a SEND to a queue pair with
 * no receive posted is answered by RNR NAKs, and the requester (rnr_retry 7: forever) sends it again after the
 * responder's RNR timer until a receive is there; then it completes, the data intact.
 */
@Timeout(60)
class VerbsEmulatorRnrTest {

    @Test
    void aSendWithoutAReceiveIsRefusedUntilOneIsPosted() throws Throwable {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
        Verbs verbs = Verbs.load(VerbsEmulator.library());
        try (RdmaContext ca = RdmaContext.open(verbs, "emu0");
             RdmaContext cb = RdmaContext.open(verbs, "emu1");
             Arena arena = Arena.ofShared()) {
            QueuePair a = QueuePair.create(ca, MemorySegment.NULL, 4, 4, arena);
            QueuePair b = QueuePair.create(cb, MemorySegment.NULL, 4, 4, arena);
            try {
                a.connect(address(cb, b), 1, ca.gidIndex); // b's device and queue pair
                b.connect(address(ca, a), 2, cb.gidIndex);
                MemorySegment src = arena.allocate(64, 64).fill((byte) 0x2a);
                MemorySegment dst = arena.allocate(64, 64);
                MemorySegment mrA = register(ca, src);
                MemorySegment mrB = register(cb, dst);
                int lkeyA = IbvMr.lkey(mrA);
                int lkeyB = IbvMr.lkey(mrB);
                long before = VerbsEmulator.counters()[VerbsEmulator.RNR_NAK_SENT];
                assertEquals(0, a.postSend(1, IbvSendWr.IBV_WR_SEND, IbvSendWr.IBV_SEND_SIGNALED, src.address(), 64,
                        lkeyA, 0, 0, 0, 0));
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (VerbsEmulator.counters()[VerbsEmulator.RNR_NAK_SENT] < before + 2
                        && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                assertTrue(VerbsEmulator.counters()[VerbsEmulator.RNR_NAK_SENT] >= before + 2,
                        "the responder did not refuse the SEND (twice) while it had no receive");
                assertEquals(0, a.poll(), "the SEND completed although no receive was posted");
                assertEquals(0, b.postRecv(9, dst.address(), 64, lkeyB));
                assertEquals(IbvWc.IBV_WC_SUCCESS, waitOne(a, 1));
                assertEquals(IbvWc.IBV_WC_SUCCESS, waitOne(b, 9));
                assertEquals(64, IbvWc.byteLen(b.wcs, 0));
                assertEquals(-1, dst.mismatch(src));
                assertEquals((byte) 0x2a, dst.get(ValueLayout.JAVA_BYTE, 63));
                assertEquals(0, (int) verbs.deregMr.invokeExact(mrA));
                assertEquals(0, (int) verbs.deregMr.invokeExact(mrB));
            } finally {
                a.destroyQp();
                a.destroyCq();
                b.destroyQp();
                b.destroyCq();
            }
        }
    }

    private static RdmaEndpointAddress address(RdmaContext rc, QueuePair qp) {
        return new RdmaEndpointAddress(rc.linkLayer, RdmaContext.PORT, rc.activeMtu, rc.lid, rc.gidIndex,
                false, qp.qpn, 0, 4, 64, rc.gid, 0);
    }

    private static MemorySegment register(RdmaContext rc, MemorySegment s) throws Throwable {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment cs = Verbs.newCaptureState(tmp);
            MemorySegment mr = (MemorySegment) rc.verbs.regMr.invokeExact(cs, rc.pd, s, s.byteSize(), s.address(),
                    IbvMr.IBV_ACCESS_LOCAL_WRITE | IbvMr.IBV_ACCESS_REMOTE_WRITE);
            assertTrue(!mr.equals(MemorySegment.NULL), "ibv_reg_mr_iova2 failed");
            return mr;
        }
    }

    /** Polls until one completion arrives; returns its status and checks its wr_id. */
    private static int waitOne(QueuePair qp, long wrId) {
        long deadline = System.nanoTime() + 20_000_000_000L;
        int n;
        while ((n = qp.poll()) == 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(1, n, "completions");
        assertEquals(wrId, IbvWc.wrId(qp.wcs, 0));
        return IbvWc.status(qp.wcs, 0);
    }
}
