package io.nucx.examples.perf;

import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoTable;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * {@code nucx perftest --sweep}: every message size from {@code minSize} to {@code maxSize} (powers of two and both
 * sides of each crossover of the engine's protocol table), over each transport set, run with the protocol the engine
 * picks by itself ({@code auto}) and with each protocol it could have picked forced by hand ({@link ForcedProtocol}),
 * against a {@link SweepServer}. The runs at one size follow each other back to back, {@code rounds} times, the order
 * rotated each round, so a change in the machine's load falls on every protocol alike; each run lasts about
 * {@code runNanos}. Writes {@code runs.csv} (every run, {@link SweepCsv}), {@code summary.csv} and {@code summary.md}
 * (per size: the choice against the best, {@link SweepSummary}) and a PNG per transport set ({@link SweepPlot}).
 */
public final class Sweep {

    /**
     * @param tls         transport sets, NUCX_TLS values ("tcp", "shm", "shm,cma")
     * @param runNanos    how long each measured run should take (its iterations are sized from earlier runs)
     * @param warmupNanos how long to run unrecorded first, so the JIT compiler is done before anything is measured
     * @param profile     the performance profile both sides load (NUCX_PERF_PROFILE), empty for none: with one, the
     *                    plots also mark where the static model's crossovers would be
     * @param percentile  the percentile of iterations each run also reports (ucx_perftest's -R)
     * @param metric      what runs are compared by: their average, or that percentile
     * @param command     how the sweep was started, for summary.md
     * @param freshData   both sides write their send buffer before each send ({@code --fresh-data})
     */
    public record Options(List<String> tls, PerfTestType test, long minSize, long maxSize, int rounds, long runNanos,
                          long warmupNanos, int window, Path out, String profile, double percentile,
                          SweepSummary.Metric metric, String command, boolean freshData) {

        /** Runs that send one unchanged buffer, as ucx_perftest's do. */
        public Options(List<String> tls, PerfTestType test, long minSize, long maxSize, int rounds, long runNanos,
                       long warmupNanos, int window, Path out, String profile, double percentile,
                       SweepSummary.Metric metric, String command) {
            this(tls, test, minSize, maxSize, rounds, runNanos, warmupNanos, window, out, profile, percentile, metric,
                    command, false);
        }

        public Options {
            if (!(percentile > 0 && percentile < 100)) {
                throw new IllegalArgumentException("percentile must be in (0, 100), got " + percentile);
            }
            if (minSize < 1 || maxSize < minSize || maxSize > Integer.MAX_VALUE - 64) {
                throw new IllegalArgumentException("sizes must satisfy 1 <= min <= max < 2 GiB, got " + minSize
                        + ".." + maxSize);
            }
            if (rounds < 1 || runNanos <= 0 || warmupNanos < 0 || window < 1 || tls.isEmpty()) {
                throw new IllegalArgumentException("rounds, run time and window must be positive, warm-up >= 0, "
                        + "and at least one transport set");
            }
            tls = List.copyOf(tls);
        }
    }

    /** The tables of one transport set: the engine's, and the static model's when a profile is in effect. */
    private record Tables(ProtoTable auto, ProtoTable staticModel, List<Long> sizes) {
    }

    /** Iterations are at least this many, so one slow message does not make a run. */
    static final long MIN_ITERATIONS = 5;
    static final long MAX_ITERATIONS = 5_000_000;

    private final SweepRunner runner;
    private final Options options;
    private final PrintStream log;
    /** Per "tls|config": the last run's {size, nanoseconds per iteration}, to size the next run. */
    private final Map<String, double[]> pace = new HashMap<>();

    public Sweep(SweepRunner runner, Options options, PrintStream log) {
        this.runner = runner;
        this.options = options;
        this.log = log;
    }

    /** Runs the sweep and writes its files; returns the summary's points. */
    public List<SweepSummary.Point> run() throws Exception {
        Files.createDirectories(options.out());
        Map<String, Tables> tables = new LinkedHashMap<>();
        for (String tls : options.tls()) {
            tables.put(tls, tables(tls));
            log.print(tables.get(tls).auto().format("sweep " + tls));
        }
        warmUp(tables);
        List<SweepCsv.Row> rows = new ArrayList<>();
        Path runsFile = options.out().resolve("runs.csv");
        try (BufferedWriter csv = Files.newBufferedWriter(runsFile, StandardCharsets.UTF_8)) {
            csv.write(SweepCsv.HEADER);
            csv.newLine();
            for (String tls : options.tls()) {
                Tables t = tables.get(tls);
                for (long size : t.sizes()) {
                    List<String> configs = configs(t.auto(), size);
                    for (int round = 0; round < options.rounds(); round++) {
                        for (int k = 0; k < configs.size(); k++) {
                            String config = configs.get((k + round) % configs.size());
                            SweepCsv.Row row = measure(tls, t.auto(), size, config, round);
                            if (row != null) {
                                rows.add(row);
                                csv.write(row.format());
                                csv.newLine();
                                csv.flush();
                            }
                        }
                    }
                }
            }
        }
        List<SweepSummary.Point> points = SweepSummary.of(rows, options.metric());
        Files.writeString(options.out().resolve("summary.csv"), SweepSummary.csv(points), StandardCharsets.UTF_8);
        StringBuilder md = new StringBuilder("Command: `").append(options.command()).append("`; ")
                .append(Instant.now().truncatedTo(ChronoUnit.SECONDS)).append(", load average (1 min) ")
                .append(loadRange(rows)).append(".\n\n").append(SweepSummary.markdown(points));
        Files.writeString(options.out().resolve("summary.md"), md, StandardCharsets.UTF_8);
        for (String tls : options.tls()) {
            Path png = options.out().resolve(plotName(tls, options.test()));
            plot(png, tls, tables.get(tls), rows);
            log.println("plot: " + png);
        }
        log.println("runs: " + runsFile);
        log.print(md);
        return points;
    }

    /** {@code sweep-shm+cma-tag_lat.png}. */
    public static String plotName(String tls, PerfTestType test) {
        return "sweep-" + SweepCsv.tlsLabel(tls) + "-" + test.testName() + ".png";
    }

    private Tables tables(String tls) throws Exception {
        PerfParams probe = params(8, 20);
        ProtoTable auto = runner.run(Map.of("TLS", tls), probe).table();
        ProtoTable staticModel = options.profile().isEmpty() ? null
                : runner.run(Map.of("TLS", tls, "PERF_PROFILE", ""), probe).table();
        TreeSet<Long> sizes = new TreeSet<>();
        for (long s = 1; s <= options.maxSize(); s *= 2) {
            if (s >= options.minSize()) {
                sizes.add(s);
            }
        }
        List<ProtoTable.Entry> entries = auto.entries();
        for (int i = 0; i + 1 < entries.size(); i++) {
            for (long s : new long[] {entries.get(i).end(), entries.get(i).end() + 1}) {
                if (s >= options.minSize() && s <= options.maxSize()) {
                    sizes.add(s);
                }
            }
        }
        return new Tables(auto, staticModel, List.copyOf(sizes));
    }

    /** "auto" and every protocol the engine could pick at {@code size} that settings can force, in table order. */
    static List<String> configs(ProtoTable table, long size) {
        List<String> out = new ArrayList<>();
        out.add(SweepCsv.AUTO);
        for (ProtoCandidate c : table.candidates()) {
            String name = c.protocol().name();
            if (!out.contains(name) && ForcedProtocol.canForce(name) && covers(c, size)) {
                out.add(name);
            }
        }
        return out;
    }

    private static boolean covers(ProtoCandidate c, long size) {
        return !Double.isNaN(c.perf().singleCost(size));
    }

    /** Unrecorded runs over every transport set, a few sizes and all their configs, for {@code warmupNanos}. */
    private void warmUp(Map<String, Tables> tables) throws Exception {
        long deadline = System.nanoTime() + options.warmupNanos();
        if (options.warmupNanos() == 0) {
            return;
        }
        log.println("warming up for " + options.warmupNanos() / 1_000_000_000.0 + " s (not recorded)");
        while (System.nanoTime() < deadline) {
            for (String tls : options.tls()) {
                for (long size : new long[] {8, 4096, 65536, 1 << 20}) {
                    if (size < options.minSize() || size > options.maxSize()) {
                        continue;
                    }
                    for (String config : configs(tables.get(tls).auto(), size)) {
                        if (System.nanoTime() >= deadline) {
                            return;
                        }
                        runOnce(tls, size, config, options.runNanos() / 2);
                    }
                }
            }
        }
    }

    private SweepCsv.Row measure(String tls, ProtoTable auto, long size, String config, int round) {
        double load = loadAverage();
        String time = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        SweepRunner.Run run;
        try {
            run = runOnce(tls, size, config, options.runNanos());
        } catch (Exception e) {
            log.println(String.format(Locale.ROOT, "%-8s %9d %-20s r%d FAILED: %s", tls, size, config, round, e));
            return null;
        }
        PerfResult r = run.result();
        ProtoCandidate chosen = auto.lookup(size);
        String carriedBy = carriedBy(run.protocolCounts(), auto);
        log.println(String.format(Locale.ROOT, "%-8s %9d %-20s r%d %12.3f us  p%.0f %10.3f  by %-18s load %.2f",
                tls, size, config, round, r.overallLatencyUs(), options.percentile(), r.percentileLatencyUs(),
                carriedBy, load));
        return new SweepCsv.Row("nucx", SweepCsv.tlsLabel(tls), options.test().testName(), size, config, round,
                r.iterations(), options.percentile(), r.percentileLatencyUs(), r.overallLatencyUs(), r.overallBandwidth(),
                r.overallMessageRate(), carriedBy, chosen == null ? "-" : chosen.protocol().name(), load, time);
    }

    private SweepRunner.Run runOnce(String tls, long size, String config, long nanos) throws Exception {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("TLS", tls);
        if (!config.equals(SweepCsv.AUTO)) {
            settings.putAll(ForcedProtocol.settings(config));
        }
        long iterations = iterations(tls, config, size, nanos);
        SweepRunner.Run run = runner.run(settings, params(size, iterations));
        PerfResult r = run.result();
        double perIteration = r.overallLatencyUs() * 1000 * (options.test().pingPong() ? 2 : 1);
        pace.put(tls + "|" + config, new double[] {size, perIteration});
        pace.put(tls + "|", new double[] {size, perIteration});
        return run;
    }

    /** Enough iterations for {@code nanos}, from the last run of this config (or any) scaled to {@code size}. */
    long iterations(String tls, String config, long size, long nanos) {
        double[] last = pace.getOrDefault(tls + "|" + config, pace.get(tls + "|"));
        double perIteration = last == null ? 50_000 : last[1] * Math.max(1, size / last[0]);
        return Math.max(MIN_ITERATIONS, Math.min(MAX_ITERATIONS, (long) (nanos / perIteration)));
    }

    private PerfParams params(long size, long iterations) {
        // Not settled: the sweep's unrecorded runs first warm the compiler up, and its figures stay comparable.
        return new PerfParams(options.test(), (int) size, iterations, Math.max(MIN_ITERATIONS, iterations / 10),
                options.window(), options.percentile(), PerfDatatype.CONTIG).withSettle(0)
                .withFreshData(options.freshData());
    }

    /** The table's protocol that sent the most messages, or "-" when none did. */
    static String carriedBy(Map<String, Long> counts, ProtoTable table) {
        String best = "-";
        long most = 0;
        for (ProtoCandidate c : table.candidates()) {
            long n = counts.getOrDefault(c.protocol().name(), 0L);
            if (n > most) {
                most = n;
                best = c.protocol().name();
            }
        }
        return best;
    }

    /** The 1-minute load average, or NaN where the system does not say. */
    static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        }
    }

    private static String loadRange(List<SweepCsv.Row> rows) {
        double lo = rows.stream().mapToDouble(SweepCsv.Row::load1).min().orElse(Double.NaN);
        double hi = rows.stream().mapToDouble(SweepCsv.Row::load1).max().orElse(Double.NaN);
        return String.format(Locale.ROOT, "%.2f to %.2f", lo, hi);
    }

    private void plot(Path png, String tls, Tables t, List<SweepCsv.Row> rows) throws IOException {
        String label = SweepCsv.tlsLabel(tls);
        List<SweepSummary.Point> points = SweepSummary.of(rows.stream().filter(r -> r.tls().equals(label)).toList(),
                options.metric());
        List<String> configs = new ArrayList<>();
        configs.add(SweepCsv.AUTO);
        points.forEach(p -> p.forcedUs().keySet().stream().filter(c -> !configs.contains(c)).forEach(configs::add));
        List<SweepPlot.Series> top = new ArrayList<>();
        List<SweepPlot.Series> ratios = new ArrayList<>();
        for (String config : configs) {
            double[] x = new double[points.size()];
            double[] y = new double[points.size()];
            double[] ratio = new double[points.size()];
            for (int i = 0; i < points.size(); i++) {
                SweepSummary.Point p = points.get(i);
                x[i] = p.size();
                y[i] = config.equals(SweepCsv.AUTO) ? p.autoUs() : p.forcedUs().getOrDefault(config, Double.NaN);
                ratio[i] = y[i] / p.bestUs();
            }
            String name = config.equals(SweepCsv.AUTO) ? "auto (engine's choice)" : config;
            top.add(new SweepPlot.Series(name, x, y, config.equals(SweepCsv.AUTO), false));
            ratios.add(new SweepPlot.Series(name, x, ratio, config.equals(SweepCsv.AUTO), false));
        }
        double[] x = points.stream().mapToDouble(SweepSummary.Point::size).toArray();
        double[] model = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            model[i] = predictedUs(t.auto(), (long) x[i]);
        }
        top.add(new SweepPlot.Series("model of the choice", x, model, false, true));
        List<SweepPlot.Marker> markers = new ArrayList<>(markers(t.auto(), ""));
        if (t.staticModel() != null) {
            markers.addAll(markers(t.staticModel(), "static: ").stream()
                    .map(m -> new SweepPlot.Marker(m.size(), m.label(), true)).toList());
        }
        String title = "nucx " + options.test().testName() + " over " + tls + ": the engine's choice and each protocol "
                + "forced" + (options.profile().isEmpty() ? " (static cost model)" : " (calibrated: "
                + Path.of(options.profile()).getFileName() + ")");
        SweepPlot.write(png.toFile(), title + "; " + points.get(0).metric(), top, ratios, "time / best forced protocol",
                1 + SweepSummary.TOLERANCE, markers);
    }

    /** A marker where each range after the first starts, labelled with its protocol. */
    private static List<SweepPlot.Marker> markers(ProtoTable table, String prefix) {
        List<SweepPlot.Marker> out = new ArrayList<>();
        List<ProtoTable.Entry> e = table.entries();
        for (int i = 1; i < e.size(); i++) {
            out.add(new SweepPlot.Marker(e.get(i).start(), prefix + e.get(i).candidate().protocol().name(), false));
        }
        return out;
    }

    /** What the table's model says the chosen protocol costs at {@code size}, us (one message alone). */
    static double predictedUs(ProtoTable table, long size) {
        ProtoCandidate c = table.lookup(size);
        return c == null ? Double.NaN : c.perf().singleCost(size) * 1e6;
    }
}
