package io.nucx.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rates measured at start and shared by a host's processes through a real file: who measures, who reads, and when
 * not.
 */
class SharedRatesTest {

    private static final long HOUR = TimeUnit.HOURS.toNanos(1);

    /** A measurement that counts its runs and gives a figure of its own run number. */
    private static final class Counting implements SharedRates.Measurement {
        final AtomicInteger runs = new AtomicInteger();

        @Override
        public double[] measure() {
            return new double[] {1e9 * runs.incrementAndGet(), 0.5};
        }
    }

    @Test
    void theFirstMeasuresAndSharesTheOthersReadUntilTheFiguresAreTooOld(@TempDir Path dir) throws IOException {
        Counting m = new Counting();
        SharedRates.Entry first = SharedRates.obtain(dir, HOUR, "x", m);
        assertEquals(1, m.runs.get());
        assertTrue(first.measuredHere());
        Path file = dir.resolve(SharedRates.fileName("x"));
        assertEquals(file, first.file());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)),
                "the figures are the user's alone");

        SharedRates.Entry second = SharedRates.obtain(dir, HOUR, "x", m);
        assertEquals(1, m.runs.get(), "read, not measured again");
        assertArrayEquals(first.values(), second.values());
        assertEquals(first.measuredAt(), second.measuredAt());

        SharedRates.Entry stale = SharedRates.obtain(dir, 0, "x", m);
        assertEquals(2, m.runs.get(), "no age allowed: measured again");
        assertEquals(2e9, stale.values()[0]);
        assertArrayEquals(stale.values(), SharedRates.obtain(dir, HOUR, "x", m).values(), "and shared again");
        assertEquals(2, m.runs.get());
        assertEquals(1, SharedRates.obtain(dir, HOUR, "y", new Counting()).values()[0] / 1e9,
                "each figure has its own file");
    }

    @Test
    void aDamagedOrForeignFileIsMeasuredPastAndRewritten(@TempDir Path dir) throws IOException {
        Path file = dir.resolve(SharedRates.fileName("x"));
        List<String> bad = List.of("", "garbage", "nucx-rates 0\nmeasured=2026-01-01T00:00:00Z\npid=1\nvalues=1\n",
                SharedRates.FORMAT + "\nmeasured=yesterday\npid=1\nvalues=1\n",
                SharedRates.FORMAT + "\nmeasured=2026-01-01T00:00:00Z\npid=1\nvalues=-5\n",
                SharedRates.FORMAT + "\nmeasured=2026-01-01T00:00:00Z\npid=1\nvalues=NaN\n",
                SharedRates.FORMAT + "\nmeasured=2999-01-01T00:00:00Z\npid=1\nvalues=7\n"); // from the future
        for (String text : bad) {
            Files.writeString(file, text);
            Counting m = new Counting();
            SharedRates.Entry e = SharedRates.obtain(dir, Long.MAX_VALUE, "x", m);
            assertEquals(1, m.runs.get(), "measured past: " + text);
            assertNotNull(SharedRates.parse(Files.readString(file), file), "rewritten after: " + text);
            assertArrayEquals(e.values(), SharedRates.parse(Files.readString(file), file).values());
        }
    }

    @Test
    void aFailedMeasurementIsNotShared(@TempDir Path dir) {
        SharedRates.Entry failed = SharedRates.obtain(dir, HOUR, "x", () -> null);
        assertNull(failed.values());
        Counting m = new Counting();
        SharedRates.obtain(dir, HOUR, "x", m);
        assertEquals(1, m.runs.get(), "the next process measures");
    }

    @Test
    void withoutADirectoryOrThroughALinkEachProcessMeasuresAlone(@TempDir Path dir) throws IOException {
        Counting m = new Counting();
        assertNull(SharedRates.obtain(null, HOUR, "x", m).file());
        assertNull(SharedRates.obtain(null, HOUR, "x", m).file());
        assertEquals(2, m.runs.get());

        // A name another user could have made in a shared directory: a link is not followed, its target untouched.
        Path target = Files.writeString(dir.resolve("target"), "keep");
        Files.createSymbolicLink(dir.resolve(SharedRates.fileName("x")), target);
        SharedRates.Entry e = SharedRates.obtain(dir, HOUR, "x", m);
        assertEquals(3, m.runs.get());
        assertNull(e.file(), "measured alone");
        assertEquals("keep", Files.readString(target));
    }

    @Test
    void theDirectoryIsTakenFromTheConfigurationAndABadOneStopsStartUp(@TempDir Path dir) {
        assertNull(SharedRates.directory(NucxConfig.of(Map.of("RATES_DIR", "none"))));
        assertEquals(dir, SharedRates.directory(NucxConfig.of(Map.of("RATES_DIR", dir.toString()))));
        assertNotNull(SharedRates.directory(NucxConfig.of(Map.of())));
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> NucxConfig.of(Map.of("RATES_DIR", dir.resolve("missing").toString())).validate());
        assertTrue(e.getMessage().contains("RATES_DIR") && e.getMessage().contains("no such directory"),
                e.getMessage());
        assertThrows(NucxConfigException.class, () -> NucxConfig.of(Map.of("RATES_MAX_AGE", "soon")).validate());
    }

    /**
     * Processes that start together: real JVMs, each obtaining a figure whose measurement takes 400 ms. One measures
     * under the file's lock; the others wait for it and read its figure, so all use the same.
     */
    @Test
    void ofProcessesStartingTogetherOneMeasuresAndTheOthersReadItsFigures(@TempDir Path dir) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<Process> processes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            processes.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                    RatesProbe.class.getName(), dir.toString()).redirectErrorStream(true).start());
        }
        List<String> lines = new ArrayList<>();
        for (Process p : processes) {
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "a probe did not finish");
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertEquals(0, p.exitValue(), out);
            lines.add(out);
        }
        long measured = lines.stream().filter(l -> l.endsWith(" measured")).count();
        assertEquals(1, measured, "one measured: " + lines);
        String figure = lines.get(0).split(" ")[0];
        assertTrue(lines.stream().allMatch(l -> l.startsWith(figure + " ")), "all use one figure: " + lines);
        assertFalse(figure.isEmpty());
    }

    /** A process stuck while it holds the file's lock (here: it sleeps) does not hold up another's start. */
    @Test
    void aProcessStuckHoldingTheLockIsNotWaitedFor(@TempDir Path dir) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process holder = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                LockHolder.class.getName(), dir.resolve(SharedRates.fileName("x")).toString())
                .redirectErrorStream(true).start();
        try {
            assertEquals("locked", new String(holder.getInputStream().readNBytes(6), StandardCharsets.UTF_8));
            Counting m = new Counting();
            long t0 = System.nanoTime();
            SharedRates.Entry e = SharedRates.obtain(dir, HOUR, "x", m);
            long waited = System.nanoTime() - t0;
            assertEquals(1, m.runs.get());
            assertNull(e.file(), "measured alone");
            assertTrue(waited >= SharedRates.LOCK_WAIT_NANOS && waited < SharedRates.LOCK_WAIT_NANOS * 5,
                    "waited " + waited / 1_000_000 + " ms");
        } finally {
            holder.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Locks the file it is given, says so, and sleeps. */
    public static final class LockHolder {
        public static void main(String[] args) throws Exception {
            try (var channel = FileChannel.open(Path.of(args[0]),
                    StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                 var lock = channel.lock()) {
                System.out.print("locked");
                System.out.flush();
                Thread.sleep(60_000);
            }
        }
    }

    /**
     * One process of the test of processes starting together: prints its figure (the pid that measured it) and
     * whether it measured.
     */
    public static final class RatesProbe {
        public static void main(String[] args) {
            SharedRates.Entry e = SharedRates.obtain(Path.of(args[0]), HOUR, "probe", () -> {
                try {
                    Thread.sleep(400);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
                return new double[] {ProcessHandle.current().pid()};
            });
            System.out.println((long) e.values()[0] + (e.measuredHere() ? " measured" : " read"));
        }
    }
}
