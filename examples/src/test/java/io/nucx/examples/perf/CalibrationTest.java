package io.nucx.examples.perf;

import io.nucx.protocol.select.PerfProfile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A short calibration end to end over tcp (server on a thread of this JVM, real lanes, blocking loops): every step ran,
 * the profile reads back with the lane's figures, the eager surcharge and the rendezvous surcharge were fitted in the
 * second pass, the latter from the forced rendezvous and eager runs at both sizes: as figures, or as the note that says
 * why there are none; with the same bytes in every message and with fresh ones ({@code --fresh-data}), as the
 * profile's comments say. Nothing about the times is asserted. About 100 s each here (fresh data, the 4 MiB runs
 * writing their buffers: 190).
 */
@Timeout(600)
class CalibrationTest {

    /**
     * The rendezvous against eager round by round: tcp's 256 KiB runs of the 2026-12-06 08:51 calibration, where the
     * difference of the two medians made the rendezvous 96.7 us the faster and each round's difference made it 9.8 us
     * the slower, as every run of the sweep after it found.
     */
    @Test
    void theRendezvousIsComparedWithEagerRoundByRound() {
        List<Double> eager = List.of(51.520e-6, 173.952e-6, 169.727e-6);
        List<Double> rndv = List.of(61.312e-6, 188.032e-6, 73.023e-6);
        assertEquals(9.792e-6, Calibration.pairedDifference(rndv, eager), 1e-12);
        assertThrows(IllegalArgumentException.class, () -> Calibration.pairedDifference(rndv, eager.subList(0, 2)));
        assertThrows(IllegalArgumentException.class, () -> Calibration.pairedDifference(List.of(), List.of()));
    }

    @ParameterizedTest(name = "fresh data: {0}")
    @ValueSource(booleans = {false, true})
    void aCalibrationWritesAProfileWithTheLanesFiguresAndItsRendezvousSurchargeFitted(boolean fresh,
                                                                                     @TempDir Path dir)
            throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        Path out = dir.resolve("profile.txt");
        ProfileFit.Result fit;
        String served;
        try (SweepServerOnThread server = new SweepServerOnThread()) {
            fit = new Calibration(server.runner(), new Calibration.Options(List.of("tcp"), List.of(), 1, 5_000_000L, 0,
                    50, out, "test", fresh), new PrintStream(log, true, StandardCharsets.UTF_8)).run();
            served = server.log();
        }
        String printed = log.toString(StandardCharsets.UTF_8);
        // Every measured run (a protocol forced) reached the server with the data mode asked for; the runs that only
        // ask for the tables force nothing.
        List<String> measured = served.lines().filter(l -> l.startsWith("run ") && l.contains("PROTOS=")).toList();
        assertFalse(measured.isEmpty(), served);
        for (String run : measured) {
            assertTrue(run.endsWith(fresh ? " fresh" : " same"), run);
        }
        PerfProfile back = PerfProfile.read(out);
        assertEquals(fit.profile().format(List.of()), back.format(List.of()), printed);
        for (PerfProfile.Figure f : List.of(PerfProfile.Figure.LATENCY, PerfProfile.Figure.OVERHEAD,
                PerfProfile.Figure.BANDWIDTH)) {
            assertFalse(Double.isNaN(back.figure("tcp/lo", f)), f + "\n" + printed);
        }
        String text = Files.readString(out);
        for (long size : Calibration.RNDV_SIZES) {
            for (String protocol : List.of("egr/multi/bcopy", "tag/rndv")) {
                assertTrue(text.matches("(?s).*#   tcp +" + protocol + " +tag_lat +" + size + " B: \\[[0-9.]+\\] us.*"),
                        protocol + " at " + size + " B in the comments\n" + text);
            }
        }
        boolean surcharge = !Double.isNaN(back.figure("tcp/lo", PerfProfile.Figure.RNDV_COST));
        assertEquals(surcharge, !Double.isNaN(back.figure("tcp/lo", PerfProfile.Figure.RNDV_GROWTH)), text);
        assertTrue(surcharge || text.contains("# note: tcp/lo: the rendezvous took"), text);
        // The eager surcharge too, in the same pass: what the larger copy send took beyond its price (0 with a note
        // where it took less), charged from the smaller send's size on.
        assertFalse(Double.isNaN(back.figure("tcp/lo", PerfProfile.Figure.EAGER_COST)), text);
        assertTrue(back.figure("tcp/lo", PerfProfile.Figure.EAGER_FROM) >= 256, text);
        assertFalse(text.contains("being fitted"), "the second pass replaced the first's file\n" + text);
        assertTrue(text.contains(fresh ? "s sending fresh data;" : "s sending one unchanged buffer;"), text);
        assertTrue(printed.contains("calibrated tcp"), printed);
    }
}
