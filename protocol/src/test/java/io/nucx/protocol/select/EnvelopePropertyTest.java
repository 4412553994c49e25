package io.nucx.protocol.select;

import io.nucx.transport.testing.RandomCases;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Properties of the selection envelope ({@link Envelope}) and of the selection sweep ({@link ProtoSelector}) over
 * random linear costs ({@link RandomCases}). The choice at size {@code s} is made at {@code s + 0.5} (the code's and
 * UCX's rule: a piece ends at the last size whose half-step is still on the winner's side of a crossing), so the costs
 * are compared there.
 *
 * <p>Two kinds of case: <em>exact</em> costs (integer overheads below 2^30, integer slopes below 64, sizes below
 * 2^42), whose every value and crossing is exact in a double, so a tie is a real tie and the tie rule (the earlier
 * function wins) is checked exactly; and <em>realistic</em> costs (overheads of 10 ns to 10 µs, bandwidths of 10 MB/s
 * to 100 GB/s, sizes up to {@link ProtoPerf#MAX_SIZE}), where a crossing computed in floating point may land one size
 * off, so the winner's cost may exceed the minimum by rounding only (relative 1e-12).
 */
class EnvelopePropertyTest {

    private static final int CASES = 400;
    /** Sizes of exact cases stay below this: c + m * (s + 0.5) then needs at most 50 bits. */
    private static final long EXACT_SIZES = 1L << 42;
    private static final double ROUNDING = 1e-12;

    // ------------------------------------------------------------------------------------------------ the envelope

    /** Functions over [start, end], lower or upper envelope. */
    record Funcs(List<LinearFunc> funcs, long start, long end, boolean lower, boolean exact, long sampleSeed) {
        static Funcs draw(SplittableRandom r) {
            boolean exact = r.nextBoolean();
            int n = 1 + r.nextInt(8);
            List<LinearFunc> funcs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                funcs.add(i > 0 && r.nextInt(5) == 0 ? twin(r, funcs, exact) : func(r, exact));
            }
            long start = r.nextInt(3) == 0 ? 0 : r.nextLong(exact ? 1 << 20 : EXACT_SIZES);
            long end;
            if (!exact && r.nextInt(3) == 0) {
                end = ProtoPerf.MAX_SIZE;
            } else {
                long span = (long) Math.pow(2, r.nextDouble() * (exact ? 41 : 62));
                end = exact ? Math.min(EXACT_SIZES - 1, start + span) : start + Math.min(span, Long.MAX_VALUE - start);
            }
            return new Funcs(funcs, start, end, r.nextInt(4) != 0, exact, r.nextLong());
        }

        @Override
        public String toString() {
            return (exact ? "exact " : "realistic ") + (lower ? "lower" : "upper") + " envelope over [" + start + ", "
                    + end + "] of " + describe(funcs);
        }
    }

    static String describe(List<LinearFunc> funcs) {
        return funcs.stream().map(f -> "(" + f.c() + " + " + f.m() + "*x)").collect(Collectors.joining(", ", "[",
                "]"));
    }

    /** One cost: an overhead (sometimes none) and a bandwidth (sometimes infinite: no per-byte cost). */
    static LinearFunc func(SplittableRandom r, boolean exact) {
        if (exact) {
            long c = r.nextInt(4) == 0 ? 0 : r.nextLong(1L << 30);
            return new LinearFunc(c, r.nextInt(8) == 0 ? 0 : 1 + r.nextInt(63));
        }
        double overhead = r.nextInt(5) == 0 ? 0 : 1e-8 * Math.pow(10, r.nextDouble() * 3);
        double bandwidth = 1e7 * Math.pow(10, r.nextDouble() * 4);
        return new LinearFunc(overhead, r.nextInt(8) == 0 ? 0 : 1 / bandwidth);
    }

    /** An earlier function again, or one parallel to it: ties everywhere, or never. */
    static LinearFunc twin(SplittableRandom r, List<LinearFunc> earlier, boolean exact) {
        LinearFunc f = earlier.get(r.nextInt(earlier.size()));
        return r.nextBoolean() ? f : new LinearFunc(func(r, exact).c(), f.m());
    }

    /** The envelope's pieces tile [start, end]; at every size the piece's function is the best there. */
    @Test
    void theEnvelopeIsTheBestFunctionAtEverySizeInOrderedPiecesThatCoverTheRange() {
        RandomCases.forAll("envelope", CASES, Funcs::draw, c -> {
            List<long[]> pieces = Envelope.winners(c.funcs(), c.start(), c.end(), c.lower());
            String shown = pieces.stream().map(p -> "#" + p[0] + "[" + p[1] + ", " + p[2] + "]")
                    .collect(Collectors.joining(" "));
            assertEquals(c.start(), pieces.get(0)[1], shown);
            assertEquals(c.end(), pieces.get(pieces.size() - 1)[2], shown);
            boolean[] seen = new boolean[c.funcs().size()];
            for (int i = 0; i < pieces.size(); i++) {
                long[] p = pieces.get(i);
                assertTrue(p[1] <= p[2], () -> "empty piece in " + shown);
                if (i > 0) {
                    assertEquals(pieces.get(i - 1)[2] + 1, p[1], () -> "pieces not contiguous: " + shown);
                    assertTrue(pieces.get(i - 1)[0] != p[0], () -> "adjacent pieces of one function: " + shown);
                }
                // Where a line is the best is an interval (and with ties to the earlier one, still is): one piece.
                assertTrue(!seen[(int) p[0]], () -> "function #" + p[0] + " wins in two places: " + shown);
                seen[(int) p[0]] = true;
            }
            TreeSet<Long> sizes = sizes(c.funcs(), c.start(), c.end(), new SplittableRandom(c.sampleSeed()));
            for (long[] p : pieces) {
                near(sizes, p[1], c.start(), c.end());
                near(sizes, p[2], c.start(), c.end());
            }
            for (long s : sizes) {
                long[] p = pieces.stream().filter(q -> q[1] <= s && s <= q[2]).findFirst().orElseThrow();
                assertBest(c.funcs(), s, (int) p[0], c.lower(), c.exact() && s < EXACT_SIZES, shown);
            }
        });
    }

    /**
     * Sizes worth checking in [start, end]: both ends, each side of every crossing of two functions, and some at
     * random.
     */
    static TreeSet<Long> sizes(List<LinearFunc> funcs, long start, long end, SplittableRandom r) {
        TreeSet<Long> sizes = new TreeSet<>();
        near(sizes, start, start, end);
        near(sizes, end, start, end);
        for (int i = 0; i < funcs.size(); i++) {
            for (int j = i + 1; j < funcs.size(); j++) {
                double cross = LinearFunc.intersect(funcs.get(i), funcs.get(j));
                if (!Double.isNaN(cross) && cross - 0.5 >= start && cross - 0.5 <= end) {
                    near(sizes, (long) Math.floor(cross - 0.5), start, end);
                }
            }
        }
        for (int i = 0; i < 32; i++) {
            sizes.add(end - start == Long.MAX_VALUE ? r.nextLong(Long.MAX_VALUE) : start + r.nextLong(end - start + 1));
        }
        return sizes;
    }

    /** {@code x - 1 .. x + 2}, as far as they are in [start, end]. */
    static void near(TreeSet<Long> sizes, long x, long start, long end) {
        for (long d = -1; d <= 2; d++) {
            long s = x + d;
            if ((d < 0 ? s < x : s >= x) && s >= start && s <= end) { // and no overflow
                sizes.add(s);
            }
        }
    }

    /**
     * Function {@code chosen} is the best of {@code funcs} at {@code size + 0.5}: exactly, and the earliest of equals,
     * when {@code exact}; within rounding otherwise.
     */
    static void assertBest(List<LinearFunc> funcs, long size, int chosen, boolean lower, boolean exact, String what) {
        double at = size + 0.5;
        int best = 0;
        for (int i = 1; i < funcs.size(); i++) {
            double v = funcs.get(i).apply(at);
            double b = funcs.get(best).apply(at);
            if (lower ? v < b : v > b) {
                best = i;
            }
        }
        double bestValue = funcs.get(best).apply(at);
        double chosenValue = funcs.get(chosen).apply(at);
        int b = best;
        if (exact) {
            assertEquals(best, chosen, () -> "at size " + size + " #" + chosen + " costs " + chosenValue + ", #" + b
                    + " (the earliest best) " + bestValue + ": " + what);
        } else {
            double slack = ROUNDING * Math.abs(bestValue);
            assertTrue(lower ? chosenValue <= bestValue + slack : chosenValue >= bestValue - slack,
                    () -> "at size " + size + " #" + chosen + " costs " + chosenValue + ", #" + b + " " + bestValue
                            + ": " + what);
        }
    }

    // ------------------------------------------------------------------------------------------------ the sweep

    /** A protocol that is only a name: the candidates carry everything selection reads. */
    private record Named(String name) implements Protocol {
        @Override
        public String description() {
            return name;
        }

        @Override
        public void probe(ProbeParams params, Consumer<ProtoCandidate> out) {
            throw new UnsupportedOperationException("candidates are made by the test");
        }
    }

    /** Candidates in registration order, for a single or a multi send. */
    record Candidates(List<ProtoCandidate> list, boolean multi, boolean exact, long sampleSeed) {
        static Candidates draw(SplittableRandom r) {
            boolean exact = r.nextBoolean();
            boolean thresholds = r.nextInt(3) == 0;
            int n = 1 + r.nextInt(5);
            List<ProtoCandidate> list = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ProtoPerf perf = new ProtoPerf();
                int adds = 1 + r.nextInt(4);
                for (int k = 0; k < adds; k++) {
                    long start = r.nextInt(3) == 0 ? 0 : r.nextLong(EXACT_SIZES / 2);
                    long end = r.nextInt(3) == 0 ? ProtoPerf.MAX_SIZE
                            : Math.min(EXACT_SIZES - 1, start + (long) Math.pow(2, r.nextDouble() * 41));
                    perf.add(start, end, PerfFactor.values()[r.nextInt(PerfFactor.values().length)], func(r, exact));
                }
                long thresh = ProtoCandidate.AUTO;
                if (thresholds) {
                    int t = r.nextInt(5);
                    thresh = t == 0 ? ProtoCandidate.DISABLED : t == 1 ? r.nextLong(EXACT_SIZES / 2)
                            : ProtoCandidate.AUTO;
                }
                list.add(new ProtoCandidate(new Named("p" + i), thresh, r.nextInt(3) * 20, perf, "lane"));
            }
            return new Candidates(list, r.nextBoolean(), exact, r.nextLong());
        }

        long key() {
            return SelectionKey.pack(SelectionKey.Operation.TAG_SEND, multi ? SelectionKey.FLAG_MULTI_SEND : 0,
                    SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.HEAP,
                    SelectionKey.Locality.INTER_NODE);
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder(exact ? "exact" : "realistic").append(multi ? " multi-send" : "")
                    .append(" candidates:");
            for (ProtoCandidate c : list) {
                b.append("\n    ").append(c.protocol().name()).append(" thresh ")
                        .append(c.cfgThresh() == ProtoCandidate.AUTO ? "auto" : c.cfgThresh() == ProtoCandidate.DISABLED
                                ? "disabled" : Long.toString(c.cfgThresh()))
                        .append(" priority ").append(c.cfgPriority()).append(": ")
                        .append(c.perf().toString().replace("\n", "; "));
            }
            return b.toString();
        }
    }

    /**
     * The table's entries are ordered and apart, adjacent entries of one candidate are merged, and at every size the
     * table's candidate is the one the selection rules name: among the enabled candidates whose cost covers the size,
     * those below their threshold drop out and those whose priority is below the highest priority of a forced one
     * (at or above its threshold) too, unless that leaves none; of what remains the cheapest at {@code size + 0.5},
     * the earliest registered of equals; none if no enabled candidate covers the size.
     */
    @Test
    void theSelectorChoosesTheCheapestAllowedCandidateAtEverySize() {
        RandomCases.forAll("selection", CASES, Candidates::draw, c -> {
            ProtoTable table = ProtoSelector.select(c.key(), c.list());
            List<ProtoTable.Entry> entries = table.entries();
            String shown = entries.stream().map(e -> e.candidate().protocol().name() + "[" + e.start() + ", "
                    + e.end() + "]").collect(Collectors.joining(" "));
            for (int i = 1; i < entries.size(); i++) {
                ProtoTable.Entry a = entries.get(i - 1);
                ProtoTable.Entry e = entries.get(i);
                assertTrue(a.start() <= a.end() && a.end() < e.start(), () -> "entries out of order: " + shown);
                assertTrue(a.end() + 1 != e.start() || a.candidate() != e.candidate(),
                        () -> "adjacent entries of one candidate: " + shown);
            }
            List<List<ProtoPerf.Flat>> flats = new ArrayList<>();
            List<LinearFunc> all = new ArrayList<>();
            TreeSet<Long> sizes = new TreeSet<>();
            for (ProtoCandidate p : c.list()) {
                List<ProtoPerf.Flat> flat = p.perf().flatten(c.multi());
                flats.add(flat);
                for (ProtoPerf.Flat f : flat) {
                    all.add(f.func());
                    near(sizes, f.start(), 0, ProtoPerf.MAX_SIZE);
                    near(sizes, f.end(), 0, ProtoPerf.MAX_SIZE);
                }
                if (p.cfgThresh() != ProtoCandidate.AUTO && p.cfgThresh() != ProtoCandidate.DISABLED) {
                    near(sizes, p.cfgThresh(), 0, ProtoPerf.MAX_SIZE);
                }
            }
            for (ProtoTable.Entry e : entries) {
                near(sizes, e.start(), 0, ProtoPerf.MAX_SIZE);
                near(sizes, e.end(), 0, ProtoPerf.MAX_SIZE);
            }
            sizes.addAll(sizes(all, 0, ProtoPerf.MAX_SIZE, new SplittableRandom(c.sampleSeed())));
            for (long s : sizes) {
                checkFlattened(c, flats, s);
                checkChoice(c, table, flats, s, shown);
            }
        });
    }

    /** A flattened perf covers what the segments cover, with their sum, or for a multi send the largest factor. */
    private static void checkFlattened(Candidates c, List<List<ProtoPerf.Flat>> flats, long s) {
        boolean exact = c.exact() && s < EXACT_SIZES;
        for (int i = 0; i < c.list().size(); i++) {
            ProtoPerf.Segment seg = c.list().get(i).perf().segments().stream()
                    .filter(g -> g.start() <= s && s <= g.end()).findFirst().orElse(null);
            ProtoPerf.Flat flat = covering(flats.get(i), s);
            if (seg == null) {
                assertNull(flat, "a flat where no segment is, at " + s);
                continue;
            }
            assertNotNull(flat, "no flat where a segment is, at " + s);
            double at = s + 0.5;
            double expected = c.multi() ? Double.NEGATIVE_INFINITY : 0;
            for (PerfFactor f : PerfFactor.values()) {
                double v = seg.factor(f).apply(at);
                if (!c.multi()) {
                    expected += v;
                } else if (f != PerfFactor.LATENCY) {
                    expected = Math.max(expected, v);
                }
            }
            double got = flat.func().apply(at);
            if (exact) {
                assertEquals(expected, got, "flattened cost at " + s);
            } else {
                assertEquals(expected, got, 1e-9 * Math.abs(expected), "flattened cost at " + s);
            }
        }
    }

    private static void checkChoice(Candidates c, ProtoTable table, List<List<ProtoPerf.Flat>> flats, long s,
                                    String shown) {
        List<Integer> active = new ArrayList<>();
        for (int i = 0; i < c.list().size(); i++) {
            if (c.list().get(i).cfgThresh() != ProtoCandidate.DISABLED && covering(flats.get(i), s) != null) {
                active.add(i);
            }
        }
        ProtoCandidate got = table.lookup(s);
        if (active.isEmpty()) {
            assertNull(got, () -> "size " + s + " has no enabled candidate but the table gives one: " + shown);
            return;
        }
        assertNotNull(got, () -> "size " + s + " has no entry: " + shown);
        int forced = Integer.MIN_VALUE;
        for (int i : active) {
            long t = c.list().get(i).cfgThresh();
            if (t != ProtoCandidate.AUTO && s >= t) {
                forced = Math.max(forced, c.list().get(i).cfgPriority());
            }
        }
        List<Integer> keep = new ArrayList<>();
        for (int i : active) {
            long t = c.list().get(i).cfgThresh();
            if (!(t != ProtoCandidate.AUTO && s < t) && c.list().get(i).cfgPriority() >= forced) {
                keep.add(i);
            }
        }
        if (keep.isEmpty()) {
            keep = active;
        }
        int chosen = -1;
        for (int k = 0; k < keep.size(); k++) {
            if (c.list().get(keep.get(k)) == got) {
                chosen = k;
            }
        }
        if (chosen < 0) {
            int g = c.list().indexOf(got);
            fail("size " + s + ": table gives p" + g + ", not among the allowed " + keep + ": " + shown);
        }
        List<LinearFunc> funcs = new ArrayList<>();
        for (int i : keep) {
            funcs.add(covering(flats.get(i), s).func());
        }
        List<Integer> allowed = keep;
        assertBest(funcs, s, chosen, true, c.exact() && s < EXACT_SIZES, "allowed " + allowed + ", table " + shown);
        assertSame(got, table.lookup(s));
    }

    private static ProtoPerf.Flat covering(List<ProtoPerf.Flat> flat, long s) {
        for (ProtoPerf.Flat f : flat) {
            if (f.start() <= s && s <= f.end()) {
                return f;
            }
        }
        return null;
    }
}
