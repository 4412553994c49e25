package io.nucx.transport.shm;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.HostId;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A shm iface attacked through its Unix socket and through {@code /dev/shm}: stalled handshakes hold none of its
 * rings and are bounded in number; a link planted under a ring's name is never followed; a ring file of another
 * user is never mapped; the socket admits only its own user.
 */
@Timeout(120)
class HostileShmTest {

    private final ShmIfaces ifaces = new ShmIfaces();
    private final List<Path> files = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        ifaces.close();
        for (Path f : files) {
            Files.deleteIfExists(f);
        }
    }

    private Iface iface() throws Exception {
        return ifaces.open(ChannelInboundHandlerAdapter::new);
    }

    private static Path socketOf(Iface i) {
        ByteBuffer b = ByteBuffer.wrap(i.ifaceAddress()).order(ByteOrder.LITTLE_ENDIAN);
        return ShmFiles.socket(ShmFiles.DIR, b.getInt(), b.getInt());
    }

    private static long ifaceId(Iface i) {
        ByteBuffer b = ByteBuffer.wrap(i.ifaceAddress()).order(ByteOrder.LITTLE_ENDIAN);
        b.getInt();
        return Integer.toUnsignedLong(b.getInt());
    }

    /** Ring files named after {@code iface}: the ones it created. */
    private static long ringsOf(Iface iface) throws IOException {
        String prefix = "nucx-" + ShmFiles.pid() + "-" + ifaceId(iface) + "-";
        try (Stream<Path> s = Files.list(ShmFiles.DIR)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).count();
        }
    }

    /**
     * A connector that closes its socket right after its HELLO (its worker shutting down): the acceptor's REPLY
     * fails as it is written. The handshake ends once, as a failure. It used to go on to finish with the rings its
     * failure had let go, so the iface attached a lane without rings (polled by its loop, each poll a
     * NullPointerException and a close that failed, logged for as long as the loop ran; {@code bin/nucx first-message}
     * showed it at its close) and gave its handshake slot back twice.
     */
    @Test
    void aReplyThatCannotBeWrittenEndsTheHandshakeOnceAsAFailure() throws Exception {
        long pid = ShmFiles.pid();
        SpscRing first = SpscRing.create(ShmFiles.newRing(ShmFiles.DIR, 7), 64 * 1024);
        SpscRing second = SpscRing.create(ShmFiles.newRing(ShmFiles.DIR, 7), 64 * 1024);
        files.add(first.file());
        files.add(second.file());
        List<ShmHandshake.Result> finished = new ArrayList<>();
        List<Throwable> failed = new ArrayList<>();
        EmbeddedChannel doorbell = new EmbeddedChannel(new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                ReferenceCountUtil.release(msg);
                promise.setFailure(new ClosedChannelException()); // the peer is gone
            }
        });
        try {
            doorbell.pipeline().addLast(new ShmHandshake(false, ShmFiles.DIR, new ShmAddress(pid, 8), 64 * 1024,
                    TimeUnit.SECONDS.toNanos(5), finished::add, failed::add));
            doorbell.writeInbound(Unpooled.wrappedBuffer(hello(pid, 7, first.file(), second.file())));
            assertEquals(List.of(), finished, "finished");
            assertEquals(1, failed.size(), () -> "failures: " + failed);
            assertInstanceOf(ClosedChannelException.class, failed.get(0));
            assertFalse(doorbell.isOpen(), "the doorbell closes");
        } finally {
            doorbell.finishAndReleaseAll();
            first.close();
            second.close();
        }
    }

    /**
     * An iface that closes ends the handshakes under way, both ways: a connection it accepted that has not said HELLO
     * yet closes, and its own connect to an iface that never answers fails, both at once rather than at the handshake
     * timeout (10 s). Left open, they stayed until their loop ended, which closed them and warned of each ("Can't
     * invoke task later as EventLoop rejected it": {@code bin/nucx first-message} at its close, a lane still in its
     * handshake).
     */
    @Test
    void anIfaceThatClosesEndsItsHandshakesUnderWayBothWays() throws Exception {
        Iface iface = iface();
        long silentId = 777_777;
        Path silentSocket = ShmFiles.socket(ShmFiles.DIR, ShmFiles.pid(), silentId);
        files.add(silentSocket);
        try (SocketChannel accepted = SocketChannel.open(StandardProtocolFamily.UNIX);
             ServerSocketChannel silent = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            accepted.connect(UnixDomainSocketAddress.of(socketOf(iface)));
            silent.bind(UnixDomainSocketAddress.of(silentSocket));
            byte[] silentAddress = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt((int) ShmFiles.pid())
                    .putInt((int) silentId).array();
            ChannelFuture connecting = iface.connect(iface.deviceAddress(), silentAddress,
                    new ChannelInboundHandlerAdapter());
            try (SocketChannel dialled = silent.accept()) {
                assertFalse(closedWithin(accepted, 200), "closed before the iface was");
                assertFalse(connecting.isDone(), "the connect ended before the iface closed");
                long start = System.nanoTime();
                iface.close().sync();
                assertTrue(closedWithin(accepted, 3_000), "the accepted connection outlived the iface's close");
                assertTrue(connecting.await(3, TimeUnit.SECONDS), "the connect outlived the iface's close");
                assertTrue(String.valueOf(connecting.cause()).contains("closed during the handshake"),
                        () -> "the connect's failure: " + connecting.cause());
                assertTrue(closedWithin(dialled, 3_000), "the connect's socket outlived the iface's close");
                assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "ended by the timeout");
            }
        }
    }

    /** A HELLO as a connector writes it ({@link ShmHandshake}), naming {@code first} and {@code second}. */
    private static ByteBuffer hello(long pid, long ifaceId, Path first, Path second) {
        byte[] a = first.toString().getBytes(StandardCharsets.UTF_8);
        byte[] b = second.toString().getBytes(StandardCharsets.UTF_8);
        int rest = 4 + 1 + 1 + 2 + 8 + 8 + 8 + 2 + a.length + 2 + b.length;
        return ByteBuffer.allocate(2 + rest).order(ByteOrder.LITTLE_ENDIAN).putShort((short) rest)
                .putInt(ShmHandshake.MAGIC).put((byte) ShmHandshake.VERSION).put((byte) ShmHandshake.HELLO)
                .putShort((short) 0).putLong(HostId.get()).putLong(pid).putLong(ifaceId).putShort((short) a.length)
                .put(a).putShort((short) b.length).put(b).flip();
    }

    private static boolean closedWithin(SocketChannel ch, long millis) throws IOException {
        ch.configureBlocking(false);
        ByteBuffer sink = ByteBuffer.allocate(256);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (System.nanoTime() < deadline) {
            sink.clear();
            try {
                if (ch.read(sink) < 0) {
                    return true;
                }
            } catch (IOException reset) {
                return true;
            }
            Thread.onSpinWait();
        }
        return false;
    }

    /**
     * 200 handshakes that send half a HELLO and stop, with NUCX_SHM_HANDSHAKES=64 and a 1 s handshake timeout: the
     * iface creates no ring for any (the connector creates both); it serves at most 64 at once, and the rest wait
     * unaccepted, so none is answered or closed before the first timeout; every one is closed by its timeout, a
     * round of 64 after another; and a legitimate connect made during the flood is served once a slot frees.
     */
    @Test
    void stalledHandshakesHoldNoRingAndAreBounded() throws Exception {
        Iface victim = ifaces.open(ChannelInboundHandlerAdapter::new, Map.of("NUCX_SHM_HANDSHAKES", "64",
                "NUCX_SHM_HANDSHAKE_TIMEOUT", "1s"));
        Path socket = socketOf(victim);
        List<SocketChannel> raw = new ArrayList<>();
        try {
            long start = System.nanoTime();
            for (int i = 0; i < 200; i++) {
                SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                ch.connect(UnixDomainSocketAddress.of(socket));
                ByteBuffer h = hello(ShmFiles.pid(), 888_888, ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid()
                        + "-888888-" + (2 * i + 1) + ".ring"), ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid()
                        + "-888888-" + (2 * i + 2) + ".ring"));
                h.limit(h.limit() / 2); // half a HELLO, then nothing
                ch.write(h);
                raw.add(ch);
            }
            Iface client = iface();
            ChannelFuture legitimate = client.connect(victim.deviceAddress(), victim.ifaceAddress(),
                    new ChannelInboundHandlerAdapter());
            assertFalse(closedWithin(raw.get(199), 300), "a handshake beyond the bound was served at once");
            assertEquals(0, ringsOf(victim), "the iface created rings for handshakes that stalled");
            for (SocketChannel ch : raw) {
                assertTrue(closedWithin(ch, 15_000), "a stalled handshake outlived its timeout");
            }
            long rounds = (System.nanoTime() - start) / 1_000_000_000L;
            assertTrue(rounds >= 3, "200 stalled handshakes ended after " + rounds + " s: more than 64 were served "
                    + "at once (4 rounds of a 1 s timeout expected)");
            assertTrue(legitimate.await(15, TimeUnit.SECONDS) && legitimate.isSuccess(),
                    "a legitimate connect during the flood: " + legitimate.cause());
            legitimate.channel().close().sync();
        } finally {
            for (SocketChannel ch : raw) {
                ch.close();
            }
        }
        assertEquals(0, ringsOf(victim));
    }

    /**
     * A burst of 300 connects from one iface to another (a peer opening hundreds of endpoints at once), with the
     * default bound of 64 handshakes: every one succeeds, the ones beyond the bound after waiting their turn.
     */
    @Test
    void aBurstOfConnectsBeyondTheBoundWaitsAndSucceeds() throws Exception {
        Iface server = iface();
        Iface client = iface();
        List<ChannelFuture> connects = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            connects.add(client.connect(server.deviceAddress(), server.ifaceAddress(),
                    new ChannelInboundHandlerAdapter()));
        }
        try {
            for (ChannelFuture f : connects) {
                assertTrue(f.await(30, TimeUnit.SECONDS), "a connect of the burst did not finish in 30 s");
                assertTrue(f.isSuccess(), "a connect of the burst failed: " + f.cause());
            }
        } finally {
            for (ChannelFuture f : connects) {
                if (f.isSuccess()) {
                    f.channel().close().sync();
                }
            }
        }
    }

    /** A link with a ring file's name, pointing at a file of ours: neither mapped nor written, by open or create. */
    @Test
    void aLinkPlantedInDevShmIsNotFollowed() throws Exception {
        Path target = Files.createTempFile("nucx-victim", ".txt");
        files.add(target);
        byte[] content = "precious".repeat(1000).getBytes(StandardCharsets.US_ASCII);
        Files.write(target, content);
        Path link = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-777777-1.ring");
        files.add(link);
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, target);

        IOException opened = assertThrows(IOException.class, () -> SpscRing.open(link));
        assertTrue(String.valueOf(opened.getMessage()).contains(link.toString()), opened.toString());
        assertThrows(FileAlreadyExistsException.class, () -> SpscRing.create(link, 1 << 16));

        // The same link named in a handshake: the socket closes, the file stays as it was.
        Iface victim = iface();
        Path other = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-777777-2.ring");
        files.add(other);
        SpscRing.create(other, 1 << 16).close();
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socketOf(victim)));
            ch.write(hello(ShmFiles.pid(), 777_777, link, other));
            assertTrue(closedWithin(ch, 10_000), "a handshake naming a link must be refused");
        }
        assertArrayEquals(content, Files.readAllBytes(target), "the link's target was written");
        assertTrue(Files.isSymbolicLink(link));
    }

    /** A ring file of another user is refused by name and owner; the iface's socket admits its own user only. */
    @Test
    void ringsAndSocketsOfAnotherUserAreRefused() throws Exception {
        Iface victim = iface();
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socketOf(victim))));
        Assumptions.assumeTrue(SpscRing.ownUid() == 0, "chown to another user needs root");
        Path ring = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-666666-1.ring");
        files.add(ring);
        Files.deleteIfExists(ring);
        SpscRing.create(ring, 1 << 16).close();
        Files.setAttribute(ring, "unix:uid", 65534);
        IOException e = assertThrows(IOException.class, () -> SpscRing.open(ring));
        assertTrue(e.getMessage().contains("owned by uid 65534"), e.getMessage());
    }
}
