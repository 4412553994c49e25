package io.nucx.examples.perf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The rows a sweep writes, one per run: {@code runs.csv}. The bench script writes ucx_perftest's runs in the same
 * columns (tool {@code ucx}, config {@code ucx}), so one reader serves both.
 *
 * <pre>
 * tool,tls,test,size,config,round,iterations,percentile,pct_us,overall_us,bandwidth_mbs,msg_rate,carried_by,chosen,...
 * nucx,tcp,tag_lat,8,auto,0,55000,50,4.9,5.3,1.44,188000,egr/short,egr/short,1.21,2026-11-23T02:10:04Z
 * </pre>
 * <ul>
 *   <li>{@code tls}: the transports, {@code +} between them ({@code shm+cma}: NUCX_TLS=shm,cma);</li>
 *   <li>{@code config}: {@code auto} (the engine's choice), or the protocol forced by hand ({@link ForcedProtocol});</li>
 *   <li>{@code overall_us}: time per message over the measured run (one-way latency for tag_lat, send interval for
 *       tag_bw); {@code pct_us} the {@code percentile}th percentile of its iterations (ucx_perftest's {@code -R}),
 *       which a machine busy with other work disturbs less (ping-pong tests); runs are compared by one of the two
 *       ({@link SweepSummary.Metric}); bandwidth in MiB/s as ucx_perftest's;</li>
 *   <li>{@code carried_by}: the protocol that sent most of the client's messages (its counters), {@code -} if
 *       unknown; {@code chosen}: the protocol the engine's table names for this size;</li>
 *   <li>{@code load1}: the 1-minute load average when the run started.</li>
 * </ul>
 */
public final class SweepCsv {

    public static final String HEADER = "tool,tls,test,size,config,round,iterations,percentile,pct_us,overall_us,"
            + "bandwidth_mbs,msg_rate,carried_by,chosen,load1,time";
    /** Columns of {@link #HEADER}. */
    static final int COLUMNS = 16;
    /** The config of the engine's own choice. */
    public static final String AUTO = "auto";

    /** One run. */
    public record Row(String tool, String tls, String test, long size, String config, int round, long iterations,
                      double percentile, double pctUs, double overallUs, double bandwidthMbs, double msgRate, String carriedBy,
                      String chosen, double load1, String time) {

        public Row {
            for (String f : new String[] {tool, tls, test, config, carriedBy, chosen, time}) {
                if (f.isEmpty() || f.contains(",") || f.contains("\n")) {
                    throw new IllegalArgumentException("CSV field '" + f + "' must be non-empty, without commas");
                }
            }
        }

        public String format() {
            return String.join(",", tool, tls, test, Long.toString(size), config, Integer.toString(round),
                    Long.toString(iterations), num(percentile), num(pctUs), num(overallUs), num(bandwidthMbs), num(msgRate), carriedBy,
                    chosen, num(load1), time);
        }
    }

    private SweepCsv() {
    }

    /** The tls column of NUCX_TLS's value: commas become {@code +}. */
    public static String tlsLabel(String tls) {
        return tls.replace(',', '+');
    }

    private static String num(double v) {
        return String.format(Locale.ROOT, "%.6g", v);
    }

    /** Parses one line of {@code runs.csv}; {@code where} names it in errors. */
    public static Row parse(String line, String where) {
        String[] f = line.split(",", -1);
        if (f.length != COLUMNS) {
            throw new IllegalArgumentException(where + ": expected " + COLUMNS + " columns (" + HEADER + "), got "
                    + f.length
                    + ": '" + line + "'");
        }
        try {
            return new Row(f[0], f[1], f[2], Long.parseLong(f[3]), f[4], Integer.parseInt(f[5]), Long.parseLong(f[6]),
                    Double.parseDouble(f[7]), Double.parseDouble(f[8]), Double.parseDouble(f[9]),
                    Double.parseDouble(f[10]), Double.parseDouble(f[11]), f[12], f[13], Double.parseDouble(f[14]), f[15]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(where + ": " + e.getMessage() + " in '" + line + "'");
        }
    }

    /** Every row of a runs file (with its header line). */
    public static List<Row> read(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        if (lines.isEmpty() || !lines.get(0).equals(HEADER)) {
            throw new IllegalArgumentException(file + ": the first line must be the header " + HEADER);
        }
        List<Row> rows = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            if (!lines.get(i).isBlank()) {
                rows.add(parse(lines.get(i), file + " line " + (i + 1)));
            }
        }
        return rows;
    }

    /** The median of {@code values} (the mean of the middle two for an even count). */
    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
