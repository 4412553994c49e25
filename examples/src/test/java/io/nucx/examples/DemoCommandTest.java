package io.nucx.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code nucx demo} in a JVM of its own over tcp, its ping-pong's server process killed mid-run: the demo says which
 * run failed, why, and where the server's output is, then still runs the bandwidth test (a new server), prints both
 * rows and exits with 1.
 */
@Timeout(180)
class DemoCommandTest {

    @Test
    void aRunWhoseServerDiesIsReportedAndTheRunsAfterItStillRun() throws Exception {
        Path out = Files.createTempFile("nucx-demo", ".log");
        Process demo = null;
        Set<Path> logsBefore = serverLogs();
        try {
            String java = ProcessHandle.current().info().command().orElseThrow();
            // 100 million ping-pongs would take minutes: the run can only end by the kill below.
            ProcessBuilder pb = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path"), NucxMain.class.getName(), "demo", "--lat-iters",
                    "100000000", "--bw-iters", "50", "--warmup-time", "0"))
                    .redirectErrorStream(true).redirectOutput(out.toFile());
            pb.environment().put("NUCX_TLS", "tcp");
            demo = pb.start();
            ProcessHandle server = firstServer(demo);
            Thread.sleep(1500); // into the run, or on a loaded machine its set-up: the run fails either way
            assertTrue(server.destroyForcibly(), "could not kill the server " + server.pid());
            assertTrue(demo.waitFor(90, TimeUnit.SECONDS), "the demo did not end");
            String log = Files.readString(out, StandardCharsets.UTF_8);
            assertEquals(1, demo.exitValue(), log);
            assertTrue(log.contains("tcp tag_lat failed: ") && log.contains("the server's side (pid " + server.pid()
                    + ", exited with 137, its output in "), log); // 128 + SIGKILL
            Matcher bw = Pattern.compile("(?m)^tcp\\s+tag_bw\\s+1048576\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)")
                    .matcher(log);
            assertTrue(bw.find() && Double.parseDouble(bw.group(2)) > 0, "the bandwidth run after it: " + log);
            assertTrue(Pattern.compile("(?m)^tcp\\s+tag_lat\\s+8\\s+failed").matcher(log).find(), log);
            assertTrue(log.contains("1 of 2 runs failed"), log);
        } finally {
            if (demo != null) { // a failed assertion must not leave the demo or a server busy-polling the cores
                demo.descendants().forEach(ProcessHandle::destroyForcibly);
                demo.destroyForcibly();
                demo.waitFor(10, TimeUnit.SECONDS);
            }
            Files.deleteIfExists(out);
            for (Path log : serverLogs()) {
                if (!logsBefore.contains(log)) {
                    Files.deleteIfExists(log);
                }
            }
        }
    }

    /** The server logs the demo writes ({@code nucx-demo-server-PORT.log} in the temporary directory). */
    private static Set<Path> serverLogs() throws IOException {
        try (var files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return files.filter(f -> f.getFileName().toString().startsWith("nucx-demo-server-"))
                    .collect(Collectors.toSet());
        }
    }

    /** The demo's first child process (its first run's server), once it is there. */
    private static ProcessHandle firstServer(Process demo) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            var children = demo.children().toList();
            if (!children.isEmpty()) {
                return children.get(0);
            }
            assertTrue(demo.isAlive(), "the demo ended before it started a server");
            Thread.sleep(20);
        }
        throw new AssertionError("no server process within 60 s");
    }
}
