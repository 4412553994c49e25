package io.nucx.wireup;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.EndpointException;
import io.nucx.ErrorMode;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.MemoryBudget;
import io.nucx.protocol.am.AmHeaders;
import io.nucx.protocol.tag.EagerCodec;
import io.nucx.protocol.tag.EagerHeaders;
import io.nucx.protocol.tag.RndvHeaders;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A worker attacked by peers that hold only a socket to its tcp iface ({@link RawPeer}), each next to a legitimate
 * peer that keeps exchanging messages: every attack of issue #13's table that concerns memory a peer can make the
 * worker commit or hold ends in a bound, the attacker's endpoint (or connection) alone fails, naming the bound, what
 * it held is released, and the legitimate peer goes on.
 */
@Timeout(180)
class HostilePeerTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static final long MIB = 1 << 20;

    private DefaultWorker target(String... more) throws Exception {
        List<String> s = new ArrayList<>(List.of("TLS", "tcp", "RX_EP_BYTES", "1m", "RX_WORKER_BYTES", "8m"));
        s.addAll(List.of(more));
        return workers.start("target", s.toArray(String[]::new));
    }

    /** The legitimate peer, connected to {@code target} and checked by one exchange. */
    private Endpoint legit(DefaultWorker target) throws Exception {
        DefaultWorker good = workers.start("good", "TLS", "tcp");
        Endpoint ep = good.connect(target.address());
        exchange(target, ep, 1);
        return ep;
    }

    static void exchange(Worker receiver, Endpoint ep, long tag) throws Exception {
        Future<TagMessage> r = receiver.tagRecv(tag, -1L);
        ep.tagSend(tag, TestWorkers.pattern(tag, 1000)).sync();
        TagMessage m = r.get(10, TimeUnit.SECONDS);
        try {
            TestWorkers.assertPattern(tag, 1000, m.content());
        } finally {
            m.release();
        }
    }

    /** The endpoint {@code target} made for the raw peer's REQUEST. */
    private static Endpoint endpointOf(DefaultWorker target, long uuid) throws Exception {
        await(() -> target.endpoints().stream().anyMatch(e -> e.remoteWorkerAddress().uuid() == uuid),
                "the target made no endpoint for the attacker");
        return target.endpoints().stream().filter(e -> e.remoteWorkerAddress().uuid() == uuid).findFirst()
                .orElseThrow();
    }

    private static long held(DefaultWorker w) throws Exception {
        return w.eventLoop().submit(() -> w.protocols().receiveMemoryHeld()).get();
    }

    /** Waits until {@code target} holds no receive memory. */
    private static void awaitNothingHeld(DefaultWorker target, String what) throws InterruptedException {
        await(() -> {
            try {
                return held(target) == 0;
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        }, what);
    }

    /** Waits until {@code target}'s endpoints have {@code n} messages in fragments started. */
    private static void awaitReassemblies(DefaultWorker target, int n, String what) throws InterruptedException {
        await(() -> {
            try {
                return target.eventLoop().submit(() -> target.sumOverCodecs(
                        EagerCodec.class, EagerCodec::reassemblies))
                        .get() == n;
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        }, what);
    }

    private static long directMemory() {
        return ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric().usedDirectMemory();
    }

    static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what);
            }
            Thread.sleep(5);
        }
    }

    private static EndpointException failure(Endpoint ep) throws Exception {
        try {
            ep.errorFuture().await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            throw e;
        }
        assertTrue(ep.errorFuture().isDone(), "the attacker's endpoint did not fail");
        return assertInstanceOf(EndpointException.class, ep.errorFuture().cause());
    }

    private static byte[] eagerOnly(long tag) {
        return RawPeer.le(EagerHeaders.ONLY_LENGTH).putLong(tag).array();
    }

    private static byte[] eagerFirst(long tag, long total, long msgId) {
        return RawPeer.le(EagerHeaders.FIRST_LENGTH).putLong(tag).putLong(total).putLong(msgId).array();
    }

    // ------------------------------------------------------------------ the attacks

    /** 64 KiB tagged messages nobody receives: the bound stops them, and they are released, not kept. */
    @Test
    void aFloodOfUnexpectedMessagesFailsOnlyThatEndpointAndIsReleased() throws Exception {
        DefaultWorker target = target();
        Endpoint good = legit(target);
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.request(raw.uuid, 0, good.worker().address(), ErrorMode.PEER).flush();
            Endpoint victim = endpointOf(target, raw.uuid);
            byte[] chunk = new byte[64 << 10];
            int sent = 0;
            try {
                // 896 MiB is what the attacker sent; the bound (1 MiB here) ends it after about 16.
                for (; sent < 14_336 && !victim.errorFuture().isDone(); sent++) {
                    raw.frame(AmIds.EAGER_ONLY, eagerOnly(0x5eed), chunk).flush();
                }
            } catch (IOException closed) {
                // the worker closed the connection: expected once the bound is hit
            }
            EndpointException e = failure(victim);
            assertTrue(e.getMessage().contains("NUCX_RX_EP_BYTES=" + MIB), e.getMessage());
            assertTrue(e.getMessage().contains("unexpected message of tag 5eed (65536 bytes)"), e.getMessage());
            assertTrue(sent < 200, "the bound stopped the flood late: " + sent + " messages");
        }
        await(() -> {
            try {
                return held(target) == 0 && target.eventLoop().submit(target::unexpectedCount).get() == 0;
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        }, "the attacker's messages were not released");
        exchange(target, good, 2);
        assertTrue(good.isActive());
    }

    /** EAGER_FIRST announcing 1 GiB, then one byte: one byte (and its bookkeeping) is held, not a gigabyte. */
    @Test
    void anAnnouncementCommitsNothingOnlyArrivingBytesDo() throws Exception {
        DefaultWorker target = target("RX_EP_BYTES", "64m", "RX_WORKER_BYTES", "64m");
        Endpoint good = legit(target);
        Future<TagMessage> posted = target.tagRecv(0x600d, -1L); // a receive without a buffer of its own
        long before = directMemory();
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.request(raw.uuid, 0, good.worker().address(), ErrorMode.PEER);
            raw.frame(AmIds.EAGER_FIRST, eagerFirst(0xbad, 1L << 30, 1), new byte[1]);   // unexpected
            raw.frame(AmIds.EAGER_FIRST, eagerFirst(0x600d, 1L << 30, 2), new byte[1]);  // the posted receive
            raw.flush();
            Endpoint victim = endpointOf(target, raw.uuid);
            awaitReassemblies(target, 2, "the two messages did not start");
            assertEquals(MemoryBudget.ENTRY_COST + 1, held(target),
                    "the unexpected one holds its byte and its bookkeeping");
            long grown = directMemory() - before;
            assertTrue(grown < 16 * MIB, "direct memory grew by " + grown + " bytes for two bytes received");
            assertTrue(victim.isActive());
        }
        assertTrue(posted.await(10, TimeUnit.SECONDS) && !posted.isSuccess(),
                "the half-received message fails its receive when its sender goes");
        exchange(target, good, 3);
    }

    /**
     * An active message, or a tagged one nobody receives yet, announcing at most 1 MiB is put together in one buffer
     * of the whole taken at its first fragment, and charged in full then: what an announcement commits ahead of its
     * bytes is the peer's budget's, and at most 4 MiB an endpoint, however large the budget. One announcing more, or
     * one past those 4 MiB, commits only what arrives, as above.
     */
    @Test
    void aMessageTakenWholeAtItsFirstFragmentIsChargedInFull() throws Exception {
        DefaultWorker target = target("RX_EP_BYTES", "64m", "RX_WORKER_BYTES", "64m");
        Endpoint good = legit(target);
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.request(raw.uuid, 0, good.worker().address(), ErrorMode.PEER);
            raw.frame(AmIds.AM_FIRST, eagerFirst(AmHeaders.pack(7, 0, 0), 512 << 10, 1), new byte[1]);
            raw.frame(AmIds.EAGER_FIRST, eagerFirst(0xbad, MIB + 1, 2), new byte[1]);  // one byte over
            for (int i = 0; i < 4; i++) {
                raw.frame(AmIds.EAGER_FIRST, eagerFirst(0xbad, MIB, 3 + i), new byte[1]);  // unexpected
            }
            raw.flush();
            Endpoint victim = endpointOf(target, raw.uuid);
            awaitReassemblies(target, 6, "the six messages did not start");
            assertEquals(6L * MemoryBudget.ENTRY_COST + (512 << 10) + 3 * MIB + 2, held(target),
                    "512 KiB and three of 1 MiB charged whole (3.5 of the 4 MiB), the other two their one byte");
            assertTrue(victim.isActive());
        }
        awaitNothingHeld(target, "the unfinished messages were not released");
        exchange(target, good, 2);
    }

    /** Reassemblies opened and never finished: each holds what arrived; together they hit the bound and go. */
    @Test
    void reassembliesNeverFinishedHitTheBoundAndAreReleased() throws Exception {
        DefaultWorker target = target();
        Endpoint good = legit(target);
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.request(raw.uuid, 0, good.worker().address(), ErrorMode.PEER).flush();
            Endpoint victim = endpointOf(target, raw.uuid);
            byte[] first = new byte[4096];
            int opened = 0;
            try {
                for (; opened < 10_000 && !victim.errorFuture().isDone(); opened++) {
                    raw.frame(AmIds.EAGER_FIRST, eagerFirst(0x77, 1 << 20, opened), first).flush();
                }
            } catch (IOException closed) {
                // closed once over the bound
            }
            EndpointException e = failure(victim);
            assertTrue(e.getMessage().contains("NUCX_RX_EP_BYTES"), e.getMessage());
            assertTrue(opened < 10_000, "the connection stayed open for all " + opened + " reassemblies");
        }
        awaitNothingHeld(target, "the unfinished messages were not released");
        exchange(target, good, 2);
    }

    /**
     * An RTS for 1 TiB is refused (NUCX_MAX_MSG_SIZE); one for 1 GiB matching a posted receive without a buffer is
     * answered by RTR and commits nothing until data come, then only what came: on every engine, those whose lanes
     * read a payload straight into the receive's buffer (epoll, nio) too, where the whole buffer taken at the RTR is
     * charged to NUCX_RX_EP_BYTES. A legitimate message larger than that budget still arrives whole.
     */
    @ParameterizedTest
    @ValueSource(strings = {"io_uring", "epoll", "nio"})
    void aRendezvousAnnouncementCommitsNothing(String engine) throws Exception {
        DefaultWorker target = target("TCP_IO", engine);
        Endpoint good = legit(target);
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.request(raw.uuid, 0, good.worker().address(), ErrorMode.PEER);
            raw.frame(AmIds.RNDV_RTS, RawPeer.le(RndvHeaders.RTS_LENGTH).putLong(1).putLong(1).putLong(1L << 40)
                    .array(), new byte[0]).flush();
            assertTrue(raw.closedByPeerWithin(10_000), "an RTS for 1 TiB must close the connection");
        }
        await(() -> target.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage())
                .contains("NUCX_MAX_MSG_SIZE")), "no failure naming NUCX_MAX_MSG_SIZE: " + target.laneFailures());

        Future<TagMessage> posted = target.tagRecv(0x600d, -1L);
        long before = directMemory();
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.request(raw.uuid, 0, good.worker().address(), ErrorMode.PEER);
            raw.frame(AmIds.RNDV_RTS, RawPeer.le(RndvHeaders.RTS_LENGTH).putLong(0x600d).putLong(5)
                    .putLong(1L << 30).array(), new byte[0]).flush();
            byte[] rtr = raw.awaitFrame(AmIds.RNDV_RTR);
            long receiverReqId = RawPeer.le(8).put(rtr, 8, 8).flip().getLong();
            long grown = directMemory() - before;
            assertTrue(grown < 16 * MIB, "direct memory grew by " + grown + " bytes on an RTS alone");
            Future<TagMessage> fence = target.tagRecv(0xfe, -1L);
            raw.frame(AmIds.RNDV_DATA, RawPeer.le(RndvHeaders.DATA_LENGTH).putLong(receiverReqId).putLong(0).array(),
                    new byte[1024]);
            raw.frame(AmIds.EAGER_ONLY, eagerOnly(0xfe), new byte[1]).flush(); // behind the data on the same lane
            fence.get(10, TimeUnit.SECONDS).release();
            grown = directMemory() - before;
            assertTrue(grown < 16 * MIB, "direct memory grew by " + grown + " bytes for 1 KiB of data");
        }
        assertTrue(posted.await(10, TimeUnit.SECONDS) && !posted.isSuccess(),
                "the half-received message fails its receive when its sender goes");
        exchange(target, good, 2);
        Future<TagMessage> big = target.tagRecv(0xb16, -1L);
        good.tagSend(0xb16, TestWorkers.directPattern(0xb16, 4 << 20)).sync();
        TagMessage m = big.get(30, TimeUnit.SECONDS);
        try {
            TestWorkers.assertPattern(0xb16, 4 << 20, m.content());
        } finally {
            m.release();
        }
        assertEquals(0, held(target), "receive memory still charged after the message completed");
    }

    /** Writes queued while a peer never answers the REQUEST: the stub's bound fails the endpoint, releasing them. */
    @Test
    void writesQueuedForAPeerThatNeverAnswersAreBounded() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp", "STUB_EP_BYTES", "1m", "KEEPALIVE_INTERVAL", "inf");
        try (ServerSocket silent = new ServerSocket(0, 50,
                InetAddress.getLoopbackAddress())) {
            DefaultWorker shape = workers.start("shape", "TLS", "tcp");
            WorkerAddress real = shape.address();
            WorkerAddress.Entry e = real.entries().get(0);
            byte[] iface = RawPeer.le(2).putShort((short) silent.getLocalPort()).array();
            // The lowest uuid: a (higher) waits for the REPLY with its writes in the stub; a lower-uuid connector
            // would use its own lane at once, and its writes would wait in the lane (its writability says so).
            WorkerAddress mute = new WorkerAddress(1, "mute", List.of(
                    new WorkerAddress.Entry(e.transport(), e.capabilities(), e.maxShort(), e.maxBcopy(),
                            e.latency(), e.overhead(), e.bandwidth(), e.priority(), e.deviceAddress(), iface)));
            Endpoint ep = a.connect(mute);
            List<ChannelFuture> writes = new ArrayList<>();
            for (int i = 0; i < 64 && !ep.errorFuture().isDone(); i++) {
                writes.add(ep.tagSend(i, TestWorkers.directPattern(i, 64 << 10)));
            }
            EndpointException f = failure(ep);
            assertTrue(f.getMessage().contains("NUCX_STUB_EP_BYTES"), f.getMessage());
            assertTrue(f.getMessage().matches("(?s).*writes queued while wiring up \\(\\d+ writes, \\d+ bytes\\).*"),
                    f.getMessage()); // the text the budget builds only when it refuses
            for (ChannelFuture w : writes) {
                assertTrue(w.await(10, TimeUnit.SECONDS) && !w.isSuccess(), "a queued write did not fail");
            }
        }
    }
}
