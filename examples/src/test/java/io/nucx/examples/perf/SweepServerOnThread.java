package io.nucx.examples.perf;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A {@link SweepServer} on a thread of this JVM, on a free port, with the runner that drives it (blocking loops, real
 * lanes); closing tells the server to quit and waits for it. Its log is kept.
 */
final class SweepServerOnThread implements AutoCloseable {

    private final ByteArrayOutputStream log = new ByteArrayOutputStream();
    private final CompletableFuture<Void> done;
    private final SweepRunner runner;

    SweepServerOnThread() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        done = CompletableFuture.runAsync(() -> {
            try {
                SweepServer.serve(port, false, new PrintStream(log, true, StandardCharsets.UTF_8));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        runner = new SweepRunner("127.0.0.1", port, false);
    }

    SweepRunner runner() {
        return runner;
    }

    /** What the server printed. */
    String log() {
        return log.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws Exception {
        runner.quit();
        done.get(30, TimeUnit.SECONDS);
    }
}
