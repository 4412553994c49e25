package io.nucx.protocol.tag;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.RmaRail;
import io.nucx.protocol.RmaTransfer;
import io.nucx.protocol.select.PerfFactor;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoPerf;
import io.nucx.protocol.select.ProtoSelector;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * RMA multi-rail in the cost model (the seed's multi-lane rule applied to RMA_BW lanes): a rendezvous GET or PUT large
 * enough to split (16 KiB per rail) crosses at the sum of the rails' bandwidths, so the eager/rendezvous crossover moves
 * down with a second rail; and the split itself follows the bandwidths, the same on both peers.
 */
class RndvRmaRailsProbeTest {

    private static final long DIRECT = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0,
            SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.DIRECT, SelectionKey.Locality.INTER_NODE);
    private static final List<Protocol> REGISTRY = List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
            EagerProtocols.MULTI_BCOPY, RndvProtocols.GET_ZCOPY);

    /** An rdma-like lane: AM by SEND, GET and PUT by the device, the latency and bandwidth given. */
    private static IfaceAttributes rdma(double latency, double bandwidth) {
        return new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY, Capability.GET_ZCOPY,
                Capability.PUT_ZCOPY), 56, 8184, 8184, latency, 1e-9, bandwidth, 0, 75e-9, 0, 1L << 38,
                Integer.MAX_VALUE, 1L << 30);
    }

    private static EndpointConfig config(IfaceAttributes am, IfaceAttributes... rails) {
        List<EndpointConfig.BwLane> more = new ArrayList<>();
        for (int i = 1; i < rails.length; i++) {
            more.add(new EndpointConfig.BwLane("rdma/mlx5_" + i + ":1", rails[i]));
        }
        return new EndpointConfig("rdma/mlx5_0:1", am, "rdma/mlx5_0:1", rails[0], List.of(), more);
    }

    private static ProtoCandidate getZcopy(EndpointConfig config) {
        List<ProtoCandidate> out = new ArrayList<>();
        RndvProtocols.GET_ZCOPY.probe(new ProbeParams(config, DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO,
                ProbeParams.DEFAULT_COPY_BANDWIDTH), out::add);
        assertEquals(1, out.size());
        return out.get(0);
    }

    private static double wireSlope(ProtoPerf perf, long size) {
        for (ProtoPerf.Segment s : perf.segments()) {
            if (s.start() <= size && size <= s.end()) {
                return s.factor(PerfFactor.REMOTE_TL).m();
            }
        }
        throw new AssertionError("no segment covers " + size);
    }

    private static long rndvStart(EndpointConfig config) {
        ProtoTable t = ProtoSelector.select(REGISTRY, new ProbeParams(config, DIRECT, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, ProbeParams.DEFAULT_COPY_BANDWIDTH));
        return t.entries().stream().filter(e -> e.candidate().protocol() == RndvProtocols.GET_ZCOPY).findFirst()
                .orElseThrow(() -> new AssertionError(t.format("rails"))).start();
    }

    @Test
    void aSecondRailSumsTheBandwidthAboveTheSplitSizeAndLowersTheCrossover() {
        // A slow-to-start RMA path (10 us), so the crossover lies where messages are split over both rails.
        IfaceAttributes am = rdma(600e-9, 12.5e9);
        IfaceAttributes rail0 = rdma(10e-6, 12.5e9);
        IfaceAttributes rail1 = rdma(10e-6, 6.25e9);
        EndpointConfig one = config(am, rail0);
        EndpointConfig two = config(am, rail0, rail1);
        assertEquals(18.75e9, two.rmaBandwidth());
        assertEquals("rdma/mlx5_0:1 + rdma/mlx5_1:1", two.rmaLanes());
        ProtoPerf perfTwo = getZcopy(two).perf();
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        long split = 2 * EndpointConfig.MIN_RAIL_PART;
        assertEquals(d / 12.5e9, wireSlope(perfTwo, split - 1), 1e-25, "below the split size: the first rail");
        assertEquals(d / 18.75e9, wireSlope(perfTwo, split), 1e-25, "from it on: both rails' bandwidth summed");
        assertEquals(d / 12.5e9, wireSlope(getZcopy(one).perf(), 1 << 30), 1e-25, "one rail: its own");
        long t1 = rndvStart(one);
        long t2 = rndvStart(two);
        assertTrue(t1 > split && t2 < t1, "crossover with one rail " + t1 + ", with two " + t2);
        assertTrue(getZcopy(two).config().contains("rdma/mlx5_0:1 + rdma/mlx5_1:1"), getZcopy(two).config());
    }

    @Test
    void aTransferIsSplitInProportionToBandwidthOnlyWhenEachPartIsLargeEnough() {
        List<RmaRail> rails = List.of(new RmaRail(null, 0, 0, 12.5e9, "a"), new RmaRail(null, 1, 1, 6.25e9, "b"));
        assertArrayEquals(new long[] {32767, 0}, RmaTransfer.split(32767, rails), "below 2 x 16 KiB: one rail");
        assertArrayEquals(new long[] {21845, 10923}, RmaTransfer.split(32768, rails));
        long[] big = RmaTransfer.split(256L << 20, rails);
        assertEquals(256L << 20, big[0] + big[1]);
        assertEquals(1.0 / 3, (double) big[1] / (256L << 20), 1e-6);
        assertArrayEquals(new long[] {7}, RmaTransfer.split(7, rails.subList(0, 1)));
    }
}
