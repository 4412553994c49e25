package io.nucx.examples.perf;

import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoPerf;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.transport.CopyRate;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaTransport;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RmaIface;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code nucx calibrate}: measures, on this machine, what the cost model needs per lane (latency, overhead, bandwidth,
 * registration cost, an AM lane's rendezvous surcharge, an RMA lane's read surcharge) and the memcpy bandwidth, with
 * two workers in two processes over real lanes (a {@link SweepServer} and this process), each protocol forced in turn,
 * a few rounds back to back; then fits the model's figures to the measurements ({@link ProfileFit}) and writes the
 * profile that NUCX_PERF_PROFILE loads. The AM lanes' surcharges are fitted second, the read's third, each against
 * what the profile fitted without it prices the two protocols at (asked of the workers' own tables). A short, bounded
 * run: a warm-up, then {@code rounds} x about thirty runs of {@code runNanos} each.
 */
public final class Calibration {

    /**
     * @param amSets  NUCX_TLS values whose AM lane is measured ("tcp", "shm")
     * @param rmaSets NUCX_TLS values whose RMA lane is measured by rendezvous reads over their AM lane ("shm,cma");
     *                that AM lane must be measured too (in {@code amSets})
     * @param percentile which percentile of a ping-pong's iterations is its time (50: the median; lower on a machine
     *                   busy with other work, whose preemptions land in the upper ones). Not the average: runs this
     *                   short averaged far above a sweep's (a 64 KiB read 12.6 us against 5.2, tcp's 8 B 8.2 against
     *                   4.1), where an earlier calibration's medians were close to the sweep's averages (5.4, 4.3)
     * @param freshData  every run writes its send buffers before each send ({@link FreshData}): the figures are then
     *                   those of an application sending new data, whose cma reads find the lines in the writer's
     *                   cache, not their own (BENCHMARKS.md, "Calibrating with fresh data")
     */
    public record Options(List<String> amSets, List<String> rmaSets, int rounds, long runNanos, long warmupNanos,
                          double percentile, Path out, String command, boolean freshData) {
        public Options {
            amSets = List.copyOf(amSets);
            rmaSets = List.copyOf(rmaSets);
            if (rounds < 1 || runNanos <= 0 || warmupNanos < 0 || !(percentile > 0 && percentile < 100)) {
                throw new IllegalArgumentException("rounds and run time must be positive, warm-up >= 0, the "
                        + "percentile in (0, 100)");
            }
        }
    }

    /**
     * The sizes rendezvous reads are timed at. The first two, a factor 8 apart, are where a read and the AM lane's
     * copies compete (from one fragment to 512 KiB), in cache: they give the read's overhead and bandwidth. Timed at
     * 64 KiB and 1 MiB, the 1 MiB read had already slowed (82.6 us against 21.0 at 512 KiB in the 14:24 sweep), and
     * the model priced 32-77 KiB reads at 1.4x their time. The last two are beyond the caches, where one core's read
     * runs at 4-10 GB/s and the ring's two cores beat it (BENCHMARKS.md): they give its bulk rate. The last is 32 MiB:
     * a 16 MiB read took 1.6 ms in one calibration's minute and 1.8-3.3 ms in others, and priced at the fast minute's
     * figure it was chosen over the ring to 64 MiB, 1.38x the ring's time in turns at 16 MiB; a 32 MiB read took
     * 6.9-8.0 ms in every sweep (the ring 5.2-6.3).
     */
    static final long[] RMA_SIZES = {64 * 1024, 512 * 1024, 2 << 20, 32 << 20};

    /**
     * The sizes an AM lane's rendezvous is timed against its eager fragments at: where the engine chooses between the
     * two (eager is offered up to {@code NUCX_EAGER_MAX}, 1 MiB), so that the line is measured where the choice is
     * made rather than extrapolated to it from beyond. With 64 KiB tcp fragments, 1 and 4 MiB put tcp's switch at
     * 742 KiB and these sizes at 392 KiB, where in turns it was near 530 KiB (the rendezvous took 1.061 of eager's
     * time at 448 KiB, 0.943 at 640 KiB): the two costs are no straight lines there. The middle size keeps one
     * outlying time from moving the switch across the others ({@link ProfileFit#fitRndv}): with only 256 KiB and
     * 1 MiB, a calibration that timed tcp's eager at 1 MiB in its slow runs (medians of [190, 266, 258] us against
     * the rendezvous's [215, 158, 195]) put the switch at 371,927 B, where eager took 0.85 of the rendezvous's time.
     * 768 KiB halves the span the switch is interpolated over where the winner changes between 512 KiB and 1 MiB,
     * where the two costs are no straight line either (tcp's switch fell at 835,182 B, where eager was still faster).
     */
    static final long[] RNDV_SIZES = {256 << 10, 512 << 10, 768 << 10, 1 << 20};

    private final SweepRunner runner;
    private final Options options;
    private final PrintStream log;
    private final List<Double> loads = new ArrayList<>();

    public Calibration(SweepRunner runner, Options options, PrintStream log) {
        this.runner = runner;
        this.options = options;
        this.log = log;
    }

    /** Measures, fits, writes the profile; returns the fit. */
    public ProfileFit.Result run() throws Exception {
        double copyBandwidth = copyBandwidth();
        log.printf(Locale.ROOT, "memcpy 64 KiB direct to direct: %.0f MB/s%n", copyBandwidth / 1e6);
        Map<String, ProtoTable> tables = new LinkedHashMap<>();
        for (String tls : sets()) {
            tables.put(tls, runner.run(Map.of("TLS", tls), params(PerfTestType.TAG_LAT, 8, 20, 50)).table());
        }
        List<Step> steps = steps(tables);
        long deadline = System.nanoTime() + options.warmupNanos();
        log.println("warming up for " + options.warmupNanos() / 1e9 + " s (not recorded)");
        while (System.nanoTime() < deadline) {
            for (Step s : steps) {
                s.run(runner, options.runNanos() / 2, options);
            }
        }
        for (int round = 0; round < options.rounds(); round++) {
            for (Step s : steps) {
                loads.add(Sweep.loadAverage());
                double t = s.run(runner, options.runNanos(), options);
                s.times.add(t);
                log.printf(Locale.ROOT, "round %d %-9s %-18s %-8s %9d B: %10.3f us%n", round, s.tls, s.protocol,
                        s.test.testName(), s.size, t * 1e6);
            }
        }
        List<ProfileFit.AmRuns> am = new ArrayList<>();
        for (String tls : options.amSets()) {
            am.add(new ProfileFit.AmRuns(amLane(tables.get(tls)), median(steps, tls, "stream"),
                    median(steps, tls, "ping"), step(steps, tls, "size1").size, median(steps, tls, "size1"),
                    step(steps, tls, "size2").size, median(steps, tls, "size2")));
        }
        List<ProfileFit.RmaRuns> rma = new ArrayList<>();
        for (String tls : options.rmaSets()) {
            ProtoTable t = tables.get(tls);
            double[] reg = registrationCost();
            double[] times = new double[RMA_SIZES.length];
            for (int i = 0; i < times.length; i++) {
                times[i] = median(steps, tls, "read" + i);
            }
            rma.add(new ProfileFit.RmaRuns(rmaLane(t), amLane(t), Cma.CHUNK, 80e-9,
                    RMA_SIZES, times, reg[0], reg[1]));
        }
        ProfileFit.Result fit = ProfileFit.fit(options.out().toString(), copyBandwidth, am, rma);
        // The eager cost and the rendezvous surcharge are what the measurements show beyond what this model prices: ask
        // the model, as the workers build it from the profile, what it prices the protocols at, then fit again.
        fit.profile().write(options.out(), List.of("without the eager cost and the rendezvous surcharge (being "
                + "fitted)"));
        String file = options.out().toAbsolutePath().toString();
        List<ProfileFit.RndvRuns> rndv = new ArrayList<>();
        List<ProfileFit.EagerRuns> eager = new ArrayList<>();
        for (String tls : options.amSets()) {
            ProtoTable model = runner.run(Map.of("TLS", tls, "PERF_PROFILE", file),
                    params(PerfTestType.TAG_LAT, 8, 20, 50)).table();
            Step single = step(steps, tls, "size2");
            eager.add(new ProfileFit.EagerRuns(amLane(tables.get(tls)), step(steps, tls, "size1").size, single.size,
                    median(steps, tls, "size2"), costAt(model, single.protocol, single.size)));
            rndv.add(againstEager(amLane(tables.get(tls)), steps, tls, "rndv", "tag/rndv", tls, model));
        }
        fit = ProfileFit.fit(options.out().toString(), copyBandwidth, am, rma, rndv, eager);
        // The read against eager, third: priced by the tables of the profile with everything else, eager's surcharges
        // included.
        List<ProfileFit.RndvRuns> reads = new ArrayList<>();
        if (!options.rmaSets().isEmpty()) {
            fit.profile().write(options.out(), List.of("without the read surcharge (being fitted)"));
        }
        for (String tls : options.rmaSets()) {
            ProtoTable model = runner.run(Map.of("TLS", tls, "PERF_PROFILE", file),
                    params(PerfTestType.TAG_LAT, 8, 20, 50)).table();
            reads.add(againstEager(rmaLane(tables.get(tls)), steps, tls, "vsEager", "rndv/get/zcopy",
                    amTransports(tls), model));
        }
        fit = ProfileFit.fit(options.out().toString(), copyBandwidth, am, rma, rndv, eager, reads);
        List<String> comments = new ArrayList<>();
        comments.add("written by: " + options.command());
        comments.add("at " + Instant.now().truncatedTo(ChronoUnit.SECONDS) + " on " + hostName() + ", "
                + Runtime.getRuntime().availableProcessors() + " cores, load average (1 min) "
                + String.format(Locale.ROOT, "%.2f to %.2f", loads.stream().mapToDouble(d -> d).min().orElse(0),
                loads.stream().mapToDouble(d -> d).max().orElse(0)));
        comments.add("medians of " + options.rounds() + " rounds (a rendezvous's excess over eager: the median of "
                + "each round's difference), runs of " + options.runNanos() / 1e9 + " s"
                + (options.freshData() ? " sending fresh data" : " sending one unchanged buffer") + "; "
                + "ping-pongs by their " + options.percentile() + "th percentile, streams by their average:");
        for (Step s : steps) {
            comments.add(String.format(Locale.ROOT, "  %-9s %-18s %-8s %9d B: %s us", s.tls, s.protocol,
                    s.test.testName(), s.size, s.times.stream().map(t -> String.format(Locale.ROOT, "%.3f", t * 1e6))
                            .toList()));
        }
        fit.notes().forEach(n -> comments.add("note: " + n));
        fit.profile().write(options.out(), comments);
        log.print(fit.profile().format(comments));
        // Both sides load the file, as a user's workers would: the tables it gives beside the static ones.
        for (String tls : sets()) {
            log.print(tables.get(tls).format("static " + tls));
            log.print(runner.run(Map.of("TLS", tls, "PERF_PROFILE", file), params(PerfTestType.TAG_LAT, 8, 20, 50))
                    .table().format("calibrated " + tls));
        }
        log.println("profile written to " + file + "; use it with NUCX_PERF_PROFILE=" + file);
        return fit;
    }

    /**
     * {@code lane}'s rendezvous {@code protocol}, timed by the steps {@code role}0.. over {@code tls}, against the eager
     * fragments timed over {@code eagerTls} at {@link #RNDV_SIZES}, with what {@code model} prices the two at. The
     * rendezvous's time is eager's median plus the median of what it took beyond eager in each round
     * ({@link #pairedDifference}).
     */
    private static ProfileFit.RndvRuns againstEager(String lane, List<Step> steps, String tls, String role,
                                                    String protocol, String eagerTls, ProtoTable model) {
        int n = RNDV_SIZES.length;
        double[] times = new double[n];
        double[] eagerTimes = new double[n];
        double[] modelled = new double[n];
        double[] eagerModel = new double[n];
        for (int i = 0; i < n; i++) {
            eagerTimes[i] = median(steps, eagerTls, "eager" + i);
            times[i] = eagerTimes[i] + pairedDifference(step(steps, tls, role + i).times,
                    step(steps, eagerTls, "eager" + i).times);
            modelled[i] = costAt(model, protocol, RNDV_SIZES[i]);
            eagerModel[i] = costAt(model, "egr/multi/bcopy", RNDV_SIZES[i]);
        }
        return new ProfileFit.RndvRuns(lane, RNDV_SIZES, times, eagerTimes, modelled, eagerModel);
    }

    private List<String> sets() {
        List<String> all = new ArrayList<>(options.amSets());
        options.rmaSets().stream().filter(s -> !all.contains(s)).forEach(all::add);
        return all;
    }

    /** One measurement: a protocol forced over a transport set at one size, and its times over the rounds. */
    private static final class Step {
        final String tls;
        final String role;
        final String protocol;
        final PerfTestType test;
        final long size;
        final boolean median;
        final List<Double> times = new ArrayList<>();
        double perIterationNanos = 50_000;

        /** @param median whether a run's time is its median iteration (ping-pongs) or its average (streams) */
        Step(String tls, String role, String protocol, PerfTestType test, long size, boolean median) {
            this.tls = tls;
            this.role = role;
            this.protocol = protocol;
            this.test = test;
            this.size = size;
            this.median = median;
        }

        /** One run of about {@code nanos}; the time of one message, seconds. */
        double run(SweepRunner runner, long nanos, Options options) throws Exception {
            Map<String, String> settings = new LinkedHashMap<>();
            settings.put("TLS", tls);
            settings.putAll(ForcedProtocol.settings(protocol));
            long iterations = Math.max(Sweep.MIN_ITERATIONS, Math.min(Sweep.MAX_ITERATIONS,
                    (long) (nanos / perIterationNanos)));
            PerfResult r = runner.run(settings, params(test, size, iterations, options.percentile())
                    .withFreshData(options.freshData())).result();
            perIterationNanos = r.overallLatencyUs() * 1000 * (test.pingPong() ? 2 : 1);
            return (median ? r.percentileLatencyUs() : r.overallLatencyUs()) * 1e-6;
        }
    }

    private List<Step> steps(Map<String, ProtoTable> tables) {
        List<Step> steps = new ArrayList<>();
        for (String tls : options.amSets()) {
            long max = rangeEnd(tables.get(tls), "egr/single/bcopy");
            steps.add(new Step(tls, "stream", "egr/short", PerfTestType.TAG_BW, 8, false));
            steps.add(new Step(tls, "ping", "egr/short", PerfTestType.TAG_LAT, 8, true));
            steps.add(new Step(tls, "size1", "egr/single/bcopy", PerfTestType.TAG_LAT, Math.max(256, max / 16), true));
            steps.add(new Step(tls, "size2", "egr/single/bcopy", PerfTestType.TAG_LAT, max, true));
            for (int i = 0; i < RNDV_SIZES.length; i++) {
                steps.add(new Step(tls, "eager" + i, "egr/multi/bcopy", PerfTestType.TAG_LAT, RNDV_SIZES[i], true));
                steps.add(new Step(tls, "rndv" + i, "tag/rndv", PerfTestType.TAG_LAT, RNDV_SIZES[i], true));
            }
        }
        for (String tls : options.rmaSets()) {
            if (!options.amSets().contains(amTransports(tls))) {
                throw new IllegalArgumentException("RMA set " + tls + " needs its AM lane measured: add "
                        + amTransports(tls) + " to the AM sets");
            }
            rmaLane(tables.get(tls)); // fails now if the set has no RMA lane
            for (int i = 0; i < RMA_SIZES.length; i++) {
                steps.add(new Step(tls, "read" + i, "rndv/get/zcopy", PerfTestType.TAG_LAT, RMA_SIZES[i], true));
            }
            for (int i = 0; i < RNDV_SIZES.length; i++) {
                // Against the AM lane's eager at the same size, run right after it and its rendezvous: each round's
                // difference is taken (pairedDifference), so the two runs are kept close in time.
                int eager = steps.indexOf(step(steps, amTransports(tls), "eager" + i));
                steps.add(eager + 2, new Step(tls, "vsEager" + i, "rndv/get/zcopy", PerfTestType.TAG_LAT,
                        RNDV_SIZES[i], true));
            }
        }
        return steps;
    }

    /** "shm" of "shm,cma": the AM transports of an RMA set. */
    private static String amTransports(String tls) {
        return String.join(",", Arrays.stream(tls.split(",")).filter(t -> !t.equals("cma")).toList());
    }

    private static Step step(List<Step> steps, String tls, String role) {
        return steps.stream().filter(s -> s.tls.equals(tls) && s.role.equals(role)).findFirst().orElseThrow();
    }

    /**
     * The median over the rounds of what {@code a} took beyond {@code b} in the same round. Why not the difference of
     * the two medians: this machine changes speed within seconds, so one protocol's median and the other's can come
     * from different modes, while two runs of one round, close in time ({@link #steps}), share one.
     */
    static double pairedDifference(List<Double> a, List<Double> b) {
        if (a.size() != b.size() || a.isEmpty()) {
            throw new IllegalArgumentException("paired runs need the same number of rounds (at least one): got "
                    + a.size() + " and " + b.size());
        }
        double[] d = new double[a.size()];
        for (int i = 0; i < d.length; i++) {
            d[i] = a.get(i) - b.get(i);
        }
        return SweepCsv.median(d);
    }

    private static double median(List<Step> steps, String tls, String role) {
        return SweepCsv.median(step(steps, tls, role).times.stream().mapToDouble(d -> d).toArray());
    }

    /** The last size {@code protocol} covers in {@code table}. */
    private static long rangeEnd(ProtoTable table, String protocol) {
        for (ProtoCandidate c : table.candidates()) {
            if (c.protocol().name().equals(protocol)) {
                List<ProtoPerf.Flat> flat = c.perf().flatten(false);
                return flat.get(flat.size() - 1).end();
            }
        }
        throw new IllegalStateException("no " + protocol + " in the table:\n" + table.format("calibrate"));
    }

    /** What {@code protocol}'s candidate in {@code table} prices one {@code size}-byte message at, seconds. */
    static double costAt(ProtoTable table, String protocol, long size) {
        for (ProtoCandidate c : table.candidates()) {
            if (c.protocol().name().equals(protocol)) {
                double cost = c.perf().singleCost(size);
                if (Double.isNaN(cost)) {
                    throw new IllegalStateException(protocol + " does not cover " + size + " B in the table:\n"
                            + table.format("calibrate"));
                }
                return cost;
            }
        }
        throw new IllegalStateException("no " + protocol + " in the table:\n" + table.format("calibrate"));
    }

    /** The AM lane's name, as eager short's candidate names it ("tcp/lo"). */
    static String amLane(ProtoTable table) {
        for (ProtoCandidate c : table.candidates()) {
            if (c.protocol().name().equals("egr/short")) {
                return c.config();
            }
        }
        throw new IllegalStateException("no eager short in the table:\n" + table.format("calibrate"));
    }

    /** The RMA lane's name, from rendezvous get's candidate ("shm/memory + cma/memory"). */
    static String rmaLane(ProtoTable table) {
        for (ProtoCandidate c : table.candidates()) {
            if (c.protocol().name().equals("rndv/get/zcopy")) {
                String[] lanes = c.config().split(" \\+ ");
                return lanes[lanes.length - 1];
            }
        }
        throw new IllegalArgumentException("no rendezvous read (rndv/get/zcopy) in this set's table: no RMA lane");
    }

    private static PerfParams params(PerfTestType test, long size, long iterations, double percentile) {
        return new PerfParams(test, (int) size, iterations, Math.max(Sweep.MIN_ITERATIONS, iterations / 10),
                PerfParams.DEFAULT_WINDOW, percentile, PerfDatatype.CONTIG).withSettle(0); // as the sweep's
    }

    /**
     * memcpy bandwidth, bytes/s: 64 KiB copies between direct memory (a fragment's size: what the copy protocols move
     * per call, and cache-resident as at the crossovers where copy cost decides), median of five 100 ms runs after two
     * unrecorded ones.
     */
    static double copyBandwidth() {
        return SweepCsv.median(CopyRate.windows(2, 5, 100_000_000L));
    }

    /**
     * A cma lane's registration cost {c, m}: exposing (and closing) a buffer of 4 KiB, 1 MiB and 16 MiB as rendezvous
     * get's sender does (an iface-wide key, {@link RmaIface#registerMemory}), timed on its loop, fitted to a line.
     * Timed on a lane, as it was while each registration opened and closed the lane's watch on its peer
     * ({@code PeerExit} now keeps it), it cost 1.7-2.4 us, where a whole 8-byte read by get takes 2.5 us one way.
     */
    static double[] registrationCost() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        EventLoop loop = group.next();
        NucxConfig config = NucxConfig.fromEnvironment();
        CmaTransport transport = new CmaTransport();
        Iface opened = loop.submit(() -> transport.openIface(new IfaceParams(loop, CmaTransport.MEMORY,
                ChannelInboundHandlerAdapter::new, config))).get(60, TimeUnit.SECONDS);
        RmaIface iface = (RmaIface) opened;
        try (Arena arena = Arena.ofShared()) {
            long[] sizes = {4096, 1 << 20, 16 << 20};
            double[] x = new double[sizes.length];
            double[] y = new double[sizes.length];
            for (int i = 0; i < sizes.length; i++) {
                MemorySegment buf = arena.allocate(sizes[i], 4096);
                x[i] = sizes[i];
                y[i] = loop.submit(() -> {
                    int n = 20_000;
                    for (int k = 0; k < n; k++) { // warm
                        timeOne(iface, buf);
                    }
                    long start = System.nanoTime();
                    for (int k = 0; k < n; k++) {
                        timeOne(iface, buf);
                    }
                    return (System.nanoTime() - start) / 1e9 / n;
                }).get(60, TimeUnit.SECONDS);
            }
            double[] line = ProfileFit.line(x, y);
            return new double[] {Math.max(0, line[0]), Math.max(0, line[1])};
        } finally {
            loop.submit(opened::close).get(60, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    private static void timeOne(RmaIface iface, MemorySegment buf) {
        MemoryRegistration reg = iface.registerMemory(buf);
        if (reg.packedKey().length == 0) {
            throw new IllegalStateException("empty key");
        }
        reg.close();
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "(unknown host)";
        }
    }
}
