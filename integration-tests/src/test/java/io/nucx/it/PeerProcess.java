package io.nucx.it;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
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
        return start(List.of(), System.getProperty("java.class.path"), main, env, args);
    }

    /**
     * The peer as another user ({@code setpriv --reuid=uid --regid=uid --clear-groups}), so that the kernel applies
     * ptrace rules to it (root's CAP_SYS_PTRACE would let it read anyone). Needs root. The class path is copied to a
     * world-readable temporary directory first: the user cannot read /root/.m2. The copy is deleted on close.
     */
    static PeerProcess startAs(int uid, Class<?> main, Map<String, String> env, String... args) throws IOException {
        Path dir = Files.createTempDirectory("nucx-peer-cp");
        List<String> entries = new ArrayList<>();
        int n = 0;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path src = Path.of(entry);
            if (!Files.exists(src)) {
                continue;
            }
            Path dst = dir.resolve((n++) + "-" + src.getFileName());
            try (var walk = Files.walk(src)) {
                for (Path p : (Iterable<Path>) walk::iterator) {
                    Path to = dst.resolve(src.relativize(p).toString());
                    if (Files.isDirectory(p)) {
                        Files.createDirectories(to);
                    } else {
                        Files.copy(p, to);
                    }
                }
            }
            entries.add(dst.toString());
        }
        try (var walk = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(
                        Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
            }
        }
        PeerProcess peer = start(List.of("setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups"),
                String.join(File.pathSeparator, entries), main, env, args);
        peer.copiedClassPath = dir;
        return peer;
    }

    private Path copiedClassPath;

    /** The peer run under {@code prefix}, e.g. {@code ip netns exec NAME} to put it in a network namespace. */
    static PeerProcess startUnder(List<String> prefix, Class<?> main, Map<String, String> env, String... args)
            throws IOException {
        return start(prefix, System.getProperty("java.class.path"), main, env, args);
    }

    private static PeerProcess start(List<String> prefix, String classPath, Class<?> main, Map<String, String> env,
                                     String... args) throws IOException {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> cmd = new ArrayList<>(prefix);
        cmd.addAll(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-Dio.netty.leakDetection.level=paranoid", "-Xmx1g", "-cp", classPath, main.getName()));
        cmd.addAll(List.of(args));
        Path err = Files.createTempFile("nucx-peer", ".err");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(err.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("NUCX_"));
        pb.environment().putAll(env);
        return new PeerProcess(pb.start(), err);
    }

    /** Writes one line to the peer's standard input. */
    void send(String line) throws IOException {
        var in = process.getOutputStream();
        in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
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

    /** Reads stdout to its end (the process exits or closes it) and returns it. */
    String readToEnd() throws IOException {
        StringBuilder out = new StringBuilder();
        for (String line; (line = stdout.readLine()) != null; ) {
            out.append(line).append('\n');
        }
        return out.toString();
    }

    long pid() {
        return process.pid();
    }

    /** Sends a signal by name ("STOP", "CONT", "KILL") with kill(1), and checks that kill succeeded. */
    void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -" + name + " " + process.pid() + " failed");
        }
    }

    boolean isAlive() {
        return process.isAlive();
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
        if (copiedClassPath != null) {
            try (var walk = Files.walk(copiedClassPath)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }
}
