package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.EndpointErrorEvent;
import io.nucx.EndpointException;
import io.nucx.EndpointTimeoutException;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Error mode peer between separate JVMs over tcp: a peer killed with SIGKILL while rendezvous and synchronous sends
 * wait for it, a peer stopped with SIGSTOP (its sockets stay open, so only keepalive can tell), and a graceful close
 * that completes both sides. Each time the worker's other endpoint goes on working.
 */
@Timeout(180)
class TwoProcessFailureTest {

    /** Keepalive of the SIGSTOP test: short, so the test is quick; the bound asserted is timeout + interval. */
    private static final long INTERVAL_MS = 200;
    private static final long TIMEOUT_MS = 1000;
    /** Slack on top of a bound for a shared 2-core machine (GC, JIT, the other engineer's builds). */
    private static final long SLACK_MS = 3000;

    @RegisterExtension
    final OpenedResources opened = new OpenedResources();

    @ChannelHandler.Sharable
    static final class ErrorEvents extends ChannelInboundHandlerAdapter {
        final AtomicInteger count = new AtomicInteger();

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof EndpointErrorEvent) {
                count.incrementAndGet();
            }
            ctx.fireUserEventTriggered(evt);
        }
    }

    private Worker worker(ErrorEvents events) throws Exception {
        Worker w = new NucxBootstrap().name("test").config("TLS", "tcp").config("RNDV_THRESH", "1k")
                .config("KEEPALIVE_INTERVAL", INTERVAL_MS + "ms").config("KEEPALIVE_TIMEOUT", TIMEOUT_MS + "ms")
                .endpointHandler(events).start();
        opened.worker(w);
        return w;
    }

    private PeerProcess peer(Class<?> main, String... args) throws Exception {
        PeerProcess p = PeerProcess.start(main, Map.of("NUCX_TLS", "tcp", "NUCX_RNDV_THRESH", "1k",
                "NUCX_KEEPALIVE_INTERVAL", INTERVAL_MS + "ms", "NUCX_KEEPALIVE_TIMEOUT", TIMEOUT_MS + "ms"), args);
        opened.peer(p);
        return p;
    }

    /** Operations that wait for the peer: rendezvous sends (RTS held unexpected) and synchronous eager sends. */
    private static List<ChannelFuture> waitingSends(Endpoint ep) {
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            sends.add(ep.tagSend(i, MessagePlan.content(i, 1 << 20)));
        }
        for (int i = 3; i < 5; i++) {
            sends.add(ep.tagSendSync(i, MessagePlan.content(i, 100)));
        }
        return sends;
    }

    private static long awaitFailure(Endpoint ep, long boundMs) throws InterruptedException {
        long t0 = System.nanoTime();
        assertTrue(ep.errorFuture().await(boundMs + SLACK_MS, TimeUnit.MILLISECONDS),
                "endpoint did not fail within " + (boundMs + SLACK_MS) + " ms");
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    }

    /** The worker still works: a message to a second peer process arrives intact. */
    private static void otherPeerStillServed(Worker w, PeerProcess other) throws Exception {
        Endpoint ep = w.connect(WorkerAddress.fromHex(other.awaitLine("ADDRESS")));
        var report = w.tagRecv(TagPeer.REPORT_TAG, -1L);
        assertTrue(ep.tagSend(0, MessagePlan.content(0)).await(30, TimeUnit.SECONDS));
        String text = TagPeer.awaitReport(report, 30);
        assertTrue(text.startsWith("OK 1"), () -> "other peer: " + text);
    }

    @Test
    void aPeerKilledMidRendezvousFailsEveryWaitingOperationWithReset() throws Exception {
        ErrorEvents events = new ErrorEvents();
        Worker w = worker(events);
        PeerProcess victim = peer(FailurePeer.class, "hold", "5");
        PeerProcess other = peer(TagPeer.class, "1");
        Endpoint ep = w.connect(WorkerAddress.fromHex(victim.awaitLine("ADDRESS")));
        List<ChannelFuture> sends = waitingSends(ep);
        victim.awaitLine("HOLDING");
        // More data behind them, some of it still in the lane's outbound buffer when the peer dies.
        for (int i = 10; i < 60; i++) {
            sends.add(ep.tagSend(i, MessagePlan.content(i, 64 << 10)));
        }
        victim.signal("KILL");
        long ms = awaitFailure(ep, TIMEOUT_MS + INTERVAL_MS);
        Throwable cause = ep.errorFuture().cause();
        assertInstanceOf(ConnectionResetException.class, cause);
        assertTrue(cause.getMessage().contains("peer@") && cause.getMessage().contains("tcp"),
                cause.getMessage());
        for (int i = 0; i < 5; i++) {
            ChannelFuture f = sends.get(i);
            assertTrue(f.await(5, TimeUnit.SECONDS), "send " + i + " not completed");
            assertSame(cause, f.cause(), "send " + i + " fails with the endpoint's cause");
        }
        for (ChannelFuture f : sends.subList(5, sends.size())) {
            assertTrue(f.await(5, TimeUnit.SECONDS), "an eager send never completed");
            assertTrue(f.isSuccess() || f.cause() instanceof EndpointException,
                    () -> "eager send: written before the kill, or failed with the endpoint's cause: " + f.cause());
        }
        assertEquals(1, events.count.get(), "error event fired once");
        assertTrue(ep.closeFuture().await(5, TimeUnit.SECONDS));
        System.out.println("SIGKILL detected after " + ms + " ms: " + cause.getMessage());
        otherPeerStillServed(w, other);
    }

    @Test
    void aStoppedPeerIsDetectedByKeepaliveWithinTheTimeout() throws Exception {
        ErrorEvents events = new ErrorEvents();
        Worker w = worker(events);
        PeerProcess hung = peer(FailurePeer.class, "hold", "5");
        PeerProcess other = peer(TagPeer.class, "1");
        Endpoint ep = w.connect(WorkerAddress.fromHex(hung.awaitLine("ADDRESS")));
        List<ChannelFuture> sends = waitingSends(ep);
        hung.awaitLine("HOLDING");
        hung.signal("STOP");
        long ms = awaitFailure(ep, TIMEOUT_MS + INTERVAL_MS);
        Throwable cause = ep.errorFuture().cause();
        assertInstanceOf(EndpointTimeoutException.class, cause);
        assertTrue(cause.getMessage().contains("peer@") && cause.getMessage().contains("NUCX_KEEPALIVE_TIMEOUT"),
                cause.getMessage());
        assertTrue(ms >= TIMEOUT_MS / 2, "failed after " + ms + " ms, well before the timeout");
        for (ChannelFuture f : sends) {
            assertTrue(f.await(5, TimeUnit.SECONDS));
            assertSame(cause, f.cause());
        }
        assertEquals(1, events.count.get());
        System.out.println("SIGSTOP detected after " + ms + " ms (bound " + (TIMEOUT_MS + INTERVAL_MS) + " ms)");
        otherPeerStillServed(w, other);
    }

    @Test
    void gracefulCloseCompletesBothSides() throws Exception {
        ErrorEvents events = new ErrorEvents();
        Worker w = worker(events);
        int n = 40;
        PeerProcess peer = peer(FailurePeer.class, "close", Integer.toString(n));
        Endpoint ep = w.connect(WorkerAddress.fromHex(peer.awaitLine("ADDRESS")));
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            sends.add(ep.tagSend(i, MessagePlan.content(i)));
        }
        peer.awaitLine("PENDING"); // the peer's rendezvous send toward us waits, never received
        assertTrue(ep.close().await(60, TimeUnit.SECONDS), "close did not complete");
        for (int i = 0; i < n; i++) {
            assertTrue(sends.get(i).isSuccess(), "send " + i + ": " + sends.get(i).cause());
        }
        assertTrue(ep.errorFuture().isSuccess(), () -> "closed here without failure: " + ep.errorFuture().cause());
        assertEquals(0, events.count.get());
        String endpointLine = peer.awaitLine("ENDPOINT");
        assertTrue(endpointLine.startsWith("ConnectionResetException") && endpointLine.contains("closed by its owner"),
                endpointLine);
        assertEquals("ConnectionResetException", peer.awaitLine("SEND"), "the peer's send fails with a reset");
        assertEquals("OK", peer.awaitLine("REPORT"), "peer: every message intact and its endpoint closed");
        assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        assertFalse(ep.isOpen());
    }
}
