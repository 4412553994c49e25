package io.nucx.examples.perf;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * How long this JVM's JIT compiler threads have run, so a run can tell whether the compiler is still at work.
 *
 * <p>The JVM's own figure ({@code CompilationMXBean.getTotalCompilationTime}) grows only when a compilation ends, and
 * a C2 compilation of a handler that inlines the whole send path ran for 250 ms and more on a 2-core machine where
 * two loops busy-poll: invisible to it until the end, and all that time it takes CPU from the loops. So this reads
 * the compiler threads' CPU time from Linux ({@code /proc/self/task/T/sched}, nanoseconds, else {@code stat}, clock
 * ticks), which grows while they compile, and adds up each thread's growth (a thread the JVM retires takes nothing
 * back, one it starts counts from its start); elsewhere it falls back on the JVM's figure.
 *
 * <p>Reading it must not keep the compiler busy itself: the bytes are parsed by hand (no decoder, no split, no
 * floating point), a thread's name is read once, the threads are listed again every {@value #RELIST_NANOS} ns, and a
 * reading is reused for {@value #REUSE_NANOS} ns.
 */
public final class JitActivity {

    private static final Path TASKS = Path.of("/proc/self/task");
    /** HotSpot names them "C1 CompilerThread0", "C2 CompilerThread1" ...; Linux keeps 15 characters of a name. */
    private static final byte[] COMPILER_THREAD = "CompilerThre".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SUM_EXEC_RUNTIME = "se.sum_exec_runtime".getBytes(StandardCharsets.US_ASCII);
    /** {@code sysconf(_SC_CLK_TCK)}: 100 on every Linux architecture Java runs on. */
    private static final long NANOS_PER_TICK = 10_000_000L;
    /** A reading younger than this is answered again rather than read anew. */
    static final long REUSE_NANOS = 10_000_000L;
    /**
     * The compiler threads are looked for again this often, half the interval the settling judges: the JVM starts more
     * when its queue grows (while the others are busy, so a reading in between moves anyway) and retires idle ones.
     */
    static final long RELIST_NANOS = 100_000_000L;

    /** Thread directory name to whether it is a compiler thread (a thread's name is read once while it lives). */
    private static Map<String, Boolean> compilerTasks = new HashMap<>();
    /** The compiler threads found at the last listing, and each one's CPU time at the last reading. */
    private static List<Path> compilerThreads = List.of();
    private static final Map<Path, Long> LAST_CPU = new HashMap<>();
    private static long listedAt;
    private static boolean listed;
    /** The compiler threads' growth added up: only ever grows. */
    private static long accumulated;
    private static long lastReading;
    private static long lastReadAt;
    private static boolean read;

    private JitActivity() {
    }

    /**
     * A figure that grows while the JIT compiler works and stays put while it is idle: the CPU time the compiler threads
     * have used since the first reading and before it (nanoseconds), or the JVM's total compilation time where
     * {@code /proc} cannot tell.
     */
    public static synchronized long compilerNanos() {
        long now = System.nanoTime();
        if (read && now - lastReadAt < REUSE_NANOS) {
            return lastReading;
        }
        lastReading = read(now);
        lastReadAt = now;
        read = true;
        return lastReading;
    }

    /** How many compiler threads the last listing found in {@code /proc} (0 where there is none to read). */
    static synchronized int compilerThreadCount() {
        compilerNanos();
        return compilerThreads.size();
    }

    private static long read(long now) {
        try {
            if (!listed || now - listedAt >= RELIST_NANOS) {
                compilerThreads = listCompilerThreads();
                LAST_CPU.keySet().retainAll(compilerThreads);
                listedAt = now;
                listed = true;
            }
            if (!compilerThreads.isEmpty()) {
                for (Path task : compilerThreads) {
                    long cpu = cpuNanos(task);
                    Long before = LAST_CPU.put(task, cpu);
                    long grew = cpu - (before == null ? 0 : before);
                    if (grew > 0) {
                        accumulated += grew;
                    }
                }
                return accumulated;
            }
        } catch (IOException | RuntimeException e) {
            // not readable here (a restricted /proc): the JVM's figure below
        }
        return ManagementFactory.getCompilationMXBean().getTotalCompilationTime() * 1_000_000L;
    }

    /** This process's compiler threads ({@code /proc/self/task/T}); none where there is no such directory. */
    private static List<Path> listCompilerThreads() throws IOException {
        if (!Files.isDirectory(TASKS)) {
            return List.of();
        }
        List<Path> found = new ArrayList<>();
        Map<String, Boolean> names = new HashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                String name = task.getFileName().toString();
                Boolean compiler = compilerTasks.get(name);
                if (compiler == null) {
                    compiler = isCompilerThread(task);
                }
                names.put(name, compiler); // the threads alive now only: an id the kernel reuses is read anew
                if (compiler) {
                    found.add(task);
                }
            }
        }
        compilerTasks = names;
        return found;
    }

    private static boolean isCompilerThread(Path task) throws IOException {
        try {
            return indexOf(Files.readAllBytes(task.resolve("comm")), COMPILER_THREAD, 0) >= 0;
        } catch (IOException e) {
            if (ended(e)) {
                return false;
            }
            throw e;
        }
    }

    /**
     * The thread's CPU time: {@code sched}'s "se.sum_exec_runtime : 1234.567890" (ms, 6 decimals), else stat's; 0 for a
     * thread that has ended.
     */
    static long cpuNanos(Path task) throws IOException {
        try {
            try {
                byte[] sched = Files.readAllBytes(task.resolve("sched"));
                int at = indexOf(sched, SUM_EXEC_RUNTIME, 0);
                if (at >= 0) {
                    return digits(sched, at + SUM_EXEC_RUNTIME.length); // ms with 6 decimals: its digits are ns
                }
            } catch (NoSuchFileException | AccessDeniedException noSched) {
                // a kernel without CONFIG_SCHED_DEBUG (or the thread ended: stat says which)
            }
            // "pid (comm) state ppid ... utime stime": utime and stime are the 12th and 13th fields after the ')'
            byte[] stat = Files.readAllBytes(task.resolve("stat"));
            int i = stat.length - 1;
            while (i > 0 && stat[i] != ')') {
                i--;
            }
            for (int field = 0; field < 11; field++) {
                i = next(stat, i + 1);
            }
            long utime = digits(stat, i);
            return (utime + digits(stat, next(stat, i + 1))) * NANOS_PER_TICK;
        } catch (IOException e) {
            if (ended(e)) {
                return 0;
            }
            throw e;
        }
    }

    /** A thread that ended between the listing and the reading: its files are gone, or reading them says ESRCH. */
    private static boolean ended(IOException e) {
        return e instanceof NoSuchFileException || String.valueOf(e.getMessage()).contains("No such process");
    }

    /** The index of the space-separated field after the one at {@code from}. */
    private static int next(byte[] b, int from) {
        int i = from;
        while (i < b.length && b[i] == ' ') {
            i++;
        }
        while (i < b.length && b[i] != ' ') {
            i++;
        }
        return i;
    }

    /** The first run of digits at or after {@code from}, a '.' inside it skipped ("1234.567890" reads 1234567890). */
    static long digits(byte[] b, int from) {
        int i = from;
        while (i < b.length && (b[i] < '0' || b[i] > '9')) {
            i++;
        }
        long v = 0;
        for (; i < b.length && (b[i] == '.' || (b[i] >= '0' && b[i] <= '9')); i++) {
            if (b[i] != '.') {
                v = v * 10 + (b[i] - '0');
            }
        }
        return v;
    }

    private static int indexOf(byte[] b, byte[] what, int from) {
        outer:
        for (int i = from; i <= b.length - what.length; i++) {
            for (int j = 0; j < what.length; j++) {
                if (b[i + j] != what[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
