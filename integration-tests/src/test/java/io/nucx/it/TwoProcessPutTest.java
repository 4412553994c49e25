package io.nucx.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.Future;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.EndpointTimeoutException;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.cma.Cma;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * rndv/put/zcopy between JVMs on this host over tcp + cma (NUCX_RNDV_SCHEME=put_zcopy on both sides): the sender
 * writes into the receiver's buffers with process_vm_writev, up to 256 MiB; the kernel refusing it (a receiver of
 * another user that may not read the sender; a sender the kernel refuses at run time with EPERM) and every message
 * still arriving; and the PUT safety rule against a sender that is killed (SIGKILL) or stopped (SIGSTOP) in the middle
 * of a PUT: the receive is held, its buffer untouched by anyone else, until the sender said its last word or its
 * process is gone.
 */
@Timeout(300)
class TwoProcessPutTest {

    private static final long INTERVAL_MS = 200;
    private static final long TIMEOUT_MS = 1000;
    private static final Map<String, String> PUT = Map.of("NUCX_TLS", "tcp,cma", "NUCX_RNDV_SCHEME", "put_zcopy");

    @RegisterExtension
    final OpenedResources opened = new OpenedResources();

    @BeforeEach
    void cma() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
    }

    private Worker worker(String... settings) throws Exception {
        NucxBootstrap b = new NucxBootstrap().name("test").config("TLS", "tcp,cma").config("RNDV_SCHEME", "put_zcopy");
        for (int i = 0; i < settings.length; i += 2) {
            b.config(settings[i], settings[i + 1]);
        }
        Worker w = b.start();
        opened.worker(w);
        return w;
    }

    private PeerProcess peer(PeerProcess p) {
        opened.peer(p);
        return p;
    }

    private static long putThreshold(Worker w, WorkerAddress peer) throws Exception {
        ProtoTable t = w.protocolTable(peer, SelectionKey.MemoryType.DIRECT);
        return t.entries().stream().filter(e -> e.candidate().protocol() == RndvProtocols.PUT_ZCOPY).findFirst()
                .orElseThrow(() -> new AssertionError("no rndv/put/zcopy in\n" + t.format("to peer"))).start();
    }

    private static String join(int[] sizes) {
        return String.join(",", Arrays.stream(sizes).mapToObj(Integer::toString).toList());
    }

    private static boolean isRoot() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Uid:")) {
                return line.substring(4).trim().split("\\s+")[1].equals("0");
            }
        }
        return false;
    }

    /** Whether {@code pid} has exited: no /proc entry, or a zombie waiting to be reaped. */
    private static boolean exited(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            return state == 'Z' || state == 'X';
        } catch (IOException e) {
            return true;
        }
    }

    private static int count(String counters, String name) {
        Matcher m = Pattern.compile("(?:^|[{ ])" + Pattern.quote(name)
                + "=(\\d+)").matcher(counters);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    @Test
    void fromJustAboveTheThresholdTo256MiBTheSenderWritesIntoTheReceiversMemory() throws Exception {
        Worker worker = worker();
        long threshold = putThreshold(worker, worker.address());
        int[] sizes = {(int) threshold + 1, 1 << 20, 64 << 20, 256 << 20};
        PeerProcess peer = peer(PeerProcess.start(TagPeer.class, PUT, Integer.toString(sizes.length), join(sizes)));
        WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
        assertEquals(threshold, putThreshold(worker, peerAddress), "same table to the real peer");
        String report = TagPeer.sendAll(worker, peer, peerAddress, sizes);
        long total = Arrays.stream(sizes).asLongStream().sum();
        assertEquals("OK " + sizes.length + " " + total, report, () -> report + "\n" + peer.stderr());
        assertEquals(sizes.length, worker.counters().count(RndvProtocols.PUT_COUNTER), "written by PUT");
        assertEquals(0, worker.counters().count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals("rma=cma/memory refusal=null", peer.awaitLine("LANES"));
        String counters = peer.awaitLine("COUNTERS");
        assertEquals(sizes.length, count(counters, RndvProtocols.RECV_PUT_COUNTER), counters);
        assertEquals(0, count(counters, RndvProtocols.RECV_PUT_FALLBACK_COUNTER), counters);
        assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
    }

    /**
     * The receiver runs as nobody (uid 65534), the sender as root: the kernel refuses the receiver access to the
     * sender, so its endpoint has no RMA lane (EPERM at lane selection) and it offers no buffer: plain RTRs, counted,
     * and every message arrives by fragments.
     */
    @Test
    void aReceiverOfAnotherUserOffersNoBufferAndEveryMessageArrivesByFragments() throws Exception {
        assumeTrue(isRoot(), "needs root to start the peer as another user");
        Worker worker = worker();
        long threshold = putThreshold(worker, worker.address());
        int[] sizes = {(int) threshold + 1, 1 << 20, 16 << 20};
        PeerProcess peer = peer(PeerProcess.startAs(65534, TagPeer.class, PUT, Integer.toString(sizes.length),
                join(sizes)));
        WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
        String report = TagPeer.sendAll(worker, peer, peerAddress, sizes);
        long total = Arrays.stream(sizes).asLongStream().sum();
        assertEquals("OK " + sizes.length + " " + total, report, () -> report + "\n" + peer.stderr());
        String lanes = peer.awaitLine("LANES");
        assertTrue(lanes.startsWith("rma=null refusal=cma: process_vm_readv(pid ") && lanes.contains("EPERM"), lanes);
        String counters = peer.awaitLine("COUNTERS");
        assertEquals(sizes.length, count(counters, RndvProtocols.RECV_PUT_FALLBACK_COUNTER), counters);
        assertEquals(0, count(counters, RndvProtocols.RECV_PUT_COUNTER), counters);
        assertEquals(0, worker.counters().count(RndvProtocols.PUT_COUNTER));
        assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
    }

    /**
     * The sender runs as nobody, the receiver (this JVM) as root: the receiver may reach the sender and offers its
     * buffers, but the kernel refuses the sender access to root's memory (EPERM at its lane selection), so it has no
     * RMA lane and answers each key-carrying RTR with fragments from offset 0, counted.
     */
    @Test
    void aSenderTheKernelRefusesAnswersEachOfferWithFragments() throws Exception {
        assumeTrue(isRoot(), "needs root to start the peer as another user");
        Worker worker = worker();
        // Without an RMA lane the sender's table has no put/zcopy: only sizes above tag/rndv's threshold (about
        // 7.5 MiB on tcp) go by rendezvous, which is what this test is about.
        int[] sizes = {16 << 20, (16 << 20) + 1, 32 << 20};
        PeerProcess sender = peer(PeerProcess.startAs(65534, PutPeer.class, PUT, "send", join(sizes), "0"));
        sender.awaitLine("ADDRESS");
        List<Future<TagMessage>> recvs = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            recvs.add(worker.tagRecv(i, -1L));
        }
        sender.send(worker.address().toHex());
        sender.awaitLine("CONNECTED");
        worker.tagRecv(PutPeer.HELLO_TAG, -1L).get(30, TimeUnit.SECONDS).release();
        sender.send("GO");
        for (int i = 0; i < sizes.length; i++) {
            TagMessage m = recvs.get(i).get(120, TimeUnit.SECONDS);
            try {
                assertEquals(null, MessagePlan.check(i, sizes[i], m.content()));
            } finally {
                m.release();
            }
            assertEquals("OK", sender.awaitLine("SENT " + i), sender::stderr);
        }
        String counters = sender.awaitLine("COUNTERS");
        assertEquals(sizes.length, count(counters, RndvProtocols.PUT_FALLBACK_COUNTER), counters);
        assertEquals(0, count(counters, RndvProtocols.PUT_COUNTER), counters);
        assertEquals(0, worker.counters().count(RndvProtocols.RECV_PUT_FALLBACK_COUNTER), "root offered each buffer");
        assertEquals(0, sender.waitFor(60), () -> "sender exit code; stderr:\n" + sender.stderr());
    }

    /**
     * Both peers run as nobody, so lane selection lets the sender write the receiver; then the receiver turns
     * non-dumpable, and the kernel refuses each PUT at run time with EPERM: the sender falls back to fragments from
     * offset 0 (counted, the EPERM kept in its RMA failures) and every message arrives byte for byte.
     */
    @Test
    void aPutTheKernelRefusesAtRunTimeWithEpermFallsBackToFragmentsAndEveryMessageArrives() throws Exception {
        assumeTrue(isRoot(), "needs root to start the peers as another user");
        PeerProcess receiver = peer(PeerProcess.startAs(65534, PutPeer.class, PUT, "recv", "-", "nondumpable"));
        PeerProcess sender = peer(PeerProcess.startAs(65534, PutPeer.class, PUT, "send", "1", "0"));
        String receiverAddress = receiver.awaitLine("ADDRESS");
        sender.awaitLine("ADDRESS");
        sender.send(receiverAddress);
        sender.awaitLine("CONNECTED");
        // The sizes from the sender's own table, whose PUT starts where cma's rates measured by that process at its
        // start put it: on a loaded machine a quarter or more from where this JVM's measurement would.
        long threshold = Long.parseLong(sender.awaitLine("PUT_FROM"));
        assertTrue(threshold > 0, "the sender's table has rndv/put/zcopy to the receiver");
        int[] sizes = {(int) threshold + 1, 1 << 20, 16 << 20};
        receiver.awaitLine("NONDUMPABLE");
        receiver.send(join(sizes));
        sender.send("GO " + join(sizes));
        for (int i = 0; i < sizes.length; i++) {
            assertEquals("OK", sender.awaitLine("SENT " + i), sender::stderr);
        }
        String counters = sender.awaitLine("COUNTERS");
        assertEquals(sizes.length, count(counters, RndvProtocols.PUT_FALLBACK_COUNTER), counters);
        assertEquals(0, count(counters, RndvProtocols.PUT_COUNTER), counters);
        String failures = sender.awaitLine("FAILURES");
        assertTrue(failures.contains("process_vm_writev") && failures.contains("EPERM"), failures);
        String receiverCounters = receiver.awaitLine("COUNTERS");
        assertEquals(0, count(receiverCounters, RndvProtocols.RECV_PUT_FALLBACK_COUNTER), "it offered each buffer: "
                + receiverCounters);
        assertEquals("OK", receiver.awaitLine("REPORT"), receiver::stderr);
        assertEquals(0, sender.waitFor(60), () -> "sender exit code; stderr:\n" + sender.stderr());
        assertEquals(0, receiver.waitFor(60), () -> "receiver exit code; stderr:\n" + receiver.stderr());
    }

    /** A receive of {@code n} bytes into a zeroed direct buffer of this JVM, from a slow {@link PutPeer} sender. */
    private final class SlowPut {
        final Worker worker;
        final PeerProcess sender;
        final ByteBuf into;
        final ByteBuffer view;
        final Future<TagMessage> receive;
        final AtomicLong doneAt = new AtomicLong();
        final AtomicBoolean senderGoneWhenDone = new AtomicBoolean();
        /** Counted down by the receive's listener, after it noted when and in which state of the sender. */
        final CountDownLatch ended = new CountDownLatch(1);
        final int n;

        SlowPut(int n) throws Exception {
            this.n = n;
            worker = worker("KEEPALIVE_INTERVAL", INTERVAL_MS + "ms", "KEEPALIVE_TIMEOUT", TIMEOUT_MS + "ms");
            Map<String, String> env = new HashMap<>(PUT);
            env.put("NUCX_KEEPALIVE_INTERVAL", INTERVAL_MS + "ms");
            env.put("NUCX_KEEPALIVE_TIMEOUT", TIMEOUT_MS + "ms");
            sender = peer(PeerProcess.start(PutPeer.class, env, "send", Integer.toString(n), "20"));
            into = ByteBufAllocator.DEFAULT.directBuffer(n, n).setZero(0, n);
            view = into.nioBuffer(0, n); // read without a leak-detector record per access
            receive = worker.tagRecv(0, -1L, into);
            receive.addListener(f -> {
                doneAt.set(System.nanoTime());
                senderGoneWhenDone.set(exited(sender.pid()));
                ended.countDown();
            });
            sender.awaitLine("ADDRESS");
            sender.send(worker.address().toHex());
            sender.awaitLine("CONNECTED");
            worker.tagRecv(PutPeer.HELLO_TAG, -1L).get(30, TimeUnit.SECONDS).release();
            sender.send("GO");
        }

        private boolean anyNonZero(int from, int length) {
            for (int i = from; i < from + length; i++) {
                if (view.get(i) != 0) {
                    return true;
                }
            }
            return false;
        }

        /** Waits until the PUT has written its first chunk but not the last. */
        void awaitMidPut() throws Exception {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!anyNonZero(0, 4096)) {
                assertTrue(System.nanoTime() < deadline, "the PUT never started: " + worker.counters().snapshot()
                        + "\n" + sender.stderr());
                Thread.sleep(1);
            }
            assertFalse(anyNonZero(n - 4096, 4096), "the PUT already finished: the sender was not slow enough");
            assertFalse(receive.isDone(), "mid-PUT");
        }

        Endpoint endpoint() {
            return worker.endpoints().iterator().next();
        }

        int held() throws Exception {
            return worker.eventLoop().submit(worker::heldReceives).get();
        }
    }

    /**
     * The sender is killed mid-PUT: the receiver's endpoint fails at once (the kernel closed the sender's socket), but
     * the receive fails only after the sender's process is gone, as its pidfd tells; nothing leaks (the leak detector
     * checks after the test).
     */
    @Test
    void aSenderKilledMidPutFailsTheReceiveOnlyAfterItsProcessIsGone() throws Exception {
        SlowPut put = new SlowPut(256 << 20);
        try {
            put.awaitMidPut();
            Endpoint ep = put.endpoint();
            put.sender.signal("KILL");
            assertTrue(put.ended.await(30, TimeUnit.SECONDS), "the receive was never released");
            assertTrue(put.senderGoneWhenDone.get(), "the receive ended while the sender's process still existed");
            assertFalse(put.receive.isSuccess());
            assertInstanceOf(ConnectionResetException.class, put.receive.cause().getCause(),
                    () -> "cause: " + put.receive.cause());
            assertTrue(put.receive.cause().getMessage().contains("could no longer write"), put.receive.cause().getMessage());
            assertTrue(ep.errorFuture().isDone() && !ep.errorFuture().isSuccess());
            assertEquals(0, put.held());
            assertEquals(1, put.worker.counters().count(RndvProtocols.RECV_PUT_HELD_COUNTER));
            assertEquals(0, put.worker.counters().count(RndvProtocols.RECV_PUT_COUNTER));
        } finally {
            put.into.release();
        }
    }

    /**
     * The sender is stopped mid-PUT. The receiver's endpoint times out (keepalive), yet the receive stays held, its
     * buffer neither completed nor failed, for as long as the sender is stopped. Then the sender either continues
     * (it reads the EP_REMOVED the receiver sent on the lane it kept open, cancels its PUT and answers ATP cancelled)
     * or is killed (its process goes); only then is the receive failed. Asserts that order.
     */
    @ParameterizedTest
    @ValueSource(strings = {"CONT", "KILL"})
    void aSenderStoppedMidPutHoldsTheReceiveBeyondTheEndpointTimeoutUntilItContinuesOrDies(String then)
            throws Exception {
        SlowPut put = new SlowPut(256 << 20);
        try {
            put.awaitMidPut();
            Endpoint ep = put.endpoint();
            put.sender.signal("STOP");
            long stoppedAt = System.nanoTime();
            assertTrue(ep.errorFuture().await(30, TimeUnit.SECONDS), "the endpoint did not time out");
            long timedOutAt = System.nanoTime();
            assertInstanceOf(EndpointTimeoutException.class, ep.errorFuture().cause());
            assertTrue(timedOutAt - stoppedAt >= TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS - INTERVAL_MS));
            // A stopped process sends nothing and does not exit, so no event can be awaited: the property is a span
            // of time. For two more timeouts after the endpoint's own, the receive must stay held.
            assertFalse(put.ended.await(2 * TIMEOUT_MS, TimeUnit.MILLISECONDS),
                    "the receive was given up while the stopped sender may still write");
            assertFalse(put.receive.isDone());
            assertEquals(1, put.held());
            long signalledAt = System.nanoTime();
            put.sender.signal(then);
            assertTrue(put.ended.await(30, TimeUnit.SECONDS), "the receive was never released");
            assertTrue(put.doneAt.get() > signalledAt && signalledAt > timedOutAt, "order: timeout, " + then
                    + ", release");
            assertFalse(put.receive.isSuccess());
            assertInstanceOf(EndpointTimeoutException.class, put.receive.cause().getCause(),
                    () -> "cause: " + put.receive.cause());
            if (then.equals("KILL")) {
                assertTrue(put.senderGoneWhenDone.get(), "released before the sender's process was gone");
            } else {
                // The sender stopped its PUT and said so: it fails its send and exits cleanly, leak-free.
                String sent = put.sender.awaitLine("SENT 0");
                assertTrue(sent.startsWith("ConnectionResetException") || sent.startsWith("EndpointTimeoutException"),
                        sent);
                String counters = put.sender.awaitLine("COUNTERS");
                assertEquals(0, count(counters, RndvProtocols.PUT_COUNTER), counters);
                assertEquals(0, put.sender.waitFor(60), () -> "sender exit code; stderr:\n" + put.sender.stderr());
            }
            assertEquals(0, put.held());
            assertEquals(1, put.worker.counters().count(RndvProtocols.RECV_PUT_HELD_COUNTER));
        } finally {
            put.into.release();
        }
    }
}
