package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.nucx.AmMessage;
import io.nucx.Endpoint;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Endpoints that connect, close and fail at random moments while tagged, stream and active-message traffic is in
 * flight: two or three workers over self, shm, tcp or a mix; endpoints between them (to another worker or to their own,
 * some connected from both sides at once); and, between the sends, graceful closes by the owner, closes by the peer,
 * closes of endpoints still wiring up, the close of a whole worker with its endpoints busy, and connects to a worker
 * that is closing. Every send, receive and close completes within a bound, a failure says why; what arrives is
 * exactly what was sent, in order (a prefix, for an endpoint that failed); over an endpoint whose receiving side
 * nobody closed (its sending side closed gracefully or not), everything written arrives; every worker closes within a
 * bound; and nothing leaks (PARANOID leak detection reports it).
 * Seeded: {@code -Dtest.lifecycle.seed=N} replays a run (case i uses N + i); {@code -Dtest.lifecycle.cases=N}.
 */
@Timeout(120)
class EndpointLifecycleRandomTest {

    private static final long BASE_SEED = Long.getLong("test.lifecycle.seed", System.nanoTime());
    private static final int CASES = Integer.getInteger("test.lifecycle.cases", 20);
    private static final String[] TLS = {"self", "shm", "tcp", "shm,tcp", "self,shm,tcp"};
    private static final int AM_ID = 7;
    /** Bound on each wait for what the API promises will complete. */
    private static final int WAIT_SECONDS = 20;

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    static IntStream cases() {
        return IntStream.range(0, CASES);
    }

    /** Problems seen on loops (handlers), reported at the end with the seed. */
    private final List<String> problems = new CopyOnWriteArrayList<>();

    /** Every stream byte an endpoint's pipeline read, per endpoint (the receiving side's). */
    @ChannelHandler.Sharable
    final class StreamReader extends ChannelInboundHandlerAdapter {
        final Map<Channel, ByteArrayOutputStream> read = new ConcurrentHashMap<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof ByteBuf b) {
                    byte[] bytes = new byte[b.readableBytes()];
                    b.getBytes(b.readerIndex(), bytes);
                    ByteArrayOutputStream out = read.computeIfAbsent(ctx.channel(), k -> new ByteArrayOutputStream());
                    synchronized (out) {
                        out.writeBytes(bytes);
                    }
                } else {
                    problems.add("an endpoint's pipeline read a " + msg.getClass().getName());
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            problems.add("exception reached the tail of " + ctx.channel() + ": " + cause);
        }
    }

    /** Active messages as they arrive: per connection, the sequence numbers in arrival order; contents checked. */
    final class AmReceiver {
        final Map<Integer, List<Integer>> arrived = new ConcurrentHashMap<>();
        final Map<Integer, Map<Integer, Integer>> sizes = new ConcurrentHashMap<>();
        final AtomicInteger verified = new AtomicInteger();
        final AtomicInteger pending = new AtomicInteger();

        void onMessage(AmMessage m) {
            ByteBuf h = m.header();
            int conn = h.getInt(h.readerIndex());
            int seq = h.getInt(h.readerIndex() + 4);
            arrived.computeIfAbsent(conn, k -> new CopyOnWriteArrayList<>()).add(seq);
            Integer size = sizes.getOrDefault(conn, Map.of()).get(seq);
            if (size == null || m.dataLength() != size) {
                problems.add("am " + conn + "/" + seq + ": " + m.dataLength() + " B, sent " + size);
                return;
            }
            if (!m.isRendezvous()) {
                check(conn, seq, m.data());
                return;
            }
            m.keep();
            pending.incrementAndGet();
            ByteBuf into = Unpooled.buffer(size);
            m.receiveData(into).addListener(f -> {
                try {
                    if (f.isSuccess()) {
                        check(conn, seq, into);
                    } else if (f.cause() == null || f.cause().getMessage() == null) {
                        problems.add("am " + conn + "/" + seq + ": receive failed without a reason: " + f.cause());
                    }
                } finally {
                    into.release();
                    m.release();
                    pending.decrementAndGet();
                }
            });
        }

        private void check(int conn, int seq, ByteBuf data) {
            byte[] got = new byte[data.readableBytes()];
            data.getBytes(data.readerIndex(), got);
            if (!Arrays.equals(got, amBytes(conn, seq, got.length))) {
                problems.add("am " + conn + "/" + seq + ": data differ");
            } else {
                verified.incrementAndGet();
            }
        }
    }

    private long caseSeed;
    private final Set<String> closedEps = ConcurrentHashMap.newKeySet();
    private AmReceiver[] amReceivers;

    private byte[] amBytes(int conn, int seq, int size) {
        byte[] b = new byte[size];
        new SplittableRandom(caseSeed * 31 + conn * 1_000_003L + seq).nextBytes(b);
        return b;
    }

    /** One tagged message: its receive is posted (exact tag) at the destination before it is sent. */
    private record TagSent(long tag, int size, long contentSeed, ChannelFuture send, Future<TagMessage> recv) {
    }

    /** One endpoint of the run and everything done on it. */
    private final class Conn {
        final int no;
        final int from;
        final int to;
        final Endpoint ep;
        final List<TagSent> tags = new ArrayList<>();
        final List<ChannelFuture> streamSends = new ArrayList<>();
        final ByteArrayOutputStream streamWritten = new ByteArrayOutputStream();
        final List<ChannelFuture> amSends = new ArrayList<>();
        Future<Void> ownerClose;
        String disrupted;
        String how;

        Conn(int no, int from, int to, Endpoint ep, String how) {
            this.no = no;
            this.from = from;
            this.to = to;
            this.ep = ep;
            this.how = how;
        }

        @Override
        public String toString() {
            return "conn " + no + " (w" + from + "->w" + to + ", " + how + (ownerClose != null ? ", owner closed" : "")
                    + (disrupted != null ? ", " + disrupted : "") + ")";
        }
    }

    @ParameterizedTest(name = "case {0}")
    @MethodSource("cases")
    void endpointsConnectingClosingAndFailingUnderTrafficKeepTheirPromises(int caseNo) throws Exception {
        long seed = BASE_SEED + caseNo;
        caseSeed = seed;
        SplittableRandom rnd = new SplittableRandom(seed);
        String tls = TLS[rnd.nextInt(TLS.length)];
        int thresh = new int[] {8 << 10, 32 << 10, 128 << 10}[rnd.nextInt(3)];
        int nWorkers = 2 + rnd.nextInt(2);
        String id = "seed " + seed + " (replay: -Dtest.lifecycle.seed=" + BASE_SEED + ", case " + caseNo + "), tls "
                + tls + ", rndv thresh " + thresh + ", " + nWorkers + " workers";
        System.out.println("EndpointLifecycleRandomTest " + id);
        String[] settings = {"TLS", tls, "RNDV_THRESH", String.valueOf(thresh), "KEEPALIVE_INTERVAL", "200ms",
            "KEEPALIVE_TIMEOUT", "3s"};
        DefaultWorker[] ws = new DefaultWorker[nWorkers];
        StreamReader[] readers = new StreamReader[nWorkers];
        AmReceiver[] ams = new AmReceiver[nWorkers];
        amReceivers = ams;
        for (int i = 0; i < nWorkers; i++) {
            readers[i] = new StreamReader();
            ams[i] = new AmReceiver();
            ws[i] = workers.start("w" + i, readers[i], settings);
            ws[i].setAmHandler(AM_ID, ams[i]::onMessage);
        }
        boolean[] closed = new boolean[nWorkers];
        // Endpoints closed so far, as "worker#id": connects may return the same pair (a peer's endpoint adopted, a
        // simultaneous connect paired), so a close of one conn's endpoint may be another's peer closing.
        closedEps.clear();
        List<Future<Void>> workerCloses = new ArrayList<>();
        List<Conn> conns = new ArrayList<>();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        int steps = 40 + rnd.nextInt(100);
        boolean closeAWorker = nWorkers == 3 ? rnd.nextBoolean() : rnd.nextInt(4) == 0;
        int workerCloseStep = closeAWorker ? steps / 3 + rnd.nextInt(steps / 2) : -1;
        for (int step = 0; step < steps; step++) {
            if (step == workerCloseStep) {
                int victim = rnd.nextInt(nWorkers);
                closed[victim] = true;
                Future<Void> wc = ws[victim].close();
                workerCloses.add(wc);
                log.add(step + ": close w" + victim);
                for (Conn c : conns) {
                    if (c.from == victim || c.to == victim) {
                        c.disrupted = "worker w" + victim + " closed";
                    }
                }
                if (rnd.nextBoolean()) {
                    // Connect to the closing worker from a live one and write to it at once.
                    int from = liveOther(rnd, closed, victim);
                    if (from >= 0) {
                        Conn c = connect(conns, ws, from, victim, "to a closing worker", log, step);
                        if (c != null) {
                            c.disrupted = "connected to a closing worker";
                            traffic(rnd, c, ws, thresh, 1 + rnd.nextInt(4));
                        }
                    }
                }
                continue;
            }
            int action = rnd.nextInt(100);
            List<Conn> live = new ArrayList<>();
            for (Conn c : conns) {
                if (!closed[c.from] && !closedEps.contains(c.from + "#" + c.ep.endpointId())) {
                    live.add(c);
                }
            }
            if (live.isEmpty() || action < 12) {
                int from = liveOther(rnd, closed, -1);
                int to = rnd.nextInt(6) == 0 ? from : liveOther(rnd, closed, from);
                if (from < 0 || to < 0) {
                    continue;
                }
                if (rnd.nextInt(3) == 0 && from != to) {
                    // Both sides at once, from two threads.
                    connectConcurrently(conns, ws, from, to, log, step);
                } else {
                    Conn c = connect(conns, ws, from, to, "connect", log, step);
                    if (c != null && rnd.nextInt(4) == 0) {
                        // Closed while it wires up, with something written first.
                        traffic(rnd, c, ws, thresh, rnd.nextInt(4));
                        c.how += ", closed wiring up";
                        ownerClose(c);
                        log.add(step + ": close wiring " + c);
                    }
                }
            } else if (action < 70) {
                Conn c = live.get(rnd.nextInt(live.size()));
                traffic(rnd, c, ws, thresh, 1 + rnd.nextInt(3));
            } else if (action < 78) {
                Conn c = live.get(rnd.nextInt(live.size()));
                ownerClose(c);
                log.add(step + ": owner close " + c);
            } else if (action < 84) {
                Conn c = live.get(rnd.nextInt(live.size()));
                if (closed[c.to] || !c.ep.wireupFuture().isSuccess()) {
                    continue;
                }
                Endpoint peer = peerOf(c, ws);
                if (peer != null) {
                    closedEps.add(c.to + "#" + peer.endpointId());
                    peer.close();
                    log.add(step + ": peer close " + c);
                }
            } else if (rnd.nextInt(3) == 0) {
                Thread.sleep(rnd.nextInt(20));
            }
        }
        String ctx = id + ", " + conns.size() + " endpoints";
        try {
            verify(ctx, conns, ws, readers, ams, workerCloses);
        } catch (AssertionError | RuntimeException e) {
            System.out.println("EndpointLifecycleRandomTest " + ctx + " failed; the run: " + log);
            throw e;
        } finally {
            // A failed check leaves messages unreleased: release them, so that a LEAK report names the code's leaks.
            for (DefaultWorker w : ws) {
                w.close().await(WAIT_SECONDS, TimeUnit.SECONDS);
            }
            for (Conn c : conns) {
                for (TagSent t : c.tags) {
                    if (t.recv().isSuccess() && t.recv().getNow().refCnt() > 0) {
                        t.recv().getNow().release();
                    }
                }
            }
        }
    }

    private void verify(String ctx, List<Conn> conns, DefaultWorker[] ws, StreamReader[] readers, AmReceiver[] ams,
                        List<Future<Void>> workerCloses) throws Exception {
        int nWorkers = ws.length;
        // Every send and every close completes; a failure says why.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        for (Conn c : conns) {
            String what = ctx + ": " + c;
            for (TagSent t : c.tags) {
                awaitNamed(t.send(), deadline, what + ": tag send " + Long.toHexString(t.tag()) + " " + t.size()
                        + " B");
            }
            for (int i = 0; i < c.streamSends.size(); i++) {
                awaitNamed(c.streamSends.get(i), deadline, what + ": stream write " + i);
            }
            for (int i = 0; i < c.amSends.size(); i++) {
                awaitNamed(c.amSends.get(i), deadline, what + ": am " + i);
            }
            if (c.ownerClose != null) {
                awaitNamed(c.ownerClose, deadline, what + ": owner's close");
            }
        }
        // Endpoints whose receiving side nobody closed keep every promise: all arrives, in order, intact; a graceful
        // close of the sending side included.
        for (Conn c : conns) {
            if (c.disrupted == null) {
                long remoteId = c.ep.eventLoop().submit(() -> TestWorkers.impl(c.ep).remoteEndpointId()).get();
                if (remoteId == -1 || closedEps.contains(c.to + "#" + remoteId)) {
                    c.disrupted = remoteId == -1 ? "never wired up" : "its peer's endpoint closed";
                }
            }
            if (c.disrupted != null) {
                continue;
            }
            String what = ctx + ": " + c;
            for (TagSent t : c.tags) {
                assertTrue(t.send().isSuccess(), what + ": tag send " + Long.toHexString(t.tag()) + " " + t.size()
                        + " B failed: " + t.send().cause());
                TagMessage m = awaitNamed(t.recv(), deadline, what + ": tag receive " + Long.toHexString(t.tag()));
                assertTrue(t.recv().isSuccess(), what + ": receive " + Long.toHexString(t.tag()) + " failed: "
                        + t.recv().cause());
                try {
                    TestWorkers.assertPattern(t.contentSeed(), t.size(), m.content());
                } catch (AssertionError e) {
                    fail(what + ": tag " + Long.toHexString(t.tag()) + ": " + e.getMessage());
                }
            }
            for (int i = 0; i < c.streamSends.size(); i++) {
                assertTrue(c.streamSends.get(i).isSuccess(), what + ": stream write " + i + " failed: "
                        + c.streamSends.get(i).cause());
            }
            for (int i = 0; i < c.amSends.size(); i++) {
                assertTrue(c.amSends.get(i).isSuccess(), what + ": am " + i + " failed: " + c.amSends.get(i).cause());
            }
            byte[] written = c.streamWritten.toByteArray();
            awaitTrueBy(() -> streamRead(readers[c.to], c.no).length >= written.length, deadline,
                    what + ": stream: " + written.length + " B written, " + streamRead(readers[c.to], c.no).length
                            + " read");
            assertStreamPrefix(written, streamRead(readers[c.to], c.no), true, what);
            int amCount = c.amSends.size();
            awaitTrueBy(() -> amArrived(ams[c.to], c.no).size() >= amCount, deadline,
                    what + ": " + amCount + " active messages sent, arrived " + amArrived(ams[c.to], c.no));
            assertEquals(IntStream.range(0, amCount).boxed().toList(), amArrived(ams[c.to], c.no),
                    what + ": active messages arrived");
        }
        // The others: what arrived is a prefix of what was sent, intact.
        for (Conn c : conns) {
            if (c.disrupted != null) {
                String what = ctx + ": " + c;
                assertStreamPrefix(c.streamWritten.toByteArray(), streamRead(readers[c.to], c.no), false, what);
                List<Integer> got = amArrived(ams[c.to], c.no);
                assertEquals(IntStream.range(0, got.size()).boxed().toList(), got, what + ": active messages arrived "
                        + "(not a prefix of those sent)");
            }
        }
        // Every worker closes within a bound; then every receive has completed, one way or the other.
        for (int i = 0; i < nWorkers; i++) {
            assertTrue(ws[i].close().await(WAIT_SECONDS, TimeUnit.SECONDS), ctx + ": w" + i + " did not close");
        }
        for (Future<Void> wc : workerCloses) {
            assertTrue(wc.await(WAIT_SECONDS, TimeUnit.SECONDS), ctx + ": a worker closed mid-run did not close");
        }
        long recvDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (Conn c : conns) {
            for (TagSent t : c.tags) {
                String what = ctx + ": " + c + ": tag receive " + Long.toHexString(t.tag());
                TagMessage m = awaitNamed(t.recv(), recvDeadline, what + " (after the workers closed)");
                if (m != null) {
                    try {
                        TestWorkers.assertPattern(t.contentSeed(), t.size(), m.content());
                    } catch (AssertionError e) {
                        fail(what + ": " + e.getMessage());
                    }
                }
            }
        }
        for (int i = 0; i < nWorkers; i++) {
            AmReceiver am = ams[i];
            awaitTrueBy(() -> am.pending.get() == 0, recvDeadline, ctx + ": w" + i + ": " + am.pending.get()
                    + " rendezvous active-message receives never completed");
        }
        assertTrue(problems.isEmpty(), ctx + ": " + problems);
        long kept = conns.stream().filter(c -> c.disrupted == null).count();
        System.out.println("EndpointLifecycleRandomTest " + ctx + ": ok, " + kept + " kept every promise; " + conns);
    }

    /**
     * Found by the random run: an endpoint created on demand for a peer's connect, closed here (draining), was
     * adopted by this worker's next connect to that peer, which so returned an endpoint its owner had closed: every
     * send on it failed "closed by its owner before this write".
     */
    @Test
    void aConnectDoesNotAdoptAnEndpointItsOwnerClosed() throws Exception {
        String[] settings = {"TLS", "tcp", "RNDV_THRESH", "1k", "KEEPALIVE_INTERVAL", "200ms", "KEEPALIVE_TIMEOUT",
            "5s"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        TestWorkers.Pair pair = TestWorkers.connected(a, b); // b's endpoint, created on demand, is connection #0
        // A rendezvous send a receives no one posts: b's close drains, waiting for it (5 s at most).
        ChannelFuture waiting = pair.ba().tagSend(5, pattern(5, 64 << 10));
        pair.ba().close();
        TestWorkers.awaitOnLoop(b, () -> !TestWorkers.impl(pair.ba()).lifecycle().takesSends(), "b's close began");
        Endpoint ep = b.connect(a.address()); // b's connection #0 to a
        assertNotSame(pair.ba(), ep, "connect returned the endpoint b closed");
        Future<TagMessage> r = a.tagRecv(6, -1L);
        assertTrue(ep.tagSend(6, pattern(6, 10)).await(10, TimeUnit.SECONDS));
        TestWorkers.assertReceived(r, 6, 10, 10);
        a.tagRecv(5, -1L).get(10, TimeUnit.SECONDS).release();
        assertTrue(waiting.await(10, TimeUnit.SECONDS));
    }

    /**
     * Found by the random run: a second close of an endpoint already draining (its owner's close, then its worker's)
     * ended it at once, so the rendezvous send the graceful close waited for, its receive posted, failed with a bare
     * {@code ClosedChannelException}.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aWorkersCloseDoesNotCutShortTheGracefulCloseOfAnEndpointClosedBefore(String tls) throws Exception {
        String[] settings = {"TLS", tls, "RNDV_THRESH", "1k", "KEEPALIVE_INTERVAL", "200ms", "KEEPALIVE_TIMEOUT",
            "5s"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Future<TagMessage> r = b.tagRecv(5, -1L);
        ChannelFuture send = pair.ab().tagSend(5, pattern(5, 200 << 10));
        Future<Void> epClosed = pair.ab().close();
        Future<Void> closed = a.close();
        assertTrue(send.await(10, TimeUnit.SECONDS), "send completed");
        assertTrue(send.isSuccess(), () -> "send: " + send.cause());
        TestWorkers.assertReceived(r, 5, 200 << 10, 10);
        assertTrue(epClosed.await(10, TimeUnit.SECONDS) && epClosed.isSuccess(), () -> "close: " + epClosed.cause());
        assertTrue(closed.await(10, TimeUnit.SECONDS), "a closed");
    }

    /**
     * Found by the random run (a CI run): a write issued off the loop just as the endpoint ended walks the pipeline
     * later, as a task; once the endpoint has deregistered its pipeline is empty and Netty's head failed the write with
     * a {@code ClosedChannelException} that says nothing. A writer thread here sends while the loop closes the
     * endpoint's lane; every write that fails must say why.
     */
    @Test
    void writesFromAnotherThreadThatRaceTheEndFailNamingIt() throws Exception {
        String tls = "self"; // the quickest to end and wire up again; the race is the endpoint's, not the lane's
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        int failedWhileOpen = 0;
        for (int round = 0; round < 30; round++) {
            Endpoint ep = TestWorkers.connected(a, b).ab();
            List<ChannelFuture> whileOpen = new ArrayList<>();
            List<ChannelFuture> after = new ArrayList<>();
            CountDownLatch started = new CountDownLatch(1);
            Thread writer = new Thread(() -> {
                for (int i = 0; i < 20_000 && ep.isOpen(); i++) {
                    whileOpen.add(i % 2 == 0 ? ep.streamSend(Unpooled.wrappedBuffer(new byte[16]))
                            : ep.tagSend(7, Unpooled.wrappedBuffer(new byte[16])));
                    started.countDown();
                }
                for (int i = 0; i < 50; i++) { // refused at once: they name the end too
                    after.add(ep.streamSend(Unpooled.wrappedBuffer(new byte[16])));
                }
            }, "racing-writer");
            writer.start();
            assertTrue(started.await(10, TimeUnit.SECONDS), "writer started");
            ep.eventLoop().execute(() -> ep.closeLane(0)); // its only lane: the endpoint fails at once
            writer.join(30_000);
            assertFalse(writer.isAlive(), "round " + round + ": the writer did not end");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            for (int i = 0; i < whileOpen.size(); i++) {
                ChannelFuture w = whileOpen.get(i);
                awaitNamed(w, deadline, tls + ", round " + round + ": write " + i);
                failedWhileOpen += w.isSuccess() ? 0 : 1;
            }
            for (int i = 0; i < after.size(); i++) {
                awaitNamed(after.get(i), deadline, tls + ", round " + round + ": write " + i + " after the end");
            }
        }
        assertTrue(failedWhileOpen > 0, "no write issued while the endpoint was open met its end: nothing raced");
    }

    private void ownerClose(Conn c) {
        closedEps.add(c.from + "#" + c.ep.endpointId());
        c.ownerClose = c.ep.close();
    }

    private static int liveOther(SplittableRandom rnd, boolean[] closed, int not) {
        List<Integer> live = new ArrayList<>();
        for (int i = 0; i < closed.length; i++) {
            if (!closed[i] && i != not) {
                live.add(i);
            }
        }
        return live.isEmpty() ? -1 : live.get(rnd.nextInt(live.size()));
    }

    private Conn connect(List<Conn> conns, DefaultWorker[] ws, int from, int to, String how, List<String> log,
                         int step) {
        Endpoint ep;
        try {
            ep = ws[from].connect(ws[to].address());
        } catch (RuntimeException e) {
            // A closing peer may be refused at once, naming why.
            assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), "connect failed saying nothing: " + e);
            log.add(step + ": connect w" + from + "->w" + to + " refused: " + e);
            return null;
        }
        Conn c = new Conn(conns.size(), from, to, ep, how);
        conns.add(c);
        // The stream starts with the connection's number, so the reader knows which it is.
        streamWrite(c, Unpooled.buffer(4).writeInt(c.no));
        log.add(step + ": " + c);
        return c;
    }

    /** Connects {@code a} to {@code b} and {@code b} to {@code a} from two threads at once. */
    private void connectConcurrently(List<Conn> conns, DefaultWorker[] ws, int a, int b, List<String> log, int step)
            throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        Endpoint[] eps = new Endpoint[2];
        Thread[] ts = new Thread[2];
        for (int k = 0; k < 2; k++) {
            int from = k == 0 ? a : b;
            int to = k == 0 ? b : a;
            int slot = k;
            ts[k] = new Thread(() -> {
                try {
                    go.await();
                    eps[slot] = ws[from].connect(ws[to].address());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "lifecycle-connect-" + k);
            ts[k].start();
        }
        go.countDown();
        for (Thread t : ts) {
            t.join(10_000);
            assertTrue(!t.isAlive(), "a concurrent connect did not return");
        }
        for (int k = 0; k < 2; k++) {
            Conn c = new Conn(conns.size(), k == 0 ? a : b, k == 0 ? b : a, eps[k], "concurrent");
            conns.add(c);
            streamWrite(c, Unpooled.buffer(4).writeInt(c.no));
            log.add(step + ": " + c);
        }
    }

    private void streamWrite(Conn c, ByteBuf data) {
        byte[] bytes = new byte[data.readableBytes()];
        data.getBytes(data.readerIndex(), bytes);
        c.streamWritten.writeBytes(bytes);
        c.streamSends.add(c.ep.streamSend(data));
    }

    /** {@code n} random sends on {@code c}: tagged (receive posted first), stream, active messages. */
    private void traffic(SplittableRandom rnd, Conn c, DefaultWorker[] ws, int thresh, int n) {
        for (int i = 0; i < n; i++) {
            int kind = rnd.nextInt(3);
            int size = size(rnd, thresh);
            if (kind == 0) {
                long tag = ((long) c.no << 32) | c.tags.size();
                long contentSeed = rnd.nextLong();
                Future<TagMessage> recv = ws[c.to].tagRecv(tag, -1L);
                ChannelFuture send = rnd.nextInt(4) == 0 ? c.ep.tagSendSync(tag, pattern(contentSeed, size))
                        : c.ep.tagSend(tag, pattern(contentSeed, size));
                c.tags.add(new TagSent(tag, size, contentSeed, send, recv));
            } else if (kind == 1) {
                streamWrite(c, pattern(rnd.nextLong(), Math.max(1, size)));
            } else {
                int seq = c.amSends.size();
                amReceivers[c.to].sizes.computeIfAbsent(c.no, k -> new ConcurrentHashMap<>()).put(seq, size);
                ByteBuf header = Unpooled.buffer(8).writeInt(c.no).writeInt(seq);
                c.amSends.add(c.ep.amSend(AM_ID, header, Unpooled.wrappedBuffer(amBytes(c.no, seq, size)),
                        rnd.nextBoolean()));
            }
        }
    }

    /** 0 B to 300 KiB, biased to the rendezvous threshold; now and then past 1 MiB. */
    private static int size(SplittableRandom rnd, int thresh) {
        return switch (rnd.nextInt(10)) {
            case 0 -> 0;
            case 1, 2, 3 -> rnd.nextInt(1, 2000);
            case 4, 5 -> Math.max(0, thresh + rnd.nextInt(-100, 101));
            case 6, 7 -> rnd.nextInt(1, thresh * 2);
            case 8 -> rnd.nextInt(thresh, 300 << 10);
            default -> rnd.nextInt(20) == 0 ? (1 << 20) + rnd.nextInt(100_000) : rnd.nextInt(1, 64 << 10);
        };
    }

    /** The peer's endpoint of {@code c} (wired up), or null if it is gone already. */
    private static Endpoint peerOf(Conn c, DefaultWorker[] ws) throws Exception {
        long remoteId = c.ep.eventLoop().submit(() -> TestWorkers.impl(c.ep).remoteEndpointId())
                .get(5, TimeUnit.SECONDS);
        DefaultWorker to = ws[c.to];
        return to.eventLoop().submit(() -> (Endpoint) to.endpoint(remoteId)).get(5, TimeUnit.SECONDS);
    }

    private static byte[] streamRead(StreamReader reader, int conn) {
        byte[] match = null;
        for (ByteArrayOutputStream out : reader.read.values()) {
            byte[] b;
            synchronized (out) {
                b = out.toByteArray();
            }
            if (b.length >= 4 && ((b[0] & 0xff) << 24 | (b[1] & 0xff) << 16 | (b[2] & 0xff) << 8 | b[3] & 0xff)
                    == conn) {
                assertTrue(match == null, "two endpoints read the stream of conn " + conn);
                match = b;
            }
        }
        return match == null ? new byte[0] : match;
    }

    private static List<Integer> amArrived(AmReceiver am, int conn) {
        return List.copyOf(am.arrived.getOrDefault(conn, List.of()));
    }

    private static void assertStreamPrefix(byte[] written, byte[] read, boolean all, String what) {
        assertTrue(read.length <= written.length, what + ": stream: read " + read.length + " B, written only "
                + written.length);
        if (all) {
            assertEquals(written.length, read.length, what + ": stream bytes read");
        }
        int at = Arrays.mismatch(written, 0, read.length, read, 0, read.length);
        assertTrue(at < 0, () -> what + ": stream differs at byte " + at + " of " + read.length);
    }

    /** Waits for {@code f} until {@code deadline}; its failure must say why. Returns its value if it succeeded. */
    private static <T> T awaitNamed(Future<T> f, long deadline, String what) throws InterruptedException {
        long left = Math.max(0, deadline - System.nanoTime());
        assertTrue(f.await(left, TimeUnit.NANOSECONDS), what + ": never completed");
        if (!f.isSuccess()) {
            Throwable cause = f.cause();
            boolean says = false;
            for (Throwable t = cause; t != null && !says; t = t.getCause()) {
                says = t.getMessage() != null && !t.getMessage().isBlank();
            }
            assertTrue(says, () -> what + ": failed without saying why: " + cause + " (made at "
                    + Arrays.toString(cause.getStackTrace()) + ")");
            return null;
        }
        return f.getNow();
    }

    private static void awaitTrueBy(BooleanSupplier condition, long deadline, String what)
            throws InterruptedException {
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, what);
            Thread.sleep(5);
        }
    }
}
