package io.nucx.examples.perf;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What a sweep's runs say, per transport set and size: the median time of the engine's choice ({@code auto}) and of
 * each protocol forced by hand, the best of those, and whether the choice was within {@link #TOLERANCE} of the best
 * (issue #15's bar). Forced runs that another protocol carried (the counters disagree with the config) are left out:
 * they measured something else. With ucx_perftest's runs beside them, nucx's auto against UCX's, as a ratio.
 */
public final class SweepSummary {

    /** The engine's choice passes if its time is at most this much over the best forced protocol's. */
    public static final double TOLERANCE = 0.10;

    /** Which time of a run the comparison uses. */
    public enum Metric {
        /** The run's average time per message (ucx_perftest's "overall"): what the cost model predicts. */
        OVERALL("overall average"),
        /**
         * The run's percentile of per-iteration times ({@code -R}, e.g. 10): on a machine busy with other work a low
         * percentile is the time of the iterations nothing preempted, so it compares protocols where the average
         * cannot (ping-pong tests; a stream's per-completion intervals are bursty).
         */
        PERCENTILE("percentile");

        private final String label;

        Metric(String label) {
            this.label = label;
        }

        double of(SweepCsv.Row r) {
            return this == OVERALL ? r.overallUs() : r.pctUs();
        }

        String describe(double percentile) {
            return this == OVERALL ? label : String.format(Locale.ROOT, "%.0fth percentile of iterations",
                    percentile);
        }

        public static Metric of(String name) {
            for (Metric m : values()) {
                if (m.name().equalsIgnoreCase(name)) {
                    return m;
                }
            }
            throw new IllegalArgumentException("unknown metric '" + name + "' (overall | percentile)");
        }
    }

    /** One size of one transport set. */
    public record Point(String tls, String test, long size, String chosen, double autoUs,
                        Map<String, Double> forcedUs, String best, double bestUs, double ucxUs, double load1,
                        String metric) {
        /** The engine's time over the best forced time (1.0: it chose the best). NaN if either is missing. */
        public double ratio() {
            return autoUs / bestUs;
        }

        public boolean withinTolerance() {
            return ratio() <= 1 + TOLERANCE;
        }

        /**
         * The engine chose the protocol that was the best forced one. A miss then compares one protocol's runs with
         * its own: the machine's spread from run to run (this one switches speed within seconds), not a wrong choice.
         */
        public boolean choseTheBest() {
            return chosen.equals(best);
        }

        /** nucx's auto over ucx_perftest's, NaN without a ucx run. */
        public double ucxRatio() {
            return autoUs / ucxUs;
        }
    }

    private SweepSummary() {
    }

    /** The points of {@code rows} by their overall times. */
    public static List<Point> of(List<SweepCsv.Row> rows) {
        return of(rows, Metric.OVERALL);
    }

    /** The points of {@code rows} (nucx and ucx runs of any transport set), by transport set then size. */
    public static List<Point> of(List<SweepCsv.Row> rows, Metric metric) {
        record Key(String tls, String test, long size) {
        }
        Map<Key, List<SweepCsv.Row>> byKey = new LinkedHashMap<>();
        for (SweepCsv.Row r : rows) {
            byKey.computeIfAbsent(new Key(r.tls(), r.test(), r.size()), k -> new ArrayList<>()).add(r);
        }
        List<Point> out = new ArrayList<>();
        for (Map.Entry<Key, List<SweepCsv.Row>> e : byKey.entrySet()) {
            Map<String, List<Double>> times = new TreeMap<>();
            String chosen = "-";
            double ucx = Double.NaN;
            List<Double> ucxTimes = new ArrayList<>();
            List<Double> loads = new ArrayList<>();
            for (SweepCsv.Row r : e.getValue()) {
                loads.add(r.load1());
                if (r.tool().equals("ucx")) {
                    ucxTimes.add(metric.of(r));
                    continue;
                }
                chosen = r.chosen();
                boolean verified = r.config().equals(SweepCsv.AUTO) || r.config().equals(r.carriedBy());
                if (verified) {
                    times.computeIfAbsent(r.config(), k -> new ArrayList<>()).add(metric.of(r));
                }
            }
            if (!ucxTimes.isEmpty()) {
                ucx = median(ucxTimes);
            }
            double auto = times.containsKey(SweepCsv.AUTO) ? median(times.get(SweepCsv.AUTO)) : Double.NaN;
            Map<String, Double> forced = new TreeMap<>();
            String best = "-";
            double bestUs = Double.NaN;
            for (Map.Entry<String, List<Double>> t : times.entrySet()) {
                if (t.getKey().equals(SweepCsv.AUTO)) {
                    continue;
                }
                double m = median(t.getValue());
                forced.put(t.getKey(), m);
                if (Double.isNaN(bestUs) || m < bestUs) {
                    best = t.getKey();
                    bestUs = m;
                }
            }
            out.add(new Point(e.getKey().tls(), e.getKey().test(), e.getKey().size(), chosen, auto, forced, best,
                    bestUs, ucx, median(loads), metric.describe(e.getValue().get(0).percentile())));
        }
        out.sort(Comparator.comparing(Point::tls).thenComparing(Point::test)
                .thenComparingLong(Point::size));
        return out;
    }

    private static double median(List<Double> v) {
        return SweepCsv.median(v.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** {@code summary.csv}: one line per point. */
    public static String csv(List<Point> points) {
        StringBuilder b = new StringBuilder("tls,test,size,chosen,auto_us,best,best_us,auto_over_best,within_10pct,"
                + "ucx_us,auto_over_ucx,load1,chose_best\n");
        for (Point p : points) {
            b.append(String.join(",", p.tls(), p.test(), Long.toString(p.size()), p.chosen(), num(p.autoUs()),
                    p.best(), num(p.bestUs()), num(p.ratio()), Boolean.toString(p.withinTolerance()), num(p.ucxUs()),
                    num(p.ucxRatio()), num(p.load1()), Boolean.toString(p.choseTheBest()))).append('\n');
        }
        return b.toString();
    }

    /**
     * {@code recheck.csv}: the misses where another protocol forced by hand was the faster (not those that chose the
     * best forced protocol, which compare one protocol's runs with its own), each with the settings forcing that
     * protocol as {@code NAME=value} joined by {@code +} (a pair of {@code bench/interleave.py}; the last column, as
     * a value may hold commas), so a script can run the choice and that protocol again side by side in time, where
     * runs one after the other compare a machine that changed speed between them. {@code bound} is the largest
     * choice / best ratio that counts as within {@link #TOLERANCE}, for the script to judge the turns by the same.
     */
    public static String recheckCsv(List<Point> points) {
        StringBuilder b = new StringBuilder("tls,test,size,chosen,best,bound,settings\n");
        for (Point p : points) {
            if (Double.isNaN(p.ratio()) || p.withinTolerance() || p.choseTheBest()
                    || !ForcedProtocol.canForce(p.best())) {
                continue;
            }
            StringBuilder settings = new StringBuilder();
            ForcedProtocol.settings(p.best()).forEach((k, v) -> settings.append(settings.isEmpty() ? "" : "+")
                    .append("NUCX_").append(k).append('=').append(v));
            b.append(String.join(",", p.tls(), p.test(), Long.toString(p.size()), p.chosen(), p.best(),
                    String.format(Locale.ROOT, "%.2f", 1 + TOLERANCE), settings)).append('\n');
        }
        return b.toString();
    }

    /**
     * Markdown tables, one per transport set: each size's choice against the best forced protocol (and against UCX
     * where it ran), ratios over the tolerance in bold, and a line counting them and saying how many of the misses
     * had chosen the best forced protocol itself ({@link Point#choseTheBest}).
     */
    public static String markdown(List<Point> points) {
        StringBuilder b = new StringBuilder();
        TreeSet<String> sets = new TreeSet<>();
        points.forEach(p -> sets.add(p.tls() + " " + p.test()));
        for (String set : sets) {
            List<Point> ps = points.stream().filter(p -> (p.tls() + " " + p.test()).equals(set)).toList();
            boolean ucx = ps.stream().anyMatch(p -> !Double.isNaN(p.ucxUs()));
            boolean nucx = ps.stream().anyMatch(p -> !Double.isNaN(p.autoUs()));
            b.append("**").append(set.replace(" ", ", ")).append("** (time per message, us: ").append(ps.get(0).metric())
                    .append(" of each run, median of the rounds)\n\n");
            b.append("| size | engine's choice | auto | best forced | best | auto / best |");
            b.append(ucx ? " ucx_perftest | nucx / UCX |\n" : "\n");
            b.append("|---|---|---|---|---|---|").append(ucx ? "---|---|\n" : "\n");
            int over = 0;
            int overChoseBest = 0;
            int counted = 0;
            for (Point p : ps) {
                String ratio = Double.isNaN(p.ratio()) ? "" : String.format(Locale.ROOT, "%.2f", p.ratio());
                if (!Double.isNaN(p.ratio())) {
                    counted++;
                    if (!p.withinTolerance()) {
                        over++;
                        ratio = "**" + ratio + "**";
                        if (p.choseTheBest()) {
                            overChoseBest++;
                        }
                    }
                }
                b.append("| ").append(size(p.size())).append(" | ").append(nucx ? p.chosen() : "").append(" | ")
                        .append(us(p.autoUs())).append(" | ").append(p.best()).append(" | ").append(us(p.bestUs()))
                        .append(" | ").append(ratio).append(" |");
                if (ucx) {
                    b.append(' ').append(us(p.ucxUs())).append(" | ").append(Double.isNaN(p.ucxRatio()) ? ""
                            : String.format(Locale.ROOT, "%.2f", p.ucxRatio())).append(" |");
                }
                b.append('\n');
            }
            if (counted > 0) {
                b.append('\n').append(counted - over).append(" of ").append(counted).append(" sizes within ")
                        .append((int) Math.round(TOLERANCE * 100)).append(" % of the best forced protocol.");
                if (overChoseBest > 0) {
                    b.append(' ').append(overChoseBest).append(" of the ").append(over)
                            .append(over == 1 ? " miss" : " misses")
                            .append(" chose that best protocol itself: its own forced runs were the faster, the spread"
                                    + " between runs of one protocol, not a wrong choice.");
                }
                b.append('\n');
            }
            b.append('\n');
        }
        return b.toString();
    }

    private static String num(double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.6g", v);
    }

    private static String us(double v) {
        if (Double.isNaN(v)) {
            return "";
        }
        return v >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.3g", v);
    }

    /** 8, 1K, 64M; other sizes as they are. */
    static String size(long v) {
        if (v >= 1 << 20 && v % (1 << 20) == 0) {
            return (v >> 20) + "M";
        }
        if (v >= 1 << 10 && v % (1 << 10) == 0) {
            return (v >> 10) + "K";
        }
        return Long.toString(v);
    }
}
