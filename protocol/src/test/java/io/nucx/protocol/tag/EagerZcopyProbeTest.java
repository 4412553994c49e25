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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code egr/single/zcopy} and {@code egr/multi/zcopy}: what their probes declare, where they decline, and where the
 * selection engine puts them, on mock lanes with the figures of nucx's own transports (tcp on lo: 5.2576 us latency,
 * 50 us overhead, 10 Gb/s × 1460/1538, 64 KiB frames, payloads over 1 KiB written from the sender's memory; shm and
 * self as their ifaces declare them).
 */
class EagerZcopyProbeTest {

    private static final double COPY_BW = ProbeParams.DEFAULT_COPY_BANDWIDTH;
    private static final int TCP_COPY_MAX = 1024;
    private static final IfaceAttributes TCP = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
            Capability.AM_BCOPY, Capability.AM_ZCOPY), 8192, 65536, 64, 5.2e-6 + 576 / 10e9, 0, 0,
            10e9 / 8 * 1460 / 1538, 50e-6, 0, 0, TCP_COPY_MAX);
    private static final IfaceAttributes SHM = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
            Capability.AM_BCOPY), 100, 65536, 64, 80e-9, 0, 12179e6, 0, 10e-9, 0, 0, Integer.MAX_VALUE);
    private static final IfaceAttributes SELF = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
            Capability.AM_BCOPY), 8192, 65536, 64, 0, 0, 6.9e9, 0, 10e-9, 0, 0, 0);
    private static final EndpointConfig TCP_LANE = new EndpointConfig("tcp/lo", TCP);
    private static final List<Protocol> REGISTRY = List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
            EagerProtocols.MULTI_BCOPY, EagerProtocols.SINGLE_ZCOPY, EagerProtocols.MULTI_ZCOPY,
            EagerProtocols.SYNC_SINGLE_BCOPY, EagerProtocols.SYNC_MULTI_BCOPY, RndvProtocols.TAG_RNDV);

    private static long key(SelectionKey.Operation op, SelectionKey.DatatypeClass dt, SelectionKey.MemoryType mem) {
        return SelectionKey.pack(op, 0, dt, mem, SelectionKey.Locality.INTER_NODE);
    }

    private static final long DIRECT = key(SelectionKey.Operation.TAG_SEND, SelectionKey.DatatypeClass.CONTIG,
            SelectionKey.MemoryType.DIRECT);
    private static final long HEAP = key(SelectionKey.Operation.TAG_SEND, SelectionKey.DatatypeClass.CONTIG,
            SelectionKey.MemoryType.HEAP);

    private static ProbeParams params(EndpointConfig config, long key, long zcopyThresh) {
        return new ProbeParams(config, key, ProtoCandidate.AUTO, ProtoCandidate.AUTO, COPY_BW, zcopyThresh);
    }

    private static List<ProtoCandidate> probe(Protocol p, EndpointConfig config, long key) {
        List<ProtoCandidate> out = new ArrayList<>();
        p.probe(params(config, key, ProtoCandidate.AUTO), out::add);
        return out;
    }

    private static ProtoTable table(EndpointConfig config, long key, long zcopyThresh) {
        return ProtoSelector.select(REGISTRY, params(config, key, zcopyThresh));
    }

    @Test
    void zeroCopyIsOfferedOnlyForNativeMemoryOnALaneWithAmZcopyAboveWhatItsTransportCopies() {
        for (Protocol p : List.of(EagerProtocols.SINGLE_ZCOPY, EagerProtocols.MULTI_ZCOPY)) {
            assertEquals(1, probe(p, TCP_LANE, DIRECT).size(), p.name());
            assertEquals(TCP_COPY_MAX + 1, probe(p, TCP_LANE, DIRECT).get(0).perf().segments().get(0).start(),
                    p.name() + ": payloads up to 1 KiB are copied next to the header anyway");
            assertEquals(1, probe(p, TCP_LANE, key(SelectionKey.Operation.TAG_SEND, SelectionKey.DatatypeClass.IOV,
                    SelectionKey.MemoryType.DIRECT)).size(), p.name() + ": a gathering write takes native iov too");
            assertEquals(List.of(), probe(p, TCP_LANE, HEAP), p.name() + ": the socket channel copies heap memory");
            assertEquals(List.of(), probe(p, new EndpointConfig("shm/memory", SHM), DIRECT),
                    p.name() + ": shm has no AM zero-copy (its ring write is a copy)");
            assertEquals(List.of(), probe(p, new EndpointConfig("self/memory", SELF), DIRECT),
                    p.name() + ": self has no AM zero-copy");
            assertEquals(List.of(), probe(p, TCP_LANE, key(SelectionKey.Operation.TAG_SEND_SYNC,
                    SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.DIRECT)), p.name() + ": not sync");
            assertEquals(List.of(), probe(p, TCP_LANE, key(SelectionKey.Operation.TAG_SEND,
                    SelectionKey.DatatypeClass.GENERIC, SelectionKey.MemoryType.DIRECT)), p.name() + ": not generic");
        }
        assertEquals(65536 - EagerHeaders.ZCOPY_ONLY_LENGTH, probe(EagerProtocols.SINGLE_ZCOPY, TCP_LANE, DIRECT)
                .get(0).perf().segments().get(0).end());
        assertEquals(ProtoPerf.MAX_SIZE, probe(EagerProtocols.MULTI_ZCOPY, TCP_LANE, DIRECT).get(0).perf().segments()
                .get(0).end());
    }

    /**
     * Against egr/single/bcopy: the same frame from the same memory (on a lane with AM_ZCOPY the copy protocols write
     * native memory from the sender's buffer too), plus the acknowledgement's two overheads and one more latency.
     * Heap memory: the socket channel copies it, so bcopy is charged that copy-in.
     */
    @Test
    void singleZcopyPaysTheAcknowledgementOnTopOfWhatSingleBcopyPays() {
        ProtoCandidate z = probe(EagerProtocols.SINGLE_ZCOPY, TCP_LANE, DIRECT).get(0);
        ProtoCandidate b = probe(EagerProtocols.SINGLE_BCOPY, TCP_LANE, DIRECT).get(0);
        assertEquals(30, z.cfgPriority(), "NUCX_ZCOPY_THRESH's priority, between bcopy's 20 and rendezvous' 60");
        assertEquals(20, b.cfgPriority());
        ProtoPerf.Segment zs = z.perf().segments().get(0);
        ProtoPerf.Segment bs = b.perf().segments().get(0);
        double ovh = TCP.overheadSeconds();
        double copy = 1 / COPY_BW;
        assertFunc(bs.factor(PerfFactor.LOCAL_CPU).c() + ovh, 0, zs.factor(PerfFactor.LOCAL_CPU),
                "cpu: no copy-in; the acknowledgement received");
        assertEquals(0, bs.factor(PerfFactor.LOCAL_CPU).m(), "bcopy writes native memory from the sender's buffer");
        assertFunc(bs.factor(PerfFactor.REMOTE_CPU).c() + ovh, copy, zs.factor(PerfFactor.REMOTE_CPU),
                "cpu-remote: copy-out as bcopy, and the acknowledgement sent");
        assertFunc(0, 1 / TCP.bandwidth(), zs.factor(PerfFactor.LOCAL_TL), "the wire");
        assertFunc(2 * TCP.latencySeconds(), 0, zs.factor(PerfFactor.LATENCY), "there, and the acknowledgement back");
        ProtoCandidate heap = probe(EagerProtocols.SINGLE_BCOPY, TCP_LANE, HEAP).get(0);
        assertEquals(copy, heap.perf().segments().get(0).factor(PerfFactor.LOCAL_CPU).m(), copy * 1e-12,
                "heap memory: the socket channel's copy-in");
    }

    /**
     * Zero-copy costs an acknowledgement more than the copy protocols on a lane with AM_ZCOPY, so the engine never
     * picks it by itself, on tcp/lo's figures or a fast lane's (1 us overhead and latency): multi-fragment eager
     * holds until the rendezvous takes over.
     */
    @Test
    void withoutAUserThresholdNoTableHasEagerZeroCopy() {
        IfaceAttributes fast = new IfaceAttributes(TCP.capabilities(), 8192, 65536, 64, 1e-6, 0, 0, 10e9, 1e-6, 0, 0,
                TCP_COPY_MAX);
        for (EndpointConfig c : List.of(TCP_LANE, new EndpointConfig("fast/0", fast))) {
            for (long key : new long[]{DIRECT, HEAP}) {
                ProtoTable t = table(c, key, ProtoCandidate.AUTO);
                String printed = t.format(c.amLane());
                assertTrue(t.entries().stream().noneMatch(e -> e.candidate().protocol().name().contains("zcopy")),
                        printed);
                ProtoTable.Entry rndv = entry(t, RndvProtocols.TAG_RNDV, printed);
                assertSame(EagerProtocols.MULTI_BCOPY, t.lookup(rndv.start() - 1).protocol(), printed);
            }
        }
    }

    @Test
    void aUserZcopyThresholdForcesZeroCopyFromItsSizeAndForbidsItBelow() {
        ProtoTable t = table(TCP_LANE, DIRECT, 4096);
        String printed = t.format("tcp/lo, NUCX_ZCOPY_THRESH=4k");
        assertSame(EagerProtocols.SHORT, t.lookup(4095).protocol(), printed);
        assertSame(EagerProtocols.SINGLE_ZCOPY, t.lookup(4096).protocol(), printed);
        assertSame(EagerProtocols.SINGLE_ZCOPY, t.lookup(65536 - EagerHeaders.ZCOPY_ONLY_LENGTH).protocol(), printed);
        assertSame(EagerProtocols.MULTI_ZCOPY, t.lookup(1 << 20).protocol(), printed);

        long high = 200_000;
        ProtoTable highTable = table(TCP_LANE, DIRECT, high);
        String highPrinted = highTable.format("tcp/lo, NUCX_ZCOPY_THRESH=200000");
        assertTrue(!highTable.lookup(high - 1).protocol().name().contains("zcopy"), "below it zero-copy drops out\n"
                + highPrinted);
        assertSame(EagerProtocols.MULTI_ZCOPY, highTable.lookup(high).protocol(), highPrinted);

        ProtoTable never = table(TCP_LANE, DIRECT, ProtoCandidate.DISABLED);
        assertTrue(never.entries().stream().noneMatch(e -> e.candidate().protocol().name().contains("zcopy")),
                never.format("tcp/lo, NUCX_ZCOPY_THRESH=inf"));

        // Forced zero-copy still yields to rendezvous (priority 60) where rendezvous is cheaper.
        ProtoTable forced = table(TCP_LANE, DIRECT, 0);
        assertSame(RndvProtocols.TAG_RNDV, forced.lookup(1L << 30).protocol(), forced.format("tcp/lo, thresh 0"));
        assertSame(EagerProtocols.SHORT, forced.lookup(TCP_COPY_MAX).protocol(), "no zero-copy offered there");
    }

    @Test
    void shmAndSelfTablesHaveNoZeroCopy() {
        for (EndpointConfig c : List.of(new EndpointConfig("shm/memory", SHM), new EndpointConfig("self/memory",
                SELF))) {
            ProtoTable t = table(c, DIRECT, 0);
            assertTrue(t.entries().stream().noneMatch(e -> e.candidate().protocol().name().contains("zcopy")),
                    t.format(c.amLane()));
        }
    }

    /** tag/rndv: the sender's copy is charged only where the transport copies its data fragments. */
    @Test
    void rendezvousChargesNoCopyInWhereItsFragmentsLeaveFromTheSendBuffer() {
        double copy = 1 / COPY_BW;
        double perFragment = (TCP.overheadSeconds() + EagerProtocols.MULTI_OVERHEAD)
                / (TCP.maxBcopy() - RndvHeaders.DATA_LENGTH);
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        assertEquals(d * perFragment, cpuSlope(TCP_LANE, DIRECT), 1e-24, "tcp, native memory: zero-copy fragments");
        assertEquals(d * (copy + perFragment), cpuSlope(TCP_LANE, HEAP), 1e-24,
                "tcp, heap: the socket channel copies them");
        double shmFragment = (SHM.overheadSeconds() + EagerProtocols.MULTI_OVERHEAD)
                / (SHM.maxBcopy() - RndvHeaders.DATA_LENGTH);
        assertEquals(d * (copy + shmFragment), cpuSlope(new EndpointConfig("shm/memory", SHM), DIRECT), 1e-24,
                "shm: the ring write");
    }

    private static double cpuSlope(EndpointConfig c, long key) {
        List<ProtoCandidate> out = new ArrayList<>();
        RndvProtocols.TAG_RNDV.probe(params(c, key, ProtoCandidate.AUTO), out::add);
        return out.get(0).perf().segments().get(0).factor(PerfFactor.LOCAL_CPU).m();
    }

    private static ProtoTable.Entry entry(ProtoTable t, Protocol p, String printed) {
        return t.entries().stream().filter(e -> e.candidate().protocol() == p).findFirst()
                .orElseThrow(() -> new AssertionError(p.name() + " not in\n" + printed));
    }

    private static void assertFunc(double c, double m, LinearFunc f, String what) {
        assertEquals(c, f.c(), Math.abs(c) * 1e-12, what + ": constant");
        assertEquals(m, f.m(), Math.abs(m) * 1e-12, what + ": slope");
    }
}
