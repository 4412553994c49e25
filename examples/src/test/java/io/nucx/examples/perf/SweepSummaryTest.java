package io.nucx.examples.perf;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The runs file's columns and what the summary makes of its rows. */
class SweepSummaryTest {

    private static SweepCsv.Row row(String tool, String config, long size, int round, double us, String carriedBy) {
        return new SweepCsv.Row(tool, "shm+cma", "tag_lat", size, config, round, 1000, 50, us * 0.9, us, 1.0, 2.0,
                carriedBy, "egr/single/bcopy", 0.75, "2026-11-23T02:10:04Z");
    }

    @Test
    void aRowHasTheHeadersFifteenColumnsAndReadsBackAsItWasWritten() {
        assertEquals(16, SweepCsv.HEADER.split(",").length);
        SweepCsv.Row r = row("nucx", "rndv/get/zcopy", 65536, 2, 12.25, "rndv/get/zcopy");
        String line = r.format();
        assertEquals(16, line.split(",", -1).length, line);
        assertEquals(r, SweepCsv.parse(line, "test"));
        assertEquals("shm+cma", SweepCsv.tlsLabel("shm,cma"));
        assertThrows(IllegalArgumentException.class, () -> row("nucx", "a,b", 1, 0, 1, "-"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SweepCsv.parse("nucx,tcp,tag_lat,8", "runs.csv line 3"));
        assertTrue(e.getMessage().startsWith("runs.csv line 3: expected 16 columns"), e.getMessage());
    }

    @Test
    void theChoiceIsComparedWithTheBestForcedProtocolByMediansAndMisforcedRunsAreLeftOut() {
        List<SweepCsv.Row> rows = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            rows.add(row("nucx", "auto", 65536, round, new double[] {10, 11, 30}[round], "egr/single/bcopy"));
            rows.add(row("nucx", "egr/single/bcopy", 65536, round, new double[] {10.5, 11, 9}[round],
                    "egr/single/bcopy"));
            rows.add(row("nucx", "rndv/get/zcopy", 65536, round, new double[] {8, 9, 10}[round], "rndv/get/zcopy"));
            // forced, but the counters say another protocol carried it: not a measurement of tag/rndv
            rows.add(row("nucx", "tag/rndv", 65536, round, 1, "egr/multi/bcopy"));
            rows.add(row("ucx", "ucx", 65536, round, new double[] {5, 5.5, 6}[round], "-"));
        }
        rows.add(row("nucx", "auto", 8, 0, 1.0, "egr/short"));
        rows.add(row("nucx", "egr/short", 8, 0, 1.05, "egr/short"));
        List<SweepSummary.Point> points = SweepSummary.of(rows);
        assertEquals(2, points.size());
        SweepSummary.Point small = points.get(0);
        assertEquals(8, small.size());
        assertTrue(small.withinTolerance(), "faster than the forced run: ratio " + small.ratio());
        SweepSummary.Point p = points.get(1);
        assertEquals(11, p.autoUs(), "median of 10, 11, 30");
        assertEquals("rndv/get/zcopy", p.best());
        assertEquals(9, p.bestUs());
        assertFalse(p.forcedUs().containsKey("tag/rndv"));
        assertEquals(11 / 9.0, p.ratio(), 1e-12);
        assertFalse(p.withinTolerance());
        assertEquals(5.5, p.ucxUs());
        assertEquals(2.0, p.ucxRatio(), 1e-12);

        String md = SweepSummary.markdown(points);
        assertTrue(md.contains("| 64K | egr/single/bcopy | 11.0 | rndv/get/zcopy | 9.00 | **1.22** | 5.50 | 2.00 |"),
                md);
        assertTrue(md.contains("1 of 2 sizes within 10 % of the best forced protocol.\n"), md);
        assertFalse(p.choseTheBest(), "egr/single/bcopy chosen, rndv/get/zcopy the best");
        SweepSummary.Point byPercentile = SweepSummary.of(rows, SweepSummary.Metric.PERCENTILE).get(1);
        assertEquals(11 * 0.9, byPercentile.autoUs(), 1e-12, "the percentile column's median");
        assertEquals("50th percentile of iterations", byPercentile.metric());
        assertEquals("overall average", p.metric());
        String csv = SweepSummary.csv(points);
        assertTrue(csv.startsWith("tls,test,size,chosen,auto_us,best,best_us,auto_over_best,within_10pct,"), csv);
        assertEquals(3, csv.lines().count());
        assertTrue(csv.lines().skip(2).findFirst().orElseThrow().endsWith(",false"), csv);
    }

    @Test
    void aMissWhereTheChoiceWasTheBestForcedProtocolIsCountedAsTheRunsSpread() {
        List<SweepCsv.Row> rows = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            // 512 B: the engine's choice is the best forced protocol, but its auto runs took longer than its forced
            rows.add(row("nucx", "auto", 512, round, new double[] {0.90, 0.89}[round], "egr/short"));
            rows.add(row("nucx", "egr/short", 512, round, new double[] {0.46, 0.46}[round], "egr/short"));
            rows.add(row("nucx", "egr/single/bcopy", 512, round, 0.70, "egr/single/bcopy"));
            // 64 KiB: a real miss, another protocol was faster
            rows.add(row("nucx", "auto", 65536, round, 12, "egr/multi/bcopy"));
            rows.add(row("nucx", "egr/multi/bcopy", 65536, round, 12, "egr/multi/bcopy"));
            rows.add(row("nucx", "rndv/get/zcopy", 65536, round, 9, "rndv/get/zcopy"));
        }
        List<SweepCsv.Row> chosen = rows.stream().map(r -> r.size() == 512 ? withChosen(r, "egr/short")
                : withChosen(r, "egr/multi/bcopy")).toList();
        List<SweepSummary.Point> points = SweepSummary.of(chosen);
        SweepSummary.Point spread = points.get(0);
        assertEquals("egr/short", spread.best());
        assertTrue(spread.choseTheBest());
        assertFalse(spread.withinTolerance(), "0.895 against 0.46");
        assertFalse(points.get(1).choseTheBest());
        String md = SweepSummary.markdown(points);
        assertTrue(md.contains("0 of 2 sizes within 10 % of the best forced protocol. 1 of the 2 misses chose that "
                + "best protocol itself"), md);
        assertTrue(SweepSummary.csv(points).lines().skip(1).findFirst().orElseThrow().endsWith(",true"));
        // Only the real miss is run again in turns, with the settings that force its best protocol.
        assertEquals("tls,test,size,chosen,best,bound,settings\n"
                + "shm+cma,tag_lat,65536,egr/multi/bcopy,rndv/get/zcopy,1.10,"
                + "NUCX_PROTOS=rndv/get/zcopy,egr/multi/bcopy+NUCX_RNDV_THRESH=0\n", SweepSummary.recheckCsv(points));
    }

    @Test
    void aSizeWithinTheToleranceIsNotRunAgainAndTagRndvIsForcedWithItsScheme() {
        List<SweepCsv.Row> rows = new ArrayList<>();
        rows.add(withChosen(row("nucx", "auto", 4194304, 0, 270, "egr/multi/bcopy"), "egr/multi/bcopy"));
        rows.add(withChosen(row("nucx", "tag/rndv", 4194304, 0, 215, "tag/rndv"), "egr/multi/bcopy"));
        rows.add(withChosen(row("nucx", "auto", 2097152, 0, 116, "egr/multi/bcopy"), "egr/multi/bcopy"));
        rows.add(withChosen(row("nucx", "tag/rndv", 2097152, 0, 111, "tag/rndv"), "egr/multi/bcopy"));
        assertEquals("tls,test,size,chosen,best,bound,settings\n"
                        + "shm+cma,tag_lat,4194304,egr/multi/bcopy,tag/rndv,1.10,"
                        + "NUCX_PROTOS=tag/rndv+NUCX_RNDV_SCHEME=am\n",
                SweepSummary.recheckCsv(SweepSummary.of(rows)), "2 MiB is within 10 %: 116 against 111");
    }

    private static SweepCsv.Row withChosen(SweepCsv.Row r, String chosen) {
        return new SweepCsv.Row(r.tool(), r.tls(), r.test(), r.size(), r.config(), r.round(), r.iterations(),
                r.percentile(), r.pctUs(), r.overallUs(), r.bandwidthMbs(), r.msgRate(), r.carriedBy(), chosen,
                r.load1(), r.time());
    }
}
