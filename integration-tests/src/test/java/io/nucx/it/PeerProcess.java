package io.nucx.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** A second JVM running a main class of this test class path, with its own NUCX_* environment. */
final class PeerProcess implements AutoCloseable {

    private final Process process;
    private final BufferedReader stdout;
    private final Path stderr;

    private PeerProcess(Process process, Path stderr) {
        this.process = process;
        this.stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.stderr = stderr;
    }

    static PeerProcess start(Class<?> main, Map<String, String> env, String... args) throws IOException {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-Dio.netty.leakDetection.level=paranoid", "-Xmx1g", "-cp", System.getProperty("java.class.path"),
                main.getName()));
        cmd.addAll(List.of(args));
        Path err = Files.createTempFile("nucx-peer", ".err");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(err.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("NUCX_"));
        pb.environment().putAll(env);
        return new PeerProcess(pb.start(), err);
    }

    /** Reads stdout lines until one starts with {@code prefix}; returns the rest of it. */
    String awaitLine(String prefix) throws IOException {
        for (String line; (line = stdout.readLine()) != null; ) {
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length()).trim();
            }
        }
        throw new IOException("peer exited (" + exitInfo() + ") before printing '" + prefix + "'; stderr:\n" + stderr());
    }

    int waitFor(long seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("peer did not exit within " + seconds + " s");
        }
        return process.exitValue();
    }

    String stderr() {
        try {
            return Files.readString(stderr);
        } catch (IOException e) {
            return "(stderr unreadable: " + e + ")";
        }
    }

    private String exitInfo() {
        return process.isAlive() ? "still running" : "exit " + process.exitValue();
    }

    @Override
    public void close() throws IOException {
        process.destroyForcibly();
        Files.deleteIfExists(stderr);
    }
}
