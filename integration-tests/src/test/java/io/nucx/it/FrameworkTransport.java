package io.nucx.it;

import io.netty.channel.Channel;
import io.nucx.NucxChannel;
import io.nucx.transport.testing.LeakRecorder;

import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the framework tests share: the two transports they run over (NUCX_TLS for both processes: "shm,cma" for two
 * processes of one host, "tcp"), the server process, and the checks at the end (the lanes really were that
 * transport; neither process leaked).
 */
final class FrameworkTransport implements AutoCloseable {

    final String tls;
    final PeerProcess server;
    final int port;
    private final String previousTls;

    private FrameworkTransport(String tls, PeerProcess server, int port, String previousTls) {
        this.tls = tls;
        this.server = server;
        this.port = port;
        this.previousTls = previousTls;
    }

    /** Starts the {@code framework}'s server over nucx in another process; this process's workers use {@code tls}. */
    static FrameworkTransport start(String framework, String tls) throws Exception {
        LeakRecorder.install();
        PeerProcess p = PeerProcess.start(FrameworkPeer.class, Map.of("NUCX_TLS", tls), framework, "nucx");
        int port = Integer.parseInt(p.awaitLine("PORT"));
        // The workers of this process's loops start on demand with the configuration of that moment.
        String previous = System.setProperty("nucx.tls", tls);
        return new FrameworkTransport(tls, p, port, previous);
    }

    /** The channel's endpoint runs over the transport under test (its AM lane). */
    void assertLanes(Channel ch) {
        String lanes = ((NucxChannel) ch).endpoint().describeLanes();
        String expected = tls.startsWith("shm") ? "shm/" : "tcp/";
        assertTrue(lanes.startsWith(expected), () -> "lanes " + lanes + ", expected " + expected);
    }

    /** Stops the server; it must exit cleanly and without a leak, and so must this process. */
    @Override
    public void close() throws Exception {
        try {
            if (previousTls == null) {
                System.clearProperty("nucx.tls");
            } else {
                System.setProperty("nucx.tls", previousTls);
            }
            server.send("stop");
            assertEquals(0, server.waitFor(60), () -> "server exit; stderr:\n" + server.stderr());
            var leaks = LeakRecorder.collect();
            assertTrue(leaks.isEmpty(), () -> "leaks: " + leaks);
        } finally {
            server.close();
        }
    }

    static void await(Future<?> f) throws Exception {
        f.get(60, TimeUnit.SECONDS);
    }
}
