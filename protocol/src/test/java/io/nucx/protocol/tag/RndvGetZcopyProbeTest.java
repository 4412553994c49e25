package io.nucx.protocol.tag;

import io.nucx.protocol.EagerSurcharge;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.RndvSurcharge;
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
 * {@code rndv/get/zcopy}'s probe and where the selection engine puts it, on mock lanes with stated figures: a
 * tcp-like AM lane (UCX's tcp: 5.26 us, 50 us overhead, 2.2 GB/s, 64 KiB frames) and a cma-like RMA lane (UCX's cma:
 * 80 ns, 2 us, 11145 MB/s).
 */
class RndvGetZcopyProbeTest {

    private static final List<Protocol> REGISTRY = List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
            EagerProtocols.MULTI_BCOPY, RndvProtocols.TAG_RNDV, RndvProtocols.GET_ZCOPY);

    private static List<ProtoCandidate> probe(EndpointConfig config, long key) {
        List<ProtoCandidate> out = new ArrayList<>();
        RndvProtocols.GET_ZCOPY.probe(new ProbeParams(config, key, ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW),
                out::add);
        return out;
    }

    @Test
    void theProbeDeclinesHeapMemoryNonContiguousDataAndEndpointsWithoutAPermittedRmaLane() {
        assertEquals(List.of(), probe(TCP_CMA, key(SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.HEAP)),
                "heap: the GC moves it, no other process may read it");
        assertEquals(List.of(), probe(TCP_CMA, key(SelectionKey.DatatypeClass.IOV, SelectionKey.MemoryType.DIRECT)),
                "non-contiguous");
        assertEquals(List.of(), probe(TCP_ONLY, DIRECT), "no RMA lane (none offered, or refused by the kernel)");
        IfaceAttributes putOnly = new IfaceAttributes(EnumSet.of(Capability.PUT_ZCOPY), 0, 0, 0, 80e-9, 0,
                11145e6, 0, 2e-6, 0, Long.MAX_VALUE);
        assertEquals(List.of(), probe(new EndpointConfig("tcp/lo", TCP, "x/y", putOnly), DIRECT), "no GET_ZCOPY");
        assertEquals(1, probe(TCP_CMA, key(SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.NATIVE)).size());
    }

    @Test
    void theProbeDeclaresControlMessagesLatencyAndCmaBandwidthWithNoCopy() {
        List<ProtoCandidate> c = probe(TCP_CMA, DIRECT);
        assertEquals(1, c.size());
        ProtoCandidate cand = c.get(0);
        assertEquals(60, cand.cfgPriority(), "forced like tag/rndv by NUCX_RNDV_THRESH");
        assertEquals("tcp/lo + cma/memory", cand.config());
        List<ProtoPerf.Segment> segs = cand.perf().segments();
        assertEquals(1, segs.size());
        assertEquals(1, segs.get(0).start(), "a 0-byte message has nothing to read");
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        double ovh = TCP.overheadSeconds();
        ProtoPerf.Segment s = segs.get(0);
        assertFunc(d * (2 * ovh + RndvProtocols.RTS_OVERHEAD), 0, s.factor(PerfFactor.LOCAL_CPU), "sender: RTS, ATS");
        assertFunc(d * (2 * ovh + CMA.overheadSeconds()), d * CMA.overheadSeconds() / CMA.rmaSegment(),
                s.factor(PerfFactor.REMOTE_CPU), "receiver: RTS, one read per chunk, ATS; no copy");
        assertFunc(0, d / CMA.bandwidth(), s.factor(PerfFactor.REMOTE_TL), "the receiver pulls at cma bandwidth");
        assertFunc(0, 0, s.factor(PerfFactor.LOCAL_TL), "nothing crosses the AM lane but control");
        assertFunc(d * (2 * TCP.latencySeconds() + CMA.latencySeconds()), 0, s.factor(PerfFactor.LATENCY),
                "RTS, ATS, the read");
    }

    /** The sender registers its buffer for the receiver's read: the RMA lane's registration cost is on its cpu. */
    @Test
    void theSendBuffersRegistrationIsChargedToTheSender() {
        IfaceAttributes registering = CMA.withPerf(CMA.latencySeconds(), CMA.overheadSeconds(), CMA.bandwidth(),
                3e-6, 0.01e-9);
        ProtoPerf.Segment s = probe(new EndpointConfig("tcp/lo", TCP, "cma/memory", registering), DIRECT).get(0)
                .perf().segments().get(0);
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        assertFunc(d * (2 * TCP.overheadSeconds() + RndvProtocols.RTS_OVERHEAD + 3e-6), d * 0.01e-9,
                s.factor(PerfFactor.LOCAL_CPU), "sender: registration, RTS, ATS");
        assertFunc(d * (2 * TCP.overheadSeconds() + CMA.overheadSeconds()), d * CMA.overheadSeconds() / CMA.rmaSegment(),
                s.factor(PerfFactor.REMOTE_CPU), "receiver: unchanged");
    }

    /**
     * A calibrated read surcharge (the read against eager, beyond the model) is charged to the read on the latency
     * factor where its line is above 0, nothing below, with a bulk rate or without; PUT does not take it (it was not
     * measured).
     */
    @Test
    void aReadSurchargeIsChargedToTheReadWhereItsLineIsAboveZero() {
        RndvSurcharge line = new RndvSurcharge(-2e-6, 1e-11); // 0 at 200,000 B
        EndpointConfig surcharged = new EndpointConfig("tcp/lo", TCP, "cma/memory", CMA, List.of(), List.of(),
                RndvSurcharge.NONE, EagerSurcharge.NONE, line);
        ProtoPerf plain = probe(TCP_CMA, DIRECT).get(0).perf();
        ProtoPerf charged = probe(surcharged, DIRECT).get(0).perf();
        for (long size : new long[] {1, 65536, 200_000}) {
            assertEquals(plain.singleCost(size), charged.singleCost(size), 1e-15, "nothing at " + size + " B");
        }
        for (long size : new long[] {200_001, 1 << 20, 64 << 20}) {
            assertEquals(plain.singleCost(size) + line.at(size), charged.singleCost(size), 1e-12,
                    "the line, as measured, at " + size + " B");
        }
        IfaceAttributes bulk = CMA.withBulk(1 << 20, 5e9); // a calibrated bulk rate from 1 MiB on
        EndpointConfig withBulk = new EndpointConfig("tcp/lo", TCP, "cma/memory", bulk, List.of(), List.of(),
                RndvSurcharge.NONE, EagerSurcharge.NONE, line);
        ProtoPerf bulkPlain = probe(new EndpointConfig("tcp/lo", TCP, "cma/memory", bulk), DIRECT).get(0).perf();
        ProtoPerf bulkCharged = probe(withBulk, DIRECT).get(0).perf();
        for (long size : new long[] {(1 << 20) - 1, 1 << 20, 32 << 20}) {
            assertEquals(bulkPlain.singleCost(size) + line.at(size), bulkCharged.singleCost(size), 1e-12,
                    "the line below and beyond a bulk rate alike: " + size + " B");
        }
        List<ProtoCandidate> put = new ArrayList<>();
        RndvProtocols.PUT_ZCOPY.probe(new ProbeParams(surcharged, DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO,
                COPY_BW), put::add);
        List<ProtoCandidate> plainPut = new ArrayList<>();
        RndvProtocols.PUT_ZCOPY.probe(new ProbeParams(TCP_CMA, DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO,
                COPY_BW), plainPut::add);
        assertEquals(plainPut.get(0).perf().singleCost(1 << 20), put.get(0).perf().singleCost(1 << 20), 1e-15,
                "PUT: unchanged");
    }

    private static void assertFunc(double c, double m, LinearFunc f, String what) {
        assertEquals(c, f.c(), Math.abs(c) * 1e-12, what + ": constant");
        assertEquals(m, f.m(), Math.abs(m) * 1e-12, what + ": slope");
    }

    /** get/zcopy's flattened line (sum of factors, as the engine compares single sends). */
    private static LinearFunc getLine(IfaceAttributes am) {
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        double ovh = am.overheadSeconds();
        return new LinearFunc(d * (4 * ovh + RndvProtocols.RTS_OVERHEAD + CMA.overheadSeconds()
                + 2 * am.latencySeconds() + CMA.latencySeconds()),
                d * (CMA.overheadSeconds() / CMA.rmaSegment() + 1 / CMA.bandwidth()));
    }

    /** egr/short and egr/single/bcopy's lines: overheads (+ request for bcopy), two copies, the wire. */
    private static LinearFunc singleLine(IfaceAttributes am, boolean bcopy) {
        return new LinearFunc(2 * am.overheadSeconds() + EagerProtocols.SINGLE_OVERHEAD
                + (bcopy ? EagerProtocols.REQUEST_OVERHEAD : 0) + am.latencySeconds(),
                2 / COPY_BW + 1 / am.bandwidth());
    }

    private static LinearFunc multiLine(IfaceAttributes am) {
        double ovh = am.overheadSeconds();
        double frag = am.maxBcopy() - EagerHeaders.MIDDLE_LENGTH;
        return new LinearFunc(2 * ovh + EagerProtocols.REQUEST_OVERHEAD + EagerProtocols.MULTI_OVERHEAD
                + am.latencySeconds(), 2 / COPY_BW + (2 * ovh + EagerProtocols.MULTI_OVERHEAD) / frag
                + 1 / am.bandwidth());
    }

    private static double at(LinearFunc f, double size) {
        return f.c() + f.m() * size;
    }

    /**
     * tcp + cma: the 50 us tcp overheads make get/zcopy's constant about 4 overheads, and eager's per-fragment
     * overheads make multi-fragment eager steeper than get/zcopy from its first size: the rendezvous starts where
     * single-fragment eager ends (its line still below get's there), far below tag/rndv's crossover without cma.
     */
    @Test
    void onTcpWithCmaGetZcopyTakesOverWhereSingleFragmentEagerEndsFarBelowTagRndv() {
        ProtoTable t = ProtoSelector.select(REGISTRY, new ProbeParams(TCP_CMA, DIRECT, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, COPY_BW));
        List<ProtoTable.Entry> e = t.entries();
        String printed = t.format("tcp/lo + cma/memory");
        assertEquals(3, e.size(), printed);
        assertSame(EagerProtocols.SHORT, e.get(0).candidate().protocol(), printed);
        assertSame(EagerProtocols.SINGLE_BCOPY, e.get(1).candidate().protocol(), printed);
        assertSame(RndvProtocols.GET_ZCOPY, e.get(2).candidate().protocol(), printed);
        long singleEnd = TCP.maxBcopy() - EagerHeaders.ONLY_LENGTH;
        assertEquals(singleEnd, e.get(1).end(), printed);
        assertEquals(singleEnd + 1, e.get(2).start(), printed);
        assertEquals(ProtoPerf.MAX_SIZE, e.get(2).end());
        LinearFunc get = getLine(TCP);
        assertTrue(at(singleLine(TCP, true), singleEnd + 0.5) < at(get, singleEnd + 0.5), "single bcopy still cheaper");
        assertTrue(at(multiLine(TCP), singleEnd + 1.5) > at(get, singleEnd + 1.5), "multi-frag already dearer");
        assertTrue(multiLine(TCP).m() > get.m(), "and it stays dearer: steeper");
        assertTrue(printed.contains("(?) rendezvous zero-copy read from remote"), printed);

        ProtoTable without = ProtoSelector.select(REGISTRY, new ProbeParams(TCP_ONLY, DIRECT, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, COPY_BW));
        ProtoTable.Entry rndv = without.entries().get(without.entries().size() - 1);
        assertSame(RndvProtocols.TAG_RNDV, rndv.candidate().protocol(), without.format("tcp/lo"));
        assertTrue(rndv.start() > 10 * e.get(2).start(), "tag/rndv from " + rndv.start() + ", get/zcopy from "
                + e.get(2).start());

        // Heap memory on the same endpoint: get/zcopy declined, the threshold is tag/rndv's as without cma.
        ProtoTable heap = ProtoSelector.select(REGISTRY, new ProbeParams(TCP_CMA, key(SelectionKey.DatatypeClass.CONTIG,
                SelectionKey.MemoryType.HEAP), ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW));
        ProtoTable.Entry heapLast = heap.entries().get(heap.entries().size() - 1);
        assertSame(RndvProtocols.TAG_RNDV, heapLast.candidate().protocol(), heap.format("heap"));
        assertEquals(rndv.start(), heapLast.start(), heap.format("heap"));
    }

    /**
     * A self-like AM lane (UCX's self: no latency, 10 ns overhead, 6.9 GB/s) + cma: the crossover falls inside eager
     * short's range and equals the closed form {@code (Cg - Cs) / (ms - mg)}, decided at size + 0.5.
     */
    @Test
    void onAFastAmLaneTheThresholdIsTheClosedFormCrossoverOfEagerAndGet() {
        IfaceAttributes self = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY), 8192,
                65536, 64, 0, 0, 6.9e9, 0, 10e-9, 0);
        assertShortThenGetFromTheCrossover("self/memory", self, singleLine(self, false));
    }

    /**
     * Over {@code am} + cma: eager short, then get/zcopy from where {@code shortLine} crosses get's line, inside eager
     * short's range (the closed form {@code (Cg - Cs) / (ms - mg)}, decided at size + 0.5).
     */
    private static void assertShortThenGetFromTheCrossover(String lane, IfaceAttributes am, LinearFunc shortLine) {
        ProtoTable t = ProtoSelector.select(REGISTRY, new ProbeParams(new EndpointConfig(lane, am, "cma/memory", CMA),
                DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW));
        List<ProtoTable.Entry> e = t.entries();
        String printed = t.format(lane + " + cma/memory");
        assertEquals(2, e.size(), printed);
        assertSame(EagerProtocols.SHORT, e.get(0).candidate().protocol(), printed);
        assertSame(RndvProtocols.GET_ZCOPY, e.get(1).candidate().protocol(), printed);
        LinearFunc get = getLine(am);
        double closed = (get.c() - shortLine.c()) / (shortLine.m() - get.m());
        assertTrue(closed < am.maxShort() - EagerHeaders.ONLY_LENGTH, "inside eager short: " + closed);
        assertEquals((long) Math.floor(closed - 0.5) + 1, e.get(1).start(), "closed form " + closed + "\n" + printed);
    }

    /** A shm-like AM lane (UCX's posix figures, 64 KiB records) whose payloads move by two copies at {@code rate}. */
    private static IfaceAttributes shm(double rate) {
        return new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY), 65536, 65536, 256, 80e-9, 0,
                12179e6, 0, 10e-9, 0, 0, Integer.MAX_VALUE).withCopyBandwidth(rate);
    }

    /**
     * Over shm + cma the ring's two copies at the lane's copy rate, and no wire besides them, against cma's one read:
     * copying at 60 GB/s (a machine measured 50-95 GB/s) the ring is cheaper at every size, as measured there (1 MiB:
     * 27 us against cma's 76), so get/zcopy is never chosen; the worker's 7 GB/s memcpy figure is not what the ring is
     * charged at.
     */
    @Test
    void overShmARingThatCopiesFasterThanCmaReadsKeepsEveryMessageOffCma() {
        IfaceAttributes shm = shm(60e9);
        EndpointConfig shmCma = new EndpointConfig("shm/memory", shm, "cma/memory", CMA);
        ProtoTable t = ProtoSelector.select(REGISTRY, new ProbeParams(shmCma, DIRECT, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, COPY_BW));
        String printed = t.format("shm/memory + cma/memory");
        for (ProtoTable.Entry e : t.entries()) {
            assertTrue(e.candidate().protocol() != RndvProtocols.GET_ZCOPY, printed);
        }
        List<ProtoCandidate> out = new ArrayList<>();
        EagerProtocols.MULTI_BCOPY.probe(new ProbeParams(shmCma, DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO,
                COPY_BW), out::add);
        ProtoPerf.Segment multi = out.get(0).perf().segments().get(0);
        assertFunc(0, 0, multi.factor(PerfFactor.LOCAL_TL), "no wire beyond the copies");
        double frag = shm.maxBcopy() - EagerHeaders.MIDDLE_LENGTH;
        assertEquals(1 / 60e9 + (shm.overheadSeconds() + EagerProtocols.MULTI_OVERHEAD) / frag,
                multi.factor(PerfFactor.LOCAL_CPU).m(), 1e-24, "the copy in at the lane's rate");
        assertEquals(1 / 60e9 + shm.overheadSeconds() / frag, multi.factor(PerfFactor.REMOTE_CPU).m(), 1e-24,
                "the copy out at the lane's rate");
    }

    /**
     * Over a ring alone the rendezvous moves its bytes by eager's two copies through the same ring and adds the RTS
     * and RTR, so nothing discounts it below eager: at every size from 64 KiB to 64 MiB it costs more, and without
     * NUCX_EAGER_MAX the table never takes it. Scaled by UCX's 0.99 those copies alone made it the cheaper from about
     * 0.5 MB on, where it ran 10-15 % slower. (A lane whose payload crosses a wire keeps the 0.99:
     * RndvMultiLaneProbeTest.)
     */
    @Test
    void overARingAloneTheRendezvousIsNeverPricedBelowEager() {
        EndpointConfig ring = new EndpointConfig("shm/memory", shm(22e9));
        ProbeParams params = new ProbeParams(ring, DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW);
        ProtoPerf rndv = only(RndvProtocols.TAG_RNDV, params).perf();
        ProtoPerf eager = only(EagerProtocols.MULTI_BCOPY, params).perf();
        for (long size = 64 << 10; size <= 64L << 20; size *= 2) {
            assertTrue(rndv.singleCost(size) > eager.singleCost(size), size + " B: rendezvous "
                    + rndv.singleCost(size) + " s, eager " + eager.singleCost(size) + " s");
        }
        ProtoTable t = ProtoSelector.select(REGISTRY, params);
        for (ProtoTable.Entry e : t.entries()) {
            assertTrue(e.candidate().protocol() != RndvProtocols.TAG_RNDV, t.format("shm/memory"));
        }
        long a = 32L << 20;
        long b = 64L << 20;
        double eagerPerByte = (eager.singleCost(b) - eager.singleCost(a)) / (b - a);
        // the same copies priced the same (the frames' headers differ by a few bytes; 0.99 would be 1e-2 off)
        assertEquals(eagerPerByte, (rndv.singleCost(b) - rndv.singleCost(a)) / (b - a), eagerPerByte * 1e-3);
    }

    private static ProtoCandidate only(Protocol protocol, ProbeParams params) {
        List<ProtoCandidate> out = new ArrayList<>();
        protocol.probe(params, out::add);
        assertEquals(1, out.size(), protocol.name());
        return out.get(0);
    }

    /**
     * The same lanes on a machine copying at 15 GB/s: two copies cost more per byte than cma's one read, and cma
     * takes over where eager short's line crosses get's (the closed form, decided at size + 0.5).
     */
    @Test
    void overShmARingThatCopiesSlowlyHandsLargeMessagesToCmaWhereTheLinesCross() {
        IfaceAttributes shm = shm(15e9);
        assertShortThenGetFromTheCrossover("shm/memory", shm, new LinearFunc(2 * shm.overheadSeconds()
                + EagerProtocols.SINGLE_OVERHEAD + shm.latencySeconds(), 2 / 15e9));
    }

    /**
     * A read with a bulk rate (a calibrated profile's: cma's read by one core slows beyond the caches) costs the same
     * on both sides of its size, then grows at the bulk rate: over a ring that copies at 15 GB/s, cma takes over where
     * the lines cross as before, and hands large messages back to the ring where its bulk line passes the ring's.
     */
    @Test
    void aReadThatOutgrowsTheCachesHandsLargeMessagesBackToTheRing() {
        IfaceAttributes shm = shm(15e9);
        long from = 1 << 20;
        IfaceAttributes bulky = CMA.withBulk(from, 3e9);
        EndpointConfig config = new EndpointConfig("shm/memory", shm, "cma/memory", bulky);
        ProtoCandidate get = probe(config, DIRECT).get(0);
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        List<ProtoPerf.Flat> flat = get.perf().flatten(false);
        assertEquals(2, flat.size(), flat.toString());
        assertEquals(from - 1, flat.get(0).end());
        assertEquals(from, flat.get(1).start());
        assertEquals(flat.get(0).func().apply(from), flat.get(1).func().apply(from), 1e-15, "continuous at the size");
        assertEquals(d / 3e9, flat.get(1).func().m() - d * CMA.overheadSeconds() / CMA.rmaSegment(), 1e-22,
                "the bulk rate beyond it");

        ProtoTable t = ProtoSelector.select(REGISTRY, new ProbeParams(config, DIRECT, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, COPY_BW));
        String printed = t.format("shm/memory + cma/memory, bulk from 1 MiB");
        assertSame(RndvProtocols.GET_ZCOPY, t.lookup(from / 2).protocol(), printed);
        assertSame(RndvProtocols.GET_ZCOPY, t.lookup(from).protocol(), printed);
        assertTrue(t.lookup(64L << 20).protocol() != RndvProtocols.GET_ZCOPY, printed);
        // where the ring takes over again: the first size whose bulk read costs more than the ring's copies
        ProtoTable.Entry last = t.entries().get(t.entries().size() - 1);
        ProtoTable.Entry before = t.entries().get(t.entries().size() - 2);
        assertSame(RndvProtocols.GET_ZCOPY, before.candidate().protocol(), printed);
        assertTrue(cost(last.candidate(), last.start()) <= cost(get, last.start()), printed);
        assertTrue(cost(last.candidate(), before.end()) > cost(get, before.end()), printed);
    }

    /** What {@code c} costs a single send of {@code size} bytes. */
    private static double cost(ProtoCandidate c, long size) {
        double cost = c.perf().singleCost(size);
        if (Double.isNaN(cost)) {
            throw new AssertionError(c + " does not cover " + size);
        }
        return cost;
    }

    @Test
    void aUserRendezvousThresholdForcesGetZcopyFromThatSize() {
        ProtoTable t = ProtoSelector.select(REGISTRY, new ProbeParams(TCP_CMA, DIRECT, ProtoCandidate.AUTO, 4096,
                COPY_BW));
        ProtoCandidate at = t.lookup(4096);
        assertSame(RndvProtocols.GET_ZCOPY, at.protocol(), t.format("thresh 4k"));
        assertTrue(t.lookup(4095).protocol() != RndvProtocols.GET_ZCOPY, t.format("thresh 4k"));
    }
}
