package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.nucx.Endpoint;
import io.nucx.EndpointTimeoutException;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A peer that becomes unreachable: it runs in its own network namespace behind a veth pair, and mid-run the link is
 * taken down, so packets are dropped both ways while both processes and their sockets live on (no reset, no FIN, TCP
 * would retry for many minutes). Only keepalive can tell; the endpoint must fail with {@link EndpointTimeoutException}
 * within NUCX_KEEPALIVE_TIMEOUT + NUCX_KEEPALIVE_INTERVAL, with every waiting send. Needs root (ip netns).
 */
@Timeout(120)
class UnreachablePeerTest {

    private static final long INTERVAL_MS = 200;
    private static final long TIMEOUT_MS = 1000;
    private static final long SLACK_MS = 3000;
    private static final String HOST_IP = "10.231.77.1";
    private static final String PEER_IP = "10.231.77.2";

    private final String ns = "nucx-unreach-" + ProcessHandle.current().pid();
    private final String hostIf = "nuh" + (ProcessHandle.current().pid() % 100000);
    private final String peerIf = "nup" + (ProcessHandle.current().pid() % 100000);
    private final List<PeerProcess> peers = new ArrayList<>();
    private final List<Worker> workers = new ArrayList<>();
    private boolean nsCreated;

    @AfterEach
    void cleanUp() throws Exception {
        for (Worker w : workers) {
            w.close().get(20, TimeUnit.SECONDS);
        }
        for (PeerProcess p : peers) {
            p.close();
        }
        if (nsCreated) {
            run(false, "ip", "netns", "del", ns); // takes the veth pair with it
        }
    }

    private static int run(boolean check, String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", cmd) + " did not finish");
        }
        if (check && p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + out);
        }
        return p.exitValue();
    }

    private void createNamespace() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root for ip netns");
        int added;
        try {
            added = run(false, "ip", "netns", "add", ns);
        } catch (IOException noIp) {
            added = -1; // no ip(8) here
        }
        Assumptions.assumeTrue(added == 0, "ip netns add is not available or not permitted here");
        nsCreated = true;
        run(true, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", peerIf);
        run(true, "ip", "link", "set", peerIf, "netns", ns);
        run(true, "ip", "addr", "add", HOST_IP + "/30", "dev", hostIf);
        run(true, "ip", "link", "set", hostIf, "up");
        run(true, "ip", "netns", "exec", ns, "ip", "addr", "add", PEER_IP + "/30", "dev", peerIf);
        run(true, "ip", "netns", "exec", ns, "ip", "link", "set", peerIf, "up");
        run(true, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
    }

    @Test
    void aPeerWhosePacketsAreDroppedIsDetectedByKeepaliveWithinTheBound() throws Exception {
        createNamespace();
        Map<String, String> env = Map.of("NUCX_TLS", "tcp", "NUCX_TCP_BIND_ADDR", PEER_IP, "NUCX_RNDV_THRESH", "1k",
                "NUCX_KEEPALIVE_INTERVAL", INTERVAL_MS + "ms", "NUCX_KEEPALIVE_TIMEOUT", TIMEOUT_MS + "ms");
        PeerProcess peer = PeerProcess.startUnder(List.of("ip", "netns", "exec", ns), FailurePeer.class, env, "hold",
                "3");
        peers.add(peer);
        Worker w = new NucxBootstrap().name("test").config("TLS", "tcp").config("TCP_BIND_ADDR", HOST_IP)
                .config("RNDV_THRESH", "1k").config("KEEPALIVE_INTERVAL", INTERVAL_MS + "ms")
                .config("KEEPALIVE_TIMEOUT", TIMEOUT_MS + "ms").start();
        workers.add(w);
        Endpoint ep = w.connect(WorkerAddress.fromHex(peer.awaitLine("ADDRESS")));
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            sends.add(ep.tagSend(i, MessagePlan.content(i, 1 << 20))); // rendezvous: waits for a receive
        }
        peer.awaitLine("HOLDING"); // the peer got the three RTS across the veth pair: reachable until now
        assertTrue(ep.wireupFuture().await(10, TimeUnit.SECONDS) && ep.isActive(),
                "the endpoint works while the link is up: the peer's REPLY came across it");
        run(true, "ip", "link", "set", hostIf, "down"); // both ends lose carrier: packets go nowhere, no reset
        long t0 = System.nanoTime();
        assertTrue(ep.errorFuture().await(TIMEOUT_MS + INTERVAL_MS + SLACK_MS, TimeUnit.MILLISECONDS),
                "not detected within " + (TIMEOUT_MS + INTERVAL_MS + SLACK_MS) + " ms");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        Throwable cause = ep.errorFuture().cause();
        assertInstanceOf(EndpointTimeoutException.class, cause);
        assertTrue(cause.getMessage().contains("NUCX_KEEPALIVE_TIMEOUT") && cause.getMessage().contains("tcp"),
                cause.getMessage());
        assertTrue(peer.isAlive(), "the peer process lives on: it is only unreachable");
        for (ChannelFuture f : sends) {
            assertTrue(f.await(5, TimeUnit.SECONDS));
            assertSame(cause, f.cause(), "every waiting send fails with the endpoint's cause");
        }
        System.out.println("unreachable peer detected after " + ms + " ms (bound " + (TIMEOUT_MS + INTERVAL_MS)
                + " ms)");
    }
}
