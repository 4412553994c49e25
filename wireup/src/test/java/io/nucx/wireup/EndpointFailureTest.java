package io.nucx.wireup;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.EndpointErrorEvent;
import io.nucx.EndpointException;
import io.nucx.EndpointTimeoutException;
import io.nucx.ErrorMode;
import io.nucx.NucxClosedException;
import io.nucx.Worker;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.tag.RndvCodec;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.AmFrame;
import io.nucx.transport.IoEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Error mode peer inside one JVM: EP_CHECK / EP_REMOVED, keepalive timeout of a hung peer (its event loop blocked),
 * graceful close of both sides, error mode none. Separate processes (SIGKILL, SIGSTOP) are in integration-tests.
 */
@Timeout(120)
class EndpointFailureTest {

    private static final String INTERVAL = "100ms";
    private static final String TIMEOUT = "500ms";

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** Counts the error events each endpoint's pipeline sees. */
    @ChannelHandler.Sharable
    static final class ErrorEvents extends ChannelInboundHandlerAdapter {
        final ConcurrentHashMap<Endpoint, AtomicInteger> counts = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Endpoint, EndpointException> causes = new ConcurrentHashMap<>();

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof EndpointErrorEvent e) {
                counts.computeIfAbsent((Endpoint) ctx.channel(), k -> new AtomicInteger()).incrementAndGet();
                causes.put((Endpoint) ctx.channel(), e.cause());
            }
            ctx.fireUserEventTriggered(evt);
        }

        int count(Endpoint ep) {
            AtomicInteger n = counts.get(ep);
            return n == null ? 0 : n.get();
        }
    }

    private Worker start(String name, ErrorEvents events, String... more) throws Exception {
        List<String> s = new ArrayList<>(List.of("TLS", "tcp", "KEEPALIVE_INTERVAL", INTERVAL, "KEEPALIVE_TIMEOUT",
                TIMEOUT, "RNDV_THRESH", "1k"));
        s.addAll(List.of(more));
        return workers.start(name, events, s.toArray(String[]::new));
    }

    private static Endpoint awaitAccepted(Worker w) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (w.endpoints().isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "no endpoint accepted by " + w.name());
            Thread.sleep(5);
        }
        return w.endpoints().iterator().next();
    }

    private static Throwable failureOf(Future<?> f) throws InterruptedException {
        assertTrue(f.await(10, TimeUnit.SECONDS), "not completed within 10 s");
        assertFalse(f.isSuccess(), "succeeded, expected a failure");
        return f.cause();
    }

    /** A reset as a lane's channelInactive would fail {@code ep} with, for tests that fail it by hand. */
    private static ConnectionResetException peerClosed(EndpointChannel ep) {
        return new ConnectionResetException(ep.endpointId(), ep.remoteAddress(),
                "the peer closed the connection (the test's)", null);
    }

    /** Each send failed as a write after the end caused by {@code reset}, and none waits in a's rendezvous tables. */
    private static void assertFailedAfterTheEnd(List<ChannelFuture> sends, EndpointException reset, DefaultWorker a)
            throws Exception {
        for (ChannelFuture f : sends) {
            Throwable cause = failureOf(f);
            assertInstanceOf(NucxClosedException.class, cause, "a write after the end");
            assertSame(reset, cause.getCause(), "names why the endpoint ended");
        }
        assertEquals(0, (int) a.eventLoop().submit(() -> a.sumOverCodecs(RndvCodec.class, RndvCodec::sendsWaiting))
                .get(), "no rendezvous send registered after the abort");
    }

    @Test
    void wireupTellsBothSidesTheOthersEndpointId() throws Exception {
        Worker a = start("a", null);
        Worker b = start("b", null);
        Endpoint ep = a.connect(b.address());
        assertTrue(ep.wireupFuture().await(10, TimeUnit.SECONDS) && ep.wireupFuture().isSuccess(),
                () -> "wireup: " + ep.wireupFuture().cause());
        Endpoint peer = awaitAccepted(b);
        assertEquals(peer.endpointId(), (long) a.eventLoop().submit(() -> TestWorkers.impl(ep).remoteEndpointId()).get());
        assertEquals(ep.endpointId(), (long) b.eventLoop().submit(() -> TestWorkers.impl(peer).remoteEndpointId()).get());
        assertSame(ErrorMode.PEER, peer.errorMode(), "the acceptor takes the connector's error mode");
        assertSame(TestWorkers.impl(ep).selection().am(), TestWorkers.impl(ep).selection().keepalive(), "keepalive goes on the AM lane");
    }

    /** UCX: an EP_CHECK naming an endpoint the receiver does not know is answered with EP_REMOVED. */
    @Test
    void epCheckForAnUnknownEndpointIsAnsweredWithEpRemovedAndTheEndpointFailsWithReset() throws Exception {
        ErrorEvents events = new ErrorEvents();
        Worker a = start("a", events);
        Worker b = start("b", null);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Future<TagMessage> posted = a.tagRecv(1, -1L);
        // A probe for an id b never gave out, as if b had forgotten our endpoint.
        a.eventLoop().submit(() -> TestWorkers.impl(ep).amLane().writeAndFlush(
                WireupMessage.epCheck(ErrorMode.PEER, ep.endpointId(), 999_999).toFrame(TestWorkers.impl(ep).amLane().alloc()))).get();
        Throwable cause = failureOf(ep.errorFuture());
        assertInstanceOf(ConnectionResetException.class, cause);
        assertTrue(cause.getMessage().contains("no endpoint #999999") && cause.getMessage().contains("b@"),
                cause.getMessage());
        assertEquals(ep.endpointId(), ((EndpointException) cause).endpointId());
        assertTrue(ep.closeFuture().await(10, TimeUnit.SECONDS));
        assertEquals(1, events.count(ep), "error event fired once");
        assertSame(cause, events.causes.get(ep));
        assertFalse(posted.isDone(), "a posted receive belongs to the worker and stays");
        assertTrue(posted.cancel(false));
    }

    /**
     * A loop kept from its I/O by tasks that queue one another (20 ms each: Netty checks its one-second task quantum
     * every 64 tasks, so I/O comes about every 1.3 s) does not take its peer for silent: the peer's probes lie unread
     * in the shm ring or in the socket meanwhile (the kernel counts a socket's), and they count. Without that, 500 ms
     * of unread probes failed the endpoint with "no answer from the peer" while the peer was fine (perftest's bandwidth
     * client did this to itself). Not over io_uring: there the busy loop is mute as well (Netty submits its writes at
     * its next I/O pass), so the peer hears nothing and rightly times out.
     */
    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp epoll"})
    void aLoopKeptFromItsIoByTasksDoesNotTakeItsPeerForSilent(String lanes) throws Exception {
        String[] parts = lanes.split(" ");
        String[] more = parts.length == 1 ? new String[] {"TLS", parts[0]}
                : new String[] {"TLS", parts[0], "TCP_IO", parts[1]};
        if (parts.length > 1) {
            IoEngine engine = IoEngine.valueOf(parts[1].toUpperCase(Locale.ROOT));
            assumeTrue(engine.availability().isAvailable(), () -> engine + ": " + engine.availability().reason());
        }
        ErrorEvents peerEvents = new ErrorEvents();
        Worker a = start("a", null, more);
        Worker b = start("b", peerEvents, more);
        Endpoint toB = TestWorkers.wiredUp(a, b);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        CountDownLatch busyEnded = new CountDownLatch(1);
        AtomicBoolean probesWaited = new AtomicBoolean();
        Runnable[] busy = new Runnable[1];
        busy[0] = () -> {
            if (TestWorkers.impl(toB).lanes().peerFramesWaiting()) {
                probesWaited.set(true); // the loop really was behind: b's probes lay unread
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (System.nanoTime() < end) {
                a.eventLoop().execute(busy[0]);
            } else {
                busyEnded.countDown();
            }
        };
        a.eventLoop().execute(busy[0]);
        assertTrue(busyEnded.await(20, TimeUnit.SECONDS));
        assertTrue(probesWaited.get(), "the peer's probes never waited unread: the loop was not kept from its I/O");
        Thread.sleep(300); // a tick or two after the I/O that followed
        assertFalse(toB.errorFuture().isDone(), () -> "failed: " + toB.errorFuture().cause() + "; the peer's: "
                + peerEvents.causes.values());
        Future<TagMessage> r = b.tagRecv(9, -1L);
        assertTrue(toB.tagSend(9, pattern(9, 100)).await(10, TimeUnit.SECONDS));
        assertReceived(r, 9, 100, 10);
    }

    /**
     * A keepalive timeout says what this side saw on each lane, so a user can tell a silent peer from a side that
     * stopped reading. Over shm: a peer whose loop is held left this side's inbound ring empty; a side whose lane's
     * reads stopped (paused here by hand, as a lost read request would leave them) has the peer's probes lying unread
     * in it, and says that too.
     */
    @Test
    void aKeepaliveTimeoutSaysWhetherThePeerFellSilentOrThisSideStoppedReading() throws Exception {
        Worker a = start("a", null, "TLS", "shm");
        Worker b = start("b", null, "TLS", "shm");
        Endpoint toB = TestWorkers.wiredUp(a, b);
        CountDownLatch release = TestWorkers.holdLoop(b);
        String silent;
        try {
            silent = failureOf(toB.errorFuture()).getMessage();
        } finally {
            release.countDown();
        }
        assertTrue(silent.contains("(this side: shm/memory: ") && silent.contains("inbound ring 0 B unread,"), silent);

        Worker c = start("c", null, "TLS", "shm");
        Worker d = start("d", null, "TLS", "shm");
        Endpoint toD = TestWorkers.wiredUp(c, d);
        c.eventLoop().submit(() -> TestWorkers.impl(toD).lanes().amChannel().config().setAutoRead(false)).sync();
        String deaf = failureOf(toD.errorFuture()).getMessage();
        Matcher unread = Pattern.compile("shm/memory: writable, reading paused, inbound ring (\\d+) B unread "
                + "\\(no read requested\\)").matcher(deaf);
        assertTrue(unread.find() && Long.parseLong(unread.group(1)) > 0, deaf);
    }

    /** Over tcp the kernel holds the unread probes, and epoll's and io_uring's sockets say how many. */
    @Test
    void aKeepaliveTimeoutOverTcpSaysHowManyBytesTheSocketHoldsUnread() throws Exception {
        assumeTrue(IoEngine.EPOLL.availability().isAvailable(), () -> IoEngine.EPOLL.availability().reason());
        Worker e = start("e", null, "TCP_IO", "epoll");
        Worker f = start("f", null, "TCP_IO", "epoll");
        Endpoint toF = TestWorkers.wiredUp(e, f);
        e.eventLoop().submit(() -> TestWorkers.impl(toF).lanes().amChannel().config().setAutoRead(false)).sync();
        String deafTcp = failureOf(toF.errorFuture()).getMessage();
        Matcher inSocket = Pattern.compile("writable, reading paused, socket (\\d+) B unread").matcher(deafTcp);
        assertTrue(inSocket.find() && Long.parseLong(inSocket.group(1)) > 0, deafTcp);
    }

    /**
     * b's loop is blocked (a hung process keeps its sockets open, so only keepalive can tell): a's endpoint fails with
     * EndpointTimeoutException within timeout + interval, and so do its waiting rendezvous and synchronous sends;
     * a's endpoint to c keeps working. On each socket engine with a count of unread bytes (a hung peer sends none,
     * so the count keeps nobody alive), and on the default one.
     */
    @ParameterizedTest
    @ValueSource(strings = {"auto", "epoll", "io_uring"})
    void aHungPeerIsDetectedByKeepaliveAndEveryWaitingOperationFails(String engine) throws Exception {
        if (!engine.equals("auto")) {
            IoEngine e = IoEngine.valueOf(engine.toUpperCase(Locale.ROOT));
            assumeTrue(e.availability().isAvailable(), () -> e + ": " + e.availability().reason());
        }
        ErrorEvents events = new ErrorEvents();
        Worker a = start("a", events, "TCP_IO", engine);
        Worker b = start("b", null, "TCP_IO", engine);
        Worker c = start("c", null, "TCP_IO", engine);
        Endpoint toB = a.connect(b.address());
        Endpoint toC = a.connect(c.address());
        assertTrue(toB.wireupFuture().await(10, TimeUnit.SECONDS));
        assertTrue(toC.wireupFuture().await(10, TimeUnit.SECONDS));
        ChannelFuture rndv = toB.tagSend(1, pattern(1, 100_000)); // RTS waits at b for a receive
        ChannelFuture sync = toB.tagSendSync(2, pattern(2, 100)); // waits for b's match
        long blocked = System.nanoTime();
        CountDownLatch release = TestWorkers.holdLoop(b);
        try {
            ChannelFuture later = toB.tagSendSync(3, pattern(3, 100));
            Throwable cause = failureOf(toB.errorFuture());
            long detectedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - blocked);
            assertInstanceOf(EndpointTimeoutException.class, cause);
            assertTrue(cause.getMessage().contains("b@") && cause.getMessage().contains("NUCX_KEEPALIVE_TIMEOUT"),
                    cause.getMessage());
            // Bound: 500 ms of silence counted in 100 ms ticks; generous slack for a shared 2-core machine.
            assertTrue(detectedMs < 500 + 100 + 3000, "detected after " + detectedMs + " ms");
            for (ChannelFuture f : List.of(rndv, sync, later)) {
                assertSame(cause, failureOf(f), "every waiting operation fails with the endpoint's cause");
            }
            assertEquals(1, events.count(toB));
            ChannelFuture afterFailure = toB.tagSend(4, pattern(4, 10));
            assertNotNull(failureOf(afterFailure));
            // The worker and its other endpoint go on.
            Future<TagMessage> r = c.tagRecv(5, -1L);
            assertTrue(toC.tagSend(5, pattern(5, 5000)).await(10, TimeUnit.SECONDS));
            assertReceived(r, 5, 5000, 10);
            assertNull(toC.errorFuture().cause());
            assertFalse(toC.errorFuture().isDone());
        } finally {
            release.countDown();
        }
        // Once b runs again it finds a's side gone: its endpoint fails with a reset, not a timeout.
        Endpoint fromA = b.endpoints().stream().findFirst().orElse(null);
        if (fromA != null) {
            assertInstanceOf(ConnectionResetException.class, failureOf(fromA.errorFuture()));
        }
    }

    /**
     * The worker's reaper runs between a lane's close and its channelInactive (queued on the loop behind the reaper's
     * tick): the endpoint still fails with the lane's own cause, which names the lane, not the reaper's catch-all.
     */
    @Test
    void aLaneClosedJustBeforeTheReapersTickFailsTheEndpointWithTheLanesCause() throws Exception {
        Worker a = start("a", null);
        Worker b = start("b", null);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        EndpointChannel impl = TestWorkers.impl(ep);
        String lane = a.eventLoop().submit(() -> impl.selection().am().name()).get();
        a.eventLoop().submit(() -> {
            impl.amLane().close();
            impl.lifecycle().reapIfLanesGone();
        }).get();
        Throwable cause = failureOf(ep.errorFuture());
        assertFalse(cause.getMessage().contains("every lane"), cause.getMessage());
        assertTrue(cause.getMessage().contains(lane), () -> "names the lane " + lane + ": " + cause.getMessage());
    }

    /**
     * A lane that refuses a frame (over its limits) stays open by itself: a send with a promise of its own waited for
     * an endpoint failure nothing would cause, and a codec's own frame (the quiet promise: a rendezvous RTS, the
     * stream's end) was lost without a word on shm and self. The lane closes, and the send (one with a promise) and
     * the endpoint fail naming the refusal.
     */
    @ParameterizedTest
    @CsvSource({"tcp,false", "shm,false", "self,false", "tcp,true", "shm,true", "self,true"})
    void aFrameTheLaneRefusesFailsItsSendAndTheEndpointNamingWhy(String tls, boolean quiet) throws Exception {
        EndpointChannel ep = refusedFrame(tls, quiet);
        Throwable endpoint = failureOf(ep.errorFuture());
        assertTrue(endpoint.getMessage().contains("exceeds the limits"), () -> "the endpoint: " + endpoint);
    }

    /** Writes a frame one byte over the AM lane's limit on a new endpoint over {@code tls}; its send checked. */
    private EndpointChannel refusedFrame(String tls, boolean quiet) throws Exception {
        Worker a = workers.start("a", "TLS", tls);
        Worker b = workers.start("b", "TLS", tls);
        EndpointChannel ep = TestWorkers.impl(TestWorkers.wiredUp(a, b));
        int tooLong = a.eventLoop().submit(() -> ep.selection().am().iface().attributes().maxBcopy()).get() + 1;
        ChannelPromise send = a.eventLoop().submit(() -> {
            ChannelPromise p = quiet ? ep.unsafe().voidPromise() : ep.newPromise();
            ep.lanes().write(AmFrame.of(AmIds.EAGER_ONLY, 0, Unpooled.buffer(8).writeLongLE(1),
                    Unpooled.wrappedBuffer(new byte[tooLong])), p);
            return p;
        }).get();
        if (!quiet) {
            Throwable cause = failureOf(send);
            assertTrue(String.valueOf(cause.getMessage()).contains("exceeds the limits"), () -> "the send: " + cause);
        }
        return ep;
    }

    /**
     * Sends issued off the loop just before the endpoint fails (as when a lane's FIN is read in the same loop turn):
     * each passes the endpoint's check where it is issued and reaches the codecs later, as a task, after they aborted
     * what waited. Each still fails with the endpoint's cause, and none stays registered for an answer that cannot
     * come (a rendezvous RTS, an eager send's acknowledgement, an active message's and a stream write's RTS).
     */
    @Test
    void sendsIssuedOffTheLoopJustBeforeTheEndpointFailsFailWithIt() throws Exception {
        Worker a = start("a", null);
        Worker b = start("b", null);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        EndpointChannel impl = TestWorkers.impl(ep);
        ConnectionResetException reset = peerClosed(impl);
        CountDownLatch issued = new CountDownLatch(1);
        a.eventLoop().execute(() -> { // the sends below queue behind this task, and run after the failure
            try {
                issued.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            impl.fail(reset);
        });
        List<ChannelFuture> sends = List.of(ep.tagSend(1, pattern(1, 100_000)), ep.tagSendSync(2, pattern(2, 100)),
                ep.amSend(3, pattern(3, 8), pattern(4, 100_000)), ep.streamSend(pattern(5, 100_000)));
        issued.countDown();
        assertFailedAfterTheEnd(sends, reset, (DefaultWorker) a);
    }

    /**
     * Sends issued from the listeners of sends the end fails (a retry, or the next of a window), on the loop while the
     * end is still aborting the codecs' requests: they fail with the endpoint's cause too, and none is left registered
     * in a table already aborted.
     */
    @Test
    void sendsIssuedFromTheListenersOfSendsTheEndFailsFailWithIt() throws Exception {
        Worker a = start("a", null);
        Worker b = start("b", null);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        EndpointChannel impl = TestWorkers.impl(ep);
        ConnectionResetException reset = peerClosed(impl);
        List<ChannelFuture> resent = new CopyOnWriteArrayList<>();
        a.eventLoop().submit(() -> {
            // Both wait for b, which posts no receive: a rendezvous for its RTR, a synchronous send for its match.
            List<ChannelFuture> waiting = List.of(ep.tagSend(1, pattern(1, 100_000)), ep.tagSendSync(2, pattern(2, 100)));
            for (ChannelFuture w : waiting) {
                w.addListener(f -> {
                    resent.add(ep.tagSend(3, pattern(3, 100_000)));
                    resent.add(ep.tagSendSync(4, pattern(4, 100)));
                });
            }
            impl.fail(reset);
        }).get();
        assertEquals(4, resent.size(), "both listeners ran in the end");
        assertFailedAfterTheEnd(resent, reset, (DefaultWorker) a);
    }

    /**
     * A flush covers the atomics issued before it (UCX's flush covers every operation of the endpoint): when the end
     * fails them, the flush fails with them, though no RMA operation was outstanding.
     */
    @Test
    void aFlushFailsWhenTheEndFailsTheAtomicsBeforeIt() throws Exception {
        Worker a = start("a", null);
        DefaultWorker b = (DefaultWorker) start("b", null);
        try (Arena arena = Arena.ofShared()) {
            RemoteMemoryKey key = b.registerMemory(arena.allocate(64, 8));
            Endpoint ep = TestWorkers.wiredUp(a, b);
            EndpointChannel impl = TestWorkers.impl(ep);
            ConnectionResetException reset = peerClosed(impl);
            List<Future<?>> issued = a.eventLoop().submit(() -> { // one step: no answer from b comes in between
                Future<Long> add = ep.atomic(AtomicOp.ADD, key, key.base(), 1);
                Future<Void> flush = ep.flushRma();
                impl.fail(reset);
                return List.<Future<?>>of(add, flush);
            }).get();
            assertSame(reset, failureOf(issued.get(0)), "the atomic fails with the endpoint");
            assertSame(reset, failureOf(issued.get(1)), "and so does the flush that covers it");
        }
    }

    /**
     * A connect on another thread that passed its check just as the worker's close began: the close's step on the loop
     * comes before the endpoint's registration. The endpoint closes as it registers, and the worker's close waits for
     * that close and completes with no endpoint left. What was written to it either fails or, where the endpoint
     * wired up before its graceful close ended, arrives: its future says which.
     */
    @Test
    void anEndpointConnectedAsItsWorkerClosesIsClosedAsItRegisters() throws Exception {
        DefaultWorker a = (DefaultWorker) start("a", null);
        Worker b = start("b", null);
        Endpoint ep;
        ChannelFuture send;
        Future<Void> closing;
        Future<TagMessage> r = b.tagRecv(1, -1L);
        CountDownLatch release = TestWorkers.holdLoop(a);
        try {
            closing = a.close(); // its step on the loop queues behind the hold
            ep = a.connectOpen(b.address(), ErrorMode.PEER); // its registration queues behind the close's step
            send = ep.tagSend(1, pattern(1, 100));
        } finally {
            release.countDown();
        }
        assertTrue(ep.closeFuture().await(10, TimeUnit.SECONDS), "closed as it registered");
        assertTrue(send.await(10, TimeUnit.SECONDS), "the send completed");
        if (send.isSuccess()) {
            assertReceived(r, 1, 100, 10);
        } else {
            assertNotNull(send.cause().getMessage(), () -> "failed without saying why: " + send.cause());
        }
        assertTrue(closing.await(20, TimeUnit.SECONDS), "the worker's close completed");
        assertTrue(a.endpoints().isEmpty(), "no endpoint left: " + a.endpoints());
    }

    /**
     * A send issued after the owner's close fails, as a write after {@code close()} does on any Netty channel, whether
     * issued on the loop or off it (its task then runs after the close's): the graceful close is still draining what
     * came before it, but a send now would go behind the goodbye, which the peer ends its side on.
     */
    @Test
    void aSendIssuedAfterTheOwnersCloseFails() throws Exception {
        Worker a = start("a", null);
        Worker b = start("b", null);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Future<TagMessage> r = b.tagRecv(1, -1L);
        ChannelFuture before = ep.tagSend(1, pattern(1, 100));
        ChannelFuture onLoop = a.eventLoop().submit(() -> {
            ep.close();
            return ep.tagSend(2, pattern(2, 100));
        }).get();
        ChannelFuture offLoop = ep.tagSend(3, pattern(3, 100_000));
        assertTrue(before.await(10, TimeUnit.SECONDS) && before.isSuccess(), () -> "before: " + before.cause());
        assertReceived(r, 1, 100, 10);
        for (ChannelFuture f : List.of(onLoop, offLoop)) {
            Throwable cause = failureOf(f);
            assertInstanceOf(NucxClosedException.class, cause);
            assertTrue(cause.getMessage().contains("closed by its owner"), cause.getMessage());
        }
        assertTrue(ep.closeFuture().await(10, TimeUnit.SECONDS));
    }

    /** With error mode none nothing probes: the same hung peer goes unnoticed. */
    @Test
    void errorModeNoneRunsNoKeepalive() throws Exception {
        Worker a = start("a", null);
        Worker b = start("b", null);
        Endpoint ep = a.connect(b.address(), ErrorMode.NONE);
        assertTrue(ep.wireupFuture().await(10, TimeUnit.SECONDS));
        assertSame(ErrorMode.NONE, awaitAccepted(b).errorMode());
        assertNull(TestWorkers.impl(ep).selection().keepalive());
        CountDownLatch release = TestWorkers.holdLoop(b);
        try {
            // Keepalive stepped by hand past its limit while b cannot answer: with probing, this fails an endpoint.
            DefaultWorker da = (DefaultWorker) a;
            for (int i = 0; i <= 3 * da.keepaliveTicksToExpire(); i++) {
                da.eventLoop().submit(da::keepaliveTick).get(10, TimeUnit.SECONDS);
            }
            assertFalse(a.eventLoop().submit(() -> ep.errorFuture().isDone()).get(), "keepalive failed it");
            assertTrue(ep.isActive());
        } finally {
            release.countDown();
        }
    }

    /**
     * Graceful close: what a wrote (eager and rendezvous, some possibly still queued in the stub) arrives; a's close
     * waits for its rendezvous send to be taken; then b's endpoint fails with a reset naming the close, and b's own
     * rendezvous send toward a fails with it at once (not after a timeout).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void closeFlushesWhatWasWrittenAndThePeerCompletesItsSideWithReset(String tls) throws Exception {
        ErrorEvents aEvents = new ErrorEvents();
        ErrorEvents bEvents = new ErrorEvents();
        Worker a = start("a", aEvents, "TLS", tls, "KEEPALIVE_TIMEOUT", "20s");
        Worker b = start("b", bEvents, "TLS", tls, "KEEPALIVE_TIMEOUT", "20s");
        Endpoint ep = a.connect(b.address());
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            sends.add(ep.tagSend(i, pattern(i, 100 * i)));
        }
        sends.add(ep.tagSend(10, pattern(10, 200_000))); // rendezvous: waits for b's receive
        Endpoint peer = awaitAccepted(b);
        ChannelFuture fromB = peer.tagSend(77, pattern(77, 50_000)); // rendezvous toward a, never received
        Future<Void> closed = ep.close();
        // Asked on a's loop after the close was: the rendezvous send waits for b's receive, posted only below.
        assertFalse(a.eventLoop().submit(closed::isDone).get(), "close waits for the rendezvous send");
        for (int i = 0; i <= 10; i++) {
            assertReceived(b.tagRecv(i, -1L), i, i == 10 ? 200_000 : 100 * i, 10);
        }
        assertTrue(closed.await(10, TimeUnit.SECONDS) && closed.isSuccess(), () -> "close: " + closed.cause());
        for (ChannelFuture f : sends) {
            assertTrue(f.isSuccess(), () -> "send failed: " + f.cause());
        }
        assertTrue(ep.errorFuture().isSuccess(), "closed here without failure");
        assertEquals(0, aEvents.count(ep));
        Throwable peerCause = failureOf(peer.errorFuture());
        assertInstanceOf(ConnectionResetException.class, peerCause);
        assertTrue(peerCause.getMessage().contains("closed by its owner"), peerCause.getMessage());
        assertSame(peerCause, failureOf(fromB));
        assertTrue(peer.closeFuture().await(10, TimeUnit.SECONDS));
        assertEquals(1, bEvents.count(peer));
        assertTrue(a.endpoints().isEmpty() && b.endpoints().isEmpty());
    }

    /**
     * A Netty app's writes come with void promises (a {@code NucxChannel}'s stream writes do): a close right behind a
     * rendezvous or synchronous send so written still waits for the receiver, then says goodbye at once, not at the
     * bound (NUCX_KEEPALIVE_TIMEOUT, 20 s here), and the peer's endpoint closes with it.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"rendezvous", "sync"})
    void aCloseWaitsForSendsWrittenWithAVoidPromise(String kind) throws Exception {
        Worker a = start("a", new ErrorEvents(), "KEEPALIVE_TIMEOUT", "20s");
        Worker b = start("b", new ErrorEvents(), "KEEPALIVE_TIMEOUT", "20s");
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Endpoint peer = awaitAccepted(b);
        boolean sync = kind.equals("sync");
        int length = sync ? 100 : 200_000;
        ep.writeAndFlush(new TagMessage(5, pattern(5, length), sync), ep.voidPromise());
        Future<Void> closed = ep.close();
        // Asked on a's loop after the close was: the send waits for b's receive, posted only below.
        assertFalse(a.eventLoop().submit(closed::isDone).get(), "close waits for the " + kind + " send");
        assertReceived(b.tagRecv(5, -1L), 5, length, 10);
        assertTrue(closed.await(10, TimeUnit.SECONDS) && closed.isSuccess(), () -> "close: " + closed.cause());
        assertTrue(peer.closeFuture().await(10, TimeUnit.SECONDS), "the peer's endpoint closes with a's goodbye");
        assertTrue(failureOf(peer.errorFuture()).getMessage().contains("closed by its owner"));
    }
}
