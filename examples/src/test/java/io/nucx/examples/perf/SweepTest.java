package io.nucx.examples.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A short sweep end to end (server on a thread of this JVM, real tcp lanes, blocking loops): the runs file has a row
 * per size, protocol and round, every forced run was carried by the protocol it forced (the client's counters), and
 * the summary and the plot are written. Nothing about the times is asserted.
 */
@Timeout(180)
class SweepTest {

    @Test
    void aSweepWritesARunPerSizeProtocolAndRoundEachForcedRunCarriedByItsProtocol(@TempDir Path out)
            throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        List<SweepSummary.Point> points;
        SweepServerOnThread server = new SweepServerOnThread();
        try (server) {
            points = new Sweep(server.runner(), new Sweep.Options(List.of("tcp"), PerfTestType.TAG_LAT, 64, 128, 1,
                    20_000_000L, 0, 8, out, "", 50, SweepSummary.Metric.OVERALL, "test"), new PrintStream(log, true, StandardCharsets.UTF_8)).run();
        }
        String printed = log.toString(StandardCharsets.UTF_8);
        List<SweepCsv.Row> rows = SweepCsv.read(out.resolve("runs.csv"));
        // 64 and 128 B: auto, egr/short, egr/single/bcopy, egr/multi/bcopy, tag/rndv (tcp: zero-copy from 1 KiB)
        assertEquals(2 * 5, rows.size(), printed);
        for (SweepCsv.Row r : rows) {
            assertEquals("egr/short", r.chosen(), r.toString());
            assertEquals(r.config().equals("auto") ? "egr/short" : r.config(), r.carriedBy(), r.toString());
            assertTrue(r.iterations() >= Sweep.MIN_ITERATIONS && r.overallUs() > 0, r.toString());
        }
        assertEquals(2, points.size());
        assertEquals(3, Files.readAllLines(out.resolve("summary.csv")).size());
        assertTrue(Files.readString(out.resolve("summary.md")).contains("| 64 | egr/short |"),
                Files.readString(out.resolve("summary.md")));
        assertNotNull(ImageIO.read(out.resolve(Sweep.plotName("tcp", PerfTestType.TAG_LAT)).toFile()), "a PNG");
        assertTrue(server.log().contains("quit"));
    }
}
