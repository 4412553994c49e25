package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.EndpointException;
import io.nucx.ErrorMode;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Endpoints with more than one message lane, two workers in one JVM over real shm rings and tcp sockets: rendezvous
 * data spread over the AM lane (shm) and an AM_BW lane (tcp) by bandwidth, and, in error mode failover, a lane lost
 * mid-stream replaced with every message arriving exactly once and in order.
 */
@Timeout(120)
class MultiLaneTest {

    private static final long FENCE = 4242;
    private static final long TAG = 42;

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @Test
    void rendezvousDataIsSpreadOverTheLanesByBandwidth() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm,tcp", "MULTI_LANE_MAX_RATIO", "20", "RNDV_THRESH", "64k");
        DefaultWorker b = workers.start("b", "TLS", "shm,tcp", "MULTI_LANE_MAX_RATIO", "20", "RNDV_THRESH", "64k");
        Endpoint ab = a.connect(b.address());
        Endpoint ba = TestWorkers.awaitLanes(b, ab, 2, "");
        assertTrue(TestWorkers.impl(ab).selection().describe().startsWith("shm/") && TestWorkers.impl(ab).selection().describe().contains(" + tcp/"),
                TestWorkers.impl(ab).selection().describe());
        assertTrue(a.laneInfo(b.address(), ErrorMode.PEER).contains("CHOSEN: AM_BW lane[1] tcp/"));
        int size = 4 << 20;
        for (int round = 0; round < 2; round++) { // each side sends, each on its own lanes
            Endpoint from = round == 0 ? ab : ba;
            Worker to = round == 0 ? b : a;
            List<Future<TagMessage>> recvs = new ArrayList<>();
            List<ChannelFuture> sends = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                recvs.add(to.tagRecv(TAG, -1L));
                sends.add(from.tagSend(TAG, pattern(round * 100 + i, size)));
            }
            for (int i = 0; i < 16; i++) {
                assertReceived(recvs.get(i), round * 100 + i, size, 30);
                assertTrue(sends.get(i).await(10, TimeUnit.SECONDS) && sends.get(i).isSuccess());
            }
            long[] bytes = from.eventLoop().submit(() -> TestWorkers.impl(from).lanes().dataBytes()).get();
            double tcpShare = (double) bytes[1] / (bytes[0] + bytes[1]);
            // In proportion to the bandwidths the two addresses give (shm about 12 GB/s, tcp/lo about 1.2 GB/s).
            double shmBw = LaneSelector.bandwidth(TestWorkers.impl(from).selection().lane(0));
            double tcpBw = LaneSelector.bandwidth(TestWorkers.impl(from).selection().lane(1));
            assertEquals(tcpBw / (shmBw + tcpBw), tcpShare, 0.02, "tcp's share of " + bytes[0] + " + " + bytes[1]);
            assertEquals(16L * size, bytes[0] + bytes[1]);
        }
    }

    @ParameterizedTest(name = "{0} lane(s), the {1} side drops its shm lane")
    @CsvSource({"2, receiving", "2, sending", "1, receiving", "1, sending"})
    void aLaneLostMidStreamIsReplacedWithEveryMessageOnceAndInOrder(int lanes, String side) throws Exception {
        // With 2 lanes tcp is already there and takes over; with 1 the side that dialled connects tcp afresh.
        String[] settings = {"TLS", "shm,tcp", "ERR_MODE", "failover", "MAX_RNDV_LANES", String.valueOf(lanes),
                "MULTI_LANE_MAX_RATIO", "20", "RNDV_THRESH", "32k"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        Endpoint ba = TestWorkers.awaitLanes(b, ab, lanes, "");
        int count = 12_000;
        List<Future<TagMessage>> recvs = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            recvs.add(b.tagRecv(TAG, -1L)); // posted in order: receive i takes the i-th message to arrive
        }
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sends.add(ab.tagSend(TAG, pattern(i, size(i))));
            if (i == count / 3) {
                Endpoint dropping = side.equals("receiving") ? ba : ab;
                dropping.eventLoop().submit(() -> TestWorkers.impl(dropping).lanes().lane(0).channel().close()).sync();
            }
            if (i % 500 == 499) {
                sends.get(i).await(30, TimeUnit.SECONDS); // bounded in flight
            }
        }
        for (int i = 0; i < count; i++) {
            assertReceived(recvs.get(i), i, size(i), 30);
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
        assertTrue(ab.isActive() && ba.isActive(), "both endpoints go on");
        assertTrue(a.counters().count(FailoverReliability.FAILOVER_COUNTER) >= 1);
        assertTrue(b.counters().count(FailoverReliability.FAILOVER_COUNTER) >= 1);
        String amLane = ab.eventLoop().submit(() -> TestWorkers.impl(ab).lanes().am().name()).get();
        assertTrue(amLane.startsWith("tcp/"), amLane);
        // Nothing arrived twice: a duplicate would wait here unmatched, and would have arrived before the fence.
        fence(ab, b);
        assertEquals(0, b.eventLoop().submit(b::unexpectedCount).get().intValue());
        assertEquals(0, ab.eventLoop().submit(() -> TestWorkers.impl(ab).lanes().unconfirmed()).get().intValue());
        // And the endpoint still works both ways.
        Future<TagMessage> back = a.tagRecv(7, -1L);
        ba.tagSend(7, pattern(7, 100_000)).sync();
        assertReceived(back, 7, 100_000, 30);
    }

    /**
     * A handler that waits for room (Netty's writability) hears of it when failover moves the AM lane from one with
     * none to one with room: the old lane closes unwritable and the new one never changes, so neither lane's own
     * writability tells the endpoint anything.
     */
    @Test
    void aWaitForRoomEndsWhenFailoverMovesTheAmLaneToOneWithRoom() throws Exception {
        String[] settings = {"TLS", "shm,tcp", "ERR_MODE", "failover", "MAX_RNDV_LANES", "2",
            "MULTI_LANE_MAX_RATIO", "20"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        TestWorkers.awaitLanes(b, ab, 2, "");
        BlockingQueue<Boolean> heard = new LinkedBlockingQueue<>();
        ab.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                heard.add(ctx.channel().isWritable());
                ctx.fireChannelWritabilityChanged();
            }
        });
        Channel am = ab.eventLoop().submit(() -> TestWorkers.impl(ab).lanes().am().channel()).get();
        assertTrue(am.isWritable());
        // The AM lane full, as one whose peer reads nothing: the endpoint says so.
        ab.eventLoop().submit(() -> am.unsafe().outboundBuffer().setUserDefinedWritability(1, false)).get();
        assertEquals(Boolean.FALSE, heard.poll(10, TimeUnit.SECONDS), "the endpoint reported no lack of room");
        assertFalse(ab.isWritable());
        ab.eventLoop().submit(() -> am.close()).sync();
        assertEquals(Boolean.TRUE, heard.poll(30, TimeUnit.SECONDS), "no room reported after the failover");
        assertTrue(ab.isWritable());
        String amLane = ab.eventLoop().submit(() -> TestWorkers.impl(ab).lanes().am().name()).get();
        assertTrue(amLane.startsWith("tcp/"), amLane);
        Future<TagMessage> r = b.tagRecv(TAG, -1L);
        ab.tagSend(TAG, pattern(3, 1000)).sync();
        assertReceived(r, 3, 1000, 30);
    }

    @Test
    void withoutFailoverALostLaneFailsTheEndpoint() throws Exception {
        String[] settings = {"TLS", "shm,tcp", "ERR_MODE", "peer", "MULTI_LANE_MAX_RATIO", "20"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        TestWorkers.awaitLanes(b, ab, 2, "");
        Channel tcp = ab.eventLoop().submit(() -> TestWorkers.impl(ab).lanes().lane(1).channel()).get();
        tcp.close().sync();
        Throwable cause = ab.errorFuture().await(10, TimeUnit.SECONDS) ? ab.errorFuture().cause() : null;
        assertInstanceOf(EndpointException.class, cause);
        assertTrue(cause.getMessage().contains("tcp/"), cause.getMessage());
        assertFalse(ab.isOpen());
    }

    /**
     * Three transports (self, shm, tcp), failover mode: the AM lane is lost, then the lane that took over, mid-stream,
     * from alternating sides; the third carries on and every message arrives once and in order.
     */
    @Test
    void twoLanesLostOneAfterTheOtherLeaveTheThirdCarryingEverything() throws Exception {
        String[] settings = {"TLS", "self,shm,tcp", "ERR_MODE", "failover", "MAX_RNDV_LANES", "3",
                "MULTI_LANE_MAX_RATIO", "1000", "RNDV_THRESH", "32k"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        Endpoint ba = TestWorkers.awaitLanes(b, ab, 3, "");
        List<String> before = ab.laneNames().get();
        assertEquals(3, before.size(), before.toString());
        int count = 9000;
        List<Future<TagMessage>> recvs = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            recvs.add(b.tagRecv(TAG, -1L));
        }
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sends.add(ab.tagSend(TAG, pattern(i, size(i))));
            if (i == count / 4) {
                ba.closeLane(0).sync(); // the receiver drops the AM lane
            } else if (i == count / 2) {
                ab.closeLane(0).sync(); // then the sender drops the lane that took over
            }
            if (i % 500 == 499) {
                sends.get(i).await(30, TimeUnit.SECONDS);
            }
        }
        for (int i = 0; i < count; i++) {
            assertReceived(recvs.get(i), i, size(i), 30);
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
        assertEquals(List.of(before.get(2)), ab.laneNames().get(), "one lane left: the third");
        assertTrue(a.counters().count(FailoverReliability.FAILOVER_COUNTER) >= 2);
        fence(ab, b);
        assertEquals(0, b.eventLoop().submit(b::unexpectedCount).get().intValue());
        assertTrue(ab.isActive() && ba.isActive());
    }

    /**
     * Each side's LANE_FAILED for a lost lane goes on the lane that took over. When that lane dies too before the peer
     * read it, the count goes again on the next one, also from a side that has settled the first lost lane (the
     * peer's count reached it): the peer cannot settle without it and would hold every write for ever.
     */
    @Test
    void aLaneFailedCountLostWithTheLaneThatTookOverIsSentAgainOnTheNext() throws Exception {
        ThreeLanes t = threeFailoverLanes();
        DefaultWorker a = t.a();
        DefaultWorker b = t.b();
        Endpoint ab = t.ab();
        Endpoint ba = t.ba();
        EndpointLanes aLanes = t.aLanes();
        EndpointLanes bLanes = t.bLanes();
        List<String> names = t.names();
        // From now on a reads nothing of shm (as if it were lost with the lane), then drops the AM lane (self): b's
        // count for it goes on shm, which takes over, and never reaches a, while a's count reaches b, which settles.
        dropEverythingRead(ab, aLanes.lane(1));
        ab.closeLane(0).sync();
        TestWorkers.awaitOnLoop(b, () -> bLanes.lane(0).state() == Lane.State.SETTLED, "b did not settle self");
        // Then a drops shm: tcp carries everything.
        ab.closeLane(1).sync();
        int size = 100_000; // by rendezvous
        Future<TagMessage> atB = b.tagRecv(TAG, -1L);
        Future<TagMessage> atA = a.tagRecv(TAG, -1L);
        ChannelFuture toB = ab.tagSend(TAG, pattern(1, size));
        ChannelFuture toA = ba.tagSend(TAG, pattern(2, size));
        assertReceived(atA, 2, size, 10);
        assertReceived(atB, 1, size, 10);
        assertTrue(toB.await(10, TimeUnit.SECONDS) && toB.isSuccess(), () -> "a's send: " + toB.cause());
        assertTrue(toA.await(10, TimeUnit.SECONDS) && toA.isSuccess(), () -> "b's send: " + toA.cause());
        assertFalse(ab.eventLoop().submit(aLanes::holding).get(), "a still holds its writes");
        assertEquals(List.of(names.get(2)), ab.laneNames().get(), "one lane left: tcp");
        assertTrue(ab.isActive() && ba.isActive());
    }

    /**
     * A lane whose channel closed while its inactive event still waits in the loop's queue is lost already: a takeover
     * for another lane, settled at once, must not move the AM lane off it and send new writes ahead of its unconfirmed
     * frames. Here a's tcp lane settles (b's count came first) while a's AM lane (self) is closed with a message on it
     * b never read: a message sent right then must still arrive behind it (FailoverRandomTest seeds
     * 51448729066930 case 3, 56827306802422 case 2).
     */
    @Test
    void aMessageSentWhileAClosedLaneAwaitsItsInactiveEventArrivesBehindTheClosedLanesFrames() throws Exception {
        ThreeLanes t = threeFailoverLanes();
        DefaultWorker a = t.a();
        DefaultWorker b = t.b();
        Endpoint ab = t.ab();
        Endpoint ba = t.ba();
        EndpointLanes aLanes = t.aLanes();
        EndpointLanes bLanes = t.bLanes();
        List<String> names = t.names();
        // b reads nothing more of self: the first message stays unconfirmed there, to be sent again.
        dropEverythingRead(ba, bLanes.lane(0));
        Future<TagMessage> first = b.tagRecv(TAG, -1L);
        Future<TagMessage> second = b.tagRecv(TAG, -1L);
        ChannelFuture sent1 = ab.tagSend(TAG, pattern(1, 1000));
        TestWorkers.awaitOnLoop(a, () -> !aLanes.lane(0).unconfirmed.isEmpty(), "the first message was not sent");
        // a's tcp lane goes inactive after b's count for it came (it settles at once); self closes just before, its
        // own inactive event queued behind; the second message is sent between the two.
        AtomicReference<ChannelFuture> sent2 = new AtomicReference<>();
        AtomicBoolean countFirst = new AtomicBoolean();
        ab.eventLoop().submit(() -> aLanes.lane(2).channel().pipeline().addFirst(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                countFirst.set(aLanes.lane(2).peerFinal >= 0);
                aLanes.lane(0).channel().close();
                ctx.fireChannelInactive();
                sent2.set(ab.tagSend(TAG, pattern(2, 2000)));
            }
        })).sync();
        // b's count (on self) and its tcp close both wait while a's loop is held; a polls its rings before its
        // sockets, so it reads the count first.
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch hold = new CountDownLatch(1);
        a.eventLoop().execute(() -> {
            held.countDown();
            try {
                hold.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            assertTrue(held.await(10, TimeUnit.SECONDS), "a's loop was not held");
            ba.closeLane(2).sync();
            TestWorkers.awaitOnLoop(b, () -> bLanes.lane(2).finalSent, "b did not send its count for tcp");
        } finally {
            hold.countDown();
        }
        TestWorkers.awaitOnLoop(a, () -> sent2.get() != null, "a's tcp lane did not go inactive");
        assertTrue(countFirst.get(), "b's count for tcp came after tcp's end: the case is not made");
        assertReceived(first, 1, 1000, 10);
        assertReceived(second, 2, 2000, 10);
        assertTrue(sent1.await(10, TimeUnit.SECONDS) && sent1.isSuccess(), () -> "first send: " + sent1.cause());
        assertTrue(sent2.get().await(10, TimeUnit.SECONDS) && sent2.get().isSuccess(),
                () -> "second send: " + sent2.get().cause());
        assertEquals(List.of(names.get(1)), ab.laneNames().get(), "one lane left: shm");
        assertTrue(ab.isActive() && ba.isActive());
    }

    /**
     * Error mode peer, two lanes: a close right behind large sends must not cut off rendezvous data still queued on the
     * AM_BW lane (EP_REMOVED goes on every lane, and the peer acts once it has read it on all).
     */
    @Test
    void aCloseRightBehindLargeSendsDeliversEverythingOnEveryLane() throws Exception {
        String[] settings = {"TLS", "shm,tcp", "MULTI_LANE_MAX_RATIO", "20", "RNDV_THRESH", "64k"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        TestWorkers.awaitLanes(b, ab, 2, "");
        int n = 8;
        int size = 4 << 20;
        List<Future<TagMessage>> recvs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            recvs.add(b.tagRecv(TAG, -1L));
        }
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            sends.add(ab.tagSend(TAG, pattern(i, size)));
        }
        assertTrue(ab.close().await(30, TimeUnit.SECONDS));
        for (int i = 0; i < n; i++) {
            assertTrue(sends.get(i).isSuccess(), "send " + i + ": " + sends.get(i).cause());
            assertReceived(recvs.get(i), i, size, 30);
        }
        long tcpBytes = TestWorkers.impl(ab).lanes().dataBytes()[1];
        assertTrue(tcpBytes > 0, "the tcp lane carried data");
    }

    /** Two connects in different error modes cannot make a pair: the endpoints fail at wireup, naming both modes. */
    @Test
    void aPairConnectedInTwoErrorModesFailsNamingBoth() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        // Both loops held, so both endpoints wait EXPECTED and pair with each other's REQUEST (had one REQUEST come
        // first, the other connect would adopt the endpoint it created, in the requester's mode).
        CountDownLatch hold = new CountDownLatch(1);
        for (Worker w : List.of(a, b)) {
            w.eventLoop().execute(() -> {
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        Endpoint ab = a.connect(b.address(), ErrorMode.FAILOVER);
        Endpoint ba = b.connect(a.address(), ErrorMode.PEER);
        hold.countDown();
        String messages = "";
        for (Endpoint ep : List.of(ab, ba)) {
            assertTrue(ep.errorFuture().await(10, TimeUnit.SECONDS), ep + " did not end");
            assertFalse(ep.errorFuture().isSuccess(), ep + " ended without failure");
            messages += ep.errorFuture().cause().getMessage() + "\n";
        }
        assertTrue(messages.contains("error mode mismatch") && messages.contains("failover")
                && messages.contains("peer"), messages);
    }

    private static int size(int i) {
        return i % 50 == 0 ? 40_000 + i : 1 + (i * 37) % 3000;
    }

    /**
     * The one lane (self, 64 KiB frames) is lost with a message's frames unconfirmed, and the replacement the dialling
     * side connects is shm with 8 KiB segments, a transport the endpoint never selected: what goes again on it must
     * fit, so the endpoint's frames were sized for it from the start and the message arrives over shm.
     */
    @Test
    void aReplacementWithSmallerFramesThanTheLostLaneCarriesWhatWasLostWithIt() throws Exception {
        String[] settings = {"TLS", "self,shm", "SHM_SEG_SIZE", "8k", "ERR_MODE", "failover", "MAX_RNDV_LANES", "1",
                "RNDV_THRESH", "1m"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        Endpoint ba = TestWorkers.awaitLanes(b, ab, 1, "");
        EndpointLanes aLanes = TestWorkers.impl(ab).lanes();
        assertEquals(1, ab.laneNames().get().size(), () -> "one lane: " + ab.laneNames());
        assertTrue(ab.laneNames().get().get(0).startsWith("self/"), () -> "the lane: " + ab.laneNames());
        dropEverythingRead(ba, TestWorkers.impl(ba).lanes().lane(0)); // b confirms nothing that came on self
        int size = 200_000; // eager, in fragments
        Future<TagMessage> atB = b.tagRecv(TAG, -1L);
        ChannelFuture toB = ab.tagSend(TAG, pattern(1, size));
        TestWorkers.awaitOnLoop(a, () -> aLanes.unconfirmed() > 1, "a's fragments did not go on self");
        ab.closeLane(0).sync();
        assertReceived(atB, 1, size, 30);
        assertTrue(toB.await(10, TimeUnit.SECONDS) && toB.isSuccess(), () -> "a's send: " + toB.cause());
        List<String> now = ab.laneNames().get();
        assertTrue(now.size() == 1 && now.get(0).startsWith("shm/"), now::toString);
        Future<TagMessage> atA = a.tagRecv(TAG, -1L);
        ba.tagSend(TAG, pattern(2, size)).sync();
        assertReceived(atA, 2, size, 30);
        assertTrue(ab.isActive() && ba.isActive());
    }

    /**
     * A message written after everything else and received by {@code b}: a duplicate of anything written before it
     * (a resend on the lane that took over) would have been read before it. A causal barrier instead of a sleep.
     */
    private static void fence(Endpoint ab, Worker b) throws Exception {
        Future<TagMessage> f = b.tagRecv(FENCE, -1L);
        ChannelFuture sent = ab.tagSend(FENCE, pattern(FENCE, 8));
        f.get(30, TimeUnit.SECONDS).release();
        // In failover mode a send completes once the peer confirmed it (LANE_ACK, after the read batch that carried
        // it), and a confirmation covers every frame before it on its lane: unconfirmed frames are counted after it.
        assertTrue(sent.await(10, TimeUnit.SECONDS) && sent.isSuccess(), () -> "fence: " + sent.cause());
    }

    /** Two workers in error mode failover with self, shm and tcp lanes, in that order, between them. */
    private record ThreeLanes(DefaultWorker a, DefaultWorker b, Endpoint ab, Endpoint ba, EndpointLanes aLanes,
                              EndpointLanes bLanes, List<String> names) {
    }

    private ThreeLanes threeFailoverLanes() throws Exception {
        String[] settings = {"TLS", "self,shm,tcp", "ERR_MODE", "failover", "MAX_RNDV_LANES", "3",
                "MULTI_LANE_MAX_RATIO", "1000", "RNDV_THRESH", "32k"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        Endpoint ba = TestWorkers.awaitLanes(b, ab, 3, "");
        EndpointLanes aLanes = TestWorkers.impl(ab).lanes();
        List<String> names = ab.eventLoop().submit(() -> List.of(aLanes.lane(0).name(), aLanes.lane(1).name(),
                aLanes.lane(2).name())).get();
        assertTrue(names.get(0).startsWith("self/") && names.get(1).startsWith("shm/")
                && names.get(2).startsWith("tcp/"), names.toString());
        return new ThreeLanes(a, b, ab, ba, aLanes, TestWorkers.impl(ba).lanes(), names);
    }

    /** From now on {@code lane} of {@code ep} reads nothing: what arrives is released at its pipeline's head. */
    private static void dropEverythingRead(Endpoint ep, Lane lane) throws Exception {
        ep.eventLoop().submit(() -> lane.channel().pipeline().addFirst(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ReferenceCountUtil.release(msg);
            }
        })).sync();
    }
}
