package io.nucx.transport.shm;

import io.netty.channel.ChannelInboundHandlerAdapter;
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
            assertEquals(ShmCopyRate.measured(NucxConfig.of(Map.of())), auto.copyBandwidth(),
                    "obtained once, the same for every iface");
            assertEquals(set.bandwidth(), auto.bandwidth(), "the bandwidth (lane ranking) is the static figure");
        }
    }

    /**
     * The hand-off (two threads, a ring-sized region; the in-cache copy with one processor) and one core's copy in its
     * cache: on any machine that runs a JVM each moves at least 1 GB/s (this one: 20-25 and 46-135 GB/s), and each is
     * a rate of real copies, not above what a copy of the block could reach in a nanosecond.
     */
    @Test
    void theMeasuredRatesArePlausibleCopyRates() {
        for (double rate : new double[] {ShmCopyRate.measure(), ShmCopyRate.inCache()}) {
            assertTrue(rate > 1e9, "copy rate " + rate + " B/s");
            assertTrue(rate < 64 * 1024 * 1e9, "copy rate " + rate + " B/s");
        }
    }
}
