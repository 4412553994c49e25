package io.nucx.examples.perf;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@link SweepServer} in a second JVM, as ucx_perftest's server is a second process: the same java, class path and
 * JVM options as this one (so NUCX_JAVA_OPTS apply to both), the same environment (so NUCX_* settings do), on a free
 * port of 127.0.0.1. Closing it asks the server to quit, then ends the process if it has not.
 */
public final class ServerProcess implements AutoCloseable {

    private final Process process;
    private final int port;
    private final SweepRunner runner;

    private ServerProcess(Process process, int port, SweepRunner runner) {
        this.process = process;
        this.port = port;
        this.runner = runner;
    }

    /** Starts the server; its output goes to {@code log}. {@code busyPoll}: this side's runs (the server's follow
     * NUCX_BUSY_POLL as perftest's does, from the same environment). */
    public static ServerProcess start(Path log, boolean busyPoll) throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("io.nucx.examples.NucxMain");
        cmd.add("perftest");
        cmd.add("--sweep-server");
        cmd.add("-p");
        cmd.add(Integer.toString(port));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Process p = pb.start();
        ServerProcess server = new ServerProcess(p, port, new SweepRunner("127.0.0.1", port, busyPoll));
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroy, "sweep-server-reaper"));
        return server;
    }

    public int port() {
        return port;
    }

    /** A runner against this server. */
    public SweepRunner runner() {
        return runner;
    }

    @Override
    public void close() throws Exception {
        try {
            if (process.isAlive()) {
                runner.quit();
            }
        } finally {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroy();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
