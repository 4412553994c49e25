package io.nucx.transport.rdma;

import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.uring.IoUring;
import io.nucx.transport.AmFrame;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaOp;
import io.nucx.transport.testsuite.Patterns;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * rdma lanes between this JVM and a second one ({@link RdmaPeer}), over the verbs emulator's two devices: active
 * messages both ways, PUT/GET of 1 B to 256 MiB and verbs atomics checked byte for byte in the other process,
 * credits holding a fast sender back from a receiver that stopped reading (no RNR NAK anywhere), the peer killed
 * with work in flight (every outstanding write fails, naming the status), and both devices carrying data.
 */
@Timeout(300)
class RdmaTwoProcessTest {

    private static final long REGION = (256L << 20) + 4096;
    private static final HexFormat HEX = HexFormat.of();

    private final List<RdmaNode> nodes = new ArrayList<>();
    private final List<Channel> lanes = new ArrayList<>();
    private final List<RemoteKey> keys = new ArrayList<>();
    private final BlockingQueue<AmFrame> echoes = new LinkedBlockingQueue<>();
    private Process peer;
    private BufferedReader peerOut;
    private PrintWriter peerIn;
    private Arena arena;

    private void start(boolean busyPoll, String... devices) throws Exception {
        start(busyPoll ? RdmaNode.Engine.EPOLL_BUSY_POLL : RdmaNode.Engine.EPOLL, devices);
    }

    /** Starts the peer with a lane per device and connects ours, on loops of {@code engine}. */
    private void start(RdmaNode.Engine engine, String... devices) throws Exception {
        String missing = VerbsEmulator.testsMissing();
        assumeTrue(missing == null, () -> missing);
        arena = Arena.ofShared();
        String java = ProcessHandle.current().info().command().orElseThrow();
        peer = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-Dio.netty.leakDetection.level=paranoid", "-cp", System.getProperty("java.class.path"),
                RdmaPeer.class.getName(), VerbsEmulator.testLibrary(), String.join(",", devices), Long.toString(REGION)))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        peerOut = new BufferedReader(new InputStreamReader(peer.getInputStream()));
        peerIn = new PrintWriter(peer.getOutputStream(), true);
        List<P2pEndpoint> eps = new ArrayList<>();
        List<String> mine = new ArrayList<>();
        for (String device : devices) {
            RdmaNode node = RdmaNode.open(VerbsEmulator.testLibrary(), device, engine, Map.of());
            nodes.add(node);
            P2pEndpoint ep = node.endpoint(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    echoes.add((AmFrame) msg);
                }
            });
            eps.add(ep);
            mine.add(node.address(ep));
        }
        for (int i = 0; i < devices.length; i++) {
            String[] w = expect("ADDR").split(" ", 3);
            int idx = Integer.parseInt(w[1]);
            peerIn.println("PEER " + idx + " " + mine.get(idx));
            lanes.add(null);
            lanes.set(idx, nodes.get(idx).connect(eps.get(idx), w[2]));
        }
        for (int i = 0; i < devices.length; i++) {
            String[] w = expect("KEY").split(" ");
            RdmaChannel lane = (RdmaChannel) lanes.get(Integer.parseInt(w[1]));
            byte[] packed = HEX.parseHex(w[2]);
            keys.add(lane.eventLoop().submit(() -> lane.unpackKey(Unpooled.wrappedBuffer(packed))).get());
        }
        expect("READY");
    }

    private String expect(String what) throws Exception {
        String line = peerOut.readLine();
        assertTrue(line != null && line.startsWith(what), "peer said " + line + ", expected " + what);
        return line;
    }

    private String ask(String command) throws Exception {
        peerIn.println(command);
        String answer = peerOut.readLine();
        assertNotNull(answer, "the peer ended while asked " + command);
        return answer;
    }

    @AfterEach
    void stop() throws Exception {
        AmFrame f;
        while ((f = echoes.poll()) != null) {
            f.release();
        }
        if (peer != null && peer.isAlive()) {
            peerIn.println("EXIT");
            String bye = peerOut.readLine();
            assertTrue(peer.waitFor(60, TimeUnit.SECONDS), "the peer did not exit");
            assertEquals(0, peer.exitValue(), "peer exit (3 = leak) after " + bye);
        }
        for (Channel lane : lanes) {
            if (lane != null) {
                lane.close().sync();
            }
        }
        for (RdmaNode n : nodes) {
            n.close();
        }
        if (arena != null) {
            arena.close();
        }
    }

    private static long[] peerCounters(String line) {
        String[] w = line.split(" ");
        long[] c = new long[w.length - 1];
        for (int i = 1; i < w.length; i++) {
            c[i - 1] = Long.parseLong(w[i]);
        }
        return c;
    }

    /** Round trips of frames of every size up to the lane's largest, content checked; event-driven and busy-polled. */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(RdmaNode.Engine.class)
    void activeMessagePingPong(RdmaNode.Engine engine) throws Exception {
        if (engine == RdmaNode.Engine.IO_URING) {
            assumeTrue(IoUring.isAvailable(), "io_uring is not available here");
        }
        start(engine, VerbsEmulator.device(0));
        Channel lane = lanes.get(0);
        int max = ((RdmaChannel) lane).maxFrameLength() - 4;
        for (int i = 0; i < 2000; i++) {
            int len = (int) ((i * 2654435761L) % (max + 1));
            ChannelFuture w = lane.writeAndFlush(RdmaChannelTest.frame(1 + i % 250, i, len));
            AmFrame echo = echoes.poll(30, TimeUnit.SECONDS);
            if (echo == null) {
                RdmaChannel ch = (RdmaChannel) lane;
                String state = ch.eventLoop().submit(() -> "active " + ch.isActive() + ", credits " + ch.credits()
                        + ", failure " + ch.failure() + ", write " + w).get();
                String ours = VerbsEmulator.testsOnEmulator() ? Arrays.toString(VerbsEmulator.counters())
                        : "";
                Assertions.fail("no echo of frame " + i + ": our lane " + state
                        + "; our emulator counters " + ours + "; peer's " + ask("COUNTERS"));
            }
            try {
                assertEquals(1 + i % 250, echo.amId());
                assertEquals(i, echo.header().getInt(echo.header().readerIndex()));
                byte[] got = ByteBufUtil.getBytes(echo.payload());
                assertEquals(len, got.length);
                for (int j = 0; j < len; j++) {
                    if (got[j] != (byte) (i * 31 + j)) {
                        assertEquals((byte) (i * 31 + j), got[j], "byte " + j + " of echo " + i);
                    }
                }
            } finally {
                echo.release();
            }
            assertTrue(w.await(30, TimeUnit.SECONDS) && w.isSuccess(), () -> "write: " + w.cause());
        }
        if (VerbsEmulator.testsOnEmulator()) {
            assertEquals(0, peerCounters(ask("COUNTERS"))[VerbsEmulator.RNR_NAK_SENT], "RNR NAKs the peer sent");
        }
    }

    /** PUT and GET of 1 B to 256 MiB at odd offsets, checked by the peer and here; verbs atomics on its memory. */
    @Test
    void putGetAndAtomicsByteForByte() throws Exception {
        start(false, VerbsEmulator.device(0));
        Channel lane = lanes.get(0);
        RemoteKey key = keys.get(0);
        MemorySegment local = arena.allocate(REGION, 4096);
        lane.eventLoop().submit(() -> ((RdmaChannel) lane).register(local)).get(); // GET/PUT find its lkey
        for (long n : new long[] {1, 4095, 4096, 65_537, 1L << 20, 16L << 20, 256L << 20}) {
            long offset = 7;
            MemorySegment src = local.asSlice(offset, n);
            Patterns.fill(src, offset, 5);
            RmaOp put = RmaOp.put(key, offset, src);
            assertTrue(lane.writeAndFlush(put).await(120, TimeUnit.SECONDS), "PUT " + n);
            assertEquals(n, put.done(), "PUT " + n + " bytes done");
            assertEquals("OK", ask("CHECK " + offset + " " + n + " 5"), "PUT of " + n + " bytes as the peer sees it");
            assertEquals("OK", ask("FILL " + offset + " " + n + " 6"));
            MemorySegment dst = local.asSlice(offset, n);
            ChannelFuture get = lane.writeAndFlush(RmaOp.get(key, offset, dst));
            assertTrue(get.await(120, TimeUnit.SECONDS) && get.isSuccess(), () -> "GET " + n + ": " + get.cause());
            assertEquals(-1, Patterns.firstMismatch(dst, offset, 6), "GET of " + n + " bytes: first wrong byte");
        }
        // 1000 fetch-and-adds in flight together: every previous value distinct, the sum exact
        long base = Long.parseLong(ask("WORD 64").split(" ")[1]);
        List<RmaOp> adds = new ArrayList<>();
        List<ChannelFuture> futures = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            RmaOp op = RmaOp.fetchAdd(key, 64, 3);
            adds.add(op);
            futures.add(lane.write(op));
        }
        lane.flush();
        Set<Long> previous = new HashSet<>();
        for (int i = 0; i < 1000; i++) {
            assertTrue(futures.get(i).await(60, TimeUnit.SECONDS) && futures.get(i).isSuccess());
            previous.add(adds.get(i).result());
        }
        assertEquals(1000, previous.size(), "distinct previous values");
        assertEquals(base + 3000, Long.parseLong(ask("WORD 64").split(" ")[1]));
        RmaOp cas = RmaOp.compareAndSwap(key, 64, base + 3000, 77);
        assertTrue(lane.writeAndFlush(cas).await(30, TimeUnit.SECONDS));
        assertEquals(base + 3000, cas.result());
        assertEquals("WORD 77", ask("WORD 64"));
    }

    /**
     * A receiver that stops reading holds its sender back by credits: the sender turns unwritable with at most the
     * receiver's posted receives completed, nothing is refused (no RNR NAK), and everything arrives in order once
     * the receiver reads again.
     */
    @Test
    void creditsHoldASenderBackFromASlowReceiver() throws Exception {
        start(false, VerbsEmulator.device(1));
        RdmaChannel lane = (RdmaChannel) lanes.get(0);
        assertEquals("OK", ask("SINK 0"));
        assertEquals("OK", ask("PAUSE 0"));
        int n = 5000;
        List<ChannelFuture> writes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            writes.add(lane.write(RdmaChannelTest.frame(9, i, (i * 37) % 2000)));
        }
        lane.flush();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        boolean held = false;
        while (!held && System.nanoTime() < deadline) {
            held = lane.eventLoop().submit(() -> !lane.isWritable() && lane.credits() < 2).get();
            if (!held) {
                Thread.sleep(10);
            }
        }
        assertTrue(held, "the sender did not run out of credits");
        long completed = writes.stream().filter(ChannelFuture::isSuccess).count();
        int rxDepth = NucxConfig.of(Map.of(), Map.of()).get(RdmaConfig.RX_DEPTH);
        assertTrue(completed <= rxDepth, completed + " writes completed against " + rxDepth + " posted receives");
        assertEquals("OK", ask("RESUME 0"));
        for (ChannelFuture w : writes) {
            assertTrue(w.await(60, TimeUnit.SECONDS) && w.isSuccess(), () -> "write: " + w.cause());
        }
        String count = "";
        for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); System.nanoTime() < end; ) {
            count = ask("COUNT 0");
            if (count.equals("COUNT " + n + " 0")) {
                break;
            }
            Thread.sleep(20);
        }
        assertEquals("COUNT " + n + " 0", count, "frames the receiver got, and how many were wrong");
        assertTrue(lane.isWritable());
        if (VerbsEmulator.testsOnEmulator()) { // hardware counts them in sysfs, not here
            assertEquals(0, peerCounters(ask("COUNTERS"))[VerbsEmulator.RNR_NAK_SENT], "RNR NAKs the receiver sent");
            assertEquals(0, VerbsEmulator.counters()[VerbsEmulator.RNR_NAK_RECEIVED], "RNR NAKs this side got");
        }
    }

    /**
     * The peer is killed with frames and a 256 MiB PUT in flight: every write that had not completed fails with a
     * VerbsException naming the completion status, none hangs, and the lane closes.
     */
    @Test
    void aPeerKilledMidTransferFailsEveryOutstandingWrite() throws Exception {
        start(false, VerbsEmulator.device(0));
        Channel lane = lanes.get(0);
        assertEquals("OK", ask("SINK 0"));
        MemorySegment big = arena.allocate(256L << 20, 4096);
        List<ChannelFuture> writes = new ArrayList<>();
        writes.add(lane.writeAndFlush(RmaOp.put(keys.get(0), 0, big)));
        for (int i = 0; i < 3000; i++) {
            writes.add(lane.write(RdmaChannelTest.frame(5, i, 1000)));
        }
        writes.add(lane.writeAndFlush(RmaOp.get(keys.get(0), 0, big.asSlice(0, 1 << 20))));
        peer.destroyForcibly();
        assertTrue(peer.waitFor(30, TimeUnit.SECONDS));
        int failed = 0;
        for (ChannelFuture w : writes) {
            assertTrue(w.await(60, TimeUnit.SECONDS), "a write still outstanding 60 s after the peer died");
            if (!w.isSuccess()) {
                failed++;
                VerbsException e = assertInstanceOf(VerbsException.class, w.cause(), () -> "cause " + w.cause());
                assertTrue(e.getMessage().contains("IBV_WC_RETRY_EXC_ERR") || e.getMessage().contains("FLUSH"),
                        e.getMessage());
            }
        }
        assertTrue(failed > 0, "nothing failed although the peer died with 3000 frames in flight");
        assertTrue(lane.closeFuture().await(30, TimeUnit.SECONDS), "the lane did not close");
        assertFalse(lane.writeAndFlush(RdmaChannelTest.frame(5, 0, 1)).await().isSuccess());
    }

    /** Lanes on both emulated devices to one peer carry a PUT each at once; the emulator counted bytes on both. */
    @Test
    void bothDevicesCarryData() throws Exception {
        start(false, VerbsEmulator.device(0), VerbsEmulator.device(1));
        assumeTrue(VerbsEmulator.testsOnEmulator(), "per-device byte counts come from the emulator");
        long[] before = VerbsEmulator.counters();
        long n = 64L << 20;
        MemorySegment src = arena.allocate(2 * n, 4096);
        Patterns.fill(src.asSlice(0, n), 0, 7);
        Patterns.fill(src.asSlice(n, n), n, 7);
        ChannelFuture a = lanes.get(0).writeAndFlush(RmaOp.put(keys.get(0), 0, src.asSlice(0, n)));
        ChannelFuture b = lanes.get(1).writeAndFlush(RmaOp.put(keys.get(1), n, src.asSlice(n, n)));
        assertTrue(a.await(120, TimeUnit.SECONDS) && a.isSuccess(), () -> "emu0 PUT: " + a.cause());
        assertTrue(b.await(120, TimeUnit.SECONDS) && b.isSuccess(), () -> "emu1 PUT: " + b.cause());
        assertEquals("OK", ask("CHECK 0 " + (2 * n) + " 7"));
        long[] after = VerbsEmulator.counters();
        assertTrue(after[VerbsEmulator.DEV0_BYTES] - before[VerbsEmulator.DEV0_BYTES] >= n, "bytes on emu0");
        assertTrue(after[VerbsEmulator.DEV1_BYTES] - before[VerbsEmulator.DEV1_BYTES] >= n, "bytes on emu1");
    }
}
