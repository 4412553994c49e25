package io.nucx.wireup;

import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Endpoint matching by (peer uuid, conn_sn) between workers of one JVM, over tcp and self: numbering per peer, adoption
 * of an endpoint created on demand (UNEXPECTED), and simultaneous connects (EXPECTED on both sides) ending with one
 * pair on the lane of the lower-uuid worker, every message delivered once and in order.
 */
@Timeout(120)
class EndpointMatchingTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static void awaitWiredUp(Endpoint ep) throws InterruptedException {
        assertTrue(ep.wireupFuture().await(10, TimeUnit.SECONDS), () -> ep + " not wired up in 10 s");
        assertTrue(ep.wireupFuture().isSuccess(), () -> ep + ": " + ep.wireupFuture().cause());
    }

    private static List<Endpoint> awaitEndpoints(Worker w, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (w.endpoints().size() != n) {
            assertTrue(System.nanoTime() < deadline, () -> w.name() + " has " + w.endpoints() + ", expected " + n);
            Thread.sleep(2);
        }
        List<Endpoint> eps = new ArrayList<>(w.endpoints());
        eps.sort(Comparator.comparingInt((Endpoint e) -> TestWorkers.impl(e).connSn()));
        return eps;
    }

    private static <T> T onLoop(Worker w, Callable<T> task) throws Exception {
        return w.eventLoop().submit(task).get(10, TimeUnit.SECONDS);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void connectionsAreNumberedPerPeer(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        DefaultWorker c = workers.start("c", "TLS", tls);
        Endpoint ab0 = a.connect(b.address());
        Endpoint ab1 = a.connect(b.address());
        Endpoint ac0 = a.connect(c.address());
        assertEquals(0, TestWorkers.impl(ab0).connSn());
        assertEquals(1, TestWorkers.impl(ab1).connSn());
        assertEquals(0, TestWorkers.impl(ac0).connSn(), "numbers count per peer uuid");
        for (Endpoint ep : List.of(ab0, ab1, ac0)) {
            awaitWiredUp(ep);
        }
        List<Endpoint> atB = awaitEndpoints(b, 2);
        assertEquals(List.of(0, 1), atB.stream().map(e -> TestWorkers.impl(e).connSn()).toList(), "created with the requests' numbers");
        assertEquals(ab0.endpointId(), (long) onLoop(b, () -> TestWorkers.impl(atB.get(0)).remoteEndpointId()));
        assertEquals(ab1.endpointId(), (long) onLoop(b, () -> TestWorkers.impl(atB.get(1)).remoteEndpointId()));
        assertEquals(0, TestWorkers.impl(awaitEndpoints(c, 1).get(0)).connSn());
        assertArrayEquals(new int[] {0, 2}, b.matchQueueSizes(a.uuid()), "b's two wait to be adopted (UNEXPECTED)");
        assertArrayEquals(new int[] {0, 0}, a.matchQueueSizes(b.uuid()), "a's were answered: no longer EXPECTED");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aLaterConnectAdoptsTheEndpointARequestCreated(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        Endpoint ab = a.connect(b.address());
        awaitWiredUp(ab);
        Endpoint onDemand = awaitEndpoints(b, 1).get(0);
        Endpoint ba = b.connect(a.address());
        assertSame(onDemand, ba, "connect number 0 to a adopts the endpoint a's request number 0 created");
        assertArrayEquals(new int[] {0, 0}, b.matchQueueSizes(a.uuid()));
        Future<TagMessage> atA = a.tagRecv(5, -1L);
        Future<TagMessage> atB = b.tagRecv(6, -1L);
        ba.tagSend(5, pattern(5, 300)).sync();
        ab.tagSend(6, pattern(6, 300)).sync();
        for (var f : List.of(atA, atB)) {
            TagMessage m = f.get(10, TimeUnit.SECONDS);
            try {
                assertPattern(m.tag(), 300, m.content());
            } finally {
                m.release();
            }
        }
        assertEquals(1, a.endpoints().size());
        assertEquals(1, b.endpoints().size());
        // Number 1 is a new connection: b's new endpoint is expected, a creates one for it on demand.
        Endpoint ba1 = b.connect(a.address());
        assertNotSame(ba, ba1);
        awaitWiredUp(ba1);
        List<Endpoint> atA2 = awaitEndpoints(a, 2);
        assertEquals(1, TestWorkers.impl(atA2.get(1)).connSn());
        assertEquals(ba1.endpointId(), (long) onLoop(a, () -> TestWorkers.impl(atA2.get(1)).remoteEndpointId()));
    }

    /**
     * Both loops are held while both sides connect, so each side's endpoint is EXPECTED before either REQUEST is read.
     * The lower-uuid worker ignores the other's REQUEST; the higher-uuid worker pairs its endpoint with the lower's
     * REQUEST. Writes queued before, during and after wireup (eager, rendezvous and synchronous) arrive once, in order.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self", "tcp-p2p"})
    void simultaneousConnectsEndWithOnePairOnTheLowerUuidsLane(String mode) throws Exception {
        String tls = mode.equals("tcp-p2p") ? "tcp" : mode;
        String connect = mode.equals("tcp-p2p") ? "p2p" : "iface";
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "1k", "TCP_CONNECT", connect);
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "1k", "TCP_CONNECT", connect);

        boolean aLower = Long.compareUnsigned(a.uuid(), b.uuid()) < 0;
        int[] sizes = {10, 5000, 64, 100, 3000, 20};
        for (int round = 0; round < 25; round++) {
            long tagA = 1000L * round + 1;
            long tagB = 1000L * round + 2;
            List<Future<TagMessage>> atB = new ArrayList<>();
            List<Future<TagMessage>> atA = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                atB.add(b.tagRecv(tagA, -1L));
                atA.add(a.tagRecv(tagB, -1L));
            }
            CountDownLatch gate = new CountDownLatch(1);
            for (Worker w : List.of(a, b)) {
                w.eventLoop().execute(() -> {
                    try {
                        gate.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
            Endpoint ea = a.connect(b.address());
            Endpoint eb = b.connect(a.address());
            assertEquals(connect.equals("p2p"), TestWorkers.impl(ea).selection().am().p2p(), "lane kind");
            List<ChannelFuture> sends = new ArrayList<>();
            for (int i = 0; i < 3; i++) { // before wireup
                sends.add(send(ea, tagA, round, i, sizes[i]));
                sends.add(send(eb, tagB, round, i, sizes[i]));
            }
            gate.countDown();
            sends.add(send(ea, tagA, round, 3, sizes[3])); // during
            sends.add(send(eb, tagB, round, 3, sizes[3]));
            awaitWiredUp(ea);
            awaitWiredUp(eb);
            for (int i = 4; i < sizes.length; i++) { // after
                sends.add(send(ea, tagA, round, i, sizes[i]));
                sends.add(send(eb, tagB, round, i, sizes[i]));
            }
            for (ChannelFuture f : sends) {
                assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send: " + f.cause());
            }
            checkInOrder(atB, round, sizes);
            checkInOrder(atA, round, sizes);

            int r = round;
            assertEquals(List.of(ea), awaitEndpoints(a, 1), () -> "round " + r + ": one endpoint at a");
            assertEquals(List.of(eb), awaitEndpoints(b, 1), () -> "round " + r + ": one endpoint at b");
            assertEquals(eb.endpointId(), (long) onLoop(a, () -> TestWorkers.impl(ea).remoteEndpointId()));
            assertEquals(ea.endpointId(), (long) onLoop(b, () -> TestWorkers.impl(eb).remoteEndpointId()));
            if (connect.equals("iface")) {
                assertEquals(aLower, (boolean) onLoop(a, () -> TestWorkers.impl(ea).usesOwnLane()), "the pair uses the lower uuid's lane");
                assertEquals(!aLower, (boolean) onLoop(b, () -> TestWorkers.impl(eb).usesOwnLane()), "the pair uses the lower uuid's lane");
            } else {
                assertTrue(TestWorkers.impl(ea).amLane() != null && TestWorkers.impl(ea).amLane().isActive() && TestWorkers.impl(eb).amLane().isActive(), "p2p lanes up");
                assertTrue(!onLoop(a, () -> TestWorkers.impl(ea).usesOwnLane()) && !onLoop(b, () -> TestWorkers.impl(eb).usesOwnLane()), "the aux lane carries no data");
            }
            assertArrayEquals(new int[] {0, 0}, a.matchQueueSizes(b.uuid()));
            assertArrayEquals(new int[] {0, 0}, b.matchQueueSizes(a.uuid()));
            assertEquals(0, (int) onLoop(a, a::unexpectedCount), "nothing duplicated");
            assertEquals(0, (int) onLoop(b, b::unexpectedCount), "nothing duplicated");

            Future<Void> ca = ea.close();
            Future<Void> cb = eb.close();
            assertTrue(ca.await(10, TimeUnit.SECONDS) && cb.await(10, TimeUnit.SECONDS), "graceful close");
            assertClosedGracefully(ea);
            assertClosedGracefully(eb);
            awaitEndpoints(a, 0);
            awaitEndpoints(b, 0);
        }
        Worker lower = aLower ? a : b;
        Worker higher = aLower ? b : a;
        assertEquals(25, higher.counters().count(Worker.WIREUP_REQUEST_PAIRED), "every round paired at the higher");
        assertEquals(0, lower.counters().count(Worker.WIREUP_REQUEST_PAIRED));
        assertEquals(0, a.counters().count(Worker.WIREUP_ADOPTED) + b.counters().count(Worker.WIREUP_ADOPTED),
                "no round adopted: both endpoints were EXPECTED before either REQUEST was read");
        assertEquals(0, higher.counters().count(Worker.WIREUP_REQUEST_IGNORED));
        System.out.println(mode + ": the higher's REQUEST reached the lower and was ignored in "
                + lower.counters().count(Worker.WIREUP_REQUEST_IGNORED) + " of 25 rounds (else the pairing came first)");
    }

    /**
     * Both sides close at once: each ends without failure, or, if the peer's EP_REMOVED arrived before its own close
     * began, with the reset that names the peer's close (the documented outcome of being closed by the peer).
     */
    static void assertClosedGracefully(Endpoint ep) throws InterruptedException {
        assertTrue(ep.closeFuture().await(10, TimeUnit.SECONDS), () -> ep + " not closed");
        Throwable cause = ep.errorFuture().cause();
        assertTrue(cause == null || (cause instanceof ConnectionResetException
                && cause.getMessage().contains("closed by its owner")), () -> ep + ": " + cause);
    }

    private static ChannelFuture send(Endpoint ep, long tag, int round, int i, int size) {
        long seed = round * 100L + i;
        return i % 3 == 2 ? ep.tagSendSync(tag, pattern(seed, size)) : ep.tagSend(tag, pattern(seed, size));
    }

    /** Receives posted for one tag complete in arrival order: message i must be the i-th sent. */
    private static void checkInOrder(List<Future<TagMessage>> recvs, int round, int[] sizes) throws Exception {
        for (int i = 0; i < recvs.size(); i++) {
            assertReceived(recvs.get(i), round * 100L + i, sizes[i], 10);
        }
    }
}
