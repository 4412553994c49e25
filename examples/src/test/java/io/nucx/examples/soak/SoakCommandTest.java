package io.nucx.examples.soak;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The soak's 60-second variant, as CI runs it: {@code nucx soak} in a JVM of its own (so its leak watch sees every
 * buffer from the start), 40 endpoints over 3 peer processes, one killed every 15 s; it must end with PASS: every
 * message intact, every message of the peers that stopped cleanly received, memory back to its warm-up level, no
 * leak report. The hub runs Netty's unpooled allocator, so its direct-memory figure is exactly the buffers alive: with
 * the pooled one it also counts the chunks the pool keeps after a burst (a minute is too short for that to settle;
 * BENCHMARKS.md's 10-minute profile runs pooled).
 */
@Timeout(300)
class SoakCommandTest {

    @Test
    void aMinuteOfChurnKillsAndTrafficLeavesNothingBehind() throws Exception {
        Path out = Files.createTempFile("nucx-soak", ".log");
        try {
            String java = ProcessHandle.current().info().command().orElseThrow();
            Process p = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path"), "io.nucx.examples.NucxMain", "soak", "--minutes", "1",
                    "--endpoints", "40", "--peers", "3", "--kill-every", "15", "--warmup-seconds", "15", "--allocator", "unpooled"))
                    .redirectErrorStream(true).redirectOutput(out.toFile()).start();
            assertTrue(p.waitFor(240, TimeUnit.SECONDS), "the soak did not end");
            String log = Files.readString(out, StandardCharsets.UTF_8);
            assertEquals(0, p.exitValue(), log);
            assertTrue(log.contains("PASS") && log.contains(" 0 leak reports"), log);
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
