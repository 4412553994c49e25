package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.ErrorMode;
import io.nucx.NucxBootstrap;
import io.nucx.protocol.RmaTransfer;
import io.nucx.protocol.amo.AmoCodec;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.rdma.VerbsEmulator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Two workers of this JVM over rdma lanes on the verbs emulator's two devices, tcp carrying the wireup: lanes chosen
 * by UCX's scores (rdma AM, RMA_BW and AMO lanes), messages both ways.
 */
@Timeout(120)
class RdmaLanesTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @BeforeEach
    void emulator() {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
    }

    /**
     * {@code a}'s endpoint to {@code b}, connected from a task on {@code a}'s loop: its wireup needs that loop's I/O,
     * so what the task writes after this is written before the endpoint is wired up (connected from the test's thread,
     * a loaded machine wired it up before such a task ran).
     */
    private static Endpoint connectOnItsLoop(DefaultWorker a, DefaultWorker b) {
        Endpoint ab = a.connect(b.address());
        assertTrue(!ab.wireupFuture().isDone(), "wired up before the atomics were written");
        return ab;
    }

    private DefaultWorker rdmaWorker(String name, String... more) throws Exception {
        String[] settings = new String[4 + more.length];
        settings[0] = "TLS";
        settings[1] = "rdma,tcp";
        settings[2] = "VERBS_LIB";
        settings[3] = VerbsEmulator.library();
        System.arraycopy(more, 0, settings, 4, more.length);
        return workers.start(name, settings);
    }

    @Test
    void rdmaIsTheAmLaneWiredUpOverTcpAndMessagesGoBothWays() throws Exception {
        DefaultWorker a = rdmaWorker("a");
        DefaultWorker b = rdmaWorker("b");
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().get(30, TimeUnit.SECONDS);
        System.out.println(ab.describeLanes());
        assertTrue(ab.describeLanes().startsWith("rdma/emu0:1 (p2p, wireup tcp/"), ab::describeLanes);
        for (int i = 0; i < 100; i++) {
            var got = b.tagRecv(i, -1L);
            ab.tagSend(i, TestWorkers.pattern(i, 100 + i)).sync();
            TagMessage m = got.get(10, TimeUnit.SECONDS);
            try {
                TestWorkers.assertPattern(i, 100 + i, m.content());
            } finally {
                m.release();
            }
            Endpoint ba = b.endpoints().iterator().next();
            var back = a.tagRecv(1000 + i, -1L);
            ba.tagSend(1000 + i, TestWorkers.pattern(1000 + i, 50)).sync();
            back.get(10, TimeUnit.SECONDS).release();
        }
        assertEquals(List.of("rdma/emu0:1"), ab.laneNames().get());
    }

    /**
     * rndv/get/zcopy and rndv/put/zcopy over the two rdma rails from 1 byte (NUCX_RNDV_THRESH=1) to 16 MiB, byte for
     * byte; messages large enough for both rails are split between them in proportion to bandwidth (the emulator's
     * devices report the same: half each).
     */
    @Test
    void rendezvousGetAndPutRunOverBothRailsAndSplitByBandwidth() throws Exception {
        for (String scheme : new String[] {"get_zcopy", "put_zcopy"}) {
            DefaultWorker a = rdmaWorker("a-" + scheme, "RNDV_THRESH", "1", "RNDV_SCHEME", scheme);
            DefaultWorker b = rdmaWorker("b-" + scheme, "RNDV_THRESH", "1", "RNDV_SCHEME", scheme);
            Endpoint ab = a.connect(b.address());
            ab.wireupFuture().get(30, TimeUnit.SECONDS);
            assertEquals("rdma/emu0:1 + rdma/emu1:1", ab.rmaLane());
            int[] sizes = {1, 100, 32 * 1024, (1 << 20) + 7, 16 << 20};
            for (int i = 0; i < sizes.length; i++) {
                ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(sizes[i]);
                try {
                    var got = b.tagRecv(i, -1L, into);
                    ab.tagSend(i, TestWorkers.directPattern(i, sizes[i])).sync();
                    TagMessage m = got.get(30, TimeUnit.SECONDS);
                    try {
                        TestWorkers.assertPattern(i, sizes[i], m.content());
                    } finally {
                        m.release();
                    }
                } finally {
                    into.release();
                }
            }
            DefaultWorker mover = scheme.equals("get_zcopy") ? b : a;
            String counter = scheme.equals("get_zcopy") ? RndvProtocols.RECV_GET_COUNTER
                    : RndvProtocols.PUT_COUNTER;
            assertEquals(sizes.length, mover.counters().count(counter), scheme + ": " + mover.counters().snapshot());
            long rail0 = mover.counters().count(RmaTransfer.RAIL_BYTES_COUNTER + "rdma/emu0:1");
            long rail1 = mover.counters().count(RmaTransfer.RAIL_BYTES_COUNTER + "rdma/emu1:1");
            long total = Arrays.stream(sizes).asLongStream().sum();
            assertEquals(total, rail0 + rail1, "every byte went on a rail");
            // below 2 x 16 KiB a message takes the first rail alone; the rest splits half and half
            long split = (1 << 20) + 7 + (16 << 20) + 32 * 1024;
            assertEquals(split / 2.0, rail1, split * 0.01, scheme + ": rail 1 took " + rail1 + " of " + split);
        }
    }

    /**
     * Atomics through the AMO lane: fetch-add and compare-and-swap run as verbs atomics on the device (every previous
     * value distinct, the sum exact); swap, which verbs lacks, goes as an active message on the same words.
     */
    @Test
    void fetchAddAndCompareAndSwapRunOnTheDeviceAndSwapAsAnActiveMessage() throws Exception {
        DefaultWorker a = rdmaWorker("a");
        DefaultWorker b = rdmaWorker("b");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment words = arena.allocate(64, 8);
            RemoteMemoryKey key = b.registerMemory(words);
            assertEquals(2, key.keys().size(), "a key per rdma device of b");
            assertEquals(key, RemoteMemoryKey.fromHex(key.toHex()), "the key travels as text");
            Endpoint ab = a.connect(b.address());
            ab.wireupFuture().get(30, TimeUnit.SECONDS);
            int n = 2000;
            List<Future<Long>> adds = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                adds.add(ab.atomic(AtomicOp.ADD, key, key.base() + 8, 1));
            }
            Set<Long> previous = new HashSet<>();
            for (var f : adds) {
                previous.add(f.get(30, TimeUnit.SECONDS));
            }
            assertEquals(n, previous.size(), "every previous value distinct");
            assertEquals(LongStream.range(0, n).boxed().collect(Collectors.toSet()),
                    previous);
            assertEquals(n, words.get(ValueLayout.JAVA_LONG, 8));
            assertEquals((long) n, ab.compareAndSwap(key, key.base() + 8, n, -5).get(10, TimeUnit.SECONDS));
            assertEquals(-5L, ab.compareAndSwap(key, key.base() + 8, n, 7).get(10, TimeUnit.SECONDS), "no swap");
            assertEquals(-5L, ab.atomic(AtomicOp.SWAP, key, key.base() + 8, 9)
                    .get(10, TimeUnit.SECONDS));
            assertEquals(9, words.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(n + 2, a.counters().count(AmoCodec.DEVICE_COUNTER));
            assertEquals(1, a.counters().count(AmoCodec.AM_COUNTER));
            String info = a.laneInfo(b.address(), ErrorMode.PEER);
            assertTrue(info.contains("CHOSEN: AMO lane rdma/emu0:1") && info.contains("# amo lane rdma/emu0:1"), info);
            b.unregisterMemory(key);
        }
    }

    /**
     * Atomics written while the endpoint wires up wait for its AMO lane, then go out in batches: the loop runs its
     * timers (and I/O) between batches, rather than replaying every one in one batch of tasks; all still complete.
     */
    @Test
    void atomicsWrittenDuringTheWireupGoOutInBatchesWithTheLoopsTurnsBetween() throws Exception {
        DefaultWorker a = rdmaWorker("a");
        DefaultWorker b = rdmaWorker("b");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment words = arena.allocate(64, 8);
            RemoteMemoryKey key = b.registerMemory(words);
            int n = 2000; // about eight of AmoCodec's replay batches
            CompletableFuture<Long> sentWhenTimerRan = new CompletableFuture<>();
            List<Future<Long>> adds = a.eventLoop().submit(() -> {
                Endpoint ab = connectOnItsLoop(a, b);
                List<Future<Long>> written = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    written.add(ab.atomic(AtomicOp.ADD, key, key.base() + 8, 1));
                }
                // After the codec's own listener, which starts the replay: a task that sets a timer due at once.
                ab.wireupFuture().addListener(f -> a.eventLoop().execute(() -> a.eventLoop().schedule(
                        () -> sentWhenTimerRan.complete(
                                a.counters().count(AmoCodec.DEVICE_COUNTER)),
                        0, TimeUnit.NANOSECONDS)));
                return written;
            }).get(10, TimeUnit.SECONDS);
            long sent = sentWhenTimerRan.get(30, TimeUnit.SECONDS);
            assertTrue(sent > 0 && sent < n, "atomics sent when a timer set as the replay began ran: " + sent + " of "
                    + n);
            Set<Long> previous = new HashSet<>();
            for (var f : adds) {
                previous.add(f.get(30, TimeUnit.SECONDS));
            }
            assertEquals(LongStream.range(0, n).boxed().collect(Collectors.toSet()),
                    previous, "every atomic applied once");
            assertEquals(n, words.get(ValueLayout.JAVA_LONG, 8));
            b.unregisterMemory(key);
        }
    }

    /**
     * A loop shut down between the replay's batches, with no quiet period, from one of its tasks: the atomics not yet
     * replayed fail, saying so (Netty cancels the loop's timers, the next batch's too), and those on the device fail
     * as the loop's end closes the rdma lane (the loop never called prepareToDestroy: ShmIoHandler.destroy does);
     * none is left pending and no frame posted on the lane is lost.
     */
    @Test
    void atomicsWaitingForTheWireupFailWhenTheLoopShutsDownBetweenBatches() throws Exception {
        DefaultWorker b = rdmaWorker("b");
        // Not one of the test's workers: its loop is shut down under it, and nothing closes it after.
        DefaultWorker a = (DefaultWorker) new NucxBootstrap().name("a").config("TLS", "rdma,tcp")
                .config("VERBS_LIB", VerbsEmulator.library()).start();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment words = arena.allocate(64, 8);
            RemoteMemoryKey key = b.registerMemory(words);
            int n = 2000;
            List<Future<Long>> adds = a.eventLoop().submit(() -> {
                Endpoint ab = connectOnItsLoop(a, b);
                List<Future<Long>> written = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    written.add(ab.atomic(AtomicOp.ADD, key, key.base() + 8, 1));
                }
                // After the codec's own listener: the shutdown begins once the replay's first batch went out.
                ab.wireupFuture().addListener(f -> a.eventLoop().execute(
                        () -> a.eventLoop().parent().shutdownGracefully(0, 5, TimeUnit.SECONDS)));
                return written;
            }).get(10, TimeUnit.SECONDS);
            List<Throwable> failures = new ArrayList<>();
            for (var f : adds) {
                assertTrue(f.await(10, TimeUnit.SECONDS), "an atomic never ended");
                if (!f.isSuccess()) {
                    failures.add(f.cause());
                }
            }
            assertFalse(failures.isEmpty(), "every atomic completed on a loop shut down during the replay");
            Throwable last = failures.get(failures.size() - 1);
            assertInstanceOf(RejectedExecutionException.class, last, String.valueOf(last));
            assertTrue(last.getMessage().contains("event loop shut down"), last.getMessage());
        } finally {
            a.eventLoop().parent().shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
    }

    /**
     * On one host with shm: shm is the AM lane (the best score), rdma the RMA and AMO lanes, wired up by the same
     * REQUEST / REPLY (the responder connects its queue pairs before the REPLY, the requester on it); a rendezvous GET
     * and a device atomic use them.
     */
    @Test
    void shmCarriesActiveMessagesWhileRdmaCarriesRmaAndAtomics() throws Exception {
        // The ring copying at 1 GB/s: its fragments cost more than rdma's read, so the rendezvous reads by GET (at the
        // copy rate measured at start, the ring's own rendezvous may be cheaper than the emulator's figures).
        DefaultWorker a = workers.start("a", "TLS", "shm,rdma,tcp", "VERBS_LIB", VerbsEmulator.library(),
                "RNDV_THRESH", "1k", "SHM_COPY_BW", "1g");
        DefaultWorker b = workers.start("b", "TLS", "shm,rdma,tcp", "VERBS_LIB", VerbsEmulator.library(),
                "RNDV_THRESH", "1k", "SHM_COPY_BW", "1g");
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().get(30, TimeUnit.SECONDS);
        assertEquals("shm/memory; rma rdma/emu0:1 + rdma/emu1:1; amo rdma/emu0:1; keepalive shm/memory",
                ab.describeLanes());
        int size = 3 << 20;
        ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(size);
        try {
            var got = b.tagRecv(5, -1L, into);
            ab.tagSend(5, TestWorkers.directPattern(5, size)).sync();
            TagMessage m = got.get(30, TimeUnit.SECONDS);
            try {
                TestWorkers.assertPattern(5, size, m.content());
            } finally {
                m.release();
            }
        } finally {
            into.release();
        }
        assertEquals(1, b.counters().count(RndvProtocols.RECV_GET_COUNTER));
        assertTrue(b.counters().count(RmaTransfer.RAIL_BYTES_COUNTER + "rdma/emu1:1") > 0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment word = arena.allocate(8, 8);
            RemoteMemoryKey key = b.registerMemory(word);
            assertEquals(0L, ab.atomic(AtomicOp.ADD, key, key.base(), 4).get(10,
                    TimeUnit.SECONDS));
            assertEquals(1, a.counters().count(AmoCodec.DEVICE_COUNTER));
            b.unregisterMemory(key);
        }
    }

    /** Both sides connect at once: one endpoint pair, wired over rdma with the queue pairs of the winning REQUEST. */
    @Test
    void simultaneousConnectsPairOverRdma() throws Exception {
        DefaultWorker a = rdmaWorker("a");
        DefaultWorker b = rdmaWorker("b");
        Endpoint ab = a.connect(b.address());
        Endpoint ba = b.connect(a.address());
        ab.wireupFuture().get(30, TimeUnit.SECONDS);
        ba.wireupFuture().get(30, TimeUnit.SECONDS);
        for (int i = 0; i < 50; i++) {
            var atB = b.tagRecv(i, -1L);
            var atA = a.tagRecv(i, -1L);
            ab.tagSend(i, TestWorkers.pattern(i, 2000)).sync();
            ba.tagSend(i, TestWorkers.pattern(i + 100, 2000)).sync();
            TagMessage x = atB.get(10, TimeUnit.SECONDS);
            TagMessage y = atA.get(10, TimeUnit.SECONDS);
            try {
                TestWorkers.assertPattern(i, 2000, x.content());
                TestWorkers.assertPattern(i + 100, 2000, y.content());
            } finally {
                x.release();
                y.release();
            }
        }
        assertEquals(1, a.endpoints().size());
        assertEquals(1, b.endpoints().size());
        assertEquals(List.of("rdma/emu0:1"), ab.laneNames().get());
        assertEquals(List.of("rdma/emu0:1"), ba.laneNames().get());
    }

    /**
     * Two workers of one process reach each other by self: no rdma queue pairs to ourselves (lane selection says why),
     * and a rendezvous goes over self and cma (it stalled with rdma RMA rails behind a self AM lane).
     */
    @Test
    void aPeerInThisProcessGetsNoRdmaLanes() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "self,cma,rdma", "VERBS_LIB", VerbsEmulator.library());
        DefaultWorker b = workers.start("b", "TLS", "self,cma,rdma", "VERBS_LIB", VerbsEmulator.library());
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().get(30, TimeUnit.SECONDS);
        assertEquals("self/memory; rma cma/memory; keepalive self/memory", ab.describeLanes());
        List<String> trace = new ArrayList<>();
        LaneSelector.selectLanes(a.ifaces(), a.address(), b.address(), ErrorMode.PEER,
                a.bwLimits(), trace);
        assertTrue(trace.stream().anyMatch(t -> t.contains("rdma") && t.contains(LaneSelector.IN_PROCESS)),
                () -> String.join("\n", trace));
        int size = 600_000;
        var got = b.tagRecv(7, -1L);
        ab.tagSend(7, TestWorkers.pattern(7, size)).sync();
        TestWorkers.assertReceived(got, 7, size, 20);
    }
}
