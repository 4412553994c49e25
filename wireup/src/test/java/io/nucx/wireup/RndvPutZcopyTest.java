package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.EndpointTimeoutException;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.ProtocolSettings;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.RndvCodec;
import io.nucx.protocol.tag.RndvHeaders;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.AmFrame;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaKey;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * rndv/put/zcopy between two workers of this JVM over tcp + cma with NUCX_RNDV_SCHEME=put_zcopy (the kernel treats our
 * own pid as any peer): the sender writes into the receive buffers the RTRs offer, byte for byte from just above the
 * threshold to 64 MiB, counted on both sides; a heap receive buffer falls back to fragments; a malformed RTR closes
 * only its lane; a graceful close of the receiving endpoint waits for the PUT in progress. And the scheme's effect on
 * the tables.
 */
@Timeout(180)
class RndvPutZcopyTest {

    private static final String[] PUT = {"TLS", "tcp,cma", "RNDV_SCHEME", "put_zcopy"};

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @BeforeEach
    void cma() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
    }


    private static long putThreshold(Worker w, WorkerAddress peer) throws Exception {
        ProtoTable t = w.protocolTable(peer, SelectionKey.MemoryType.DIRECT);
        return t.entries().stream().filter(e -> e.candidate().protocol() == RndvProtocols.PUT_ZCOPY).findFirst()
                .orElseThrow(() -> new AssertionError("no rndv/put/zcopy in\n" + t.format("to peer"))).start();
    }

    @Test
    void theSenderWritesEachMessageIntoTheOfferedReceiveBufferFromJustAboveTheThresholdTo64MiB() throws Exception {
        DefaultWorker a = workers.start("a", PUT);
        DefaultWorker b = workers.start("b", PUT);
        Endpoint ep = a.connect(b.address());
        assertEquals("cma/memory", ep.rmaLane());
        long threshold = putThreshold(a, b.address());
        int[] sizes = {(int) threshold + 1, 1 << 20, (3 << 20) + 7, 64 << 20};
        // Even messages: receives posted first into the user's direct buffers (expected RTS); odd: unexpected RTS,
        // received without a buffer (an allocated direct one is offered).
        List<ByteBuf> intos = new ArrayList<>();
        List<Future<TagMessage>> early = new ArrayList<>();
        for (int i = 0; i < sizes.length; i += 2) {
            ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(sizes[i]);
            intos.add(into);
            early.add(b.tagRecv(i, -1L, into));
        }
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sends.add(ep.tagSend(i, TestWorkers.directPattern(i, sizes[i])));
        }
        try {
            for (int i = 0; i < sizes.length; i++) {
                assertReceived((i % 2 == 0 ? early.get(i / 2) : b.tagRecv(i, -1L)), i, sizes[i], 60);
            }
            for (ChannelFuture f : sends) {
                assertTrue(f.await(30, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
            }
            assertEquals(sizes[0], intos.get(0).writerIndex(), "written into the user's buffer");
        } finally {
            intos.forEach(ByteBuf::release);
        }
        assertEquals(sizes.length, a.counters().count(RndvProtocols.PUT_COUNTER), "sender wrote by PUT");
        assertEquals(0, a.counters().count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals(sizes.length, b.counters().count(RndvProtocols.RECV_PUT_COUNTER), "receiver completed on ATP");
        assertEquals(0, b.counters().count(RndvProtocols.RECV_PUT_FALLBACK_COUNTER));
        assertEquals(0, a.counters().count(RndvProtocols.GET_ZCOPY.name()), "put_zcopy leaves get out");
        assertEquals(0, b.counters().count(RndvProtocols.RECV_GET_COUNTER));
        assertEquals(0, a.eventLoop().submit(() -> a.sumOverCodecs(RndvCodec.class, RndvCodec::sendsWaiting)).get(), "every send released on ATP");
        assertEquals(0, (int) b.eventLoop().submit(() -> b.sumOverCodecs(RndvCodec.class, RndvCodec::offered)).get(), "no offer left");
    }

    @Test
    void aHeapReceiveBufferFallsBackToFragmentsAndAHeapSendIsWrittenThroughABounceChunk() throws Exception {
        DefaultWorker a = workers.start("a", PUT);
        DefaultWorker b = workers.start("b", PUT);
        Endpoint ep = a.connect(b.address());
        int n = 16 << 20; // above tcp's tag/rndv threshold, so a heap send goes by rendezvous too
        ByteBuf heapInto = Unpooled.buffer(n);
        try {
            Future<TagMessage> r = b.tagRecv(1, -1L, heapInto);
            ChannelFuture s = ep.tagSend(1, TestWorkers.directPattern(1, n));
            assertReceived(r, 1, n, 60);
            assertTrue(s.await(10, TimeUnit.SECONDS) && s.isSuccess());
        } finally {
            heapInto.release();
        }
        assertEquals(1, b.counters().count(RndvProtocols.RECV_PUT_FALLBACK_COUNTER), "plain RTR for a heap buffer");
        assertEquals(0, a.counters().count(RndvProtocols.PUT_COUNTER));
        // A heap send (tag/rndv's plain RTS) into a direct receive: the receiver still offers, the sender bounces.
        ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(n);
        try {
            Future<TagMessage> r = b.tagRecv(2, -1L, into);
            ChannelFuture s = ep.tagSend(2, pattern(2, n));
            assertReceived(r, 2, n, 60);
            assertTrue(s.await(10, TimeUnit.SECONDS) && s.isSuccess());
        } finally {
            into.release();
        }
        assertEquals(2, a.counters().count(RndvProtocols.TAG_RNDV.name()), "both RTS plain");
        assertEquals(1, a.counters().count(RndvProtocols.PUT_COUNTER));
        assertEquals(1, b.counters().count(RndvProtocols.RECV_PUT_COUNTER));
    }

    @Test
    void anRtrWithABadRemoteKeyLengthClosesThatLaneWithAClearErrorAndTheWorkerGoesOn() throws Exception {
        DefaultWorker a = workers.start("a", PUT);
        DefaultWorker b = workers.start("b", PUT);
        Endpoint ep = a.connect(b.address());
        ep.tagSend(1, pattern(1, 10)).sync(); // wired up: b has its endpoint
        b.tagRecv(1, -1L).get(10, TimeUnit.SECONDS).release();
        Endpoint back = b.endpoints().iterator().next();
        ByteBuf h = RndvHeaders.writeRtr(back.alloc().buffer(), 1, 2, 4096,
                new CmaKey(1, 1, 0x1000, 4096).pack());
        h.setShortLE(RndvHeaders.RTR_LENGTH, 13); // the key length field lies
        TestWorkers.impl(back).amLane().writeAndFlush(AmFrame.of(AmIds.RNDV_RTR, h)).sync();
        TestWorkers.awaitTrue(() -> !a.laneFailures().isEmpty(), "the sender's lane did not fail");
        assertTrue(a.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage())
                .contains("RNDV_RTR remote key length is 13, but the header has 28 bytes after it")),
                () -> "failures: " + a.laneFailures());
        assertTrue(ep.closeFuture().await(10, TimeUnit.SECONDS), "the lane, and with it the endpoint, closed");
        Endpoint again = a.connect(b.address());
        ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(1 << 20);
        try {
            Future<TagMessage> r = b.tagRecv(3, -1L, into);
            again.tagSend(3, TestWorkers.directPattern(3, 1 << 20)).sync();
            assertReceived(r, 3, 1 << 20, 10);
        } finally {
            into.release();
        }
        assertEquals(1, a.counters().count(RndvProtocols.PUT_COUNTER));
    }

    /** The receiving endpoint closes while the sender writes 64 MiB into it: the close waits, the receive completes. */
    @Test
    void aGracefulCloseOfTheReceivingEndpointWaitsForThePutInProgress() throws Exception {
        DefaultWorker a = workers.start("a", PUT);
        DefaultWorker b = workers.start("b", PUT);
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Endpoint ep = pair.ab();
        Endpoint back = pair.ba();
        int n = 64 << 20;
        ChannelFuture s = ep.tagSend(2, TestWorkers.directPattern(2, n));
        TestWorkers.awaitUnexpected(b); // the RTS is here; a waits for the RTR
        // Hold the sender's loop, so the RTR waits there and the offer is still open when b closes.
        CountDownLatch go = TestWorkers.holdLoop(a);
        Future<TagMessage> r;
        ChannelFuture closed;
        try {
            r = b.tagRecv(2, -1L);
            assertEquals(1, (int) b.eventLoop().submit(() -> b.sumOverCodecs(RndvCodec.class, RndvCodec::offered)).get(), "offered");
            closed = back.close();
            // a's loop is held, so nothing from a can end the wait: the close is draining, waiting for the offer.
            assertEquals(EndpointLifecycle.State.DRAINING, b.eventLoop().submit(() -> TestWorkers.impl(back).state())
                    .get(), "the close waits for the PUT the peer has not even started");
            assertFalse(closed.isDone());
            assertFalse(r.isDone());
        } finally {
            go.countDown();
        }
        assertReceived(r, 2, n, 60);
        assertTrue(s.await(10, TimeUnit.SECONDS) && s.isSuccess(), () -> "send: " + s.cause());
        assertTrue(closed.await(20, TimeUnit.SECONDS), "the close completed");
        assertEquals(1, b.counters().count(RndvProtocols.RECV_PUT_COUNTER));
        assertEquals(0, b.counters().count(RndvProtocols.RECV_PUT_HELD_COUNTER));
    }

    /**
     * The PUT safety rule in one process: b's endpoint fails (as by keepalive) while its receive buffer is offered and
     * the sender has not written yet. The receive is held, not failed; b keeps the lane open and sends EP_REMOVED on
     * it; the sender, once it runs, stops and says so by ATP (or finishes and says so); only then is the receive
     * failed with the endpoint's cause and its buffer released, and b's lane closed.
     */
    @Test
    void anEndpointFailingWhileItsBufferIsOfferedHoldsTheReceiveUntilTheSendersLastWord() throws Exception {
        DefaultWorker a = workers.start("a", PUT);
        DefaultWorker b = workers.start("b", PUT);
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Endpoint ep = pair.ab();
        Endpoint back = pair.ba();
        int n = 64 << 20;
        ChannelFuture s = ep.tagSend(2, TestWorkers.directPattern(2, n));
        TestWorkers.awaitUnexpected(b);
        CountDownLatch go = TestWorkers.holdLoop(a);
        Future<TagMessage> r;
        Channel lane = TestWorkers.impl(back).amLane();
        try {
            r = b.tagRecv(2, -1L);
            failAsIfSilent(b, back);
            assertTrue(back.closeFuture().isDone(), "the endpoint has ended");
            assertTrue(lane.isOpen(), "its lane waits for the sender's last word");
            // a's loop is held and a's process lives: neither its last word nor its exit can have released it.
            assertEquals(1, (int) b.eventLoop().submit(b::heldReceives).get());
            assertEquals(EndpointLifecycle.State.LINGER, b.eventLoop().submit(() -> TestWorkers.impl(back).state())
                    .get());
            assertFalse(r.isDone(), "held: the sender may still write into the buffer");
        } finally {
            go.countDown();
        }
        assertTrue(r.await(30, TimeUnit.SECONDS), "released after the sender's ATP");
        assertTrue(r.cause() instanceof IOException, () -> "cause: " + r.cause());
        assertTrue(r.cause().getCause() instanceof EndpointTimeoutException, () -> "cause: " + r.cause());
        assertTrue(lane.closeFuture().await(10, TimeUnit.SECONDS), "then the lane closed");
        assertTrue(s.await(10, TimeUnit.SECONDS));
        // Usually the sender read EP_REMOVED right behind the RTR and cancelled (its send failed with the reset); if
        // it had finished first, its ATP OK was its last word instead. Either way nothing writes into the buffer now.
        assertTrue(s.isSuccess() ? a.counters().count(RndvProtocols.PUT_COUNTER) == 1
                : s.cause() instanceof ConnectionResetException, () -> "send: " + s.cause());
        assertEquals(0, (int) b.eventLoop().submit(b::heldReceives).get());
        assertEquals(1, b.counters().count(RndvProtocols.RECV_PUT_HELD_COUNTER));
        assertEquals(0, b.counters().count(RndvProtocols.RECV_PUT_COUNTER));
    }

    /**
     * b receives a's rendezvous message after a's endpoint has ended, its lane open only because a holds an offer of
     * its own. Whether b offers its buffer (a then answers ATP(cancelled) at once) or b's endpoint has already read
     * a's EP_REMOVED (the receive fails as its sender went away), b's receive must end promptly: never be held until
     * a's process exits, which for a live process is never.
     *
     * <p>Both orders in which a hears b: with a heap send, b writes a's offered buffer through a bounce chunk, one
     * 512 KiB chunk per loop turn, so b's offer reaches a while a still holds its own. With a native send, b's PUT
     * is done in the turn it began and its ATP reaches a before b's offer: a holds nothing any more when the offer
     * comes, and must still be there to refuse it (it waits for b's EP_REMOVED, which comes behind the offer).
     */
    @ParameterizedTest(name = "heap send: {0}")
    @ValueSource(booleans = {true, false})
    void aReceiveFromAnEndedEndpointEndsPromptlyWhetherOrNotItWasOffered(boolean heapSend) throws Exception {
        DefaultWorker a = workers.start("a", PUT);
        DefaultWorker b = workers.start("b", PUT);
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Endpoint ep = pair.ab();
        Endpoint back = pair.ba();
        int n = 64 << 20;
        // a will offer for it and hold that offer past its end (see above for what the kind of buffer changes).
        ChannelFuture fromB = back.tagSend(2, heapSend ? pattern(2, n) : TestWorkers.directPattern(2, n));
        TestWorkers.awaitUnexpected(a);
        CountDownLatch go = TestWorkers.holdLoop(b);
        Future<TagMessage> intoA;
        Future<TagMessage> intoB;
        try {
            intoA = a.tagRecv(2, -1L); // a offers its buffer to b (b's loop is held: the offer waits)
            TestWorkers.awaitOnLoop(a, () -> a.sumOverCodecs(RndvCodec.class, RndvCodec::offered) == 1, "a's offer");
            ep.tagSend(3, TestWorkers.directPattern(3, n)); // a's RTS, read by b behind the offer
            failAsIfSilent(a, ep);
            assertTrue(ep.closeFuture().isDone() && TestWorkers.impl(ep).amLane().isOpen(), "a ended, its lane open for b's last word");
            intoB = b.tagRecv(3, -1L); // runs on b's loop before b reads anything: b will offer on a's RTS
        } finally {
            go.countDown();
        }
        assertTrue(intoB.await(20, TimeUnit.SECONDS), "b's receive ended, it was not held");
        assertTrue(intoB.cause() instanceof IOException && (intoB.cause().getMessage().contains("stopped "
                + "writing") || intoB.cause().getMessage().contains("went away")), () -> "cause: " + intoB.cause());
        assertTrue(intoA.await(20, TimeUnit.SECONDS), "a's held receive is released by b's last word");
        assertTrue(fromB.await(20, TimeUnit.SECONDS));
        assertEquals(0, (int) a.eventLoop().submit(a::heldReceives).get());
        assertEquals(0, (int) b.eventLoop().submit(b::heldReceives).get());
    }

    /**
     * a's endpoint ends with nothing held, but with a send announced (its RTS) that b answers by offering its buffer
     * before b reads that a ended. a must stay to refuse that offer (ATP cancelled): closing its lanes over the unread
     * RTR would leave b holding the buffer until a's process exits. a's lanes close once b's EP_REMOVED, which comes
     * behind b's offer, was read.
     */
    @Test
    void anOfferToASenderWhoseEndpointEndedIsRefusedNotHeld() throws Exception {
        DefaultWorker a = workers.start("a", PUT);
        DefaultWorker b = workers.start("b", PUT);
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Endpoint ep = pair.ab();
        int n = 8 << 20;
        CountDownLatch go = TestWorkers.holdLoop(b);
        Future<TagMessage> intoB;
        ChannelFuture send;
        try {
            intoB = b.tagRecv(3, -1L); // runs on b's loop before b reads anything: b will offer on a's RTS
            send = ep.tagSend(3, TestWorkers.directPattern(3, n)); // a's RTS, on the lane before a ends
            failAsIfSilent(a, ep);
            assertTrue(send.await(10, TimeUnit.SECONDS) && send.cause() instanceof EndpointTimeoutException,
                    () -> "a's send failed with its endpoint: " + send.cause());
        } finally {
            go.countDown();
        }
        assertTrue(intoB.await(20, TimeUnit.SECONDS), "b's receive ended, it was not held");
        assertTrue(intoB.cause() instanceof IOException, () -> "cause: " + intoB.cause());
        assertEquals(0, (int) b.eventLoop().submit(b::heldReceives).get());
        assertTrue(TestWorkers.impl(ep).amLane().closeFuture().await(10, TimeUnit.SECONDS),
                "a's lane closed once b said goodbye");
        assertEquals(EndpointLifecycle.State.CLOSED, a.eventLoop().submit(() -> TestWorkers.impl(ep).state()).get());
    }

    /** Fails {@code ep} on {@code w}'s loop as keepalive would after the peer's silence, and waits for that. */
    private static void failAsIfSilent(DefaultWorker w, Endpoint ep) throws Exception {
        w.eventLoop().submit(() -> TestWorkers.impl(ep).fail(new EndpointTimeoutException(ep.endpointId(),
                TestWorkers.impl(ep).remoteAddress(), "test: as if the peer had been silent"))).get();
    }

    @Test
    void theSchemeDecidesWhichRendezvousVariantsTheTablesHold() throws Exception {
        Map<String, List<Protocol>> expected = Map.of(
                "auto", List.of(RndvProtocols.TAG_RNDV, RndvProtocols.GET_ZCOPY),
                "get_zcopy", List.of(RndvProtocols.TAG_RNDV, RndvProtocols.GET_ZCOPY),
                "put_zcopy", List.of(RndvProtocols.TAG_RNDV, RndvProtocols.PUT_ZCOPY),
                "am", List.of(RndvProtocols.TAG_RNDV));
        for (var e : expected.entrySet()) {
            List<Protocol> rndv = ProtocolSettings.from(NucxConfig.of(Map.of("RNDV_SCHEME", e.getKey()), Map.of()),
                    ProtocolRegistry.DEFAULT).protocols().stream().filter(p -> p.name().startsWith("tag/") || p.name().startsWith("rndv/")).toList();
            assertEquals(e.getValue(), rndv, e.getKey());
        }
        assertEquals(List.of(RndvProtocols.PUT_ZCOPY), ProtocolSettings.from(NucxConfig.of(Map.of("RNDV_SCHEME",
                "put_zcopy", "PROTOS", "rndv/put/zcopy"), Map.of()), ProtocolRegistry.DEFAULT).protocols(),
                "NUCX_PROTOS knows it by name");
        NucxConfigException bad = assertThrows(NucxConfigException.class,
                () -> workers.start("x", "TLS", "tcp,cma", "RNDV_SCHEME", "push"));
        assertTrue(bad.getMessage().contains("RNDV_SCHEME") && bad.getMessage().contains("'push'"), bad.getMessage());
        DefaultWorker a = workers.start("a", PUT);
        String info = a.protocolInfo(a.address());
        assertTrue(info.contains("(?) rendezvous zero-copy write to remote"), info);
        assertFalse(info.contains("zero-copy read from remote"), info);
    }
}
