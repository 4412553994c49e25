package io.nucx.examples.perf;

import io.nucx.protocol.select.PerfProfile;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.RndvProtocols;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The cost model run backwards: from what calibration measured with protocols forced one at a time, the lane figures
 * that make the model ({@link EagerProtocols}, {@link RndvProtocols}) predict those measurements. All times are
 * seconds.
 * <ul>
 *   <li><b>overhead</b> of an AM lane: the time per message of a stream of 8-byte eager short messages (a window of
 *       sends in flight): what the busier side spends per message, protocol stack included; at most half the
 *       one-way time of a ping-pong (a stream that is not faster than ping-pong is paced by something else, and the
 *       model must still add up to the one-way time);</li>
 *   <li><b>latency</b>: the one-way time of an 8-byte eager short ping-pong less what the model charges besides
 *       latency there (a send and a receive overhead, the short protocol's knob, the bytes' copies and wire);</li>
 *   <li><b>bandwidth</b>: from the slope of one-fragment copy sends ({@code egr/single/bcopy}) between two sizes: the
 *       model charges each byte two copies and the wire, so the wire's share is the slope less two copies;</li>
 *   <li>an RMA lane's <b>overhead</b> (one call, per segment) and <b>bandwidth</b>: from {@code rndv/get/zcopy} at two
 *       sizes in cache: the intercept less the control messages the AM lane carries (their overheads and latencies,
 *       the rts knob, the send buffer's registration), and the slope less the registration growth and the
 *       per-segment calls; both divided by the rendezvous bias first. Its <b>registration cost</b> is measured
 *       directly;</li>
 *   <li>its <b>bulk rate</b> (a read that outgrew the caches): the same from two larger sizes, from where their line
 *       meets the first; none where those reads are no slower per byte.</li>
 *   <li>an AM lane's <b>eager surcharge</b>: what its larger one-fragment copy send took beyond the model's price
 *       (fitted at 8 B and from a slope), charged to eager from the smaller send's size on;</li>
 *   <li>an AM lane's <b>rendezvous surcharge</b>: forced {@code tag/rndv} against forced {@code egr/multi/bcopy} at
 *       four sizes ({@link Calibration#RNDV_SIZES}); what the rendezvous took beyond eager less what the model
 *       (fitted without it) says it takes beyond: a line through the two sizes where the rendezvous begins to win
 *       for good (else the first and the last), charged to the rendezvous where above 0 and to eager's fragments
 *       where below;</li>
 *   <li>an RMA lane's <b>read surcharge</b>: forced {@code rndv/get/zcopy} against its AM lane's forced
 *       {@code egr/multi/bcopy} at the same four sizes, fitted as the rendezvous surcharge is, against what the
 *       profile with every other figure prices them at; charged to the read where above 0. The read's own figures
 *       come from 64 KiB and 512 KiB, where it meets eager short, and miss how it falls behind eager's copies beyond
 *       (BENCHMARKS.md, "cma's read priced against eager where the two meet").</li>
 * </ul>
 * A figure that comes out negative (the machine was faster than the model's other terms say: e.g. copies overlapping
 * the transfer) is clamped, and the fit says so in a note kept in the profile's comments.
 */
public final class ProfileFit {

    /** Bandwidth written when the measured slope leaves nothing (or less) for the wire: effectively free. */
    static final double MAX_BANDWIDTH = 1e12;

    /** How much slower per byte reads beyond the caches must be than those in cache for a bulk rate of their own. */
    static final double BULK_MARGIN = 1.05;

    /**
     * An AM lane's runs.
     *
     * @param stream one 8-byte message's time in a stream (tag_bw), s
     * @param ping   one-way time of an 8-byte ping-pong (tag_lat), s
     * @param size1  a one-fragment copy send's size, and {@code time1} its one-way time
     * @param size2  a larger one (within one fragment), and {@code time2}
     */
    public record AmRuns(String lane, double stream, double ping, long size1, double time1, long size2, double time2) {
    }

    /**
     * An RMA lane's runs: {@code rndv/get/zcopy} ping-pongs over the AM lane {@code amLane} at {@code sizes}
     * (ascending) with one-way {@code times}, and the registration cost measured on the lane itself. The first two
     * sizes are in cache and give the lane's overhead and bandwidth; a third and a fourth, if given, are beyond the
     * caches and give its bulk rate.
     */
    public record RmaRuns(String lane, String amLane, long segment, double rmaLatency, long[] sizes, double[] times,
                          double regCost, double regGrowth) {
        public RmaRuns {
            sizes = sizes.clone();
            times = times.clone();
            if ((sizes.length != 2 && sizes.length != 4) || times.length != sizes.length) {
                throw new IllegalArgumentException("an RMA lane is fitted from 2 or 4 sizes with a time each, got "
                        + sizes.length + " sizes and " + times.length + " times");
            }
            for (int i = 1; i < sizes.length; i++) {
                if (sizes[i] <= sizes[i - 1]) {
                    throw new IllegalArgumentException("the sizes must ascend: " + Arrays.toString(sizes));
                }
            }
        }
    }

    /**
     * An AM lane's rendezvous against its eager fragments: forced {@code tag/rndv} and {@code egr/multi/bcopy}
     * ping-pongs at two or more {@code sizes} (ascending), their one-way {@code rndv} and {@code eager} times, and what
     * the model (fitted without a surcharge) prices them at, {@code rndvModel} (scaled by the rendezvous factor, as
     * the tables hold it) and {@code eagerModel}.
     */
    public record RndvRuns(String lane, long[] sizes, double[] rndv, double[] eager, double[] rndvModel,
                           double[] eagerModel) {
        public RndvRuns {
            sizes = sizes.clone();
            rndv = rndv.clone();
            eager = eager.clone();
            rndvModel = rndvModel.clone();
            eagerModel = eagerModel.clone();
            int n = sizes.length;
            boolean ascending = true;
            for (int i = 1; i < n; i++) {
                ascending &= sizes[i] > sizes[i - 1];
            }
            if (n < 2 || !ascending || rndv.length != n || eager.length != n || rndvModel.length != n
                    || eagerModel.length != n) {
                throw new IllegalArgumentException("a rendezvous surcharge is fitted from two or more ascending sizes "
                        + "with a time and a model cost of each protocol at each, got sizes "
                        + Arrays.toString(sizes));
            }
        }
    }

    /**
     * An AM lane's one-fragment copy sends against the model: {@code egr/single/bcopy} at {@code size} (as
     * {@link AmRuns}'s {@code size2}), its one-way {@code time}, and what the model (fitted without an eager surcharge)
     * prices it at, {@code model}; {@code from} is the smaller of {@link AmRuns}'s two sizes. The lane's figures come
     * from an 8-byte message and from the slope between the two sends, so the model is off from the sends by the same
     * time at both ({@link io.nucx.protocol.EagerSurcharge}).
     */
    public record EagerRuns(String lane, long from, long size, double time, double model) {
    }

    /**
     * What {@code e}'s send took beyond its price, charged to every eager protocol of the lane from {@code e.from()}
     * on ({@code eager.cost}, {@code eager.from}); clamped to 0 (a model that overprices eager leaves it as priced).
     * Returns the charge.
     */
    static double fitEager(EagerRuns e, PerfProfile.Builder b, List<String> notes) {
        double cost = e.time() - e.model();
        if (cost < 0) {
            notes.add(String.format(Locale.ROOT, "%s: a %d B copy send took %.3f us, less than priced (%.3f us): "
                    + "eager cost set to 0", e.lane(), e.size(), e.time() * 1e6, e.model() * 1e6));
            cost = 0;
        }
        b.figure(e.lane(), PerfProfile.Figure.EAGER_COST, cost).figure(e.lane(), PerfProfile.Figure.EAGER_FROM, e.from());
        return cost;
    }

    /**
     * The line that makes the model's rendezvous exceed its eager by what was measured, as the tables compare them: at
     * each size, {@code measured difference - modelled difference}; the line through two of the sizes. Where it is
     * above 0 the tables charge it to the rendezvous, where below 0 its depth to eager's fragments
     * ({@link io.nucx.protocol.RndvSurcharge}): the model only ever adds what it missed. {@code eagerCost} is what the
     * tables add to eager besides the model {@code r} was priced by.
     * <p>
     * The two sizes: where the rendezvous was measured the faster at the last size and every size down to some size
     * {@code k} but not below it, the last size eager won at and {@code k}. The switch is then placed by the line
     * measured on both sides of it, and the time at the last size (tcp's eager at 1 MiB is 190-200 us in one run,
     * 250-300 in another) cannot pull it below a size where eager was measured the faster. Otherwise (eager the faster
     * at the last size, or the rendezvous at every size) the line through the first and the last: a winner that
     * changes only between sizes where the two are close (shm's at 512 KiB) does not place it either.
     */
    static void fitRndv(RndvRuns r, double eagerCost, PerfProfile.Builder b) {
        int n = r.sizes().length;
        double[] extra = new double[n];
        for (int i = 0; i < n; i++) {
            extra[i] = (r.rndv()[i] - r.eager()[i]) - (r.rndvModel()[i] - (r.eagerModel()[i] + eagerCost));
        }
        int lo = 0;
        int hi = n - 1;
        int k = n;
        while (k > 0 && r.rndv()[k - 1] < r.eager()[k - 1]) {
            k--;
        }
        if (k > 0 && k < n) { // eager the faster at k - 1, the rendezvous from k to the last
            lo = k - 1;
            hi = k;
        }
        double growth = (extra[hi] - extra[lo]) / (r.sizes()[hi] - r.sizes()[lo]);
        b.figure(r.lane(), PerfProfile.Figure.RNDV_COST, extra[lo] - growth * r.sizes()[lo])
                .figure(r.lane(), PerfProfile.Figure.RNDV_GROWTH, growth);
    }

    /** The fitted profile and what the fit had to clamp. */
    public record Result(PerfProfile profile, List<String> notes) {
    }

    private ProfileFit() {
    }

    /** Fits every lane; {@code copyBandwidth} is the measured memcpy bandwidth, bytes/s. */
    public static Result fit(String source, double copyBandwidth, List<AmRuns> am, List<RmaRuns> rma) {
        return fit(source, copyBandwidth, am, rma, List.of(), List.of());
    }

    /**
     * Fits every lane, the eager cost of each AM lane in {@code eager} and the rendezvous surcharge of each in
     * {@code rndv} (whose model costs come from a profile fitted without either, the first three lists the same).
     */
    public static Result fit(String source, double copyBandwidth, List<AmRuns> am, List<RmaRuns> rma,
                             List<RndvRuns> rndv, List<EagerRuns> eager) {
        return fit(source, copyBandwidth, am, rma, rndv, eager, List.of());
    }

    /**
     * Fits as {@link #fit(String, double, List, List, List, List)}, and the read surcharge of each RMA lane in
     * {@code reads} (the rendezvous read against eager's fragments: {@link RndvRuns} named by the RMA lane, whose
     * model costs come from a profile fitted from all the other lists, the same).
     */
    public static Result fit(String source, double copyBandwidth, List<AmRuns> am, List<RmaRuns> rma,
                             List<RndvRuns> rndv, List<EagerRuns> eager, List<RndvRuns> reads) {
        PerfProfile.Builder b = PerfProfile.builder(source).copyBandwidth(copyBandwidth);
        List<String> notes = new ArrayList<>();
        double copy = 1 / copyBandwidth;
        Map<String, double[]> amFigures = new HashMap<>();
        for (AmRuns r : am) {
            double slope = (r.time2() - r.time1()) / (r.size2() - r.size1());
            double wire = slope - 2 * copy;
            double bw;
            if (wire <= 1 / MAX_BANDWIDTH) {
                notes.add(String.format(Locale.ROOT, "%s: copy sends grow by %.4f ns/B, no more than two copies "
                        + "(%.4f ns/B): bandwidth set to %.0e B/s", r.lane(), slope * 1e9, 2 * copy * 1e9,
                        MAX_BANDWIDTH));
                bw = MAX_BANDWIDTH;
            } else {
                bw = 1 / wire;
            }
            // What the model charges an 8-byte short message besides two overheads and the latency.
            double rest = EagerProtocols.SINGLE_OVERHEAD + 8 * (2 * copy + 1 / bw);
            double ovh = r.stream();
            double lat;
            if (2 * ovh + rest > r.ping()) {
                // A stream no faster than ping-pong: its pace is not one side's CPU per message. Keep the model's
                // one-way time right (what an extra control message costs) and put it all on the overheads.
                notes.add(String.format(Locale.ROOT, "%s: a stream of 8 B messages (%.3f us each) is no faster than "
                        + "half a round trip (%.3f us): overhead set to half the one-way time, latency to 0",
                        r.lane(), r.stream() * 1e6, r.ping() * 1e6));
                ovh = Math.max(0, (r.ping() - rest) / 2);
                lat = 0;
            } else {
                lat = r.ping() - 2 * ovh - rest;
            }
            b.figure(r.lane(), PerfProfile.Figure.OVERHEAD, ovh)
                    .figure(r.lane(), PerfProfile.Figure.LATENCY, lat)
                    .figure(r.lane(), PerfProfile.Figure.BANDWIDTH, bw);
            amFigures.put(r.lane(), new double[] {ovh, lat});
        }
        for (RmaRuns r : rma) {
            double[] amLane = amFigures.get(r.amLane());
            if (amLane == null) {
                throw new IllegalArgumentException("RMA lane " + r.lane() + " was measured over AM lane " + r.amLane()
                        + ", which has no figures of its own");
            }
            double d = RndvProtocols.PERF_DIFF_FACTOR;
            long[] x = r.sizes();
            double[] t = r.times();
            double slope = (t[1] - t[0]) / (x[1] - x[0]) / d;
            double intercept = t[0] / d - x[0] * slope;
            double control = 4 * amLane[0] + RndvProtocols.RTS_OVERHEAD + r.regCost() + 2 * amLane[1]
                    + r.rmaLatency();
            double ovh = intercept - control;
            if (ovh < 0) {
                notes.add(String.format(Locale.ROOT, "%s: rendezvous reads cost %.3f us beyond their size, less than "
                        + "their control messages (%.3f us): overhead clamped to 0", r.lane(), intercept * 1e6,
                        control * 1e6));
                ovh = 0;
            }
            double perCall = r.regGrowth() + ovh / r.segment();
            double wire = slope - perCall;
            double bw;
            if (wire <= 1 / MAX_BANDWIDTH) {
                notes.add(String.format(Locale.ROOT, "%s: reads grow by %.4f ns/B, no more than registration and "
                        + "calls: bandwidth set to %.0e B/s", r.lane(), slope * 1e9, MAX_BANDWIDTH));
                bw = MAX_BANDWIDTH;
            } else {
                bw = 1 / wire;
            }
            b.figure(r.lane(), PerfProfile.Figure.OVERHEAD, ovh)
                    .figure(r.lane(), PerfProfile.Figure.BANDWIDTH, bw)
                    .figure(r.lane(), PerfProfile.Figure.REG_COST, r.regCost())
                    .figure(r.lane(), PerfProfile.Figure.REG_GROWTH, r.regGrowth());
            if (x.length == 4) {
                fitBulk(r, slope, intercept, perCall, b, notes);
            }
        }
        Map<String, Double> eagerCosts = new HashMap<>();
        for (EagerRuns e : eager) {
            eagerCosts.put(e.lane(), fitEager(e, b, notes));
        }
        for (RndvRuns r : rndv) {
            fitRndv(r, eagerCosts.getOrDefault(r.lane(), 0.0), b);
        }
        for (RndvRuns r : reads) {
            fitRndv(r, 0, b); // the model priced eager with its surcharges already
        }
        return new Result(b.build(), List.copyOf(notes));
    }

    /**
     * An RMA lane's bulk rate, from its third and fourth reads (beyond the caches): their slope less what registration
     * and calls take per byte, from where their line meets the in-cache one (kept between the second and the third
     * size, where the two regimes meet). None where the bulk reads are not slower per byte than the in-cache ones by
     * more than {@link #BULK_MARGIN} (the caches held them too).
     */
    private static void fitBulk(RmaRuns r, double slope, double intercept, double perCall, PerfProfile.Builder b,
                                List<String> notes) {
        double d = RndvProtocols.PERF_DIFF_FACTOR;
        long[] x = r.sizes();
        double[] t = r.times();
        double bulkSlope = (t[3] - t[2]) / (x[3] - x[2]) / d;
        if (bulkSlope <= slope * BULK_MARGIN || bulkSlope - perCall <= 1 / MAX_BANDWIDTH) {
            notes.add(String.format(Locale.ROOT, "%s: reads of %d-%d B grow by %.4f ns/B, as those in cache (%.4f): "
                    + "no bulk rate", r.lane(), x[2], x[3], bulkSlope * 1e9, slope * 1e9));
            return;
        }
        double bulkIntercept = t[2] / d - x[2] * bulkSlope;
        double knee = (bulkIntercept - intercept) / (slope - bulkSlope);
        long from = Math.round(Math.max(x[1], Math.min(x[2], knee)));
        if (from != Math.round(knee)) {
            notes.add(String.format(Locale.ROOT, "%s: the in-cache and bulk lines meet at %.0f B, outside %d-%d B "
                    + "where they were measured: bulk rate from %d B", r.lane(), knee, x[1], x[2], from));
        }
        b.figure(r.lane(), PerfProfile.Figure.BULK_FROM, from)
                .figure(r.lane(), PerfProfile.Figure.BULK_BANDWIDTH, 1 / (bulkSlope - perCall));
    }

    /** The least-squares line through {@code (x, y)} points: {c, m}. */
    static double[] line(double[] x, double[] y) {
        int n = x.length;
        if (n < 2 || y.length != n) {
            throw new IllegalArgumentException("a line needs two points or more, got " + n);
        }
        double mx = 0;
        double my = 0;
        for (int i = 0; i < n; i++) {
            mx += x[i] / n;
            my += y[i] / n;
        }
        double sxy = 0;
        double sxx = 0;
        for (int i = 0; i < n; i++) {
            sxy += (x[i] - mx) * (y[i] - my);
            sxx += (x[i] - mx) * (x[i] - mx);
        }
        if (sxx == 0) {
            throw new IllegalArgumentException("a line needs two different x");
        }
        double m = sxy / sxx;
        return new double[] {my - m * mx, m};
    }
}
