package io.nucx.transport.cma;

import io.nucx.transport.testsuite.RmaLaneConformanceTest;

import java.util.Arrays;
import java.util.List;

/** The RMA conformance suite on cma: revoke waits for the peer's exit; keys name a host id and a pid. */
class CmaRmaLaneTest extends RmaLaneConformanceTest {

    CmaRmaLaneTest() {
        super(CmaTransport.NAME, true);
    }

    @Override
    protected List<byte[]> foreignKeys(byte[] peerKey) {
        CmaKey k = CmaKey.unpack(peerKey);
        return List.of(new CmaKey(k.hostId(), k.pid() + 1, k.address(), k.length()).pack(),
                new CmaKey(k.hostId() ^ 1, k.pid(), k.address(), k.length()).pack(),
                nullRegion(peerKey));
    }

    /** The peer's key with address 0, which no constructor makes. */
    private static byte[] nullRegion(byte[] peerKey) {
        byte[] b = peerKey.clone();
        Arrays.fill(b, 12, 20, (byte) 0);
        return b;
    }

    @Override
    protected boolean performsSmallOperationsAtOnce() {
        return true;
    }

    @Override
    protected byte[] unmappedKey(byte[] peerKey) {
        CmaKey k = CmaKey.unpack(peerKey);
        return new CmaKey(k.hostId(), k.pid(), 16, 4096).pack(); // page 0 is never mapped: EFAULT
    }
}
