package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.EndpointTimeoutException;
import io.nucx.Worker;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerCodec;
import io.nucx.protocol.tag.EagerProtocols;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.awaitUnexpected;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The eager zero-copy protocols between two workers in this JVM over tcp: which sizes they carry (none by the cost
 * model's choice; NUCX_ZCOPY_THRESH's), that a send completes only once the receiver has the data,
 * and that a failing or closing endpoint settles the sends still waiting for their acknowledgement.
 */
@Timeout(120)
class EagerZcopyTest {

    /**
     * tcp only, eager zero-copy from 4 KiB, and eager up to 2 MiB: the cost model's rendezvous threshold depends on the
     * engine (about 350 KB on epoll's lanes, which place payloads; 1 MiB on io_uring's), and these sends are eager.
     */
    private static final String[] TCP_ZCOPY_4K = {"TLS", "tcp", "ZCOPY_THRESH", "4k", "RNDV_THRESH", "2m"};

    private static final String SINGLE = EagerProtocols.SINGLE_ZCOPY.name();
    private static final String MULTI = EagerProtocols.MULTI_ZCOPY.name();

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** The message's content in native memory (heap memory never goes zero-copy on tcp). */

    private static int zcopySends(Worker w) throws Exception {
        DefaultWorker d = (DefaultWorker) w;
        return d.eventLoop().submit(() -> d.sumOverCodecs(EagerCodec.class,
                EagerCodec::zcopyWaiting)).get(10, TimeUnit.SECONDS);
    }

    /** Sends {@code sizes} (tag = index), receives each on {@code b} and checks its content and its send. */
    private static void exchange(Endpoint ep, Worker b, int... sizes) throws Exception {
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sends.add(ep.tagSend(i, TestWorkers.directPattern(i, sizes[i])));
        }
        for (int i = 0; i < sizes.length; i++) {
            assertReceived(b.tagRecv(i, -1L), i, sizes[i], 30);
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
    }

    /**
     * On tcp the copy protocols write native memory from the sender's buffer too (the socket copies it into the kernel
     * before the write completes), so zero-copy would only add its acknowledgement: the cost model never picks it by
     * itself, and every size of native or heap memory goes by a copy protocol, without a zero-copy send waiting.
     */
    @Test
    void onTcpTheEngineNeverPicksZeroCopyByItself() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        for (SelectionKey.MemoryType memory : SelectionKey.MemoryType.values()) {
            ProtoTable table = a.protocolTable(b.address(), memory);
            assertTrue(table.entries().stream().noneMatch(e -> e.candidate().protocol().name().startsWith("egr/")
                    && e.candidate().protocol().name().endsWith("/zcopy")), () -> table.format("tcp " + memory));
            assertEquals(EagerProtocols.MULTI_BCOPY.name(), table.lookup(300_000).protocol().name(),
                    () -> table.format("tcp " + memory));
        }
        Endpoint ep = a.connect(b.address());
        exchange(ep, b, 5000, 200_000, 300_000);
        ChannelFuture heap = ep.tagSend(7, pattern(7, 300_000));
        assertReceived(b.tagRecv(7, -1L), 7, 300_000, 30);
        assertTrue(heap.await(10, TimeUnit.SECONDS) && heap.isSuccess());
        assertEquals(0, a.counters().count(SINGLE) + a.counters().count(MULTI), () -> a.counters().snapshot()
                .toString());
        assertEquals(3, a.counters().count(EagerProtocols.MULTI_BCOPY.name()), () -> a.counters().snapshot()
                .toString());
    }

    /** NUCX_ZCOPY_THRESH=4k: below it the copy protocols, from it single then multi-fragment zero-copy. */
    @Test
    void aUserThresholdForcesZeroCopyFromItsSize() throws Exception {
        DefaultWorker a = workers.start("a", TCP_ZCOPY_4K);
        DefaultWorker b = workers.start("b", TCP_ZCOPY_4K);
        Endpoint ep = a.connect(b.address());
        exchange(ep, b, 4095, 4096, 65_000, 200_000, 1 << 20);
        assertEquals(1, a.counters().count(EagerProtocols.SHORT.name()), () -> a.counters().snapshot().toString());
        assertEquals(2, a.counters().count(SINGLE), () -> a.counters().snapshot().toString());
        assertEquals(2, a.counters().count(MULTI), () -> a.counters().snapshot().toString());
        assertEquals(0, zcopySends(a));
    }

    /** shm and self have no AM zero-copy: even forced from 0, their tables have none and messages go by copy. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"self", "shm"})
    void lanesWithoutAmZeroCopyNeverUseIt(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "ZCOPY_THRESH", "0");
        DefaultWorker b = workers.start("b", "TLS", tls, "ZCOPY_THRESH", "0");
        ProtoTable table = a.protocolTable(b.address(), SelectionKey.MemoryType.DIRECT);
        assertTrue(table.entries().stream().noneMatch(e -> e.candidate().protocol().name().contains("zcopy")
                && e.candidate().protocol().name().startsWith("egr/")), table.format(tls));
        exchange(a.connect(b.address()), b, 5000, 70_000);
        assertEquals(0, a.counters().count(SINGLE) + a.counters().count(MULTI), () -> a.counters().snapshot()
                .toString());
    }


    /**
     * The receiver's loop is held: the data may sit in its socket, but nobody there has read it, so the send is not
     * done; once the loop runs, the arrival is acknowledged (no receive was posted: arrival, not match, completes
     * it) and the message is there for a receive.
     */
    @ParameterizedTest(name = "{0} B")
    @ValueSource(ints = {5000, 300_000})
    void aZcopySendIsNotDoneBeforeTheReceiverHasTheData(int size) throws Exception {
        DefaultWorker a = workers.start("a", TCP_ZCOPY_4K);
        DefaultWorker b = workers.start("b", TCP_ZCOPY_4K);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        CountDownLatch release = TestWorkers.holdLoop(b);
        ChannelFuture send;
        try {
            send = ep.tagSend(3, TestWorkers.directPattern(3, size));
            // a wrote what the socket takes: all of it, or until the lane turned unwritable (b does not read). The
            // send is still not done: that needs b's acknowledgement.
            Channel lane = TestWorkers.impl(ep).amLane();
            TestWorkers.awaitOnLoop(a, () -> a.sumOverCodecs(EagerCodec.class,
                    EagerCodec::zcopyWaiting) == 1
                    && (lane.unsafe().outboundBuffer().totalPendingWriteBytes() == 0 || !lane.isWritable()),
                    "a's lane did not write the message");
            assertFalse(a.eventLoop().submit(send::isDone).get(), "done while the receiver could not have read it");
            assertEquals(1, zcopySends(a));
        } finally {
            release.countDown();
        }
        awaitUnexpected(b);
        assertTrue(send.await(10, TimeUnit.SECONDS) && send.isSuccess(), () -> "send: " + send.cause());
        assertEquals(1, a.counters().count(size < 65_000 ? SINGLE : MULTI));
        assertReceived(b.tagRecv(3, -1L), 3, size, 10);
    }

    /**
     * A peer that stops answering (its loop held): keepalive fails the endpoint, and every zero-copy send still
     * waiting for its acknowledgement fails with the endpoint's cause; nothing is left registered, and the leak
     * detector (every test) finds no buffer left behind on either side.
     */
    @Test
    void anEndpointFailureFailsTheWaitingZcopySendsAndReleasesEverything() throws Exception {
        String[] settings = {"TLS", "tcp", "ZCOPY_THRESH", "4k", "RNDV_THRESH", "2m", "KEEPALIVE_INTERVAL", "100ms",
                "KEEPALIVE_TIMEOUT", "500ms"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        CountDownLatch release = TestWorkers.holdLoop(b);
        List<ChannelFuture> sends = new ArrayList<>();
        try {
            sends.add(ep.tagSend(1, TestWorkers.directPattern(1, 6000)));
            sends.add(ep.tagSend(2, TestWorkers.directPattern(2, 1 << 20)));
            assertTrue(ep.errorFuture().await(10, TimeUnit.SECONDS), "keepalive did not fail the endpoint");
            Throwable cause = ep.errorFuture().cause();
            assertInstanceOf(EndpointTimeoutException.class, cause);
            for (ChannelFuture f : sends) {
                assertTrue(f.await(10, TimeUnit.SECONDS));
                assertSame(cause, f.cause(), "a waiting zero-copy send fails with the endpoint's cause");
            }
            assertEquals(0, zcopySends(a));
        } finally {
            release.countDown();
        }
        // b finds a's side gone and drops what it had of the messages.
        Endpoint fromA = b.endpoints().stream().findFirst().orElse(null);
        if (fromA != null) {
            assertTrue(fromA.errorFuture().await(10, TimeUnit.SECONDS));
        }
        assertEquals(1, a.counters().count(SINGLE));
        assertEquals(1, a.counters().count(MULTI));
    }

    /** A graceful close waits for the zero-copy sends' acknowledgements, as for rendezvous and synchronous sends. */
    @Test
    void aGracefulCloseWaitsForTheAcknowledgement() throws Exception {
        DefaultWorker a = workers.start("a", TCP_ZCOPY_4K);
        DefaultWorker b = workers.start("b", TCP_ZCOPY_4K);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        CountDownLatch release = TestWorkers.holdLoop(b);
        ChannelFuture send;
        Future<Void> closed;
        try {
            send = ep.tagSend(4, TestWorkers.directPattern(4, 200_000));
            closed = ep.close();
            // Asked on a's loop after the close was; b's loop is held, so no acknowledgement can have come.
            assertFalse(a.eventLoop().submit(closed::isDone).get(), "the close waits for the acknowledgement");
        } finally {
            release.countDown();
        }
        assertTrue(closed.await(10, TimeUnit.SECONDS) && closed.isSuccess(), () -> "close: " + closed.cause());
        assertTrue(send.isSuccess(), () -> "send: " + send.cause());
        assertReceived(b.tagRecv(4, -1L), 4, 200_000, 10);
    }
}
