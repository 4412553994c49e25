package io.nucx.examples.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The JIT compiler's CPU time as SETTLE reads it: the two Linux formats, and the figure moving while it compiles. */
class JitActivityTest {

    @Test
    void aThreadsSchedFileGivesItsRunTimeInNanoseconds(@TempDir Path task) throws Exception {
        Files.writeString(task.resolve("sched"), """
                C2 CompilerThre (4242, #threads: 31)
                -------------------------------------------------------------------
                se.exec_start                                :      57196925.131953
                se.vruntime                                  :         71730.342217
                se.sum_exec_runtime                          :          1234.567890
                se.nr_migrations                             :                    7
                """);
        Files.writeString(task.resolve("stat"), stat(1, 1)); // not read: sched says it to the nanosecond
        assertEquals(1_234_567_890L, JitActivity.cpuNanos(task));
    }

    @Test
    void withoutASchedFileItIsStatsUserAndSystemClockTicks(@TempDir Path task) throws Exception {
        Files.writeString(task.resolve("stat"), stat(35, 4));
        assertEquals(39 * 10_000_000L, JitActivity.cpuNanos(task));
    }

    @Test
    void aThreadThatEndedCountsNothing(@TempDir Path parent) throws Exception {
        assertEquals(0, JitActivity.cpuNanos(parent.resolve("4242")));
    }

    @Test
    void theFigureMovesWhileTheCompilerCompiles() throws Exception {
        if (Files.isDirectory(Path.of("/proc/self/task"))) { // Linux: read from there, not the JVM's fallback figure
            assertTrue(JitActivity.compilerThreadCount() > 0, "no compiler thread found in /proc/self/task");
        }
        long before = JitActivity.compilerNanos();
        // Fresh code, run hot until compiled: the compiler threads work, and the reading (reused for 10 ms) follows.
        long deadline = System.nanoTime() + 10_000_000_000L;
        long sink = 0;
        long after = before;
        while (after == before && System.nanoTime() - deadline < 0) {
            LongUnaryOperator f = x -> x * 31 + (x >>> 7) ^ (x << 3);
            for (int i = 0; i < 200_000; i++) {
                sink = f.applyAsLong(sink + i);
            }
            Thread.sleep(JitActivity.REUSE_NANOS / 1_000_000 + 1);
            after = JitActivity.compilerNanos();
        }
        assertNotEquals(before, after, "no compiler time seen in 10 s of compiling (" + sink + ")");
    }

    /** A stat line whose name has a space and a parenthesis, as a thread's may: fields count from the last ')'. */
    private static String stat(long utime, long stime) {
        return "4242 (C2 Compiler) Thre) S 1 4200 4200 0 -1 4194368 120 0 0 0 " + utime + " " + stime
                + " 0 0 20 0 31 0 1234567 8917736 330288 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 -1 0\n";
    }
}
