package io.nucx.protocol.select;

import java.util.ArrayList;
import java.util.List;

/**
 * The lower (or upper) envelope of linear functions over an integer range, by walking their intersections
 * (UCX's {@code ucp_proto_perf_envelope_make}): at each point take the best function at {@code x + 0.5} (ties go to the
 * earlier function), then end its piece at the nearest intersection beyond that point where another function becomes
 * better, and go on from there.
 */
final class Envelope {

    private Envelope() {
    }

    /** The envelope pieces as (start, end, function); {@code lower} picks minima, otherwise maxima. */
    static List<ProtoPerf.Flat> of(List<LinearFunc> funcs, long start, long end, boolean lower) {
        List<ProtoPerf.Flat> out = new ArrayList<>();
        for (long[] w : winners(funcs, start, end, lower)) {
            out.add(new ProtoPerf.Flat(w[1], w[2], funcs.get((int) w[0])));
        }
        return out;
    }

    /** Lower-envelope pieces as (index of the winning function, start, end), adjacent wins merged. */
    static List<long[]> winners(List<LinearFunc> funcs, long start, long end, boolean lower) {
        List<long[]> out = new ArrayList<>();
        long x = start;
        while (true) {
            int best = best(funcs, x, lower);
            long pieceEnd = pieceEnd(funcs, best, x, end, lower);
            if (!out.isEmpty() && out.get(out.size() - 1)[0] == best) {
                out.get(out.size() - 1)[2] = pieceEnd;
            } else {
                out.add(new long[] {best, x, pieceEnd});
            }
            if (pieceEnd >= end) {
                return out;
            }
            x = pieceEnd + 1;
        }
    }

    private static int best(List<LinearFunc> funcs, long x, boolean lower) {
        double at = x + 0.5;
        int best = 0;
        double bestValue = funcs.get(0).apply(at);
        for (int i = 1; i < funcs.size(); i++) {
            double v = funcs.get(i).apply(at);
            if (lower ? v < bestValue : v > bestValue) { // strictly better: the earlier one wins ties
                best = i;
                bestValue = v;
            }
        }
        return best;
    }

    /** Last integer size at which {@code best} stays the choice, no further than {@code end}. */
    private static long pieceEnd(List<LinearFunc> funcs, int best, long x, long end, boolean lower) {
        LinearFunc w = funcs.get(best);
        long last = end;
        for (int i = 0; i < funcs.size(); i++) {
            if (i == best) {
                continue;
            }
            LinearFunc o = funcs.get(i);
            // o overtakes w only if its slope is better in the direction of growth
            boolean overtakes = lower ? o.m() < w.m() : o.m() > w.m();
            if (!overtakes) {
                continue;
            }
            double cross = LinearFunc.intersect(w, o);
            if (Double.isNaN(cross) || cross < x + 0.5 || cross - 0.5 >= (double) end) {
                continue;
            }
            // The choice at size s is made at s + 0.5: w holds while s + 0.5 <= cross. At s + 0.5 == cross the two
            // are equal and the earlier function wins the tie.
            double edge = cross - 0.5;
            long candidate = (long) Math.floor(edge);
            if (candidate == edge && i < best) {
                candidate--;
            }
            last = Math.min(last, Math.max(candidate, x));
        }
        return last;
    }
}
