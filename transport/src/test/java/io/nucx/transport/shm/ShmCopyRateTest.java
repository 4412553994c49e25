package io.nucx.transport.shm;

import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The copy rate a shm iface states for the cost model: measured once per process unless NUCX_SHM_COPY_BW sets it,
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
            assertEquals(ShmCopyRate.measured(), auto.copyBandwidth(), "measured once, the same for every iface");
            assertEquals(set.bandwidth(), auto.bandwidth(), "the bandwidth (lane ranking) is the static figure");
        }
    }

    /**
     * A native memcpy of 64 KiB on any machine that runs a JVM moves at least 1 GB/s (this one: 50-95 GB/s), and
     * the figure is a rate of real copies: not above what a copy of the block could reach in a nanosecond.
     */
    @Test
    void theMeasuredRateIsAPlausibleMemcpyRate() {
        double rate = ShmCopyRate.measure();
        assertTrue(rate > 1e9, "copy rate " + rate + " B/s");
        assertTrue(rate < 64 * 1024 * 1e9, "copy rate " + rate + " B/s");
    }
}
