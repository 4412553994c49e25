package io.nucx.protocol;

import io.nucx.protocol.am.AmCodec;
import io.nucx.protocol.amo.AmoCodec;
import io.nucx.protocol.rma.RmaCodec;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.stream.StreamCodec;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.RndvProtocols;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The active-message id table the families fill ({@link ProtocolRegistry}): each id routes to the family that
 * registered it; an id no family claims routes nowhere (the frame is a protocol error, which the codecs no longer
 * judge: they pass on what is not theirs); ids claimed twice or reserved are refused when the registry is built.
 */
class ProtocolRegistryTest {

    private static ProtocolFamily family(String name, int... ids) {
        return new ProtocolFamily(name, List.<Protocol>of(), ids, (pipeline, endpoint, worker) -> {
            throw new UnsupportedOperationException();
        });
    }

    @Test
    void everyIdRoutesToTheFamilyThatRegisteredItAndNoOtherIdRoutesAnywhere() {
        ProtocolRegistry r = ProtocolRegistry.DEFAULT;
        for (int id : new int[] {AmIds.EAGER_ONLY, AmIds.EAGER_FIRST, AmIds.EAGER_MIDDLE, AmIds.EAGER_SYNC_ONLY,
            AmIds.EAGER_SYNC_FIRST, AmIds.EAGER_SYNC_ACK, AmIds.EAGER_ZCOPY_ONLY, AmIds.EAGER_ZCOPY_FIRST,
            AmIds.EAGER_ZCOPY_ACK, AmIds.STREAM_ONLY, AmIds.STREAM_FIRST, AmIds.STREAM_ZCOPY_ONLY,
            AmIds.STREAM_ZCOPY_FIRST, AmIds.AM_ONLY, AmIds.AM_FIRST, AmIds.AM_ZCOPY_ONLY, AmIds.AM_ZCOPY_FIRST}) {
            // stream writes' and active messages' eager frames included
            assertSame(EagerProtocols.FAMILY, r.owner(id), AmIds.name(id));
        }
        for (int id : new int[] {AmIds.RNDV_RTS, AmIds.RNDV_ATS, AmIds.RNDV_RTR, AmIds.RNDV_DATA, AmIds.RNDV_ATP,
            AmIds.STREAM_RTS, AmIds.AM_RTS}) {
            assertSame(RndvProtocols.FAMILY, r.owner(id), AmIds.name(id));
        }
        assertSame(StreamCodec.FAMILY, r.owner(AmIds.STREAM_CREDIT));
        assertSame(StreamCodec.FAMILY, r.owner(AmIds.STREAM_FIN));
        assertSame(AmoCodec.FAMILY, r.owner(AmIds.ATOMIC_REQ));
        assertSame(AmoCodec.FAMILY, r.owner(AmIds.ATOMIC_REP));
        for (int id : new int[] {-1, 0, AmIds.WIREUP, 5, 13, 255, 256}) {
            assertNull(r.owner(id), "id " + id);
        }
        assertEquals(List.of(StreamCodec.FAMILY, AmCodec.FAMILY, EagerProtocols.FAMILY, RndvProtocols.FAMILY,
                AmoCodec.FAMILY, RmaCodec.FAMILY), r.families());
        assertEquals(EagerProtocols.ALL, r.protocols().subList(0, EagerProtocols.ALL.size()),
                "the families' protocols in registry order: their tie-break order");
    }

    @Test
    void anIdClaimedTwiceReservedOrOutOfRangeIsRefusedNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ProtocolRegistry(List.of(
                family("a", 30, 31), family("b", 31))));
        assertTrue(e.getMessage().contains("active-message id 31 (AM#31) is claimed by a and b"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new ProtocolRegistry(List.of(family("w",
                AmIds.WIREUP))));
        assertTrue(e.getMessage().contains("w claims active-message id 1, which is wireup's"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new ProtocolRegistry(List.of(family("z", 0))));
        assertTrue(e.getMessage().contains("which is reserved or out of range"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ProtocolRegistry(List.of(family("big", 256))));
        assertNull(new ProtocolRegistry(List.of(family("ok", 40))).owner(41));
    }
}
