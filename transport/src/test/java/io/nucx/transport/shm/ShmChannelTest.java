package io.nucx.transport.shm;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.codec.CorruptedFrameException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** shm channels over real shared memory and Unix sockets, in one process and against a second JVM. */
@Timeout(120)
class ShmChannelTest {

    private final List<EventLoopGroup> groups = new ArrayList<>();
    private final List<Iface> ifaces = new ArrayList<>();
    private final List<Process> peers = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (Process p : peers) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        for (Iface i : ifaces) {
            i.close().await(5, TimeUnit.SECONDS);
        }
        for (EventLoopGroup g : groups) {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
    }

    // ---------------------------------------------------------------- frames shared with ShmPeer

    static int size(long seq) {
        return (int) (seq * 7919 % 16384);
    }

    static byte[] bytes(long seq) {
        byte[] b = new byte[size(seq)];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (seq * 31 + i);
        }
        return b;
    }

    static AmFrame payload(long seq) {
        return AmFrame.of(5, 0, Unpooled.buffer(8).writeLongLE(seq), Unpooled.wrappedBuffer(bytes(seq)));
    }

    /** Null if {@code f} is frame {@code seq}, else what differs (whole-array compares: PARANOID is per access). */
    static String check(AmFrame f, long seq) {
        if (f.amId() != 5 || f.header().readableBytes() != 8) {
            return "frame " + seq + ": am id " + f.amId() + ", header " + f.header().readableBytes() + " bytes";
        }
        long got = f.header().getLongLE(f.header().readerIndex());
        if (got != seq) {
            return "expected frame " + seq + ", got " + got;
        }
        byte[] actual = new byte[f.payload().readableBytes()];
        f.payload().getBytes(f.payload().readerIndex(), actual);
        int at = Arrays.mismatch(actual, bytes(seq));
        return at < 0 ? null : "frame " + seq + " differs at byte " + at + " (length " + actual.length + ")";
    }

    // ---------------------------------------------------------------- fixtures

    private EventLoopGroup loop() {
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(1, ShmIoHandler.newFactory(NioIoHandler.newFactory(),
                20_000));
        groups.add(g);
        return g;
    }

    private Iface iface(Supplier<ChannelHandler> accepted) throws Exception {
        Iface i = new ShmTransport().openIface(new IfaceParams(loop().next(), ShmTransport.MEMORY, accepted,
                NucxConfig.of(Map.of(), Map.of())));
        ifaces.add(i);
        return i;
    }

    /** Collects frames, failures and the channel of each accepted or connected lane. */
    static final class Collector extends ChannelInboundHandlerAdapter {
        final BlockingQueue<AmFrame> frames = new LinkedBlockingQueue<>();
        final List<Throwable> errors = new CopyOnWriteArrayList<>();
        final CompletableFuture<Channel> active = new CompletableFuture<>();
        final CompletableFuture<Void> inactive = new CompletableFuture<>();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            active.complete(ctx.channel());
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            frames.add((AmFrame) msg);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            errors.add(cause);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            inactive.complete(null);
        }

        void releaseAll() {
            for (AmFrame f; (f = frames.poll()) != null; ) {
                f.release();
            }
        }
    }

    private static void expectFrames(Collector c, long from, long count) throws InterruptedException {
        for (long s = from; s < from + count; s++) {
            AmFrame f = c.frames.poll(20, TimeUnit.SECONDS);
            assertTrue(f != null, "frame " + s + " did not arrive");
            try {
                assertNull(check(f, s));
            } finally {
                f.release();
            }
        }
    }

    // ---------------------------------------------------------------- in one process

    @Test
    void framesFlowBothWaysAndTheLoopParksBetweenThem() throws Exception {
        List<Collector> accepted = new CopyOnWriteArrayList<>();
        Iface server = iface(() -> {
            Collector c = new Collector();
            accepted.add(c);
            return c;
        });
        Iface client = iface(Collector::new);
        Collector mine = new Collector();
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), mine).sync().channel();
        assertTrue(ch.isActive());
        for (long s = 0; s < 2000; s++) {
            ch.writeAndFlush(payload(s));
        }
        assertTrue(accepted.size() == 1);
        expectFrames(accepted.get(0), 0, 2000);
        // Idle long past the spin time: both loops park; a frame must still wake the reader (the doorbell).
        for (int round = 0; round < 3; round++) {
            Thread.sleep(50);
            Channel back = accepted.get(0).active.get(5, TimeUnit.SECONDS);
            back.writeAndFlush(payload(round)).sync();
            expectFrames(mine, round, 1);
        }
        ch.close().sync();
        accepted.get(0).inactive.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aWriterWhoseCompletionsWriteAgainStillReadsWhatItsPeerSends() throws Exception {
        // The reader drains as fast as the writer fills, so the ring never fills, and each completed write writes
        // the next. Writes must still go in bounded batches, or the writer's loop would not poll its rings again
        // until the flood ends: what the peer sends meanwhile (a keepalive probe, say) would wait.
        CompletableFuture<Channel> acceptedSide = new CompletableFuture<>();
        Iface server = iface(() -> new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                acceptedSide.complete(ctx.channel());
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ((AmFrame) msg).release();
            }
        });
        Iface client = iface(Collector::new);
        Collector mine = new Collector();
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), mine).sync().channel();
        long limit = 100_000_000;
        java.util.concurrent.atomic.AtomicLong written = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        io.netty.channel.ChannelFutureListener[] next = new io.netty.channel.ChannelFutureListener[1];
        next[0] = f -> {
            if (f.isSuccess() && !stop.get() && written.incrementAndGet() < limit) {
                ch.writeAndFlush(AmFrame.of(5, 0, Unpooled.buffer(8).writeLongLE(0), Unpooled.EMPTY_BUFFER))
                        .addListener(next[0]);
            }
        };
        try {
            ch.eventLoop().execute(() -> ch.writeAndFlush(AmFrame.of(5, 0, Unpooled.buffer(8).writeLongLE(0),
                    Unpooled.EMPTY_BUFFER)).addListener(next[0]));
            Thread.sleep(300); // the flood is under way
            acceptedSide.get(5, TimeUnit.SECONDS).writeAndFlush(payload(42)).sync();
            AmFrame back = mine.frames.poll(10, TimeUnit.SECONDS);
            long during = written.get();
            assertTrue(back != null, () -> "nothing read while writing (" + during + " writes so far)");
            try {
                assertNull(check(back, 42));
            } finally {
                back.release();
            }
            assertTrue(during < limit, "read during the flood, not after it");
        } finally {
            stop.set(true);
        }
    }

    @Test
    void aCorruptRecordClosesOnlyThatConnection() throws Exception {
        List<Collector> accepted = new CopyOnWriteArrayList<>();
        Iface server = iface(() -> {
            Collector c = new Collector();
            accepted.add(c);
            return c;
        });
        Iface client = iface(Collector::new);
        ShmChannel bad = (ShmChannel) client.connect(server.deviceAddress(), server.ifaceAddress(), new Collector())
                .sync().channel();
        Channel good = client.connect(server.deviceAddress(), server.ifaceAddress(), new Collector()).sync()
                .channel();
        // Write a record with am id 0 straight into the shared ring, as a broken or hostile peer would.
        bad.eventLoop().submit(() -> {
            try (Arena a = Arena.ofConfined()) {
                assertTrue(bad.outboundRing().write(0 | 8 << 16, a.allocate(16)));
            }
            bad.outboundRing().takeConsumerSleeping();
            return null;
        }).sync();
        bad.writeAndFlush(payload(1)); // rings the doorbell if the reader sleeps
        Collector victim = accepted.get(0);
        victim.inactive.get(10, TimeUnit.SECONDS);
        assertTrue(victim.errors.stream().anyMatch(e -> e instanceof CorruptedFrameException
                && e.getMessage().contains("am id 0")), () -> "errors: " + victim.errors);
        bad.closeFuture().await(10, TimeUnit.SECONDS);
        assertFalse(bad.isOpen(), "the peer's close reaches the writer of the corrupt record");
        good.writeAndFlush(payload(7)).sync();
        expectFrames(accepted.get(1), 7, 1);
        victim.releaseAll();
    }

    @Test
    void handshakeGarbageClosesOnlyThatSocket() throws Exception {
        Collector accepted = new Collector();
        Iface server = iface(() -> accepted);
        ByteBuffer b = ByteBuffer.wrap(server.ifaceAddress()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        Path socket = ShmFiles.socket(ShmFiles.DIR, b.getInt(), b.getInt());
        try (java.nio.channels.SocketChannel raw = java.nio.channels.SocketChannel.open(StandardProtocolFamily.UNIX)) {
            raw.connect(UnixDomainSocketAddress.of(socket));
            raw.write(ByteBuffer.wrap("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
            ByteBuffer sink = ByteBuffer.allocate(256);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int n = 0;
            while (n >= 0 && System.nanoTime() < deadline) {
                sink.clear();
                n = raw.read(sink);
            }
            assertEquals(-1, n, "the iface closes a socket that speaks nonsense");
        }
        Iface client = iface(Collector::new);
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), new Collector()).sync().channel();
        ch.writeAndFlush(payload(3)).sync();
        expectFrames(accepted, 3, 1);
    }

    @Test
    void staleFilesOfDeadProcessesAreReapedAtStartAndLiveOnesKept() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        long dead = gone.pid();
        Path ring = ShmFiles.DIR.resolve("nucx-" + dead + "-9-1.ring");
        Path sock = ShmFiles.DIR.resolve("nucx-" + dead + "-9.sock");
        Path live = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-999999-1.ring");
        Files.write(ring, new byte[64]);
        Files.write(sock, new byte[0]);
        Files.write(live, new byte[64]);
        try {
            iface(Collector::new);
            assertFalse(Files.exists(ring), "a dead process's ring is reaped");
            assertFalse(Files.exists(sock), "a dead process's socket is reaped");
            assertTrue(Files.exists(live), "a live process's file is kept");
        } finally {
            Files.deleteIfExists(ring);
            Files.deleteIfExists(sock);
            Files.deleteIfExists(live);
        }
    }

    // ---------------------------------------------------------------- against a second JVM

    private record Peer(Process process, BufferedReader out, byte[] device, byte[] iface) {
        String awaitLine(String prefix) throws Exception {
            CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
                try {
                    for (String l; (l = out.readLine()) != null; ) {
                        if (l.startsWith(prefix)) {
                            return l;
                        }
                    }
                    return "EOF";
                } catch (Exception e) {
                    return "EOF " + e;
                }
            });
            return line.get(90, TimeUnit.SECONDS);
        }
    }

    private Peer startPeer(String mode, long expected) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process p = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "--sun-misc-unsafe-memory-access=allow", "-Dio.netty.leakDetection.level=paranoid", "-cp",
                System.getProperty("java.class.path"), ShmPeer.class.getName(), mode, Long.toString(expected)))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        peers.add(p);
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        Peer peer = new Peer(p, out, null, null);
        String[] a = peer.awaitLine("ADDRESS").split(" ");
        assertEquals(3, a.length, () -> "peer said " + Arrays.toString(a));
        return new Peer(p, out, HexFormat.of().parseHex(a[1]), HexFormat.of().parseHex(a[2]));
    }

    @Test
    void aWriterFarFasterThanItsReaderIsHeldBackAndLosesNothing() throws Exception {
        long count = 20_000;
        Peer peer = startPeer("slow", count);
        Iface client = iface(Collector::new);
        Channel ch = client.connect(peer.device(), peer.iface(), new Collector()).sync().channel();
        List<ChannelFuture> pendingWhenBlocked = new ArrayList<>();
        ChannelFuture last = null;
        for (long s = 0; s < count; s++) {
            last = ch.writeAndFlush(payload(s));
            if (!ch.isWritable()) {
                if (pendingWhenBlocked.isEmpty() && !last.isDone()) {
                    pendingWhenBlocked.add(last);
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!ch.isWritable() && ch.isActive()) {
                    assertTrue(System.nanoTime() < deadline, "stayed unwritable for 30 s at frame " + s);
                    Thread.sleep(1);
                }
            }
        }
        assertTrue(last.await(60, TimeUnit.SECONDS) && last.isSuccess(), () -> "last write: " + ch);
        assertFalse(pendingWhenBlocked.isEmpty(), "the ring never filled: the writer was never held back");
        assertTrue(pendingWhenBlocked.get(0).isSuccess(), "a held-back write completes once there is room");
        assertEquals("OK " + count, peer.awaitLine("OK"));
        peer.process().getOutputStream().close();
        assertTrue(peer.process().waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, peer.process().exitValue(), "peer exit (3 = leak)");
    }

    @Test
    void aKilledReaderFailsTheWritersFuturesAndLeavesNoFiles() throws Exception {
        Peer peer = startPeer("stall", Long.MAX_VALUE);
        long pid = peer.process().pid();
        Iface client = iface(Collector::new);
        Channel ch = client.connect(peer.device(), peer.iface(), new Collector()).sync().channel();
        // Write until the ring is full: a write stays pending once the stalled reader's ring has no room.
        ChannelFuture held = null;
        for (long s = 0; held == null; s++) {
            ChannelFuture f = ch.writeAndFlush(payload(s));
            if (s % 64 == 63 && !f.await(50, TimeUnit.MILLISECONDS)) {
                held = f;
            }
            assertTrue(s < 100_000, "4 MiB ring never filled");
        }
        Thread.sleep(100);
        assertFalse(held.isDone(), "with the reader stalled, the last write waits for room");
        peer.process().destroyForcibly();
        assertTrue(held.await(10, TimeUnit.SECONDS), "the writer learns of the dead reader");
        assertInstanceOf(ShmPeerGoneException.class, held.cause());
        assertTrue(held.cause().getMessage().contains("pid " + pid), held.cause().getMessage());
        assertTrue(ch.closeFuture().await(5, TimeUnit.SECONDS));
        peer.process().waitFor(10, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<Path> left;
        do {
            Thread.sleep(100);
            try (Stream<Path> files = Files.list(ShmFiles.DIR)) {
                left = files.filter(f -> f.getFileName().toString().startsWith("nucx-" + pid + "-")).toList();
            }
        } while (!left.isEmpty() && System.nanoTime() < deadline);
        assertEquals(List.of(), left, "files of the killed reader");
    }
}
