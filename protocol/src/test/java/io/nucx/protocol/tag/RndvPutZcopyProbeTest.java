package io.nucx.protocol.tag;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.select.LinearFunc;
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

import static io.nucx.protocol.tag.RmaProbeLanes.CMA;
import static io.nucx.protocol.tag.RmaProbeLanes.COPY_BW;
import static io.nucx.protocol.tag.RmaProbeLanes.DIRECT;
import static io.nucx.protocol.tag.RmaProbeLanes.TCP;
import static io.nucx.protocol.tag.RmaProbeLanes.TCP_CMA;
import static io.nucx.protocol.tag.RmaProbeLanes.TCP_ONLY;
import static io.nucx.protocol.tag.RmaProbeLanes.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code rndv/put/zcopy}'s probe on the mock lanes of {@link RmaProbeLanes} (tcp-like AM lane, cma-like RMA
 * lane): its factors (the data on the sender's tl, not tl-remote), its declines, one control message dearer than
 * get/zcopy, and where the engine puts it when get/zcopy is left out (NUCX_RNDV_SCHEME=put_zcopy).
 */
class RndvPutZcopyProbeTest {

    private static List<ProtoCandidate> probe(Protocol p, EndpointConfig config, long key) {
        List<ProtoCandidate> out = new ArrayList<>();
        p.probe(new ProbeParams(config, key, ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW), out::add);
        return out;
    }

    private static LinearFunc flat(ProtoCandidate c) {
        ProtoPerf.Segment s = c.perf().segments().get(0);
        double constant = 0;
        double slope = 0;
        for (PerfFactor f : PerfFactor.values()) {
            constant += s.factor(f).c();
            slope += s.factor(f).m();
        }
        return new LinearFunc(constant, slope);
    }

    @Test
    void theProbeDeclinesHeapMemoryNonContiguousDataAndEndpointsWithoutAPutLane() {
        Protocol put = RndvProtocols.PUT_ZCOPY;
        assertEquals(List.of(), probe(put, TCP_CMA, key(SelectionKey.DatatypeClass.CONTIG,
                SelectionKey.MemoryType.HEAP)));
        assertEquals(List.of(), probe(put, TCP_CMA, key(SelectionKey.DatatypeClass.IOV,
                SelectionKey.MemoryType.DIRECT)));
        assertEquals(List.of(), probe(put, TCP_ONLY, DIRECT));
        IfaceAttributes getOnly = new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY), 0, 0, 0, 80e-9, 0, 11145e6,
                0, 2e-6, 0, Long.MAX_VALUE);
        assertEquals(List.of(), probe(put, new EndpointConfig("tcp/lo", TCP, "x/y", getOnly), DIRECT),
                "no PUT_ZCOPY");
        assertEquals(1, probe(put, TCP_CMA, key(SelectionKey.DatatypeClass.CONTIG,
                SelectionKey.MemoryType.NATIVE)).size());
    }

    @Test
    void theProbeDeclaresRtsRtrThePutOnTheSendersTlAndAtp() {
        ProtoCandidate c = probe(RndvProtocols.PUT_ZCOPY, TCP_CMA, DIRECT).get(0);
        assertEquals(60, c.cfgPriority());
        assertEquals("tcp/lo + cma/memory", c.config());
        ProtoPerf.Segment s = c.perf().segments().get(0);
        assertEquals(1, s.start());
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        double ovh = TCP.overheadSeconds();
        double rmaOvh = CMA.overheadSeconds();
        assertFunc(d * (3 * ovh + RndvProtocols.RTS_OVERHEAD + rmaOvh), d * rmaOvh / CMA.rmaSegment(),
                s.factor(PerfFactor.LOCAL_CPU), "sender: RTS, RTR, one write per chunk, ATP");
        assertFunc(d * (3 * ovh + RndvProtocols.RTR_OVERHEAD), 0, s.factor(PerfFactor.REMOTE_CPU),
                "receiver: RTS, RTR, ATP; no copy");
        assertFunc(0, d / CMA.bandwidth(), s.factor(PerfFactor.LOCAL_TL), "the sender pushes at cma bandwidth");
        assertFunc(0, 0, s.factor(PerfFactor.REMOTE_TL), "not the receiver");
        assertFunc(d * (3 * TCP.latencySeconds() + CMA.latencySeconds()), 0, s.factor(PerfFactor.LATENCY),
                "RTS, RTR, ATP, the write");
        // One control message more than get/zcopy (RTR out and in, ATP in: three overheads, the rtr knob, a latency),
        // the same slope: where both run, get is cheaper at every size.
        LinearFunc put = flat(c);
        LinearFunc get = flat(probe(RndvProtocols.GET_ZCOPY, TCP_CMA, DIRECT).get(0));
        assertEquals(get.m(), put.m(), get.m() * 1e-12);
        assertEquals(d * (2 * ovh + RndvProtocols.RTR_OVERHEAD + TCP.latencySeconds()), put.c() - get.c(), 1e-15);
    }

    private static void assertFunc(double c, double m, LinearFunc f, String what) {
        assertEquals(c, f.c(), Math.abs(c) * 1e-12, what + ": constant");
        assertEquals(m, f.m(), Math.abs(m) * 1e-12, what + ": slope");
    }

    /**
     * With get/zcopy left out (put_zcopy scheme), put/zcopy takes over from multi-fragment eager on tcp + cma a little
     * after single-fragment eager ends (its extra control message costs two 50 us tcp overheads), far below tag/rndv;
     * heap memory keeps tag/rndv.
     */
    @Test
    void withoutGetZcopyPutZcopyTakesOverSoonAfterSingleFragmentEagerEnds() {
        List<Protocol> registry = List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
                EagerProtocols.MULTI_BCOPY, RndvProtocols.TAG_RNDV, RndvProtocols.PUT_ZCOPY);
        ProtoTable t = ProtoSelector.select(registry, new ProbeParams(TCP_CMA, DIRECT, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, COPY_BW));
        String printed = t.format("tcp/lo + cma/memory");
        List<ProtoTable.Entry> e = t.entries();
        assertEquals(4, e.size(), printed);
        assertSame(EagerProtocols.MULTI_BCOPY, e.get(2).candidate().protocol(), printed);
        assertSame(RndvProtocols.PUT_ZCOPY, e.get(3).candidate().protocol(), printed);
        long singleEnd = TCP.maxBcopy() - EagerHeaders.ONLY_LENGTH;
        assertEquals(singleEnd + 1, e.get(2).start(), printed);
        assertTrue(e.get(3).start() < 2 * singleEnd, printed);
        ProtoTable amOnly = ProtoSelector.select(registry, new ProbeParams(TCP_ONLY, DIRECT, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, COPY_BW));
        assertTrue(amOnly.entries().get(amOnly.entries().size() - 1).start() > 10 * e.get(3).start(),
                amOnly.format("tcp/lo"));
        assertTrue(printed.contains("(?) rendezvous zero-copy write to remote"), printed);
        ProtoTable heap = ProtoSelector.select(registry, new ProbeParams(TCP_CMA, key(SelectionKey.DatatypeClass.CONTIG,
                SelectionKey.MemoryType.HEAP), ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW));
        assertSame(RndvProtocols.TAG_RNDV, heap.entries().get(heap.entries().size() - 1).candidate().protocol());
        // With both in, get wins everywhere (auto keeps today's behaviour even if put were registered).
        ProtoTable both = ProtoSelector.select(List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
                EagerProtocols.MULTI_BCOPY, RndvProtocols.TAG_RNDV, RndvProtocols.GET_ZCOPY, RndvProtocols.PUT_ZCOPY),
                new ProbeParams(TCP_CMA, DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW));
        assertTrue(both.entries().stream().noneMatch(x -> x.candidate().protocol() == RndvProtocols.PUT_ZCOPY),
                both.format("both"));
    }
}
