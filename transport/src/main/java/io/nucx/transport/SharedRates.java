package io.nucx.transport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Rates measured at start (shm's copy, cma's read), shared by the processes of one host: the first process to need a
 * figure measures it and leaves it in a file; the others read it, for {@link TransportConfig#RATES_MAX_AGE}.
 * <ul>
 *   <li>Start-up: the measurements cost 55-70 ms in a warm JVM and 175-235 in a fresh one (JIT and class loading
 *       included), paid by every process before its first endpoint; a process that finds them pays nothing.</li>
 *   <li>Agreement: the two ends of a connection price protocols with the same figures, as UCX's static ones make its
 *       processes do. Measured apart, two processes' rendezvous thresholds differed by up to 0.15 %.</li>
 *   <li>Accuracy: processes that start together measure one after the other, under the file's lock, not on top of
 *       each other (the ring's hand-off takes both cores of a 2-core machine).</li>
 * </ul>
 * What sharing costs: a figure measured on a busy machine misprices the processes that read it too, for as long as
 * they run. Hence ten minutes by default, not the life of the boot; and bin/build's AOT training run, which times its
 * copies at a fifth of a normal run's rate, shares nothing (NUCX_RATES_DIR=none). Measured per process it is no
 * steadier: this machine's copy rates flip between two modes every 10-30 s (BENCHMARKS.md), so a figure taken at start
 * is a sample of that moment either way.
 *
 * <p>The file is named by the user, the host's id (boot, IPC and PID namespaces: {@link HostId#get()}), the figure, and
 * the processors this process may run on (a process given one measures another way); it is the user's alone
 * (rw-------). A file that cannot be read, parsed or written is measured past, never trusted: the figures are then
 * this process's own.
 */
public final class SharedRates {

    /** The first line of a rates file: its format. */
    static final String FORMAT = "nucx-rates 1";

    /** What this process uses, by figure: read or measured once, then kept for the life of the process. */
    private static final Map<String, Entry> USED = new ConcurrentHashMap<>();

    private static final Set<OpenOption> OPEN_NEW = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
            StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
    private static final Set<OpenOption> OPEN_EXISTING = Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS);

    /** How long a process waits for another's measurement before it measures alone. */
    static final long LOCK_WAIT_NANOS = 2_000_000_000L;

    private SharedRates() {
    }

    /** A measurement: its figures, or null if it failed (then nothing is shared). */
    @FunctionalInterface
    public interface Measurement {
        double[] measure();
    }

    /**
     * Figures and where they came from.
     *
     * @param values     the figures, or null if the measurement failed
     * @param measuredAt when they were measured
     * @param pid        the process that measured them
     * @param file       the file they are shared through, or null if they are this process's alone
     */
    public record Entry(double[] values, Instant measuredAt, long pid, Path file) {

        /** Whether this process measured them itself. */
        public boolean measuredHere() {
            return pid == ProcessHandle.current().pid();
        }

        /** One line for {@code nucx info}: where the figures came from. */
        public String describe() {
            String who = measuredHere() ? "by this process" : "by pid " + pid;
            String at = measuredAt.toString().replaceFirst("\\.\\d+Z$", "Z");
            return "measured " + who + " at " + at + (file == null ? ", not shared" : ", shared in " + file);
        }
    }

    /**
     * The figures {@code name} stands for: this process's if it has them, else the host's shared ones if fresh enough,
     * else measured now and shared. Null if the measurement failed.
     */
    public static double[] get(NucxConfig config, String name, Measurement measurement) {
        return USED.computeIfAbsent(name, n -> obtain(directory(config), config.get(TransportConfig.RATES_MAX_AGE),
                n, measurement)).values();
    }

    /** Where the figures this process uses came from, by name, for those it has obtained. */
    public static Map<String, Entry> used() {
        return Map.copyOf(USED);
    }

    /** The directory rates are shared in, or null for none (each process measures). */
    static Path directory(NucxConfig config) {
        String dir = config.get(TransportConfig.RATES_DIR);
        return switch (dir.toLowerCase(Locale.ROOT)) {
            case "none" -> null;
            case "auto" -> Files.isDirectory(Path.of("/dev/shm")) && Files.isWritable(Path.of("/dev/shm"))
                    ? Path.of("/dev/shm") : Path.of(System.getProperty("java.io.tmpdir"));
            default -> Path.of(dir);
        };
    }

    /**
     * The figures from {@code dir}'s file for {@code name} if measured within {@code maxAgeNanos}, else measured and
     * written there. The file's lock is held from the read to the write, so of processes that start together one
     * measures and the others read. Without a directory, or when the file cannot be used, measured alone.
     */
    static Entry obtain(Path dir, long maxAgeNanos, String name, Measurement measurement) {
        if (dir == null) {
            return measure(measurement, null);
        }
        Path file = dir.resolve(fileName(name));
        Entry fresh = null;
        try (FileChannel channel = open(file); FileLock lock = lock(channel)) {
            if (lock == null) {
                return measure(measurement, null);
            }
            Entry shared = parse(read(channel), file);
            Instant now = Instant.now();
            if (shared != null && !shared.measuredAt().isAfter(now)
                    && shared.measuredAt().plusNanos(maxAgeNanos).isAfter(now)) {
                return shared;
            }
            fresh = measure(measurement, file);
            if (fresh.values() != null) {
                write(channel, fresh);
            }
            return fresh;
        } catch (IOException | RuntimeException e) {
            // Not our file, a full or read-only directory, no locks here: this process's own figures, measured once.
            return fresh != null ? new Entry(fresh.values(), fresh.measuredAt(), fresh.pid(), null)
                    : measure(measurement, null);
        }
    }

    /**
     * The file's lock, or null if another process has held it for {@link #LOCK_WAIT_NANOS}: a measurement takes at
     * most a fifth of that, so the holder is stopped or stuck, and this process does not wait on it.
     */
    private static FileLock lock(FileChannel channel) throws IOException {
        long deadline = System.nanoTime() + LOCK_WAIT_NANOS;
        while (true) {
            FileLock lock = channel.tryLock();
            if (lock != null || System.nanoTime() > deadline) {
                return lock;
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
    }

    /** The file's name: user, host, figure, processors. */
    static String fileName(String name) {
        String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9_.-]", "_");
        return "nucx-rates-" + user + "-" + Long.toHexString(HostId.get()) + "-" + name + "-"
                + Runtime.getRuntime().availableProcessors() + "cpu";
    }

    private static Entry measure(Measurement measurement, Path file) {
        return new Entry(measurement.measure(), Instant.now(), ProcessHandle.current().pid(), file);
    }

    /**
     * The file, made the user's alone if new. A shared directory such as /dev/shm lets anyone create a name: a link
     * is not followed, and a file another user owns is not used.
     */
    private static FileChannel open(Path file) throws IOException {
        try {
            return FileChannel.open(file, OPEN_NEW, PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rw-------")));
        } catch (FileAlreadyExistsException e) {
            Object owner = Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS);
            if (!owner.equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"))) {
                throw new IOException(file + " belongs to uid " + owner);
            }
            return FileChannel.open(file, OPEN_EXISTING);
        }
    }

    private static String read(FileChannel channel) throws IOException {
        long size = channel.size();
        if (size > 4096) {
            return "";
        }
        ByteBuffer buf = ByteBuffer.allocate((int) size);
        while (buf.hasRemaining() && channel.read(buf, buf.position()) > 0) {
            // reads until full or end of file
        }
        return new String(buf.array(), 0, buf.position(), StandardCharsets.UTF_8);
    }

    private static void write(FileChannel channel, Entry entry) throws IOException {
        StringBuilder text = new StringBuilder(FORMAT).append('\n')
                .append("measured=").append(entry.measuredAt()).append('\n')
                .append("pid=").append(entry.pid()).append('\n')
                .append("values=");
        for (int i = 0; i < entry.values().length; i++) {
            text.append(i == 0 ? "" : ",").append(entry.values()[i]);
        }
        ByteBuffer buf = ByteBuffer.wrap(text.append('\n').toString().getBytes(StandardCharsets.UTF_8));
        channel.truncate(0);
        while (buf.hasRemaining()) {
            channel.write(buf, buf.position());
        }
        channel.force(false);
    }

    /** The entry a file's text holds, or null if it holds none this version reads (empty, another format, damaged). */
    static Entry parse(String text, Path file) {
        String[] lines = text.split("\n");
        if (lines.length != 4 || !lines[0].equals(FORMAT) || !lines[1].startsWith("measured=")
                || !lines[2].startsWith("pid=") || !lines[3].startsWith("values=")) {
            return null;
        }
        try {
            Instant at = Instant.parse(lines[1].substring("measured=".length()));
            long pid = Long.parseLong(lines[2].substring("pid=".length()));
            String[] fields = lines[3].substring("values=".length()).split(",");
            double[] values = new double[fields.length];
            for (int i = 0; i < fields.length; i++) {
                values[i] = Double.parseDouble(fields[i]);
                if (!(values[i] > 0) || Double.isInfinite(values[i])) {
                    return null;
                }
            }
            return new Entry(values, at, pid, file);
        } catch (RuntimeException e) {
            return null;
        }
    }
}
