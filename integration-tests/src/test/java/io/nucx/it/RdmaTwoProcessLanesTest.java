package io.nucx.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.Future;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.EndpointException;
import io.nucx.EndpointTimeoutException;
import io.nucx.ErrorMode;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.RmaTransfer;
import io.nucx.protocol.amo.AmoCodec;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.rdma.VerbsEmulator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * rdma lanes between this JVM and another over nucx's verbs emulator (issue #11; no RDMA hardware here): endpoints
 * wired up over rdma with tcp as the auxiliary lane, lane selection traced alike from both sides, tagged ping-pong,
 * rendezvous GET and PUT of 1 B to 256 MiB checked byte for byte in the other process, atomics by the device (every
 * previous value distinct, the sum exact), the RMA API, credits holding a sender back from a receiver that stalls,
 * a peer killed mid-transfer, and multi-rail: the emulator's two devices report 4x and 2x links
 * ({@code VERBS_EMU_WIDTHS}, set for this module's tests by its pom), so transfers split 2:1.
 */
@Timeout(600)
class RdmaTwoProcessLanesTest {

    /** Keepalive of the kill test: short, so the bound it checks is; the other tests keep the defaults. */
    private static final long INTERVAL_MS = 500;
    private static final long TIMEOUT_MS = 3000;
    /** Slack on top of the keepalive bound for a shared 2-core machine. */
    private static final long SLACK_MS = 4000;

    private final List<PeerProcess> peers = new ArrayList<>();
    private final List<Worker> workers = new ArrayList<>();

    @BeforeEach
    void emulator() {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
    }

    @AfterEach
    void closeAll() throws Exception {
        for (Worker w : workers) {
            w.close().get(30, TimeUnit.SECONDS);
        }
        for (PeerProcess p : peers) {
            p.close();
        }
    }

    private static Map<String, String> env(String... more) {
        Map<String, String> env = new HashMap<>(Map.of("NUCX_TLS", "rdma,tcp", "NUCX_VERBS_LIB",
                VerbsEmulator.library(), "NUCX_KEEPALIVE_TIMEOUT", "20s"));
        for (int i = 0; i < more.length; i += 2) {
            env.put("NUCX_" + more[i], more[i + 1]);
        }
        return env;
    }

    private Worker worker(ChannelHandler handler, String... more) throws Exception {
        NucxBootstrap b = new NucxBootstrap().name("test").endpointHandler(handler);
        env(more).forEach((k, v) -> b.config(k.substring("NUCX_".length()), v));
        Worker w = b.start();
        workers.add(w);
        return w;
    }

    private PeerProcess peer(Class<?> main, Map<String, String> env, String... args) throws Exception {
        PeerProcess p = PeerProcess.start(main, env, args);
        peers.add(p);
        return p;
    }

    private static String ask(PeerProcess p, String command, String answer) throws Exception {
        p.send(command);
        return p.awaitLine(answer);
    }

    /** The lane trace toward {@code to}, from its header on (names and uuids differ; candidates must not). */
    private static List<String> body(String laneInfo) {
        return laneInfo.substring(laneInfo.indexOf("# criterion")).lines().map(String::strip).toList();
    }

    @Test
    void lanesAreChosenAlikeOnBothSidesAndTaggedMessagesPingPong() throws Exception {
        Worker w = worker(null);
        PeerProcess p = peer(RdmaWorkerPeer.class, env());
        WorkerAddress there = WorkerAddress.fromHex(p.awaitLine("ADDRESS"));
        p.send("LANES " + w.address().toHex());
        StringBuilder theirs = new StringBuilder();
        for (String l; !(l = p.awaitLine("")).equals("END"); ) {
            theirs.append(l.substring(2)).append('\n');
        }
        String ours = w.laneInfo(there, ErrorMode.PEER);
        assertEquals(body(ours), body(theirs.toString()), "both sides trace the same candidates, scores, verdicts");
        for (String expected : List.of("CHOSEN: AM lane rdma/emu0:1", "CHOSEN: RMA lane rdma/emu0:1",
                "CHOSEN: RMA_BW lane[1] rdma/emu1:1", "CHOSEN: AMO lane rdma/emu0:1",
                "auxiliary connect-to-iface lane for REQUEST / REPLY", "keepalive  rdma/emu0:1")) {
            assertTrue(ours.contains(expected), () -> expected + " missing:\n" + ours);
        }
        Endpoint ep = w.connect(there);
        ep.wireupFuture().get(30, TimeUnit.SECONDS);
        String describe = "rdma/emu0:1 (p2p, wireup tcp/lo); rma rdma/emu0:1 + rdma/emu1:1; amo rdma/emu0:1; "
                + "keepalive rdma/emu0:1";
        assertEquals(describe, ep.describeLanes());
        assertEquals("DESCRIBE " + describe, "DESCRIBE " + ask(p, "DESCRIBE", "DESCRIBE"));

        int n = 2000;
        p.send("ECHO " + n);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            var back = w.tagRecv(i | 1L << 62, -1L);
            int size = i % 200 == 0 ? 8000 : 8 + i % 64;
            ep.tagSend(i, MessagePlan.content(i, size));
            TagMessage m = back.get(30, TimeUnit.SECONDS);
            try {
                assertEquals(null, MessagePlan.check(i, size, m.content()));
            } finally {
                m.release();
            }
        }
        long us = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - t0);
        assertEquals("" + n, p.awaitLine("ECHOED"));
        System.out.println("rdma ping-pong over the emulator: " + n + " round trips, " + (us / n) + " us each");
        assertEquals(List.of("rdma/emu0:1"), ep.laneNames().get(10, TimeUnit.SECONDS));
        p.send("END");
        assertEquals(0, p.waitFor(60), () -> "peer exit code; stderr:\n" + p.stderr());
    }

    /**
     * Rendezvous of 1 B (NUCX_RNDV_THRESH=1) to 256 MiB, read by the receiver (get_zcopy) and written by the sender
     * (put_zcopy) over both rails; the other process checks every byte; large messages split 2:1 as the devices'
     * links.
     */
    @Test
    void rendezvousGetAndPutFromOneByteTo256MiBSplitOverBothRails() throws Exception {
        int[] sizes = {1, 7, 4096, 65537, (1 << 20) + 3, 16 << 20, 256 << 20};
        String sizesArg = String.join(",", Arrays.stream(sizes).mapToObj(String::valueOf).toList());
        for (String scheme : List.of("get_zcopy", "put_zcopy")) {
            // rendezvous from 1 byte on, and zero-copy only (where fragments would cost less, at 1 B, too)
            String[] settings = {"RNDV_THRESH", "1", "RNDV_SCHEME", scheme, "PROTOS", "^tag/rndv"};
            Worker w = worker(null, settings);
            PeerProcess p = peer(TagPeer.class, env(settings), Integer.toString(sizes.length), sizesArg);
            Endpoint ep = w.connect(WorkerAddress.fromHex(p.awaitLine("ADDRESS")));
            var report = w.tagRecv(TagPeer.REPORT_TAG, -1L);
            long total = 0;
            for (int i = 0; i < sizes.length; i++) {
                ByteBuf heap = MessagePlan.content(i, sizes[i]);
                ByteBuf direct = ByteBufAllocator.DEFAULT.directBuffer(sizes[i]).writeBytes(heap);
                heap.release();
                assertTrue(ep.tagSend(i, direct).await(120, TimeUnit.SECONDS), scheme + " send " + i);
                total += sizes[i];
            }
            String text = TagPeer.report(report, 120);
            assertEquals("OK " + sizes.length + " " + total, text, () -> scheme + ": " + p.stderr());
            assertEquals("rma=rdma/emu0:1 + rdma/emu1:1 refusal=null", p.awaitLine("LANES"));
            Map<String, Long> peerCounters = counters(p.awaitLine("COUNTERS"));
            Map<String, Long> mover = scheme.equals("get_zcopy") ? peerCounters : w.counters().snapshot();
            String moved = scheme.equals("get_zcopy") ? RndvProtocols.RECV_GET_COUNTER : RndvProtocols.PUT_COUNTER;
            assertEquals(sizes.length, mover.getOrDefault(moved, 0L), () -> scheme + ": " + mover);
            assertSplit(scheme, mover, total);
            assertEquals(0, p.waitFor(60), () -> "peer exit code; stderr:\n" + p.stderr());
        }
    }

    /**
     * The bytes of every rendezvous went on the two rails in proportion to their links (4x : 2x = 2 : 1) within a
     * few percent, small messages (below 2 x 16 KiB) on the first rail alone.
     */
    private static void assertSplit(String scheme, Map<String, Long> counters, long total) {
        long rail0 = counters.getOrDefault(RmaTransfer.RAIL_BYTES_COUNTER + "rdma/emu0:1", 0L);
        long rail1 = counters.getOrDefault(RmaTransfer.RAIL_BYTES_COUNTER + "rdma/emu1:1", 0L);
        assertEquals(total, rail0 + rail1, () -> scheme + ": every byte on a rail: " + counters);
        double share = (double) rail1 / total;
        System.out.printf("%s: rail emu0 %d B, rail emu1 %d B: %.4f of the bytes on the 2x rail (expected 1/3)%n",
                scheme, rail0, rail1, share);
        assertEquals(1.0 / 3, share, 0.03 / 3, scheme + ": the 2x rail's share");
    }

    /** "{a=1, b=2}" as printed by ProtocolCounters.snapshot(). */
    private static Map<String, Long> counters(String snapshot) {
        Map<String, Long> out = new HashMap<>();
        Matcher m = Pattern.compile("([^{}=,]+)=(-?\\d+)").matcher(snapshot);
        while (m.find()) {
            out.put(m.group(1).trim(), Long.parseLong(m.group(2)));
        }
        return out;
    }

    /** Fetch-add from this process on the other's memory by verbs atomics: nothing lost, nothing twice. */
    @Test
    void deviceAtomicsOnAnotherProcessLoseNothing() throws Exception {
        Worker w = worker(null);
        PeerProcess p = peer(RdmaWorkerPeer.class, env());
        Endpoint ep = w.connect(WorkerAddress.fromHex(p.awaitLine("ADDRESS")));
        RemoteMemoryKey key = RemoteMemoryKey.fromHex(ask(p, "REGION 4096", "KEY"));
        int n = 10_000;
        List<Future<Long>> adds = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            adds.add(ep.atomic(AtomicOp.ADD, key, key.base() + 64, 3));
        }
        BitSet seen = new BitSet();
        for (var f : adds) {
            long previous = f.get(60, TimeUnit.SECONDS);
            assertTrue(previous % 3 == 0 && previous >= 0 && previous < 3L * n && !seen.get((int) (previous / 3)),
                    "previous value " + previous + " twice or out of range");
            seen.set((int) (previous / 3));
        }
        assertEquals(n, seen.cardinality(), "every previous value distinct");
        assertEquals("" + 3L * n, ask(p, "WORD 64", "WORD"), "the sum is exact");
        assertEquals(3L * n, (long) ep.compareAndSwap(key, key.base() + 64, 3L * n, 1).get(10, TimeUnit.SECONDS));
        assertEquals("1", ask(p, "WORD 64", "WORD"));
        assertEquals(n + 1, w.counters().count(AmoCodec.DEVICE_COUNTER), "by the device, not active messages");
        assertEquals(0, w.counters().count(AmoCodec.AM_COUNTER));
        p.send("END");
        assertEquals(0, p.waitFor(60), () -> "peer exit code; stderr:\n" + p.stderr());
    }

    /** Put, get, flush and fence on another process's registered memory, over rdma and over cma. */
    @Test
    void theRmaApiReachesAnotherProcessOverRdmaAndCma() throws Exception {
        for (String tls : List.of("rdma,tcp", "tcp,cma")) {
            Worker w = worker(null, "TLS", tls);
            PeerProcess p = peer(RdmaWorkerPeer.class, env("TLS", tls));
            Endpoint ep = w.connect(WorkerAddress.fromHex(p.awaitLine("ADDRESS")));
            RemoteMemoryKey key = RemoteMemoryKey.fromHex(ask(p, "REGION " + (40 << 20), "KEY"));
            try (Arena arena = Arena.ofShared()) {
                int[] sizes = {1, 333, 1 << 20, 32 << 20};
                long offset = 0;
                for (int i = 0; i < sizes.length; i++) {
                    MemorySegment src = arena.allocate(sizes[i]);
                    src.copyFrom(MemorySegment.ofArray(RdmaWorkerPeer.bytes(i, sizes[i])));
                    ep.put(src, key, key.base() + offset);
                    offset += sizes[i] + 4096;
                }
                ep.flushRma().get(60, TimeUnit.SECONDS);
                offset = 0;
                for (int i = 0; i < sizes.length; i++) {
                    assertEquals("OK", ask(p, "CHECK " + offset + " " + sizes[i] + " " + i, "CHECKED"),
                            tls + ": put " + sizes[i]);
                    offset += sizes[i] + 4096;
                }
                assertEquals("", ask(p, "FILL 100 5000000 77", "FILLED"));
                MemorySegment into = arena.allocate(5_000_000);
                ep.get(into, key, key.base() + 100).get(60, TimeUnit.SECONDS);
                assertTrue(Arrays.equals(RdmaWorkerPeer.bytes(77, 5_000_000),
                        into.toArray(ValueLayout.JAVA_BYTE)), tls + ": get");
                // fence: a small put behind a large one lands last
                MemorySegment big = arena.allocate(8 << 20);
                big.copyFrom(MemorySegment.ofArray(RdmaWorkerPeer.bytes(5, 8 << 20)));
                MemorySegment small = arena.allocate(4096);
                small.copyFrom(MemorySegment.ofArray(RdmaWorkerPeer.bytes(6, 4096)));
                ep.put(big, key, key.base());
                ep.fenceRma();
                ep.put(small, key, key.base());
                w.flushRma().get(60, TimeUnit.SECONDS);
                assertEquals("OK", ask(p, "CHECK 0 4096 6", "CHECKED"), tls + ": the fenced put came last");
            }
            p.send("END");
            assertEquals(0, p.waitFor(60), () -> "peer exit code; stderr:\n" + p.stderr());
        }
    }

    @ChannelHandler.Sharable
    static final class Writability extends ChannelInboundHandlerAdapter {
        final AtomicInteger unwritable = new AtomicInteger();

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (!ctx.channel().isWritable()) {
                unwritable.incrementAndGet();
            }
            ctx.fireChannelWritabilityChanged();
        }
    }

    /**
     * A receiver whose loop stalls reads nothing and grants no credit: the sender's rdma lane runs out of credits,
     * the endpoint turns unwritable and its writes wait; when the receiver reads again everything arrives, in order,
     * and no SEND ever met a missing receive (no RNR NAK on either side).
     */
    @Test
    void creditsHoldTheSenderBackWhileTheReceiverStalls() throws Exception {
        Writability writability = new Writability();
        Worker w = worker(writability);
        PeerProcess p = peer(RdmaWorkerPeer.class, env());
        Endpoint ep = w.connect(WorkerAddress.fromHex(p.awaitLine("ADDRESS")));
        ep.wireupFuture().get(30, TimeUnit.SECONDS);
        long[] before = VerbsEmulator.counters();
        int n = 3000;
        int size = 4000;
        p.send("RECV " + n + " " + size);
        ask(p, "STALL 3000", "STALLING");
        List<ChannelFuture> sends = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            sends.add(ep.tagSend(i, MessagePlan.content(i, size)));
        }
        assertEquals("OK", p.awaitLine("RECEIVED"));
        for (ChannelFuture f : sends) {
            assertTrue(f.await(30, TimeUnit.SECONDS) && f.isSuccess(), () -> String.valueOf(f.cause()));
        }
        assertTrue(writability.unwritable.get() > 0, "the endpoint turned unwritable while the receiver stalled");
        long[] after = VerbsEmulator.counters();
        assertEquals(before[VerbsEmulator.RNR_NAK_RECEIVED], after[VerbsEmulator.RNR_NAK_RECEIVED],
                "no receiver-not-ready NAK reached this side");
        String emu = ask(p, "COUNTERS", "EMU");
        long[] theirs = Arrays.stream(emu.replaceAll("[\\[\\] ]", "").split(","))
                .mapToLong(Long::parseLong).toArray();
        assertEquals(0, theirs[VerbsEmulator.RNR_NAK_SENT], "the receiver never answered a SEND with RNR NAK");
        p.send("END");
        assertEquals(0, p.waitFor(60), () -> "peer exit code; stderr:\n" + p.stderr());
    }

    /**
     * The peer killed while rendezvous and synchronous sends wait for it and eager data is still in flight on the
     * rdma lane: every outstanding future fails with the endpoint's error, which names the rdma lane and the verbs
     * status, within the keepalive bound (an idle queue pair notices a dead peer only when it sends: EP_CHECK does).
     */
    @Test
    void aPeerKilledMidTransferFailsEveryOutstandingFutureWithinTheKeepaliveBound() throws Exception {
        String[] keepalive = {"RNDV_THRESH", "1k", "KEEPALIVE_INTERVAL", INTERVAL_MS + "ms", "KEEPALIVE_TIMEOUT",
                TIMEOUT_MS + "ms"};
        Worker w = worker(null, keepalive);
        PeerProcess victim = peer(FailurePeer.class, env(keepalive), "hold", "5");
        Endpoint ep = w.connect(WorkerAddress.fromHex(victim.awaitLine("ADDRESS")));
        ep.wireupFuture().get(30, TimeUnit.SECONDS);
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            sends.add(ep.tagSend(i, MessagePlan.content(i, 1 << 20)));
        }
        for (int i = 3; i < 5; i++) {
            sends.add(ep.tagSendSync(i, MessagePlan.content(i, 100)));
        }
        victim.awaitLine("HOLDING");
        for (int i = 10; i < 400; i++) {
            sends.add(ep.tagSend(i, MessagePlan.content(i, 800)));
        }
        victim.signal("KILL");
        long t0 = System.nanoTime();
        assertTrue(ep.errorFuture().await(TIMEOUT_MS + INTERVAL_MS + SLACK_MS, TimeUnit.MILLISECONDS),
                "the endpoint did not fail within the keepalive bound");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        Throwable cause = ep.errorFuture().cause();
        assertTrue(cause instanceof ConnectionResetException || cause instanceof EndpointTimeoutException,
                () -> "cause: " + cause);
        assertTrue(cause.getMessage().contains("rdma/emu0:1") || cause instanceof EndpointTimeoutException,
                cause::getMessage);
        for (int i = 0; i < 5; i++) {
            ChannelFuture f = sends.get(i);
            assertTrue(f.await(5, TimeUnit.SECONDS), "send " + i + " not completed");
            assertSame(cause, f.cause(), "send " + i + " fails with the endpoint's cause");
        }
        for (ChannelFuture f : sends.subList(5, sends.size())) {
            assertTrue(f.await(5, TimeUnit.SECONDS), "an eager send never completed");
            assertTrue(f.isSuccess() || f.cause() instanceof EndpointException,
                    () -> "eager send: written before the kill, or failed with the endpoint's cause: " + f.cause());
        }
        System.out.println("rdma peer SIGKILL detected after " + ms + " ms: " + cause.getMessage());
        assertInstanceOf(EndpointException.class, cause);
    }
}
