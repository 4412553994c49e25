package io.nucx.examples.perf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;

/**
 * nucx's sweep beside ucx_perftest's runs of the same sizes ({@code bench/sweep.sh}): per transport set a PNG of both
 * curves and their ratio ({@code compare-<tls>-<test>.png}), and the markdown tables ({@link SweepSummary}) with
 * both times and nucx / UCX next to the engine's choice against the best forced protocol.
 */
public final class SweepReport {

    private SweepReport() {
    }

    /**
     * Reads every runs file, writes {@code summary.csv}, {@code recheck.csv} (the misses to run again in turns),
     * {@code report.md} and the plots to {@code out}.
     */
    public static List<SweepSummary.Point> write(List<Path> runs, Path out, String plotPrefix,
                                                 SweepSummary.Metric metric) throws IOException {
        List<SweepCsv.Row> rows = new ArrayList<>();
        for (Path p : runs) {
            rows.addAll(SweepCsv.read(p));
        }
        Files.createDirectories(out);
        List<SweepSummary.Point> points = SweepSummary.of(rows, metric);
        Files.writeString(out.resolve("summary.csv"), SweepSummary.csv(points), StandardCharsets.UTF_8);
        Files.writeString(out.resolve("recheck.csv"), SweepSummary.recheckCsv(points), StandardCharsets.UTF_8);
        TreeSet<String> sets = new TreeSet<>();
        points.forEach(p -> sets.add(p.tls() + "|" + p.test()));
        StringBuilder md = new StringBuilder(SweepSummary.markdown(points));
        for (String set : sets) {
            String tls = set.substring(0, set.indexOf('|'));
            String test = set.substring(set.indexOf('|') + 1);
            List<SweepSummary.Point> ps = points.stream().filter(p -> p.tls().equals(tls) && p.test().equals(test)
                    && !Double.isNaN(p.ucxUs()) && !Double.isNaN(p.autoUs())).toList();
            if (ps.isEmpty()) {
                continue;
            }
            String name = "compare-" + tls + "-" + test + ".png";
            double[] x = ps.stream().mapToDouble(SweepSummary.Point::size).toArray();
            double[] nucx = ps.stream().mapToDouble(SweepSummary.Point::autoUs).toArray();
            double[] ucx = ps.stream().mapToDouble(SweepSummary.Point::ucxUs).toArray();
            double[] ratio = ps.stream().mapToDouble(SweepSummary.Point::ucxRatio).toArray();
            double[] ones = new double[x.length];
            Arrays.fill(ones, 1.0);
            SweepPlot.write(out.resolve(name).toFile(), "nucx (engine's choice) and ucx_perftest 1.13, " + test
                    + " over " + tls + ", same run; " + ps.get(0).metric(), List.of(new SweepPlot.Series("ucx_perftest", x, ucx, false, false),
                    new SweepPlot.Series("nucx", x, nucx, true, false)),
                    List.of(new SweepPlot.Series("ucx_perftest", x, ones, false, false),
                            new SweepPlot.Series("nucx", x, ratio, true, false)), "time / UCX's time", 1.0, List.of());
            md.append("![").append(test).append(" over ").append(tls).append(", nucx and UCX](").append(plotPrefix)
                    .append(name).append(")\n\n");
        }
        Files.writeString(out.resolve("report.md"), md, StandardCharsets.UTF_8);
        return points;
    }
}
