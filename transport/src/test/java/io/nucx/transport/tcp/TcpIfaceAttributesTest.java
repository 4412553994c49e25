package io.nucx.transport.tcp;

import io.nucx.transport.Capability;
import io.nucx.transport.Device;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a tcp iface declares, against what its frame encoder does. */
class TcpIfaceAttributesTest {

    private static IfaceAttributes lo(boolean p2p) {
        return TcpIface.attributes(new Device("lo", "network"), 64 << 10, p2p, false);
    }

    @Test
    void tcpOffersAmZeroCopyAboveThePayloadsItsEncoderCopiesNextToTheHeader() {
        IfaceAttributes a = lo(false);
        assertTrue(a.has(Capability.AM_ZCOPY), "payloads over 1 KiB leave as their own buffer (gathering write)");
        assertEquals(AmFrameEncoder.COPY_THRESHOLD, a.amCopyMax());
        assertTrue(a.copiesAmPayload(AmFrameEncoder.COPY_THRESHOLD, false), "copied next to the header");
        assertFalse(a.copiesAmPayload(AmFrameEncoder.COPY_THRESHOLD + 1, false), "written from the sender's memory");
        assertTrue(a.copiesAmPayload(1 << 20, true), "the socket channel copies heap memory into direct memory");
        assertTrue(a.has(Capability.AM_BCOPY) && a.has(Capability.AM_SHORT));
        assertFalse(a.has(Capability.CONNECT_TO_EP));
        assertTrue(lo(true).has(Capability.CONNECT_TO_EP) && lo(true).has(Capability.AM_ZCOPY));
    }
}
