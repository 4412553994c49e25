package io.nucx.examples.perf;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.RndvSurcharge;
import io.nucx.protocol.select.PerfProfile;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoSelector;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Calibration's fit is the cost model run backwards: measurements the model itself predicts for known figures (its
 * real probes, through the selection engine) fit back to those figures.
 */
class ProfileFitTest {

    private static final IfaceAttributes SHM = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
            Capability.AM_BCOPY), 100, 65536, 256, 80e-9, 0, 12179e6, 0, 10e-9, 0, 0, Integer.MAX_VALUE);
    private static final IfaceAttributes CMA = new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY,
            Capability.PUT_ZCOPY), 0, 0, 0, 80e-9, 0, 11145e6, 0, 2e-6, 0, Long.MAX_VALUE, Integer.MAX_VALUE,
            512 * 1024);
    private static final long DIRECT = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0,
            SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.DIRECT, SelectionKey.Locality.INTER_NODE);

    /** What the model says {@code protocol} costs at {@code size} on {@code config} with {@code truth}'s figures. */
    private static double model(PerfProfile truth, EndpointConfig config, String protocol, long size) {
        ProtoTable t = ProtoSelector.select(ProtocolRegistry.DEFAULT.protocols(), new ProbeParams(truth.apply(config),
                DIRECT, ProtoCandidate.AUTO, ProtoCandidate.AUTO, truth.copyBandwidth(0)));
        for (ProtoCandidate c : t.candidates()) {
            if (c.protocol().name().equals(protocol) && !Double.isNaN(c.perf().singleCost(size))) {
                return c.perf().singleCost(size);
            }
        }
        throw new AssertionError(protocol + " does not cover " + size + "\n" + t.format("model"));
    }

    private static PerfProfile.Builder figures(double copy) {
        return PerfProfile.builder("truth").copyBandwidth(copy)
                .figure("shm/memory", PerfProfile.Figure.OVERHEAD, 0.31e-6)
                .figure("shm/memory", PerfProfile.Figure.LATENCY, 0.22e-6)
                .figure("shm/memory", PerfProfile.Figure.BANDWIDTH, 9.5e9)
                .figure("cma/memory", PerfProfile.Figure.OVERHEAD, 1.7e-6)
                .figure("cma/memory", PerfProfile.Figure.BANDWIDTH, 7.25e9)
                .figure("cma/memory", PerfProfile.Figure.REG_COST, 0.4e-6)
                .figure("cma/memory", PerfProfile.Figure.REG_GROWTH, 0.001e-9)
                .figure("cma/memory", PerfProfile.Figure.BULK_FROM, 900 * 1024)
                .figure("cma/memory", PerfProfile.Figure.BULK_BANDWIDTH, 3.1e9);
    }

    @Test
    void measurementsTheModelPredictsFitBackToTheFiguresThatPredictedThem() {
        double copy = 6.5e9;
        PerfProfile withoutSurcharge = figures(copy).build();
        long s1 = 4095;
        long s2 = 65528;
        PerfProfile truth = figures(copy)
                .figure("shm/memory", PerfProfile.Figure.RNDV_COST, 3.5e-6)
                .figure("shm/memory", PerfProfile.Figure.RNDV_GROWTH, 6.2e-12)
                .figure("shm/memory", PerfProfile.Figure.EAGER_COST, 1.1e-6)
                .figure("shm/memory", PerfProfile.Figure.EAGER_FROM, s1)
                .build();
        EndpointConfig shm = new EndpointConfig("shm/memory", SHM);
        EndpointConfig shmCma = new EndpointConfig("shm/memory", SHM, "cma/memory", CMA);
        ProfileFit.AmRuns am = new ProfileFit.AmRuns("shm/memory", 0.31e-6, model(truth, shm, "egr/short", 8),
                s1, model(truth, shm, "egr/single/bcopy", s1), s2, model(truth, shm, "egr/single/bcopy", s2));
        long[] reads = {64 * 1024, 512 * 1024, 2 << 20, 16 << 20};
        double[] times = new double[reads.length];
        for (int i = 0; i < reads.length; i++) {
            times[i] = model(truth, shmCma, "rndv/get/zcopy", reads[i]);
        }
        ProfileFit.RmaRuns rma = new ProfileFit.RmaRuns("cma/memory", "shm/memory", CMA.rmaSegment(),
                CMA.latencySeconds(), reads, times, 0.4e-6, 0.001e-9);

        // The rendezvous as the truth prices it, against what the model fitted without a surcharge prices it at.
        long[] large = Calibration.RNDV_SIZES;
        double[][] rndv = new double[4][large.length];
        for (int i = 0; i < large.length; i++) {
            rndv[0][i] = model(truth, shm, "tag/rndv", large[i]);
            rndv[1][i] = model(truth, shm, "egr/multi/bcopy", large[i]);
            rndv[2][i] = model(withoutSurcharge, shm, "tag/rndv", large[i]);
            rndv[3][i] = model(withoutSurcharge, shm, "egr/multi/bcopy", large[i]);
        }
        assertTrue(rndv[0][1] > rndv[1][1], "the surcharge makes eager the cheaper at " + large[1] + " B");
        ProfileFit.RndvRuns runs = new ProfileFit.RndvRuns("shm/memory", large, rndv[0], rndv[1], rndv[2], rndv[3]);

        // The larger copy send as the truth prices it (its eager surcharge in), against the model without one.
        ProfileFit.EagerRuns eager = new ProfileFit.EagerRuns("shm/memory", s1, s2, am.time2(),
                model(withoutSurcharge, shm, "egr/single/bcopy", s2));
        assertTrue(am.ping() < model(truth, shm, "egr/single/bcopy", s1) - 1.1e-6, "an 8 B message pays no surcharge");

        ProfileFit.Result fit = ProfileFit.fit("fit", copy, List.of(am), List.of(rma), List.of(runs),
                List.of(eager));

        assertEquals(List.of(), fit.notes(), "nothing clamped");
        for (String lane : List.of("shm/memory", "cma/memory")) {
            for (PerfProfile.Figure f : PerfProfile.Figure.values()) {
                double want = truth.figure(lane, f);
                double got = fit.profile().figure(lane, f);
                if (Double.isNaN(want)) {
                    assertTrue(Double.isNaN(got), lane + " " + f + " is not fitted, got " + got);
                } else {
                    assertEquals(want, got, Math.abs(want) * 1e-6, lane + " " + f);
                }
            }
        }
        assertEquals(copy, fit.profile().copyBandwidth(0));
    }

    @Test
    void aStreamNoFasterThanPingPongPutsTheOneWayTimeOnTheOverheads() {
        // 2 us one way, 3 us per streamed message: overheads can be at most 1 us each
        ProfileFit.AmRuns am = new ProfileFit.AmRuns("tcp/lo", 3e-6, 2e-6, 1000, 3e-6, 9000, 11e-6);
        ProfileFit.Result fit = ProfileFit.fit("fit", 8e9, List.of(am), List.of());
        double ovh = fit.profile().figure("tcp/lo", PerfProfile.Figure.OVERHEAD);
        double lat = fit.profile().figure("tcp/lo", PerfProfile.Figure.LATENCY);
        assertTrue(ovh < 1e-6 && ovh > 0.99e-6, "overhead " + ovh);
        assertEquals(0, lat);
        assertEquals(1, fit.notes().size(), fit.notes().toString());
        // slope 1 ns/B less two copies (0.25 ns/B) leaves 0.75 ns/B for the wire
        assertEquals(1 / (1e-9 - 2 / 8e9), fit.profile().figure("tcp/lo", PerfProfile.Figure.BANDWIDTH), 1);
    }

    @Test
    void copiesThatCostMoreThanTheSlopeLeaveTheWireFreeAndSaySo() {
        ProfileFit.AmRuns am = new ProfileFit.AmRuns("shm/memory", 0.2e-6, 1e-6, 1000, 1e-6, 65000, 1e-6 + 64000 * 0.2e-9);
        ProfileFit.Result fit = ProfileFit.fit("fit", 5e9, List.of(am), List.of()); // two copies: 0.4 ns/B > 0.2
        assertEquals(ProfileFit.MAX_BANDWIDTH, fit.profile().figure("shm/memory", PerfProfile.Figure.BANDWIDTH));
        assertTrue(fit.notes().get(0).contains("no more than two copies"), fit.notes().toString());
    }

    /** Reads in cache at 64 KiB and 512 KiB, 10 and 30 us; {@code t3}, {@code t4} at 2 and 16 MiB. */
    private static ProfileFit.Result fitReads(double t3, double t4) {
        ProfileFit.AmRuns am = new ProfileFit.AmRuns("shm/memory", 0.1e-6, 0.3e-6, 4095, 1e-6, 65528, 8e-6);
        return ProfileFit.fit("fit", 40e9, List.of(am), List.of(new ProfileFit.RmaRuns("cma/memory", "shm/memory",
                512 * 1024, 80e-9, new long[] {64 * 1024, 512 * 1024, 2 << 20, 16 << 20},
                new double[] {10e-6, 30e-6, t3, t4}, 0, 0)));
    }

    @Test
    void readsNoSlowerPerByteBeyondTheCachesGetNoBulkRateAndSaySo() {
        // 20 us per 448 KiB in cache; 2-16 MiB at the same rate: one line through all four
        double perByte = 20e-6 / (448 * 1024);
        ProfileFit.Result fit = fitReads(10e-6 + perByte * ((2 << 20) - 65536),
                10e-6 + perByte * ((16 << 20) - 65536));
        assertTrue(Double.isNaN(fit.profile().figure("cma/memory", PerfProfile.Figure.BULK_FROM)));
        assertTrue(Double.isNaN(fit.profile().figure("cma/memory", PerfProfile.Figure.BULK_BANDWIDTH)));
        assertTrue(fit.notes().stream().anyMatch(n -> n.contains("no bulk rate")), fit.notes().toString());
    }

    @Test
    void aBulkLineThatMeetsTheFirstBelowItsSecondSizeStartsThere() {
        // 2 MiB at 500 us, 0.2 ns/B on to 16 MiB: a line 185 us high at 512 KiB, where the in-cache one is at 30
        ProfileFit.Result fit = fitReads(500e-6, 500e-6 + (14 << 20) * 0.2e-9);
        assertEquals(512 * 1024, fit.profile().figure("cma/memory", PerfProfile.Figure.BULK_FROM));
        // 0.2 ns/B without the rendezvous bias, less the in-cache reads' per-call share (one call per 512 KiB)
        double perCall = fit.profile().figure("cma/memory", PerfProfile.Figure.OVERHEAD) / (512 * 1024);
        assertEquals(1 / (0.2e-9 / 0.99 - perCall),
                fit.profile().figure("cma/memory", PerfProfile.Figure.BULK_BANDWIDTH), 1e3);
        assertTrue(fit.notes().stream().anyMatch(n -> n.contains("outside 524288-2097152 B")), fit.notes().toString());
    }

    /**
     * A rendezvous cheaper against eager than modelled at both sizes (tcp's eager fragments) gets a line below 0 there,
     * which the tables charge to eager's fragments, not the rendezvous.
     */
    @Test
    void aRendezvousCheaperThanModelledChargesEagersFragmentsTheDifference() {
        long[] sizes = {256 << 10, 1 << 20};
        double[] eager = {100e-6, 400e-6};
        double[] rndvModel = {100.5e-6, 397e-6};
        // the measured rendezvous 4 and 37 us under eager beyond what the model says
        double[] measured = {rndvModel[0] - 4e-6, rndvModel[1] - 37e-6};
        RndvSurcharge s = fitRndv(sizes, measured, eager, rndvModel);
        assertEquals(0, s.at(sizes[0]));
        assertEquals(0, s.at(sizes[1]));
        assertEquals(4e-6, s.eagerAt(sizes[0]), 1e-12);
        assertEquals(37e-6, s.eagerAt(sizes[1]), 1e-12);
    }

    /**
     * A rendezvous dearer than modelled at the smaller size and cheaper at the larger (tcp's placed frames catching
     * up) gets a falling line: the rendezvous is charged up to where it reaches 0, eager's fragments from there on.
     */
    @Test
    void aSurchargeThatShrinksWithSizeIsALineFallingThroughZero() {
        long[] sizes = {256 << 10, 1 << 20};
        double[] eager = {100e-6, 400e-6};
        double[] rndvModel = {99e-6, 396e-6};
        // beyond the model by 30 us at the first size, 15 us under it at the second
        double[] measured = {eager[0] + (rndvModel[0] - eager[0]) + 30e-6,
                eager[1] + (rndvModel[1] - eager[1]) - 15e-6};
        RndvSurcharge s = fitRndv(sizes, measured, eager, rndvModel);
        assertEquals(30e-6, s.at(sizes[0]), 1e-12);
        assertEquals(0, s.eagerAt(sizes[0]));
        assertEquals(0, s.at(sizes[1]));
        assertEquals(15e-6, s.eagerAt(sizes[1]), 1e-12);
        assertEquals(15e-6, s.at((2 * sizes[0] + sizes[1]) / 3), 1e-12, "a third of the way: two thirds of 30 - 15");
    }

    /**
     * Timed at three sizes, the line is fitted where the rendezvous begins to win for good: a slow eager at the last
     * size (tcp's 1 MiB in its slow runs) cannot move the switch below the middle size, where eager was measured the
     * faster; the model then prices the difference measured at the middle and the last size.
     */
    @Test
    void theSurchargeIsFittedWhereTheRendezvousBeginsToWinForGood() {
        long[] sizes = {256 << 10, 512 << 10, 1 << 20}; // the calibration's sizes then
        double[] eager = {50e-6, 100e-6, 260e-6};
        double[] rndvModel = {51e-6, 102e-6, 264e-6}; // the model's difference a line: 1, 2, 4 us
        // tcp's calibration of 2026-12-03 06:51: the rendezvous 11-12 us slower up to 512 KiB, 63 us faster at 1 MiB
        double[] measured = {61e-6, 112e-6, 197e-6};
        RndvSurcharge s = fitRndv(sizes, measured, eager, rndvModel);
        for (int i = 1; i < 3; i++) {
            assertEquals((measured[i] - eager[i]) - (rndvModel[i] - eager[i]), s.at(sizes[i]) - s.eagerAt(sizes[i]),
                    1e-12, "the difference measured at " + sizes[i] + " B kept");
        }
        // Where the model plus the surcharge puts the switch: past the middle size.
        long lo = sizes[1];
        long hi = sizes[2];
        double atLo = rndvModel[1] + s.at(lo) - (eager[1] + s.eagerAt(lo));
        double atHi = rndvModel[2] + s.at(hi) - (eager[2] + s.eagerAt(hi));
        assertTrue(atLo > 0 && atHi < 0, "eager the cheaper at " + lo + " B, the rendezvous at " + hi + " B: " + atLo
                + ", " + atHi);
        // The line through the outer two sizes (how the fit ran with two sizes) would have switched below the middle.
        RndvSurcharge outer = fitRndv(new long[] {sizes[0], sizes[2]}, new double[] {measured[0], measured[2]},
                new double[] {eager[0], eager[2]}, new double[] {rndvModel[0], rndvModel[2]});
        double outerAtLo = rndvModel[1] + outer.at(lo) - (eager[1] + outer.eagerAt(lo));
        assertTrue(outerAtLo < 0, "the outer line prices the rendezvous the cheaper at " + lo + " B: " + outerAtLo);
    }

    /**
     * The calibration's sizes now, and tcp's shape of 2026-12-06: eager the faster up to 768 KiB by more than a line
     * from 512 KiB to 1 MiB says (in turns the rendezvous took 1.169 of its time at 768 KiB, 1.136 at 835,182 B), the
     * rendezvous the faster at 1 MiB alone. Through 512 KiB and 1 MiB, as with three sizes, the line put the switch
     * below 835,182 B; through 768 KiB and 1 MiB it lies above (here the model's difference is 0 at every size, so
     * the priced difference is the line itself).
     */
    @Test
    void aSizeBetween512KiBAnd1MiBPlacesTheSwitchNearerWhereTheRendezvousWins() {
        long[] sizes = Calibration.RNDV_SIZES;
        assertEquals(List.of(256L << 10, 512L << 10, 768L << 10, 1L << 20),
                Arrays.stream(sizes).boxed().toList());
        double[] eager = {60e-6, 100e-6, 120e-6, 141e-6};
        double[] measured = {75e-6, 110e-6, 140e-6, 134e-6}; // +15, +10, +20, -7 us
        long miss = 835_182;
        RndvSurcharge four = fitRndv(sizes, measured, eager, eager);
        assertEquals(measured[2] - eager[2], four.at(sizes[2]) - four.eagerAt(sizes[2]), 1e-12, "768 KiB kept");
        assertEquals(measured[3] - eager[3], four.at(sizes[3]) - four.eagerAt(sizes[3]), 1e-12, "1 MiB kept");
        assertTrue(four.at(miss) - four.eagerAt(miss) > 0, "eager the cheaper at " + miss + " B");
        int[] three = {0, 1, 3};
        RndvSurcharge before = fitRndv(pick(sizes, three), pick(measured, three), pick(eager, three),
                pick(eager, three));
        assertTrue(before.at(miss) - before.eagerAt(miss) < 0, "three sizes priced the rendezvous the cheaper there");
    }

    private static long[] pick(long[] values, int[] at) {
        return Arrays.stream(at).mapToLong(i -> values[i]).toArray();
    }

    private static double[] pick(double[] values, int[] at) {
        return Arrays.stream(at).mapToDouble(i -> values[i]).toArray();
    }

    /**
     * Where the rendezvous is not the faster at the last size (or is at every size), the line runs through the first
     * and the last: a middle size the rendezvous won by a little (shm's 512 KiB in the calibration of 2026-12-03 09:24:
     * eager [52.4, 49.2, 82.3] us, the rendezvous [48.7, 51.5, 47.7]) does not place the switch.
     */
    @Test
    void withoutAWinForGoodTheLineRunsThroughTheFirstAndTheLastSize() {
        long[] sizes = {256 << 10, 512 << 10, 1 << 20};
        double[] eager = {50e-6, 100e-6, 200e-6};
        double[] rndvModel = {49e-6, 98e-6, 196e-6};
        for (double middle : new double[] {125e-6, 97e-6}) { // slower at the middle, or faster there only
            double[] measured = {61e-6, middle, 210e-6};
            RndvSurcharge s = fitRndv(sizes, measured, eager, rndvModel);
            assertEquals(12e-6, s.at(sizes[0]), 1e-12);
            assertEquals(14e-6, s.at(sizes[2]), 1e-12);
            assertEquals(12e-6 + 2e-6 / 3, s.at(sizes[1]), 1e-12, "the middle on the outer line, not its own");
        }
        double[] faster = {45e-6, 80e-6, 150e-6}; // the rendezvous the faster everywhere
        RndvSurcharge s = fitRndv(sizes, faster, eager, rndvModel);
        assertEquals(4e-6, s.eagerAt(sizes[0]), 1e-12);
        assertEquals(46e-6, s.eagerAt(sizes[2]), 1e-12);
    }

    @Test
    void rendezvousRunsNeedTwoAscendingSizesWithEveryFigure() {
        double[] two = {1, 2};
        assertThrows(IllegalArgumentException.class,
                () -> new ProfileFit.RndvRuns("tcp/lo", new long[] {1}, new double[] {1}, new double[] {1},
                        new double[] {1}, new double[] {1}));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ProfileFit.RndvRuns("tcp/lo", new long[] {2, 1}, two, two, two, two));
        assertTrue(e.getMessage().contains("[2, 1]"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new ProfileFit.RndvRuns("tcp/lo", new long[] {1, 2, 3}, two, two, two, two));
    }

    /**
     * shm+cma's read against eager (the 16:40 calibration's shape: the read some microseconds slower at 512 KiB,
     * where the model, fitted through 64 and 512 KiB reads, priced it faster from 740,541 B): the line goes on the RMA
     * lane, fitted against eager as the tables price it (its surcharges included, so none added here), and with it
     * the tables' read exceeds their eager by what was measured at the sizes the line runs through.
     */
    @Test
    void aReadSurchargeGoesOnTheRmaLaneAndMakesTheReadExceedEagerAsMeasured() {
        long[] sizes = {256 << 10, 512 << 10, 1 << 20};
        double[] read = {16e-6, 30e-6, 55e-6};
        double[] eager = {14e-6, 26e-6, 50e-6};
        double[] readModel = {15e-6, 27.5e-6, 47e-6};
        double[] eagerModel = {14e-6, 26e-6, 50e-6};
        PerfProfile p = ProfileFit.fit("fit", 1e11, List.of(), List.of(), List.of(), List.of(),
                List.of(new ProfileFit.RndvRuns("cma/memory", sizes, read, eager, readModel, eagerModel))).profile();
        RndvSurcharge s = new RndvSurcharge(p.figure("cma/memory", PerfProfile.Figure.RNDV_COST),
                p.figure("cma/memory", PerfProfile.Figure.RNDV_GROWTH));
        for (int i : new int[] {0, 2}) { // eager the faster at the last size: through the first and the last
            assertEquals(read[i] - eager[i], readModel[i] + s.at(sizes[i]) - eagerModel[i], 1e-12, "at " + sizes[i]);
        }
        assertTrue(readModel[1] + s.at(sizes[1]) > eagerModel[1], "the read dearer at 512 KiB too");
        assertTrue(Double.isNaN(p.figure("shm/memory", PerfProfile.Figure.RNDV_COST)), "nothing on the AM lane");
    }

    private static RndvSurcharge fitRndv(long[] sizes, double[] rndv, double[] eager, double[] rndvModel) {
        PerfProfile.Builder b = PerfProfile.builder("fit");
        ProfileFit.fitRndv(new ProfileFit.RndvRuns("tcp/lo", sizes, rndv, eager, rndvModel, eager), 0, b);
        PerfProfile p = b.build();
        return new RndvSurcharge(p.figure("tcp/lo", PerfProfile.Figure.RNDV_COST),
                p.figure("tcp/lo", PerfProfile.Figure.RNDV_GROWTH));
    }

    /**
     * The eager surcharge is what the larger copy send took beyond its price, from the smaller send's size on; a send
     * faster than priced leaves eager as priced, and the fit says so.
     */
    @Test
    void anEagerSurchargeIsTheSendsTimeBeyondItsPriceAndNeverBelowZero() {
        PerfProfile.Builder b = PerfProfile.builder("fit");
        List<String> notes = new ArrayList<>();
        assertEquals(0.9e-6, ProfileFit.fitEager(new ProfileFit.EagerRuns("shm/memory", 4095, 65528, 9.1e-6, 8.2e-6),
                b, notes), 1e-12);
        assertEquals(0, ProfileFit.fitEager(new ProfileFit.EagerRuns("tcp/lo", 8191, 131064, 30e-6, 31e-6), b,
                notes));
        PerfProfile p = b.build();
        assertEquals(0.9e-6, p.figure("shm/memory", PerfProfile.Figure.EAGER_COST), 1e-12);
        assertEquals(4095, p.figure("shm/memory", PerfProfile.Figure.EAGER_FROM));
        assertEquals(0, p.figure("tcp/lo", PerfProfile.Figure.EAGER_COST));
        assertEquals(1, notes.size(), notes.toString());
        assertTrue(notes.get(0).startsWith("tcp/lo: a 131064 B copy send took 30.000 us, less than priced (31.000 "
                + "us)"), notes.get(0));
    }

    @Test
    void aLineThroughPoints() {
        double[] l = ProfileFit.line(new double[] {1, 2, 3}, new double[] {5, 7, 9});
        assertEquals(3, l[0], 1e-12);
        assertEquals(2, l[1], 1e-12);
    }
}
