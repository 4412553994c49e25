package io.nucx.protocol.select;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A protocol's cost over message sizes: non-overlapping segments {@code [start, end]} (inclusive), each holding one
 * linear function per {@link PerfFactor} (UCX's {@code ucp_proto_perf_t}). Built by adding functions over ranges;
 * flattened to one linear function per range for selection:
 * <ul>
 *   <li>single operation: the sum of every factor (time for one operation alone);</li>
 *   <li>multi-send: the largest non-latency factor (the bottleneck when many operations are in flight), which is
 *       piecewise linear, so a segment may split where two factors cross.</li>
 * </ul>
 */
public final class ProtoPerf {

    /** Sizes up to and including this are "infinite" ({@code inf} in tables). */
    public static final long MAX_SIZE = Long.MAX_VALUE;

    /** One segment. */
    public record Segment(long start, long end, LinearFunc[] factors) {
        public LinearFunc factor(PerfFactor f) {
            return factors[f.ordinal()];
        }

        public LinearFunc sum() {
            LinearFunc s = LinearFunc.ZERO;
            for (LinearFunc f : factors) {
                s = s.add(f);
            }
            return s;
        }
    }

    /** One range of a flattened perf. */
    public record Flat(long start, long end, LinearFunc func) {
    }

    private final List<Segment> segments = new ArrayList<>();

    /** Adds {@code func} to {@code factor} over {@code [start, end]}, splitting and creating segments as needed. */
    public ProtoPerf add(long start, long end, PerfFactor factor, LinearFunc func) {
        if (start > end) {
            throw new IllegalArgumentException("empty range [" + start + ", " + end + "]");
        }
        List<Segment> out = new ArrayList<>();
        long at = start;
        for (Segment s : segments) {
            if (s.end() < start || s.start() > end) {
                out.add(s);
                continue;
            }
            if (s.start() < start) {
                out.add(new Segment(s.start(), start - 1, s.factors()));
            }
            if (at < s.start()) {
                out.add(new Segment(at, s.start() - 1, with(empty(), factor, func)));
            }
            long lo = Math.max(s.start(), start);
            long hi = Math.min(s.end(), end);
            out.add(new Segment(lo, hi, with(s.factors(), factor, func)));
            if (s.end() > end) {
                out.add(new Segment(end + 1, s.end(), s.factors()));
            }
            at = hi == MAX_SIZE ? MAX_SIZE : hi + 1;
            if (hi == MAX_SIZE) {
                at = MAX_SIZE;
                break;
            }
        }
        boolean covered = !out.isEmpty() && out.stream().anyMatch(s -> s.end() >= end && s.start() <= end);
        if (!covered && at <= end) {
            out.add(new Segment(at, end, with(empty(), factor, func)));
        }
        out.sort((a, b) -> Long.compare(a.start(), b.start()));
        segments.clear();
        segments.addAll(out);
        return this;
    }

    private static LinearFunc[] empty() {
        LinearFunc[] f = new LinearFunc[PerfFactor.values().length];
        Arrays.fill(f, LinearFunc.ZERO);
        return f;
    }

    private static LinearFunc[] with(LinearFunc[] base, PerfFactor factor, LinearFunc func) {
        LinearFunc[] f = base.clone();
        f[factor.ordinal()] = f[factor.ordinal()].add(func);
        return f;
    }

    public List<Segment> segments() {
        return List.copyOf(segments);
    }

    /** Multiplies every factor by {@code k} (the rendezvous bias, for one). */
    public ProtoPerf scale(double k) {
        segments.replaceAll(s -> {
            LinearFunc[] f = s.factors().clone();
            for (int i = 0; i < f.length; i++) {
                f[i] = f[i].scale(k);
            }
            return new Segment(s.start(), s.end(), f);
        });
        return this;
    }

    /** Flattens to one function per range: the sum of the factors, or the bottleneck when {@code multiSend}. */
    public List<Flat> flatten(boolean multiSend) {
        List<Flat> out = new ArrayList<>();
        for (Segment s : segments) {
            if (!multiSend) {
                out.add(new Flat(s.start(), s.end(), s.sum()));
                continue;
            }
            List<LinearFunc> funcs = new ArrayList<>();
            for (PerfFactor f : PerfFactor.values()) {
                if (f != PerfFactor.LATENCY) {
                    funcs.add(s.factor(f));
                }
            }
            for (Flat piece : Envelope.of(funcs, s.start(), s.end(), false)) {
                out.add(piece);
            }
        }
        return out;
    }

    /**
     * What one {@code size}-byte message alone costs (the sum of the factors there), seconds; NaN outside its ranges.
     */
    public double singleCost(long size) {
        for (Segment s : segments) {
            if (s.start() <= size && size <= s.end()) {
                return s.sum().apply(size);
            }
        }
        return Double.NaN;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        for (Segment s : segments) {
            b.append('[').append(s.start()).append("..").append(s.end() == MAX_SIZE ? "inf" : s.end()).append("]");
            for (PerfFactor f : PerfFactor.values()) {
                LinearFunc fn = s.factor(f);
                if (fn.c() != 0 || fn.m() != 0) {
                    b.append(' ').append(f.label()).append('=').append(fn);
                }
            }
            b.append('\n');
        }
        return b.toString();
    }
}
