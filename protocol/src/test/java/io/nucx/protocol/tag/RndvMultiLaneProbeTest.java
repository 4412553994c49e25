package io.nucx.protocol.tag;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.select.LinearFunc;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoSelector;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.EnumSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code tag/rndv} on an endpoint with AM_BW lanes: its data crosses at the sum of the lanes' bandwidths (the seed's
 * multi-lane rule) in fragments that fit every lane, so the crossover with multi-fragment eager moves down, and stays
 * where the two lines meet in closed form.
 */
class RndvMultiLaneProbeTest {

    private static final double COPY_BW = ProbeParams.DEFAULT_COPY_BANDWIDTH;
    private static final List<Protocol> REGISTRY = List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
            EagerProtocols.MULTI_BCOPY, RndvProtocols.TAG_RNDV);
    private static final long HEAP = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0,
            SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.HEAP, SelectionKey.Locality.INTER_NODE);

    private static IfaceAttributes lane(double latency, double overhead, double bandwidth, int maxBcopy) {
        return new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY), 256, maxBcopy, 64, latency,
                0, bandwidth, 0, overhead, 0);
    }

    private static long rndvStart(EndpointConfig config) {
        ProtoTable t = ProtoSelector.select(REGISTRY, new ProbeParams(config, HEAP, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, COPY_BW));
        ProtoTable.Entry last = t.entries().get(t.entries().size() - 1);
        assertSame(RndvProtocols.TAG_RNDV, last.candidate().protocol(), t.format("multi-lane"));
        assertSame(EagerProtocols.MULTI_BCOPY, t.entries().get(t.entries().size() - 2).candidate().protocol());
        return last.start();
    }

    /** The crossover of multi-fragment eager on the AM lane and tag/rndv over all lanes, in closed form. */
    private static double closedForm(IfaceAttributes am, List<IfaceAttributes> bw) {
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        double ovh = am.overheadSeconds();
        double lat = am.latencySeconds();
        double sumBw = am.bandwidth();
        int minBcopy = am.maxBcopy();
        for (IfaceAttributes l : bw) {
            sumBw += l.bandwidth();
            minBcopy = Math.min(minBcopy, l.maxBcopy());
        }
        double eFrag = am.maxBcopy() - EagerHeaders.MIDDLE_LENGTH;
        double rFrag = minBcopy - RndvHeaders.DATA_LENGTH;
        LinearFunc eager = new LinearFunc(2 * ovh + EagerProtocols.REQUEST_OVERHEAD + EagerProtocols.MULTI_OVERHEAD
                + lat, 2 / COPY_BW + (2 * ovh + EagerProtocols.MULTI_OVERHEAD) / eFrag + 1 / am.bandwidth());
        LinearFunc rndv = new LinearFunc(d * (6 * ovh + RndvProtocols.RTS_OVERHEAD + RndvProtocols.RTR_OVERHEAD
                + EagerProtocols.MULTI_OVERHEAD + 3 * lat),
                d * (2 / COPY_BW + (2 * ovh + EagerProtocols.MULTI_OVERHEAD) / rFrag + 1 / sumBw));
        return (rndv.c() - eager.c()) / (eager.m() - rndv.m());
    }

    @ParameterizedTest(name = "am {0} B/s + am_bw {1} B/s")
    @CsvSource({
            // a fast AM lane with a slow AM_BW lane; two equal tcp-like lanes; a second lane with smaller frames
            "12179e6, 1186e6, 65536, 2e-6, 1e-6",
            "2200e6, 2200e6, 65536, 5.2e-6, 50e-6",
            "5000e6, 600e6, 65536, 1e-6, 3e-6",
            "5000e6, 5000e6, 49152, 1e-6, 3e-6"})
    void aSecondLaneLowersTheCrossoverToItsClosedForm(double amBw, double secondBw, int secondBcopy, double lat,
                                                      double ovh) {
        IfaceAttributes am = lane(lat, ovh, amBw, 65536);
        IfaceAttributes second = lane(lat, ovh, secondBw, secondBcopy);
        EndpointConfig one = new EndpointConfig("am/0", am);
        EndpointConfig two = new EndpointConfig("am/0", am, null, null, List.of(new EndpointConfig.BwLane("bw/0",
                second)));
        assertEquals(amBw + secondBw, two.messageBandwidth());
        assertEquals(Math.min(65536, secondBcopy), two.minMaxBcopy());
        assertEquals("am/0 + bw/0", two.messageLanes(), "tables name every lane the data may take");
        double closedOne = closedForm(am, List.of());
        double closedTwo = closedForm(am, List.of(second));
        assertTrue(closedOne > 0 && closedTwo > 0, closedOne + " / " + closedTwo);
        assertEquals((long) Math.floor(closedOne - 0.5) + 1, rndvStart(one), "one lane, closed form " + closedOne);
        assertEquals((long) Math.floor(closedTwo - 0.5) + 1, rndvStart(two), "two lanes, closed form " + closedTwo);
        if (secondBcopy >= 65536) {
            assertTrue(rndvStart(two) < rndvStart(one), "more bandwidth, earlier rendezvous");
        }
    }

    /**
     * On lanes that place payloads (tcp reading into the receive buffer, {@link IfaceAttributes#maxPlaced}), the
     * rendezvous data go in frames as large as the lanes send placed: its line loses most of the receiver's fragment
     * overheads and crosses eager's lower, where the closed form says.
     */
    @ParameterizedTest(name = "{0} B/s, latency {1} s, overhead {2} s")
    @CsvSource({
            // calibrated tcp/lo on this machine (BENCHMARKS.md), tcp's static estimates
            "1134e6, 4.05e-6, 2.91e-6",
            "2200e6, 5.2e-6, 50e-6"})
    void lanesThatPlaceTheDataLowerTheCrossoverToItsClosedForm(double bw, double lat, double ovh) {
        IfaceAttributes plain = lane(lat, ovh, bw, 65536);
        IfaceAttributes placing = plain.withMaxPlaced(256 * 1024);
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        double eFrag = 65536 - EagerHeaders.MIDDLE_LENGTH;
        double pFrag = 256 * 1024 - RndvHeaders.DATA_LENGTH;
        double eFragRndv = 65536 - RndvHeaders.DATA_LENGTH; // the sender's side counts its own fragments
        LinearFunc eager = new LinearFunc(2 * ovh + EagerProtocols.REQUEST_OVERHEAD + EagerProtocols.MULTI_OVERHEAD
                + lat, 2 / COPY_BW + (2 * ovh + EagerProtocols.MULTI_OVERHEAD) / eFrag + 1 / bw);
        LinearFunc rndv = new LinearFunc(d * (6 * ovh + RndvProtocols.RTS_OVERHEAD + RndvProtocols.RTR_OVERHEAD
                + EagerProtocols.MULTI_OVERHEAD + 3 * lat),
                d * (2 / COPY_BW + (ovh + EagerProtocols.MULTI_OVERHEAD) / eFragRndv + ovh / pFrag + 1 / bw));
        double closed = (rndv.c() - eager.c()) / (eager.m() - rndv.m());
        long before = rndvStart(new EndpointConfig("tcp/lo", plain));
        long after = rndvStart(new EndpointConfig("tcp/lo", placing));
        assertEquals((long) Math.floor(closed - 0.5) + 1, after, "placing lanes, closed form " + closed + " (" + before
                + " without)");
        assertTrue(after < before, after + " < " + before);
    }
}
