package io.nucx.protocol.select;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The selection engine against golden tables, brute force, and the rendezvous seed's closed form. */
class ProtoSelectorTest {

    private static final long TAG_CONTIG_HEAP = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0,
            SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.HEAP, SelectionKey.Locality.INTER_NODE);

    /** A protocol that adds the given candidates' perfs as they are. */
    private record Fixed(String name, List<ProtoPerf> perfs, long thresh, int priority) implements Protocol {
        @Override
        public String description() {
            return name;
        }

        @Override
        public void probe(ProbeParams params, Consumer<ProtoCandidate> out) {
            for (ProtoPerf p : perfs) {
                out.accept(new ProtoCandidate(this, thresh, priority, p, "mock"));
            }
        }
    }

    private static ProtoPerf single(long start, long end, LinearFunc f) {
        return new ProtoPerf().add(start, end, PerfFactor.LOCAL_CPU, f);
    }

    private static EndpointConfig mockLane(int maxShort, int maxBcopy) {
        return new EndpointConfig("mock/lane0", new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY),
                maxShort, maxBcopy, 64, 5e-6, 0, 0, 1e9, 1e-6, 0));
    }

    @Test
    void eagerProtocolsOnAMockLaneGiveTheGoldenTable() {
        ProtoTable t = ProtoSelector.select(EagerProtocols.ALL,
                new ProbeParams(mockLane(128, 1024), TAG_CONTIG_HEAP, ProtoCandidate.AUTO, ProtoCandidate.AUTO, 7000e6));
        List<ProtoTable.Entry> e = t.entries();
        assertEquals(3, e.size(), t.format("mock"));
        assertRange(e.get(0), 0, 120, EagerProtocols.SHORT);
        assertRange(e.get(1), 121, 1016, EagerProtocols.SINGLE_BCOPY);
        assertRange(e.get(2), 1017, ProtoPerf.MAX_SIZE, EagerProtocols.MULTI_BCOPY);
        String printed = t.format("mock/lane0");
        assertTrue(printed.contains("0..120") && printed.contains("1017..inf")
                && printed.contains("multi-frag eager copy-in copy-out"), printed);
    }

    @Test
    void bcopyThresholdForcesCopyProtocolsFromItsSizeOnAndForbidsThemBelow() {
        ProtoTable t = ProtoSelector.select(EagerProtocols.ALL,
                new ProbeParams(mockLane(128, 1024), TAG_CONTIG_HEAP, 64, ProtoCandidate.AUTO, 7000e6));
        List<ProtoTable.Entry> e = t.entries();
        assertRange(e.get(0), 0, 63, EagerProtocols.SHORT);
        assertRange(e.get(1), 64, 1016, EagerProtocols.SINGLE_BCOPY);
        assertRange(e.get(2), 1017, ProtoPerf.MAX_SIZE, EagerProtocols.MULTI_BCOPY);
    }

    @Test
    void aDisabledCandidateIsNeverChosenAndAGapHasNoProtocol() {
        Fixed off = new Fixed("off", List.of(single(0, 100, LinearFunc.constant(0))), ProtoCandidate.DISABLED, 0);
        Fixed on = new Fixed("on", List.of(single(50, 100, LinearFunc.constant(1))), ProtoCandidate.AUTO, 0);
        List<ProtoCandidate> c = new ArrayList<>();
        off.probe(null, c::add);
        on.probe(null, c::add);
        ProtoTable t = ProtoSelector.select(TAG_CONTIG_HEAP, c);
        assertNull(t.lookup(10), "only the disabled protocol covers 10, and a disabled protocol is never chosen");
        assertSame(on, t.lookup(60).protocol());
        assertNull(t.lookup(101));
    }

    @Test
    void unsupportedKeysAreDeclinedByTheEagerProbes() {
        long getKey = SelectionKey.pack(SelectionKey.Operation.GET, 0, SelectionKey.DatatypeClass.CONTIG,
                SelectionKey.MemoryType.HEAP, SelectionKey.Locality.INTER_NODE);
        ProtoTable t = ProtoSelector.select(EagerProtocols.ALL,
                new ProbeParams(mockLane(128, 1024), getKey, ProtoCandidate.AUTO, ProtoCandidate.AUTO, 7000e6));
        assertTrue(t.entries().isEmpty());
    }

    private static void assertRange(ProtoTable.Entry e, long start, long end, Protocol p) {
        assertEquals(start, e.start(), "start of " + p.name());
        assertEquals(end, e.end(), "end of " + p.name());
        assertSame(p, e.candidate().protocol());
    }

    /** The envelope equals the pointwise minimum at every size checked, with ties to the earlier candidate. */
    @Test
    void envelopeEqualsBruteForceMinimumOnRandomLinearFunctions() {
        SplittableRandom r = new SplittableRandom(20261122);
        for (int round = 0; round < 300; round++) {
            int n = 2 + r.nextInt(5);
            List<ProtoCandidate> cands = new ArrayList<>();
            List<long[]> ranges = new ArrayList<>();
            List<LinearFunc> funcs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                long start = i == 0 ? 0 : r.nextInt(3000);
                long end = i == 0 ? ProtoPerf.MAX_SIZE : start + r.nextInt(5000);
                // small integers make exact ties (equal functions, crossings at integers) common
                LinearFunc f = r.nextInt(4) == 0 && i > 0 ? funcs.get(r.nextInt(i))
                        : new LinearFunc(r.nextInt(2000), r.nextInt(8));
                funcs.add(f);
                ranges.add(new long[] {start, end});
                Fixed p = new Fixed("p" + i, List.of(single(start, end, f)), ProtoCandidate.AUTO, 0);
                p.probe(null, cands::add);
            }
            ProtoTable t = ProtoSelector.select(TAG_CONTIG_HEAP, cands);
            for (long size = 0; size <= 9000; size++) {
                check(t, cands, ranges, funcs, size, round);
            }
            for (int k = 0; k < 200; k++) {
                check(t, cands, ranges, funcs, r.nextLong(0, Long.MAX_VALUE / 4), round);
            }
        }
    }

    private static void check(ProtoTable t, List<ProtoCandidate> cands, List<long[]> ranges, List<LinearFunc> funcs,
                              long size, int round) {
        int best = -1;
        for (int i = 0; i < cands.size(); i++) {
            if (ranges.get(i)[0] <= size && size <= ranges.get(i)[1]) {
                if (best < 0 || funcs.get(i).apply(size + 0.5) < funcs.get(best).apply(size + 0.5)) {
                    best = i;
                }
            }
        }
        ProtoCandidate chosen = t.lookup(size);
        int chosenIndex = cands.indexOf(chosen);
        if (chosenIndex != best) {
            // equal value at the decision point is an acceptable tie only if the earlier one won
            double a = funcs.get(chosenIndex).apply(size + 0.5);
            double b = funcs.get(best).apply(size + 0.5);
            throw new AssertionError("round " + round + " size " + size + ": chose p" + chosenIndex + " (" + a
                    + ") over p" + best + " (" + b + ")\n" + t.format("brute"));
        }
    }

    /**
     * The seed's closed form ("Rendezvous Protocol threshold for multilane mode"):
     * {@code size = (d(rcost(1+rrc) + 4rlat + 3rover) - ecost - eover) / (egro + 1/ebw - d(rgro(1+rrc) + 1/rbw))},
     * with bandwidth summed over lanes and registration summed over memory domains. The engine, given eager and
     * rendezvous as linear functions, must switch at that size.
     */
    @ParameterizedTest(name = "lanes {0}x{1}B/s, rrc {2}, reg {3}+{4}/B")
    @CsvSource({
            // lanes, lane bw, rrc, reg cost, reg growth, latency, overhead, eager bw
            "1, 12.5e9, 1, 16e-6, 0.06e-9, 0.6e-6, 75e-9, 6e9",
            "2, 12.5e9, 1, 16e-6, 0.01e-9, 0.6e-6, 75e-9, 6e9",
            "4, 3e9, 0, 1e-6, 0.01e-9, 5e-6, 2e-6, 2e9",
            "2, 11e9, 0, 0, 0, 0.08e-6, 10e-9, 5e9",
            "3, 1.1e9, 1, 50e-9, 0, 10e-6, 50e-6, 1e9"})
    void rendezvousCrossoverMatchesTheSeedsClosedForm(int lanes, double laneBw, int rrc, double regCost,
                                                     double regGrowth, double lat, double ovh, double eagerBw) {
        double d = 0.99;
        int mds = lanes; // one memory domain per lane
        double rbw = lanes * laneBw;
        double rcost = mds * regCost;
        double rgro = mds * regGrowth;
        double ecost = regCost;
        double egro = regGrowth;
        LinearFunc eager = new LinearFunc(ecost + ovh, egro + 1 / eagerBw);
        LinearFunc rndv = new LinearFunc(d * (rcost * (1 + rrc) + 4 * lat + 3 * ovh),
                d * (rgro * (1 + rrc) + 1 / rbw));
        double closed = (d * (rcost * (1 + rrc) + 4 * lat + 3 * ovh) - ecost - ovh)
                / (egro + 1 / eagerBw - d * (rgro * (1 + rrc) + 1 / rbw));
        assertTrue(closed > 0, "parameter set must have a crossover");
        List<ProtoCandidate> cands = new ArrayList<>();
        Fixed e = new Fixed("eager/zcopy", List.of(single(0, ProtoPerf.MAX_SIZE, eager)), ProtoCandidate.AUTO, 30);
        Fixed r = new Fixed("rndv", List.of(single(0, ProtoPerf.MAX_SIZE, rndv)), ProtoCandidate.AUTO, 60);
        e.probe(null, cands::add);
        r.probe(null, cands::add);
        ProtoTable t = ProtoSelector.select(TAG_CONTIG_HEAP, cands);
        assertEquals(2, t.entries().size(), t.format("seed"));
        assertSame(e, t.entries().get(0).candidate().protocol());
        long threshold = t.entries().get(1).start();
        // Sizes are chosen at size + 0.5, so the first rendezvous size is the first integer past closed - 0.5.
        assertEquals((long) Math.floor(closed - 0.5) + 1, threshold, "closed form " + closed);
    }

    @Test
    void multiSendSelectsOnTheBottleneckFactor() {
        // A: cpu 1 + wire 3 per byte (sum 4, bottleneck 3); B: 2.2 + 2.2 (sum 4.4, bottleneck 2.2).
        // Alone (sum) A is cheaper; with many in flight (bottleneck) B is.
        ProtoPerf a = new ProtoPerf().add(0, ProtoPerf.MAX_SIZE, PerfFactor.LOCAL_CPU, LinearFunc.slope(1))
                .add(0, ProtoPerf.MAX_SIZE, PerfFactor.LOCAL_TL, LinearFunc.slope(3));
        ProtoPerf b = new ProtoPerf().add(0, ProtoPerf.MAX_SIZE, PerfFactor.LOCAL_CPU, LinearFunc.slope(2.2))
                .add(0, ProtoPerf.MAX_SIZE, PerfFactor.LOCAL_TL, LinearFunc.slope(2.2));
        List<ProtoCandidate> cands = new ArrayList<>();
        new Fixed("A", List.of(a), ProtoCandidate.AUTO, 0).probe(null, cands::add);
        new Fixed("B", List.of(b), ProtoCandidate.AUTO, 0).probe(null, cands::add);
        long multi = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, SelectionKey.FLAG_MULTI_SEND,
                SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.HEAP, SelectionKey.Locality.INTER_NODE);
        assertEquals("A", ProtoSelector.select(TAG_CONTIG_HEAP, cands).lookup(1000).protocol().name());
        assertEquals("B", ProtoSelector.select(multi, cands).lookup(1000).protocol().name());
        assertTrue(SelectionKey.describe(multi).contains("multi"));
    }

    @Test
    void addingOverlappingRangesSplitsSegmentsAndSumsFactors() {
        ProtoPerf p = new ProtoPerf().add(0, 99, PerfFactor.LOCAL_CPU, LinearFunc.constant(1))
                .add(50, 199, PerfFactor.LOCAL_CPU, LinearFunc.constant(2))
                .add(150, 149 + 100, PerfFactor.LATENCY, LinearFunc.constant(4));
        List<ProtoPerf.Flat> flat = p.flatten(false);
        assertEquals(5, flat.size(), p.toString());
        assertEquals(List.of(0L, 50L, 100L, 150L, 200L), flat.stream().map(ProtoPerf.Flat::start).toList());
        assertEquals(List.of(49L, 99L, 149L, 199L, 249L), flat.stream().map(ProtoPerf.Flat::end).toList());
        assertEquals(List.of(1.0, 3.0, 2.0, 6.0, 4.0), flat.stream().map(f -> f.func().c()).toList());
    }

    @Test
    void keyPacksAndUnpacks() {
        long k = SelectionKey.pack(SelectionKey.Operation.RNDV_RECV, SelectionKey.FLAG_FAST_COMPLETION,
                SelectionKey.DatatypeClass.IOV, SelectionKey.MemoryType.NATIVE, SelectionKey.Locality.INTRA_NODE);
        assertEquals(SelectionKey.Operation.RNDV_RECV, SelectionKey.operation(k));
        assertEquals(SelectionKey.FLAG_FAST_COMPLETION, SelectionKey.flags(k));
        assertEquals(SelectionKey.DatatypeClass.IOV, SelectionKey.datatype(k));
        assertEquals(SelectionKey.MemoryType.NATIVE, SelectionKey.memoryType(k));
        assertEquals(SelectionKey.Locality.INTRA_NODE, SelectionKey.locality(k));
    }
}
