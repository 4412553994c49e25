package io.nucx.wireup;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.ErrorMode;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.amo.AmoHeaders;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.IoEngine;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static io.nucx.wireup.HostilePeerTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Attacks on wireup and on the loop itself, each by a {@link RawPeer} next to a legitimate peer: replayed REQUESTs,
 * endpoints by the hundred thousand, connections that never wire up, probes and atomics whose answers are never read.
 */
@Timeout(300)
class HostileWireupTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static final long MIB = 1 << 20;

    private static long directMemory() {
        return ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric().usedDirectMemory();
    }

    private static void exchange(Worker receiver, Endpoint ep, long tag) throws Exception {
        Future<TagMessage> r = receiver.tagRecv(tag, -1L);
        ChannelFuture sent = ep.tagSend(tag, TestWorkers.pattern(tag, 100)).await();
        if (!sent.isSuccess()) {
            throw new AssertionError("the legitimate peer's send failed; its endpoint: "
                    + ep.errorFuture().cause(), sent.cause());
        }
        r.get(10, TimeUnit.SECONDS).release();
    }

    private static int endpoints(DefaultWorker w) {
        return w.endpoints().size();
    }

    /** 20,000 REQUESTs replaying one (uuid, conn_sn) in error mode none, on connections then closed: none is kept. */
    @Test
    void replayedRequestsLeaveNoEndpointBehind() throws Exception {
        OverflowWatch overflow = new OverflowWatch();
        Logger.getLogger("").addHandler(overflow);
        try {
            replayedRequests();
        } finally {
            Logger.getLogger("").removeHandler(overflow);
        }
        assertEquals(0, overflow.count.get(), "io_uring's completion queue overflowed");
    }

    private void replayedRequests() throws Exception {
        // io_uring, whose completion queue the closing connections fill (auto gives polling loops epoll).
        DefaultWorker target = workers.start("target", "TLS", "tcp", "TCP_IO", "io_uring");
        DefaultWorker good = workers.start("good", "TLS", "tcp", "TCP_IO", "io_uring");
        Endpoint ep = good.connect(target.address());
        exchange(target, ep, 1);
        long uuid = 0x5ca1ab1eL;
        // The first is answered, and its connection stays open while the replays come: its endpoint exists, so each
        // replay is one (once it closed, the reaper may remove the endpoint, after which the next is simply new).
        RawPeer first = RawPeer.connect(target);
        try {
            first.request(uuid, 0, good.address(), ErrorMode.NONE).flush();
            first.awaitFrame(AmIds.WIREUP);
            for (int i = 1; i < 20_000; i++) {
                try (RawPeer raw = RawPeer.connect(target)) {
                    raw.request(uuid, 0, good.address(), ErrorMode.NONE).flush();
                    if (i == 1) {
                        assertTrue(raw.closedByPeerWithin(10_000), "a replay of a served (uuid, conn_sn) is refused");
                    }
                }
            }
        } finally {
            first.close();
        }
        await(() -> endpoints(target) == 1, "endpoints left: " + endpoints(target) + " (the good peer's is 1)");
        await(() -> target.match().peerCount() <= 1, "match entries left: " + target.match().peerCount());
        assertTrue(target.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage())
                .contains("replayed or duplicated REQUEST")), () -> "" + target.laneFailures());
        exchange(target, ep, 2);
    }

    /**
     * 100,000 endpoints opened by REQUESTs with made-up uuids, a thousand connections at a time: never more than
     * NUCX_MAX_ENDPOINTS at once (the REQUEST beyond it is refused, naming the bound), and none left once their
     * connections close.
     */
    @Test
    void aHundredThousandEndpointsAreBoundedAndReaped() throws Exception {
        DefaultWorker target = workers.start("target", "TLS", "tcp", "MAX_ENDPOINTS", "900");
        DefaultWorker good = workers.start("good", "TLS", "tcp");
        Endpoint ep = good.connect(target.address());
        exchange(target, ep, 1);
        WorkerAddress like = good.address();
        int opened = 0;
        int refusedTotal = 0;
        for (int round = 0; round < 100; round++) {
            List<RawPeer> batch = new ArrayList<>();
            try {
                for (int i = 0; i < 1000; i++) {
                    RawPeer raw = RawPeer.connect(target);
                    batch.add(raw);
                    raw.request(raw.uuid, 0, like, ErrorMode.PEER).flush();
                    opened++;
                }
                int refused = 0;
                for (RawPeer raw : batch) {
                    // each is answered (REPLY) or refused (closed); bounded wait
                    raw.socket().setSoTimeout(30_000);
                    if (!raw.answered()) {
                        refused++;
                    }
                }
                int held = endpoints(target);
                assertTrue(held <= 900, "the worker holds " + held + " endpoints; NUCX_MAX_ENDPOINTS is 900");
                assertEquals(1000 - (900 - 1), refused, "the REQUESTs beyond the bound were refused");
                refusedTotal += refused;
            } finally {
                for (RawPeer raw : batch) {
                    raw.close();
                }
            }
            await(() -> endpoints(target) == 1, "endpoints left after round: " + endpoints(target));
        }
        assertEquals(100_000, opened);
        await(() -> target.match().peerCount() <= 1, "match entries left: " + target.match().peerCount());
        assertTrue(target.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage())
                .contains("NUCX_MAX_ENDPOINTS=900")), () -> "" + target.laneFailures());
        assertTrue(refusedTotal > 0);
        exchange(target, ep, 2);
    }

    /** 2,200 tcp connections that never send a REQUEST are closed after NUCX_WIREUP_TIMEOUT. */
    @Test
    void connectionsThatNeverWireUpAreClosed() throws Exception {
        DefaultWorker target = workers.start("target", "TLS", "tcp", "WIREUP_TIMEOUT", "1s");
        List<RawPeer> idle = new ArrayList<>();
        try {
            for (int i = 0; i < 2200; i++) {
                idle.add(RawPeer.connect(target));
            }
            long start = System.nanoTime();
            for (RawPeer raw : idle) {
                assertTrue(raw.closedByPeerWithin(20_000), "an idle connection was kept open");
            }
            long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(took < 20_000, "closing 2,200 idle connections took " + took + " ms");
        } finally {
            for (RawPeer raw : idle) {
                raw.close();
            }
        }
        assertTrue(target.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage())
                .contains("NUCX_WIREUP_TIMEOUT")), () -> "" + target.laneFailures());
    }

    /** 120,000 EP_CHECKs for unknown endpoints whose answers are never read: answers stop, memory stays flat. */
    @Test
    void probesWhoseAnswersAreNeverReadPileNothingUp() throws Exception {
        DefaultWorker target = workers.start("target", "TLS", "tcp");
        DefaultWorker good = workers.start("good", "TLS", "tcp");
        Endpoint ep = good.connect(target.address());
        exchange(target, ep, 1);
        long before = directMemory();
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.socket().setReceiveBufferSize(4096); // and never read
            raw.request(raw.uuid, 0, good.address(), ErrorMode.PEER).flush();
            for (int i = 0; i < 120_000; i++) {
                raw.frame(RawPeer.epCheck(1_000_000 + i));
                if (i % 1000 == 999) {
                    raw.flush();
                    exchange(target, ep, 10 + i);
                }
            }
            raw.flush();
            await(() -> target.counters().count(Worker.EP_CHECK_UNANSWERED) > 0,
                    "the lane never stopped taking answers");
            long grown = directMemory() - before;
            assertTrue(grown < 32 * MIB, "direct memory grew by " + grown / MIB + " MiB for 3.3 MiB of probes");
        }
        exchange(target, ep, 2);
    }

    /**
     * 150,000 pipelined atomics from one connection that never reads the answers, while a legitimate peer with the
     * default keepalive (1 s, timeout 5 s) exchanges messages: none of its exchanges waits as long as the keepalive
     * interval (it prints the worst: 0.15 to 0.6 s on this shared 2-core machine at a load of 10, under PARANOID leak
     * detection, with NUCX_LANE_BATCH=512; 2.4 to 3.5 s without the per-turn share), its endpoint stays up, the answers backlog is bounded (NUCX_REPLY_BACKLOG), and io_uring's completion queue does not
     * overflow.
     */
    @ParameterizedTest
    @ValueSource(strings = {"nio", "epoll", "io_uring"})
    void pipelinedAtomicsDoNotHoldTheLoop(String engine) throws Exception {
        IoEngine mode = Arrays.stream(IoEngine.values())
                .filter(m -> m.configName().equals(engine)).findFirst().orElseThrow();
        Assumptions.assumeTrue(mode.availability().isAvailable(),
                () -> engine + " unavailable here: " + mode.availability().reason());
        OverflowWatch overflow = new OverflowWatch();
        Logger.getLogger("").addHandler(overflow);
        try {
            String[] keepalive = {"KEEPALIVE_INTERVAL", "1s", "KEEPALIVE_TIMEOUT", "5s"}; // the defaults, stated
            DefaultWorker target = workers.start("target", "TLS", "tcp", "TCP_IO", engine, "REPLY_BACKLOG", "4096",
                    keepalive[0], keepalive[1], keepalive[2], keepalive[3]);
            DefaultWorker good = workers.start("good", "TLS", "tcp", "TCP_IO", engine,
                    keepalive[0], keepalive[1], keepalive[2], keepalive[3]);
            Endpoint ep = good.connect(target.address());
            exchange(target, ep, 1);
            Arena arena = Arena.ofShared();
            MemorySegment words = arena.allocate(4096, 8);
            RemoteMemoryKey key = target.registerMemory(words);
            try (RawPeer raw = RawPeer.connect(target)) {
                raw.socket().setReceiveBufferSize(4096); // and never read
                raw.request(raw.uuid, 0, good.address(), ErrorMode.PEER).flush();
                byte[] req = AtomicFrames.add(key, key.base(), 1);
                long worst = 0;
                for (int i = 0; i < 150_000; i++) {
                    try {
                        raw.frame(AmIds.ATOMIC_REQ, req, new byte[0]);
                        if (i % 5000 == 4999) {
                            raw.flush();
                        }
                    } catch (IOException closed) {
                        break; // the backlog bound closed it
                    }
                    if (i % 10_000 == 0) {
                        long t0 = System.nanoTime();
                        exchange(target, ep, 100 + i);
                        worst = Math.max(worst, System.nanoTime() - t0);
                    }
                }
                try {
                    raw.flush();
                } catch (IOException closed) {
                    // closed by the bound
                }
                for (int i = 0; i < 20; i++) {
                    long t0 = System.nanoTime();
                    exchange(target, ep, 1000 + i);
                    worst = Math.max(worst, System.nanoTime() - t0);
                }
                System.out.println("pipelined atomics on " + engine + ": worst exchange of the legitimate peer "
                        + TimeUnit.NANOSECONDS.toMicros(worst) + " us; attacker's endpoint "
                        + target.endpoints().stream().filter(e -> e.remoteWorkerAddress().uuid() == raw.uuid)
                        .map(e -> e.errorFuture().isDone() ? "failed: " + e.errorFuture().cause() : "alive")
                        .findFirst().orElse("gone"));
                assertTrue(TimeUnit.NANOSECONDS.toMillis(worst) < 1000, "an exchange of the legitimate peer waited "
                        + TimeUnit.NANOSECONDS.toMillis(worst) + " ms during the flood");
                assertTrue(ep.isActive(), "the legitimate peer's endpoint failed: " + ep.errorFuture().cause());
            } finally {
                target.unregisterMemory(key);
                target.close().get(10, TimeUnit.SECONDS);
                arena.close();
            }
        } finally {
            Logger.getLogger("").removeHandler(overflow);
        }
        assertEquals(0, overflow.count.get(), "io_uring's completion queue overflowed");
    }

    /** Counts Netty's "CompletionQueue overflow" warnings (Netty logs through java.util.logging here). */
    static final class OverflowWatch extends Handler {
        final AtomicInteger count = new AtomicInteger();

        @Override
        public void publish(LogRecord r) {
            if (String.valueOf(r.getMessage()).contains("CompletionQueue overflow")) {
                count.incrementAndGet();
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    /** ATOMIC_REQ headers as a peer writes them ({@link AmoHeaders}). */
    static final class AtomicFrames {
        static byte[] add(RemoteMemoryKey key, long address, long value) {
            return RawPeer.le(AmoHeaders.REQ_LENGTH).putLong(1).putLong(address).putLong(value).putLong(0)
                    .putInt(key.region()).put((byte) 0 /* ADD */).put(new byte[3])
                    .putLong(key.secret()).array();
        }
    }
}
