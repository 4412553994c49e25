package io.nucx.transport.shm;

import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.HandOffRate;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The copy rate a shm iface states for the cost model: obtained once per process unless NUCX_SHM_COPY_BW sets it,
 * on real ifaces.
 */
class ShmCopyRateTest {

    @Test
    void anIfaceStatesTheRateItWasGivenAndOtherwiseTheOneMeasured() throws Exception {
        try (ShmIfaces ifaces = new ShmIfaces()) {
            IfaceAttributes set = ifaces.open(ChannelInboundHandlerAdapter::new, Map.of("NUCX_SHM_COPY_BW", "20g"))
                    .attributes();
            assertTrue(set.copiesAreTheTransfer());
            assertEquals(20.0 * (1L << 30), set.copyBandwidth());
            IfaceAttributes auto = ifaces.open(ChannelInboundHandlerAdapter::new).attributes();
            assertEquals(HandOffRate.measured(NucxConfig.of(Map.of())), auto.copyBandwidth(),
                    "obtained once, the same for every iface");
            assertEquals(set.bandwidth(), auto.bandwidth(), "the bandwidth (lane ranking) is the static figure");
        }
    }
}
